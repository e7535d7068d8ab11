/**
 * The whole-file facts cache (src/fs/content-cache.ts) and readRange's use of it (SPEC §5: the hash always covers the
 * whole file, so a cached hash must never outlive the version it describes). Pins:
 * - a cached read returns exactly what an uncached scan returns, for every request kind (lines, head, tail, bytes)
 *   and every cap (property, over files larger than several 64 KiB index spans, with CRLF, a BOM, multi-byte text,
 *   very long lines and no final newline), and does not read the whole file again;
 * - invalidation: a same-size rewrite in place (same inode), an append, a truncation and an atomic replace (new
 *   inode) each make the next read report the new hash, lines and bytes;
 * - the racy-timestamp rule (both sides): a file whose mtime/ctime is within the margin of the scan's start is never
 *   stored, so a same-size rewrite within the same timestamp tick is still seen; a file older than the margin is
 *   stored; a change during the scan (fstat before ≠ after) is never stored;
 * - keys: any of dev, ino, size, mtimeMs, ctimeMs differing is a miss; small files are not cached; LRU bound.
 */
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  mkdtempSync,
  openSync,
  closeSync,
  realpathSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CHECKPOINT_BYTES,
  ContentFactsCache,
  entryBytes,
  identityOf,
  type ContentFacts,
  type FileIdentity,
} from '../../src/fs/content-cache.js';
import { readRange, type RangeRequest, type RangeResult } from '../../src/fs/read-range.js';

