/**
 * readRange over real temporary files (SPEC §5, §6.1). Pins:
 * - tail: tail 1 of "l1\nl2\nl3\n" is "l3\n", tail 2 is "l2\nl3\n"; tail larger than the file; no final newline;
 * - head, start_line/end_line (inclusive, with terminators), end past the file, line numbers in the result;
 * - a file without a final newline; the empty file;
 * - EOL detection (lf, crlf, mixed, none), also for a CRLF split across the 1 MiB scan chunk;
 * - BOM detection (the BOM stays in the returned bytes and in the hash);
 * - UTF-8 validity: invalid bytes, a truncated final sequence, a valid/invalid sequence across the scan chunk;
 * - a 3-byte character (€) straddling the 1024 and 4096 byte boundaries with maxBytes 1024/4096 is never split:
 *   every chunk is valid UTF-8 and the continuation offset continues exactly;
 * - a text read from a byte offset inside a character is refused (VALIDATION offset_splits_character), never U+FFFD;
 * - a cap smaller than one character still makes progress (regression: a 1-byte cap over "€" returned an empty,
 *   truncated chunk whose continuation pointed at the same offset, so following it looped forever);
 * - property (fast-check): consecutive line ranges, and reads that follow `continuation` with small caps (text and
 *   raw bytes), concatenate to the exact bytes of the file;
 * - the content hash is the whole file's, equal for full and partial reads; with the size known in advance (read_file
 *   gives fstat's), a file read in one chunk is hashed in one shot and a longer one chunk by chunk: both equal sha256;
 * - VALIDATION reason range_past_end for start_line / offset past the end.
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { bytesSource, fdSource, readRange, type RangeRequest, type RangeResult } from '../../src/fs/read-range.js';
import { ToolError } from '../../src/errors/tool-error.js';

const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-read-range-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCounter = 0;
function writeTemp(content: string | Uint8Array): string {
  const p = path.join(dir, `f${fileCounter++}`);
  writeFileSync(p, content);
  return p;
}

async function withFile<T>(
  content: string | Uint8Array,
  fn: (read: (req: RangeRequest, maxBytes?: number, textBoundaries?: boolean) => Promise<RangeResult>) => Promise<T>,
): Promise<T> {
  const p = writeTemp(content);
  const handle = await open(p, 'r');
  try {
    return await fn((req, maxBytes = 1 << 30, textBoundaries = true) =>
      readRange(handle, req, { maxBytes, textBoundaries }),
    );
  } finally {
    await handle.close();
  }
}

async function read(
  content: string | Uint8Array,
  req: RangeRequest,
  maxBytes?: number,
  textBoundaries?: boolean,
): Promise<RangeResult> {
  return withFile(content, (r) => r(req, maxBytes, textBoundaries));
}

const lines = (startLine: number, endLine: number | null = null): RangeRequest => ({
  kind: 'lines',
  startLine,
  endLine,
});
const sha = (b: string | Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const text = (r: RangeResult) => r.bytes.toString('utf8');

/**
 * Reads the whole file by following continuations: lines from line 1, then `start_line` after a cut at a line end,
 * `offset` after a cut inside a line (as read_file's truncation note tells the agent).
 */
async function readByContinuation(
  content: Uint8Array,
  maxBytes: number,
  textBoundaries: boolean,
): Promise<RangeResult[]> {
  return withFile(content, async (r) => {
    const parts: RangeResult[] = [];
    let req: RangeRequest = lines(1);
    for (let guard = 0; guard < content.length + 5; guard++) {
      const part = await r(req, maxBytes, textBoundaries);
      parts.push(part);
      if (!part.continuation) return parts;
      expect(part.truncated).toBe(true);
      expect(part.continuation.offset).toBeGreaterThan(part.startByte); // progress, always
      req = part.continuation.cut_mid_line
        ? { kind: 'bytes', offset: part.continuation.offset }
        : lines(part.continuation.start_line);
    }
    throw new Error('continuations did not reach the end of the file');
  });
}

