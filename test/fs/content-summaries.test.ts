/**
 * Content summaries (native/fs_tools_native_summary.c, src/fs/content-summaries.ts; docs/tools.md "Content
 * summaries"): what a later search skips must be exactly what it would have found by reading. Pins, on real files:
 * - after every kind of change the next search sees it: a same-size rewrite (after the racy window and inside it),
 *   rename over, truncate, append, a text file made binary and a binary one made text, a write through another hard
 *   link, a file unlinked and recreated (its inode number may be reused), a file replaced by a link or a FIFO;
 * - a file read within the racy window (its mtime or ctime less than 2 s old) gets no summary;
 * - summaries on and off (and the JavaScript path, which has none) answer identically on a mixed tree (text, binary,
 *   empty, short, large, over the cap; needles of every length, required sets, no needle), and the summaries did
 *   answer files (the skip count grows) — only where a directory was read before (the first search builds nothing);
 * - the bound: with a lowered bound the table is emptied rather than grown, and holds at most that;
 * - a name outside the walk's list is never answered: a summary answers only the names a run was given.
 * Through the real server: repeated searches on a mixed tree answer as a server without the addon does, page for page.
 */
import {
  appendFileSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  clearContentSummaries,
  contentSummaryStats,
  setContentSummaries,
  setContentSummaryBounds,
} from '../../src/fs/content-summaries.js';
import type { NativeAddon } from '../../src/fs/native-reader.js';
import type { ReaderOptions } from '../../src/fs/search-reader-protocol.js';
import { closeDir, readBatch, readerState } from '../../src/fs/search-reader-read.js';
import { connect } from '../helpers/server.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const addon = loadBuiltAddon()?.addon ?? null;
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-summaries-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const RACY_WAIT_MS = 2100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let serial = 0;
function freshDir(): string {
  const d = path.join(base, `t${serial++}`);
  mkdirSync(d, { recursive: true });
  return d;
}

function options(root: string, needle: string | null, anyOf?: string[]): ReaderOptions {
  return {
    roots: [{ real: root }],
    maxFileBytes: 200_000,
    keepMaxBytes: 1e6,
    needle: needle === null ? null : Buffer.from(needle),
    anyOf: anyOf ? anyOf.map((s) => Buffer.from(s)) : null,
    match: null,
  };
}

/** The outcomes of one batch, as [kind, text of the bytes] per file. */
function search(files: string[], opts: ReaderOptions, a: NativeAddon | null): Array<[string, string | null]> {
  const state = readerState(a);
  const out: Array<[string, string | null]> = [];
  try {
    readBatch(files, opts, state, (i, o) => {
      out[i] = [o.kind, 'bytes' in o ? Buffer.from(o.bytes).toString('latin1') : null];
    });
  } finally {
    closeDir(state.dir);
  }
  return out;
}

const stats = () => contentSummaryStats(addon)!;