const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-content-cache-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sha = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
let counter = 0;
const tempPath = () => path.join(dir, `f${counter++}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A cache whose clock runs an hour ahead: every file on disk looks old enough to be stored (no racy refusal). */
function agedCache(options: { minFileBytes?: number; maxEntries?: number } = {}): ContentFactsCache {
  return new ContentFactsCache({ minFileBytes: 0, now: () => Date.now() + 3600_000, ...options });
}

/** Counts the bytes a handle reads (to prove a cached read does not scan the file). */
function countingHandle(handle: FileHandle): { handle: FileHandle; bytes: () => number } {
  let total = 0;
  const proxy = new Proxy(handle, {
    get(target, prop, receiver) {
      if (prop === 'read') {
        return async (...args: Parameters<FileHandle['read']>) => {
          const r = await (target.read as (...a: unknown[]) => Promise<{ bytesRead: number }>)(...args);
          total += r.bytesRead;
          return r;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { handle: proxy, bytes: () => total };
}

async function readWith(
  p: string,
  req: RangeRequest,
  cache: ContentFactsCache | undefined,
  maxBytes = 1 << 30,
  textBoundaries = true,
): Promise<RangeResult & { readBytes: number }> {
  const raw = await open(p, 'r');
  try {
    const stats = await raw.stat();
    const { handle, bytes } = countingHandle(raw);
    const r = await readRange(handle, req, { maxBytes, textBoundaries, stats, cache });
    return { ...r, readBytes: bytes() };
  } finally {
    await raw.close();
  }
}

/** The result (or the error message) of a read, for comparing cached with uncached reads. */
async function outcome(
  p: string,
  req: RangeRequest,
  cache: ContentFactsCache | undefined,
  maxBytes?: number,
): Promise<unknown> {
  try {
    return strip(await readWith(p, req, cache, maxBytes));
  } catch (error) {
    return { error: (error as Error).message };
  }
}

const strip = (r: RangeResult & { readBytes?: number }) => {
  const { readBytes: _ignored, ...rest } = r;
  return { ...rest, bytes: Buffer.from(rest.bytes).toString('hex') };
};

/** A text of about `size` bytes: lines of random length (some far longer than an index span), mixed EOLs. */
const bigText = fc
  .record({
    seed: fc.integer(),
    size: fc.integer({ min: 3 * CHECKPOINT_BYTES, max: 6 * CHECKPOINT_BYTES }),
    crlf: fc.boolean(),
    bom: fc.boolean(),
    finalNewline: fc.boolean(),
  })
  .map(({ seed, size, crlf, bom, finalNewline }) => {
    let x = seed >>> 0;
    const rnd = () => {
      x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
      return x / 2 ** 32;
    };
    const parts: string[] = [bom ? '\uFEFF' : ''];
    let n = 0;
    while (n < size) {
      const r = rnd();
      const len = r < 0.01 ? Math.floor(rnd() * 3 * CHECKPOINT_BYTES) : Math.floor(rnd() * 120);
      const line = (rnd() < 0.1 ? '€ñ' : '').padEnd(len, 'abcdefgh'[Math.floor(rnd() * 8)]);
      parts.push(line, crlf && rnd() < 0.5 ? '\r\n' : '\n');
      n += len + 2;
    }
    let text = parts.join('');
    if (!finalNewline) text = text.replace(/\r?\n$/, '');
    return Buffer.from(text, 'utf8');
  });

describe('cached reads equal uncached reads', () => {
  it('for every request kind and cap (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        bigText,
        fc.array(fc.tuple(fc.nat(), fc.nat(), fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 200_000 })), {
          minLength: 1,
          maxLength: 12,
        }),
        async (content, picks) => {
          const p = tempPath();
          writeFileSync(p, content);
          const cache = agedCache();
          const first = await readWith(p, { kind: 'lines', startLine: 1, endLine: 1 }, cache);
          expect(first.contentHash).toBe(sha(content));
          expect(cache.size).toBe(1);
          for (const [a, b, kind, cap] of picks) {
            const total = first.totalLines;
            const start = 1 + (a % Math.max(total, 1));
            const req: RangeRequest =
              kind === 0
                ? { kind: 'lines', startLine: start, endLine: start + (b % 50) }
                : kind === 1
                  ? { kind: 'lines', startLine: start, endLine: null }
                  : kind === 2
                    ? { kind: 'head', lines: 1 + (b % 500) }
                    : kind === 3
                      ? { kind: 'tail', lines: 1 + (b % 500) }
                      : { kind: 'bytes', offset: a % (content.length + 1) };
            const textBoundaries = kind !== 4; // a byte read may start inside a character only as raw bytes
            const cold = await readWith(p, req, undefined, cap, textBoundaries);
            const warm = await readWith(p, req, cache, cap, textBoundaries);
            expect(strip(warm)).toEqual(strip(cold));
          }
          rmSync(p);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('at every index boundary: the lines around each checkpoint, and byte offsets at and next to it', async () => {
    // Lines of varying length, including a newline exactly at (and right before) checkpoint boundaries.
    const parts: string[] = [];
    let size = 0;
    let i = 0;
    while (size < 5 * CHECKPOINT_BYTES) {
      const nextBoundary = (Math.floor(size / CHECKPOINT_BYTES) + 1) * CHECKPOINT_BYTES;
      const len =
        i % 7 === 3 && nextBoundary - size - 1 > 0 && nextBoundary - size - 1 < 400
          ? nextBoundary - size - 1 // the newline lands on byte nextBoundary - 1
          : i % 7 === 5 && nextBoundary - size < 400
            ? nextBoundary - size
            : 30 + ((i * 37) % 300);
      parts.push(`${'z'.repeat(len)}\n`);
      size += len + 1;
      i++;
    }
    const content = Buffer.from(parts.join(''));
    const p = tempPath();
    writeFileSync(p, content);
    const cache = agedCache();
    await readWith(p, { kind: 'head', lines: 1 }, cache);
    const newlinesBefore = (offset: number) => {
      let n = 0;
      for (let b = 0; b < offset; b++) if (content[b] === 0x0a) n++;
      return n;
    };
    for (let k = 1; k * CHECKPOINT_BYTES <= content.length; k++) {
      const boundary = k * CHECKPOINT_BYTES;
      const m = newlinesBefore(boundary);
      for (const startLine of [m - 1, m, m + 1, m + 2]) {
        for (const endLine of [startLine, startLine + 1, null]) {
          const req: RangeRequest = { kind: 'lines', startLine, endLine };
          expect(await outcome(p, req, cache)).toEqual(await outcome(p, req, undefined));
        }
      }
      for (const offset of [boundary - 1, boundary, boundary + 1]) {
        const req: RangeRequest = { kind: 'bytes', offset };
        expect(await outcome(p, req, cache, 100)).toEqual(await outcome(p, req, undefined, 100));
      }
    }
  });

  it('a cached range of a large file reads only the neighbourhood of the range', async () => {
    const p = tempPath();
    const lines = Array.from({ length: 60_000 }, (_, i) => `line ${String(i + 1).padStart(6, '0')} ${'x'.repeat(40)}`);
    const content = Buffer.from(`${lines.join('\n')}\n`);
    writeFileSync(p, content);
    const cache = agedCache();
    const first = await readWith(p, { kind: 'lines', startLine: 30_000, endLine: 30_099 }, cache);
    expect(first.readBytes).toBeGreaterThanOrEqual(content.length);
    const again = await readWith(p, { kind: 'lines', startLine: 31_000, endLine: 31_099 }, cache);
    expect(again.bytes.toString().split('\n')[0]).toBe(lines[30_999]);
    expect(again.contentHash).toBe(sha(content));
    expect(again.totalLines).toBe(60_000);
    expect(again.readBytes).toBeLessThan(3 * CHECKPOINT_BYTES + 10_000);
  });
});

describe('invalidation', () => {
  const A = Buffer.from(`${'a'.repeat(100)}\n`.repeat(3000));
  const B = Buffer.from(`${'b'.repeat(50)}\n${'b'.repeat(49)}\n`.repeat(3000)); // same size as A, other lines

  async function primed(content: Buffer): Promise<{ p: string; cache: ContentFactsCache }> {
    const p = tempPath();
    writeFileSync(p, content);
    const cache = agedCache();
    const r = await readWith(p, { kind: 'head', lines: 1 }, cache);
    expect(r.contentHash).toBe(sha(content));
    expect(cache.size).toBe(1);
    // Let the coarse file-system clock tick, so the rewrite below gets a newer timestamp (the racy case is below).
    await sleep(30);
    return { p, cache };
  }

  it('a same-size rewrite in place (same inode)', async () => {
    const { p, cache } = await primed(A);
    expect(B.length).toBe(A.length);
    const fd = openSync(p, 'r+');
    writeSync(fd, B, 0, B.length, 0);
    closeSync(fd);
    const r = await readWith(p, { kind: 'lines', startLine: 2, endLine: 2 }, cache);
    expect(r.contentHash).toBe(sha(B));
    expect(r.bytes.toString()).toBe(`${'b'.repeat(49)}\n`);
    expect(r.totalLines).toBe(6000);
  });

  it('an append, a truncation and an atomic replace', async () => {
    const { p, cache } = await primed(A);
    appendFileSync(p, 'tail\n');
    const appended = Buffer.concat([A, Buffer.from('tail\n')]);
    expect((await readWith(p, { kind: 'tail', lines: 1 }, cache)).bytes.toString()).toBe('tail\n');
    expect((await readWith(p, { kind: 'head', lines: 1 }, cache)).contentHash).toBe(sha(appended));
    await sleep(30);
    truncateSync(p, 101);
    const cut = await readWith(p, { kind: 'lines', startLine: 1, endLine: null }, cache);
    expect([cut.contentHash, cut.totalLines]).toEqual([sha(A.subarray(0, 101)), 1]);
    const other = tempPath();
    writeFileSync(other, B);
    renameSync(other, p);
    const replaced = await readWith(p, { kind: 'head', lines: 1 }, cache);
    expect(replaced.contentHash).toBe(sha(B));
  });
});

describe('the racy-timestamp rule', () => {
  it('a freshly written file is not stored, so a same-size rewrite in the same tick is seen (real clock)', async () => {
    const cache = new ContentFactsCache({ minFileBytes: 0 });
    const p = tempPath();
    writeFileSync(p, Buffer.from('x'.repeat(200_000)));
    const first = await readWith(p, { kind: 'head', lines: 1 }, cache);
    expect(cache.size).toBe(0);
    const fd = openSync(p, 'r+'); // immediately: very likely the same mtime/ctime tick
    writeSync(fd, Buffer.from('y'), 0, 1, 0);
    closeSync(fd);
    const second = await readWith(p, { kind: 'head', lines: 1 }, cache);
    expect(second.contentHash).not.toBe(first.contentHash);
    expect(second.bytes[0]).toBe('y'.charCodeAt(0));
  });

  const id = (over: Partial<FileIdentity> = {}): FileIdentity => ({
    dev: 1,
    ino: 2,
    size: 10,
    mtimeMs: 1000,
    ctimeMs: 1000,
    ...over,
  });
  const facts = (size = 10): ContentFacts => ({
    hash: `sha256:${'0'.repeat(64)}`,
    size,
    totalLines: 1,
    crlf: 0,
    lf: 1,
    bom: false,
    validUtf8: true,
    endsWithNewline: true,
    checkpointBytes: CHECKPOINT_BYTES,
    checkpointNewlines: Float64Array.from([0]),
  });

  it('stores only when mtime and ctime are older than the margin at the scan start', () => {
    const cache = new ContentFactsCache({ minFileBytes: 0, racyMarginMs: 2000 });
    expect(cache.store(id(), id(), 2999, facts())).toBe(false); // 1.999 s old: racy
    expect(cache.store(id({ ctimeMs: 1500 }), id({ ctimeMs: 1500 }), 3200, facts())).toBe(false); // ctime racy
    expect(cache.store(id(), id(), 3000, facts())).toBe(true);
    expect(cache.lookup(id())).toBeDefined();
  });

  it('never stores a scan during which the file changed', () => {
    const cache = new ContentFactsCache({ minFileBytes: 0 });
    expect(cache.store(id(), id({ mtimeMs: 5000, ctimeMs: 5000 }), 100_000, facts())).toBe(false);
    expect(cache.store(id(), id({ size: 11 }), 100_000, facts())).toBe(false);
    expect(cache.size).toBe(0);
  });
});

describe('keys and bounds', () => {
  const base: FileIdentity = { dev: 1, ino: 2, size: 10, mtimeMs: 1000, ctimeMs: 1000 };
  const f: ContentFacts = {
    hash: `sha256:${'1'.repeat(64)}`,
    size: 10,
    totalLines: 1,
    crlf: 0,
    lf: 1,
    bom: false,
    validUtf8: true,
    endsWithNewline: true,
    checkpointBytes: CHECKPOINT_BYTES,
    checkpointNewlines: Float64Array.from([0]),
  };

  it.each(['dev', 'ino', 'size', 'mtimeMs', 'ctimeMs'] as const)('a different %s misses', (field) => {
    const cache = new ContentFactsCache({ minFileBytes: 0 });
    expect(cache.store(base, base, 1e9, f)).toBe(true);
    expect(cache.lookup({ ...base, [field]: base[field] + 0.001 })).toBeUndefined();
  });

  it('small files are not cached by default; the least recently used goes first', async () => {
    const cache = new ContentFactsCache();
    expect(cache.store(base, base, 1e9, f)).toBe(false);
    const lru = new ContentFactsCache({ minFileBytes: 0, maxEntries: 2 });
    const ids = [1, 2, 3].map((ino) => ({ ...base, ino }));
    lru.store(ids[0], ids[0], 1e9, f);
    lru.store(ids[1], ids[1], 1e9, f);
    lru.lookup(ids[0]);
    lru.store(ids[2], ids[2], 1e9, f);
    expect([lru.lookup(ids[0]), lru.lookup(ids[1]), lru.lookup(ids[2])].map(Boolean)).toEqual([true, false, true]);
  });

  it('the entries hold at most maxBytes together (least recently used goes first); bytes reports it', () => {
    const big = (n: number): ContentFacts => ({ ...f, checkpointNewlines: new Float64Array(n) });
    const one = entryBytes(big(1000));
    expect(one).toBe(8000 + 2 * f.hash.length + 256);
    const cache = new ContentFactsCache({ minFileBytes: 0, maxBytes: 2 * one + 10 });
    const ids = [1, 2, 3, 4].map((ino) => ({ ...base, ino }));
    expect(cache.store(ids[0], ids[0], 1e9, big(1000))).toBe(true);
    expect(cache.store(ids[1], ids[1], 1e9, big(1000))).toBe(true);
    expect(cache.bytes).toBe(2 * one);
    cache.lookup(ids[0]);
    expect(cache.store(ids[2], ids[2], 1e9, big(1000))).toBe(true);
    expect(ids.slice(0, 3).map((id) => Boolean(cache.lookup(id)))).toEqual([true, false, true]);
    expect(cache.bytes).toBe(2 * one);
    // Larger than the bound alone: not stored, nothing evicted for it.
    expect(cache.store(ids[3], ids[3], 1e9, big(10_000))).toBe(false);
    expect(cache.size).toBe(2);
    // A stale entry dropped by a lookup gives its bytes back; so does clear.
    expect(cache.lookup({ ...ids[0], size: 11 })).toBeUndefined();
    expect(cache.bytes).toBe(one);
    cache.clear();
    expect(cache.bytes).toBe(0);
  });

  it('identityOf takes the fields from a Stats', async () => {
    const p = tempPath();
    writeFileSync(p, 'x');
    const h = await open(p, 'r');
    const st = await h.stat();
    await h.close();
    expect(identityOf(st)).toEqual({ dev: st.dev, ino: st.ino, size: 1, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
  });
});