describe('tail', () => {
  const L3 = 'l1\nl2\nl3\n';
  it.each([
    [1, 'l3\n', 3, 3],
    [2, 'l2\nl3\n', 2, 3],
    [3, L3, 1, 3],
    [10, L3, 1, 3],
  ])('tail %i of "l1\\nl2\\nl3\\n"', async (n, expected, startLine, endLine) => {
    const r = await read(L3, { kind: 'tail', lines: n });
    expect(text(r)).toBe(expected);
    expect([r.startLine, r.endLine]).toEqual([startLine, endLine]);
    expect(r.endByte).toBe(Buffer.byteLength(L3));
    expect(r.truncated).toBe(false);
    expect(r.continuation).toBeNull();
  });

  it.each([
    ['l1\nl2\nl3', 1, 'l3'],
    ['l1\nl2\nl3', 2, 'l2\nl3'],
    ['\n', 1, '\n'],
    ['\n\n', 1, '\n'],
    ['x', 1, 'x'],
    ['', 1, ''],
    ['a\r\nb\r\n', 1, 'b\r\n'],
  ])('tail of %j (%i lines) is %j', async (content, n, expected) => {
    expect(text(await read(content, { kind: 'tail', lines: n }))).toBe(expected);
  });

  it('tail that the cap cuts continues at the next line', async () => {
    const content = 'aaaa\nbbbb\ncccc\ndddd\n';
    const r = await read(content, { kind: 'tail', lines: 3 }, 12);
    expect(text(r)).toBe('bbbb\ncccc\n');
    expect(r.truncated).toBe(true);
    expect(r.continuation).toEqual({ start_line: 4, offset: 15, cut_mid_line: false });
    const rest = await read(content, lines(4));
    expect(text(rest)).toBe('dddd\n');
  });
});

describe('head and line ranges', () => {
  const content = 'one\ntwo\nthree\nfour\nfive\n';
  it.each([
    [{ kind: 'head', lines: 1 }, 'one\n', 1, 1],
    [{ kind: 'head', lines: 2 }, 'one\ntwo\n', 1, 2],
    [{ kind: 'head', lines: 99 }, content, 1, 5],
    [lines(1), content, 1, 5],
    [lines(2, 3), 'two\nthree\n', 2, 3],
    [lines(3, 3), 'three\n', 3, 3],
    [lines(4, 100), 'four\nfive\n', 4, 5],
    [lines(5), 'five\n', 5, 5],
  ] as Array<[RangeRequest, string, number, number]>)('%j', async (req, expected, startLine, endLine) => {
    const r = await read(content, req);
    expect(text(r)).toBe(expected);
    expect([r.startLine, r.endLine]).toEqual([startLine, endLine]);
    expect(r.totalLines).toBe(5);
    expect(content.slice(r.startByte, r.endByte)).toBe(expected);
  });

  it('a file without a final newline: the last line has no terminator and still counts', async () => {
    const r = await read('a\nb\nc', lines(3));
    expect(text(r)).toBe('c');
    expect(r.totalLines).toBe(3);
    expect([r.startLine, r.endLine]).toEqual([3, 3]);
    expect(text(await read('a\nb\nc', lines(2, 3)))).toBe('b\nc');
    expect((await read('a\nb\nc', lines(1))).eol).toBe('lf');
  });

  it('the empty file: zero lines, an empty range at line 1, eol none, no BOM, valid', async () => {
    const r = await read('', lines(1));
    expect(r.bytes.length).toBe(0);
    expect(r).toMatchObject({
      size: 0,
      totalLines: 0,
      startLine: 1,
      endLine: 0,
      startByte: 0,
      endByte: 0,
      eol: 'none',
      bom: false,
      validUtf8: true,
      truncated: false,
      continuation: null,
      contentHash: sha(''),
    });
    expect((await read('', { kind: 'head', lines: 3 })).bytes.length).toBe(0);
    expect((await read('', { kind: 'tail', lines: 3 })).bytes.length).toBe(0);
    expect((await read('', { kind: 'bytes', offset: 0 })).bytes.length).toBe(0);
  });

  it('a byte offset starts mid-line and reports the line it lies on', async () => {
    const r = await read('abc\ndef\n', { kind: 'bytes', offset: 5 });
    expect(text(r)).toBe('ef\n');
    expect(r.startLine).toBe(2);
    const atLineStart = await read('abc\ndef\n', { kind: 'bytes', offset: 4 });
    expect(atLineStart.startLine).toBe(2);
    const atEnd = await read('abc\ndef\n', { kind: 'bytes', offset: 8 });
    expect(atEnd.bytes.length).toBe(0);
  });
});