describe.runIf(addon !== null && process.platform === 'linux')('content summaries', () => {
  beforeEach(() => {
    setContentSummaries(true, addon);
    setContentSummaryBounds(1e9, 1e12, addon);
    clearContentSummaries(addon);
  });

  it('answer as a read would after every kind of change, inside and after the racy window', async () => {
    const root = freshDir();
    const filler = (n: number) => 'x'.repeat(n);
    const names = {
      rewrite: `${filler(20)}\n`,
      rewriteRacy: `${filler(20)}\n`,
      renameOver: 'plain text\n',
      truncate: 'has needle_abc here\n',
      append: 'no match yet\n',
      toBinary: 'text that turns\n',
      toText: 'bin\0ary\0content\n',
      hardLink: 'linked text\n',
      recreate: 'before recreate\n',
      toSymlink: 'a file before\n',
      toFifo: 'a file before too\n',
      steady: `${'lorem ipsum '.repeat(200)}\n`,
    };
    for (const [n, c] of Object.entries(names)) writeFileSync(path.join(root, n), c);
    const other = path.join(base, `other-link-${serial++}`);
    linkSync(path.join(root, 'hardLink'), other);
    writeFileSync(path.join(base, 'outside-target'), 'needle_abc outside\n');
    const files = Object.keys(names).map((n) => path.join(root, n));
    const opts = options(root, 'needle_abc');
    const expectSame = () => {
      const js = search(files, opts, null);
      expect(search(files, opts, addon)).toEqual(js);
      return js;
    };
    await sleep(RACY_WAIT_MS);
    expectSame(); // remembers the directory
    expectSame(); // builds the summaries
    const built = stats();
    expect(built.entries).toBe(Object.keys(names).length);
    const before = built.skipped;
    expect(expectSame().filter(([k]) => k !== 'no_match' && k !== 'binary')).toEqual([['text', names.truncate]]);
    // Every file but the one holding the needle answered by its summary.
    expect(stats().skipped - before).toBe(Object.keys(names).length - 1);

    // Every change at once, then a search inside the racy window (the timestamps are fresh).
    writeFileSync(path.join(root, 'rewrite'), `needle_abc${filler(10)}\n`);
    writeFileSync(path.join(root, 'rewriteRacy'), `needle_abc${filler(10)}\n`);
    writeFileSync(path.join(root, 'renameOver.tmp'), 'now needle_abc\n');
    renameSync(path.join(root, 'renameOver.tmp'), path.join(root, 'renameOver'));
    truncateSync(path.join(root, 'truncate'), 0);
    appendFileSync(path.join(root, 'append'), 'needle_abc\n');
    writeFileSync(path.join(root, 'toBinary'), 'text\0that turns\n');
    writeFileSync(path.join(root, 'toText'), 'needle_abc text!\n');
    writeFileSync(other, 'needle_abc!\n'); // through the other name: same inode
    const oldIno = statSync(path.join(root, 'recreate')).ino;
    unlinkSync(path.join(root, 'recreate'));
    writeFileSync(path.join(root, 'recreate'), 'after needle_abc\n');
    const reused = statSync(path.join(root, 'recreate')).ino === oldIno;
    unlinkSync(path.join(root, 'toSymlink'));
    symlinkSync(path.join(base, 'outside-target'), path.join(root, 'toSymlink'));
    unlinkSync(path.join(root, 'toFifo'));
    execFileSync('mkfifo', [path.join(root, 'toFifo')]);
    const changed = expectSame();
    const kinds = Object.fromEntries(Object.keys(names).map((n, i) => [n, changed[i][0]]));
    expect(kinds).toMatchObject({
      rewrite: 'text',
      rewriteRacy: 'text',
      renameOver: 'text',
      truncate: 'no_match',
      append: 'text',
      toBinary: 'binary',
      toText: 'text',
      hardLink: 'text',
      recreate: 'text',
      toSymlink: 'unreadable',
      toFifo: 'unreadable',
      steady: 'no_match',
    });
    // A same-size rewrite within the racy window of that one, then after it: still seen.
    writeFileSync(path.join(root, 'rewriteRacy'), `${filler(10)}needle_abc\n`);
    expect(search(files, opts, addon)[1]).toEqual(['text', `${filler(10)}needle_abc\n`]);
    await sleep(RACY_WAIT_MS);
    expectSame();
    expectSame();
    writeFileSync(path.join(root, 'rewrite'), `${filler(20)}\n`); // same size again, summary of the needle version
    expect(search(files, opts, addon)[0]).toEqual(['no_match', null]);
    writeFileSync(path.join(root, 'rewrite'), `needle_abc${filler(10)}\n`);
    await sleep(RACY_WAIT_MS);
    expect(search(files, opts, addon)[0]).toEqual(['text', `needle_abc${filler(10)}\n`]);
    expect(typeof reused).toBe('boolean');
  });

  it('keep no summary of a file read within the racy window', () => {
    const root = freshDir();
    const files = ['a', 'b', 'c'].map((n) => path.join(root, n));
    for (const f of files) writeFileSync(f, `fresh ${f}\n`);
    const opts = options(root, 'needle_abc');
    const before = stats();
    search(files, opts, addon);
    search(files, opts, addon);
    search(files, opts, addon);
    expect(stats().entries).toBe(0);
    expect(stats().stored).toBe(before.stored);
    expect(stats().directories).toBe(before.directories + 1);
  });

  it('answer identically on and off on a mixed tree, for every kind of query, and skip only from the second read of a directory', async () => {
    const root = freshDir();
    const files: string[] = [];
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const words = ['alpha', 'beta', 'gamma', 'needle_abc', 'TODO(bob):', 'ab', 'é', 'zz'];
    for (let d = 0; d < 4; d++) {
      mkdirSync(path.join(root, `d${d}`));
      for (let i = 0; i < 30; i++) {
        const f = path.join(root, `d${d}`, `f${i}`);
        const kind = i % 10;
        let body: Buffer;
        if (kind === 0) body = Buffer.alloc(0);
        else if (kind === 1) body = Buffer.from([0x61, 0, 0x62]);
        else if (kind === 2) body = Buffer.from([0xff, 0xfe, 0x61]);
        else if (kind === 3)
          body = Buffer.from('x'.repeat(90_000)); // no bitset (too large to summarize)
        else if (kind === 4)
          body = Buffer.from('y'.repeat(250_000)); // over the cap
        else {
          const n = Math.floor(rnd() * 3000);
          const parts: string[] = [];
          for (let k = 0; k < n / 6; k++)
            parts.push(rnd() < 0.02 ? words[Math.floor(rnd() * words.length)] : String(rnd()).slice(2, 7));
          body = Buffer.from(parts.join(rnd() < 0.5 ? ' ' : '\n'));
        }
        writeFileSync(f, body);
        files.push(f);
      }
    }
    const queries: Array<[string | null, string[] | undefined]> = [
      ['needle_abc', undefined],
      ['ab', undefined],
      [null, undefined],
      ['', undefined],
      [null, ['TODO(bob):', 'gamma']],
      [null, ['TODO(bob):', 'zz']],
      ['alpha', ['beta', 'é']],
      ['needle_abc', []],
      ['12345678', undefined],
    ];
    await sleep(RACY_WAIT_MS);
    const expected = queries.map(([n, s]) => search(files, options(root, n, s), null));
    const first = stats();
    expect(search(files, options(root, 'needle_abc'), addon)).toEqual(expected[0]);
    expect(stats().entries).toBe(first.entries); // a first read of a directory builds nothing
    expect(stats().directories).toBe(first.directories + 4);
    for (let round = 0; round < 3; round++) {
      queries.forEach(([n, s], q) => expect(search(files, options(root, n, s), addon)).toEqual(expected[q]));
    }
    const on = stats();
    expect(on.entries).toBe(files.length - 12); // every file but the twelve over the cap
    expect(on.skipped - first.skipped).toBeGreaterThan(files.length);
    setContentSummaries(false, addon);
    queries.forEach(([n, s], q) => expect(search(files, options(root, n, s), addon)).toEqual(expected[q]));
    expect(stats().skipped).toBe(on.skipped);
    expect(stats().entries).toBe(0);
  });

  it('are built only where an earlier search (another search number) read the directory', async () => {
    const root = freshDir();
    const files = ['a', 'b'].map((n) => path.join(root, n));
    for (const f of files) writeFileSync(f, `old text ${f}\n`);
    await sleep(RACY_WAIT_MS);
    const one = { ...options(root, 'needle_abc'), search: 41 };
    const before = stats();
    for (let k = 0; k < 3; k++) search(files, one, addon); // three runs of one search: the directory is new to it
    expect(stats().stored).toBe(before.stored);
    search(files, { ...one, search: 42 }, addon);
    expect(stats().stored).toBe(before.stored + 2);
    search(files, { ...one, search: 43 }, addon);
    expect(stats().skipped).toBe(before.skipped + 2);
  });

  it('hold no more than their bound: the table is emptied, not grown', async () => {
    const root = freshDir();
    const files: string[] = [];
    for (let i = 0; i < 40; i++) {
      const f = path.join(root, `f${i}`);
      writeFileSync(f, `${i} ${'lorem ipsum dolor '.repeat(40)}\n`);
      files.push(f);
    }
    await sleep(RACY_WAIT_MS);
    const opts = options(root, 'needle_abc');
    const empty = setContentSummaryBounds(10, 1024, addon)!;
    for (let k = 0; k < 3; k++) search(files, opts, addon);
    const after = stats();
    expect(after.cleared).toBeGreaterThan(empty.cleared);
    expect(after.entries).toBeLessThanOrEqual(10);
    // Fixed parts (the indexes) plus at most the bitset bound and the entries' records.
    expect(after.bytes - empty.bytes).toBeLessThanOrEqual(1024 + 10 * 48);
    expect(search(files, opts, addon)).toEqual(search(files, opts, null));
  });

  it('answer only the names a run is given', async () => {
    const root = freshDir();
    writeFileSync(path.join(root, 'listed'), 'plain\n');
    writeFileSync(path.join(root, 'unlisted'), 'plain too\n');
    await sleep(RACY_WAIT_MS);
    const opts = options(root, 'needle_abc');
    for (let k = 0; k < 3; k++) search([path.join(root, 'listed'), path.join(root, 'unlisted')], opts, addon);
    const before = stats().skipped;
    expect(search([path.join(root, 'listed')], opts, addon)).toEqual([['no_match', null]]);
    expect(stats().skipped - before).toBe(1);
  });
});