describe('EOL, BOM, UTF-8 validity', () => {
  it.each([
    ['a\nb\n', 'lf'],
    ['a\r\nb\r\n', 'crlf'],
    ['a\r\nb\n', 'mixed'],
    ['a\nb\r\nc', 'mixed'],
    ['abc', 'none'],
    ['a\rb\r', 'none'],
    ['', 'none'],
  ])('%j is %s', async (content, eol) => {
    const r = await read(content, lines(1));
    expect(r.eol).toBe(eol);
    expect(text(r)).toBe(content); // raw: no EOL normalization
  });

  it('a CRLF split across the 1 MiB scan chunk is still CRLF', async () => {
    const content = `${'a'.repeat(1024 * 1024 - 1)}\r\nb\r\n`;
    const r = await read(content, lines(2));
    expect(r.eol).toBe('crlf');
    expect(text(r)).toBe('b\r\n');
    expect(r.totalLines).toBe(2);
  });

  it('BOM: detected, kept in the returned bytes and hashed', async () => {
    const content = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('hello\nworld\n')]);
    const r = await read(content, lines(1));
    expect(r.bom).toBe(true);
    expect(r.validUtf8).toBe(true);
    expect(r.bytes.equals(content)).toBe(true);
    expect(r.contentHash).toBe(sha(content));
    const second = await read(content, lines(2));
    expect(second.bom).toBe(true);
    expect(text(second)).toBe('world\n');
    expect((await read('hello\n', lines(1))).bom).toBe(false);
  });

  it.each([
    ['a lone 0xff', Buffer.from([0x61, 0xff, 0x0a])],
    ['a truncated final sequence', Buffer.from([0x61, 0xe2, 0x82])],
    ['a lone continuation byte', Buffer.from([0x80, 0x0a])],
    ['an overlong encoding', Buffer.from([0xc0, 0xaf])],
    ['a UTF-16 surrogate', Buffer.from([0xed, 0xa0, 0x80])],
    ['Latin-1 text', Buffer.from('café\n', 'latin1')],
  ])('invalid UTF-8 (%s): validUtf8 false', async (_name, content) => {
    const r = await read(content, lines(1));
    expect(r.validUtf8).toBe(false);
    expect(r.contentHash).toBe(sha(content));
  });

  it('a valid character across the 1 MiB scan chunk is valid; an invalid sequence there is not', async () => {
    const pad = Buffer.alloc(1024 * 1024 - 1, 0x61);
    expect((await read(Buffer.concat([pad, Buffer.from('€\n')]), lines(1))).validUtf8).toBe(true);
    expect((await read(Buffer.concat([pad, Buffer.from([0xe2, 0x41, 0x0a])]), lines(1))).validUtf8).toBe(false);
  });

  it('a NUL byte is valid UTF-8 (binary detection for search is looksBinary, not this)', async () => {
    expect((await read(Buffer.from([0x61, 0x00, 0x62]), lines(1))).validUtf8).toBe(true);
  });
});

describe('multi-byte characters are never split', () => {
  // € is E2 82 AC. Put it so that it starts 1 or 2 bytes before the cap: the cut must go before it.
  it.each([
    [1024, 1022],
    [1024, 1023],
    [4096, 4094],
    [4096, 4095],
  ])('cap %i, € at byte %i', async (cap, at) => {
    const content = Buffer.concat([
      Buffer.alloc(at, 0x61),
      Buffer.from('€'),
      Buffer.alloc(cap * 2, 0x62),
      Buffer.from('€€€'),
      Buffer.from('\n'),
    ]);
    const parts = await readByContinuation(content, cap, true);
    expect(parts[0].bytes.length).toBe(at); // cut right before the €
    expect(parts[0].continuation).toEqual({ start_line: 1, offset: at, cut_mid_line: true });
    expect(parts[1].startByte).toBe(at);
    expect(parts[1].bytes.subarray(0, 3).toString()).toBe('€');
    for (const p of parts) {
      expect(isUtf8(p.bytes)).toBe(true);
      expect(p.bytes.length).toBeLessThanOrEqual(cap);
    }
    for (let i = 1; i < parts.length; i++) expect(parts[i].startByte).toBe(parts[i - 1].endByte);
    expect(Buffer.concat(parts.map((p) => p.bytes)).equals(content)).toBe(true);
  });

  it('in a multi-line file, the cut goes to the last complete line, else inside the line on a character boundary', async () => {
    const content = `short\n${'€'.repeat(400)}\n`; // the second line is 1201 bytes
    const first = await read(content, lines(1), 1024);
    expect(text(first)).toBe('short\n');
    expect(first.continuation).toEqual({ start_line: 2, offset: 6, cut_mid_line: false });
    const second = await read(content, lines(2), 1024);
    expect(second.bytes.length).toBe(1023); // 341 whole €, not 1024
    expect(isUtf8(second.bytes)).toBe(true);
    expect(second.continuation).toEqual({ start_line: 2, offset: 6 + 1023, cut_mid_line: true });
  });

  it.each([1, 2, 3])('a cap of %i byte(s), below one character, still makes progress (regression)', async (cap) => {
    const content = Buffer.from('€😀a€\n');
    const parts = await readByContinuation(content, cap, true);
    for (const p of parts) expect(isUtf8(p.bytes)).toBe(true);
    expect(Buffer.concat(parts.map((p) => p.bytes)).equals(content)).toBe(true);
  });

  it('a text read from an offset inside a character is VALIDATION offset_splits_character (regression: it returned U+FFFD)', async () => {
    for (const offset of [2, 3]) {
      const error = await read('a€b', { kind: 'bytes', offset }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).details).toMatchObject({ reason: 'offset_splits_character', field: 'offset' });
    }
    expect(text(await read('a€b', { kind: 'bytes', offset: 1 }))).toBe('€b');
    expect(text(await read('a€b', { kind: 'bytes', offset: 4 }))).toBe('b');
    // Raw byte reads may start anywhere.
    expect((await read('a€b', { kind: 'bytes', offset: 2 }, 100, false)).bytes).toEqual(
      Buffer.from([0x82, 0xac, 0x62]),
    );
  });

  it('raw byte reads (base64) cut exactly at the cap', async () => {
    const content = Buffer.from('€€€');
    const r = await read(content, { kind: 'bytes', offset: 0 }, 4, false);
    expect(r.bytes.length).toBe(4);
    expect(r.continuation).toEqual({ start_line: 1, offset: 4, cut_mid_line: true });
  });
});

describe('hash', () => {
  it('covers the whole file, equal for full and partial reads', async () => {
    const content = 'alpha\nbeta\ngamma\ndelta\n';
    await withFile(content, async (r) => {
      const full = await r(lines(1));
      expect(full.contentHash).toBe(sha(content));
      expect(full.contentHash).toMatch(/^sha256:[0-9a-f]{64}$/);
      for (const part of [
        await r(lines(2, 3)),
        await r({ kind: 'head', lines: 1 }),
        await r({ kind: 'tail', lines: 1 }),
        await r({ kind: 'bytes', offset: 7 }),
        await r(lines(1), 5),
      ]) {
        expect(part.contentHash).toBe(full.contentHash);
        expect(part.size).toBe(Buffer.byteLength(content));
        expect(part.totalLines).toBe(4);
      }
    });
  });
});

describe('range_past_end', () => {
  it.each([
    ['a\nb\n', lines(3)],
    ['a\nb\n', lines(99, 100)],
    ['a\nb', lines(3)],
    ['', lines(2)],
    ['a\nb\n', { kind: 'bytes', offset: 5 }],
  ] as Array<[string, RangeRequest]>)('%j %j is VALIDATION range_past_end', async (content, req) => {
    const error = await read(content, req).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe('VALIDATION');
    const totalLines = content === '' ? 0 : content.split('\n').length - (content.endsWith('\n') ? 1 : 0);
    expect((error as ToolError).details).toMatchObject({
      reason: 'range_past_end',
      total_lines: totalLines,
      size: Buffer.byteLength(content),
    });
  });

  it('the last line and the end offset are not past the end', async () => {
    expect(text(await read('a\nb\n', lines(2)))).toBe('b\n');
    expect((await read('a\nb\n', { kind: 'bytes', offset: 4 })).bytes.length).toBe(0);
  });
});