describe.runIf(addon !== null && process.platform === 'linux')('content summaries in the server', () => {
  it('repeated searches answer as a server without the addon, page for page', async () => {
    const root = freshDir();
    for (let d = 0; d < 3; d++) {
      mkdirSync(path.join(root, `d${d}`));
      for (let i = 0; i < 40; i++) {
        const body =
          i % 7 === 0
            ? Buffer.from([0, 1, 2])
            : Buffer.from(
                `line ${i}\n${i % 5 === 0 ? 'needle_abc found\n' : 'nothing\n'}${'filler '.repeat(i * 10)}\n`,
              );
        writeFileSync(path.join(root, `d${d}`, `f${i}.txt`), body);
      }
    }
    await sleep(RACY_WAIT_MS);
    const pages = async (args: string[], query: Record<string, unknown>) => {
      const client = await connect('modern', { args: [root, ...args] });
      try {
        const all: unknown[] = [];
        for (let round = 0; round < 4; round++) {
          let cursor: string | undefined;
          do {
            const r = await client.call('search_files', {
              path: root,
              ...query,
              max_results: 7,
              ...(cursor ? { cursor } : {}),
            });
            expect(r.isError).toBeFalsy();
            const s = r.structuredContent as { next_cursor?: string | null };
            all.push({ ...s, next_cursor: s.next_cursor ? 'more' : null });
            cursor = s.next_cursor ?? undefined;
          } while (cursor);
        }
        return all;
      } finally {
        await client.close();
      }
    };
    for (const query of [
      { query: 'needle_abc' },
      { query: 'needle_(abc|xyz)', regex: true },
      { query: 'NEEDLE_ABC', case_sensitive: false },
    ]) {
      const withSummaries = await pages([], query);
      const js = await pages(['--native=off'], query);
      expect(withSummaries).toEqual(js);
      expect(JSON.stringify(withSummaries)).toContain('needle_abc found');
    }
    // The names the walk listed are all a search reads: nothing of the tree is left open.
    expect(readdirSync(root)).toHaveLength(3);
  });
});