describe('property: ranges concatenate to the exact bytes', () => {
  // Pieces that stress the boundaries: line terminators of both kinds, lone CR, 2-, 3- and 4-byte characters, BOM.
  const piece = fc.constantFrom('a', 'bc', '\n', '\r\n', '\r', 'é', '€', '😀', '\uFEFF', ' ', 'xyz\n');
  const textFile = fc.array(piece, { maxLength: 60 }).map((ps) => Buffer.from(ps.join('')));

  it('consecutive line ranges', async () => {
    await fc.assert(
      fc.asyncProperty(
        textFile,
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 40 }),
        async (content, widths) => {
          await withFile(content, async (r) => {
            const total = (await r(lines(1))).totalLines;
            const parts: Buffer[] = [];
            let start = 1;
            for (const w of widths) {
              if (start > total) break;
              const part = await r(lines(start, start + w - 1));
              expect(part.startLine).toBe(start);
              expect(part.endLine).toBe(Math.min(start + w - 1, total));
              parts.push(part.bytes);
              start += w;
            }
            if (start <= total) parts.push((await r(lines(start))).bytes);
            expect(Buffer.concat(parts).equals(content)).toBe(true);
          });
        },
      ),
      { numRuns: 150 },
    );
  });

  it('following continuation with small caps (text: every chunk valid UTF-8)', async () => {
    await fc.assert(
      fc.asyncProperty(textFile, fc.integer({ min: 1, max: 12 }), async (content, cap) => {
        const parts = await readByContinuation(content, cap, true);
        for (const p of parts) expect(isUtf8(p.bytes)).toBe(true);
        for (let i = 1; i < parts.length; i++) expect(parts[i].startByte).toBe(parts[i - 1].endByte);
        expect(Buffer.concat(parts.map((p) => p.bytes)).equals(content)).toBe(true);
        expect(new Set(parts.map((p) => p.contentHash))).toEqual(new Set([sha(content)]));
      }),
      { numRuns: 150 },
    );
  });

  it('following continuation with small caps (raw bytes)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), fc.integer({ min: 1, max: 16 }), async (raw, cap) => {
        const content = Buffer.from(raw);
        const parts = await readByContinuation(content, cap, false);
        expect(Buffer.concat(parts.map((p) => p.bytes)).equals(content)).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});

describe('the content hash with the size known in advance (one chunk or several)', () => {
  it.each([0, 1, 4096, 1024 * 1024 - 1, 1024 * 1024, 1024 * 1024 + 1, 3 * 1024 * 1024 + 5])('%i bytes', async (n) => {
    const content = Buffer.alloc(n);
    for (let i = 0; i < n; i++) content[i] = i % 64 === 63 ? 0x0a : 0x61 + (i % 26);
    const p = writeTemp(content);
    const handle = await open(p, 'r');
    try {
      const stats = await handle.stat();
      const r = await readRange(handle, { kind: 'head', lines: 1 }, { maxBytes: 1 << 30, textBoundaries: true, stats });
      expect(r.contentHash).toBe(sha(content));
      expect(r.size).toBe(n);
    } finally {
      await handle.close();
    }
  });
});

describe('readRange over bytes already read (bytesSource, issue #19: scanned in place)', () => {
  const requests: RangeRequest[] = [
    lines(1),
    lines(2, 3),
    { kind: 'head', lines: 2 },
    { kind: 'tail', lines: 2 },
    { kind: 'bytes', offset: 3 },
  ];

  it('answers as the file handle does, for any content, request and cap', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 300 }).map((b) => b.map((x) => (x % 7 === 0 ? 0x0a : x % 5 === 0 ? 0x0d : x))),
        fc.constantFrom(...requests),
        fc.integer({ min: 1, max: 400 }),
        async (content, req, maxBytes) => {
          const p = writeTemp(content);
          const stats = statSync(p);
          const settle = (f: () => Promise<RangeResult>) =>
            f().then(
              (r) => ({ ...r, bytes: [...r.bytes] }),
              (e: unknown) => (e as ToolError).code,
            );
          const fromBytes = await settle(() =>
            readRange(bytesSource(Buffer.from(content), stats), req, { maxBytes, textBoundaries: true, stats }),
          );
          const fromFile = await withFile(content, (r) => settle(() => r(req, maxBytes)));
          expect(fromBytes).toEqual(fromFile);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('reads a descriptor synchronously (fdSource) with the answers of the file handle', async () => {
    const content = Buffer.from('alpha\r\nbeta\ngamma');
    const p = writeTemp(content);
    const stats = statSync(p);
    const fd = openSync(p, 'r');
    try {
      for (const req of [lines(1), lines(2, 3), lines(3, 3)]) {
        const fromFd = await readRange(fdSource(fd), req, { maxBytes: 1 << 20, textBoundaries: true, stats });
        const fromBytes = await readRange(bytesSource(content, stats), req, {
          maxBytes: 1 << 20,
          textBoundaries: true,
        });
        expect({ ...fromFd, bytes: fromFd.bytes.toString() }).toEqual({
          ...fromBytes,
          bytes: fromBytes.bytes.toString(),
        });
      }
      expect((await fdSource(fd).stat()).size).toBe(content.length);
    } finally {
      closeSync(fd);
    }
  });

  it('hands on the whole content as read, and copies a part (a short range never keeps the whole alive)', async () => {
    const content = Buffer.alloc(14); // not from the shared pool: its ArrayBuffer is its own
    content.write('one\ntwo\nthree\n');
    const p = writeTemp(content);
    const stats = statSync(p);
    const whole = await readRange(bytesSource(content, stats), lines(1), { maxBytes: 1 << 20, textBoundaries: true });
    expect(whole.bytes.buffer).toBe(content.buffer);
    expect(whole.contentHash).toBe(sha(content));
    const part = await readRange(bytesSource(content, stats), lines(2, 2), { maxBytes: 1 << 20, textBoundaries: true });
    expect(part.bytes.toString()).toBe('two\n');
    expect(part.bytes.buffer).not.toBe(content.buffer);
  });
});

describe('a file rewritten between the hashing pass and the range read', () => {
  // A stand-in for a file another process rewrites in place (no real file can be rewritten at an exact point between
  // two reads of one call); the real-server race is test/attacks/occ-reread.test.ts.
  const versions = ['a'.repeat(1_500_000) + '\n', 'bb\n'.repeat(600_000)];
  function changingSource(changeAfterReads: number) {
    let reads = 0;
    let v = 0;
    const current = () => Buffer.from(versions[v]);
    const source = {
      read: (buffer: Buffer, offset: number, length: number, position: number) => {
        const bytes = current();
        const n = Math.max(0, Math.min(length, bytes.length - position));
        bytes.copy(buffer, offset, position, position + n);
        if (++reads >= changeAfterReads) {
          v = 1 - v; // the writer's turn
          reads = 0;
        }
        return Promise.resolve({ bytesRead: n, buffer });
      },
      stat: () =>
        Promise.resolve({ size: current().length, mtimeMs: v, ctimeMs: v } as unknown as import('node:fs').Stats),
    };
    return source as unknown as Parameters<typeof readRange>[0];
  }

  it('never pairs one version’s hash with another’s bytes: read again, then IO_ERROR changed_during_read', async () => {
    // Changing on every third read: each attempt's range read sees another version than its pass.
    const error = await readRange(
      changingSource(3),
      { kind: 'lines', startLine: 1, endLine: 1 },
      { maxBytes: 1 << 22, textBoundaries: true },
    )
      .then(() => null)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe('IO_ERROR');
    expect((error as ToolError).details).toEqual({ reason: 'changed_during_read' });
    expect((error as ToolError).retryable).toBe(true);
  });

  it('a file that changed once is read again, and the answer is one version', async () => {
    const r = await readRange(
      changingSource(4),
      { kind: 'lines', startLine: 1, endLine: 1 },
      { maxBytes: 1 << 22, textBoundaries: true },
    );
    const version = versions.find((t) => t.startsWith(r.bytes.toString('latin1')));
    expect(version).toBeDefined();
    expect(r.contentHash).toBe(`sha256:${createHash('sha256').update(version!).digest('hex')}`);
    expect(r.size).toBe(Buffer.byteLength(version!));
  });
});
