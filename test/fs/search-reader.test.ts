/**
 * The content-search reader threads (src/fs/search-reader.ts). Pins:
 * - readCandidate (the per-file work): text, binary (judged on the whole file: the verdict of the former 8 KiB-then-whole
 *   test, property), too large, the required-bytes prefilter (no_match without
 *   decoding), line matching (hits, 0-based line and UTF-16 column, CRLF lines), deferred large candidates;
 * - what it refuses (unreadable): a symlink, a FIFO (never blocks), a file whose directory lies outside the roots, and
 *   a file whose parent directory was swapped for a link to outside the roots (the directory is opened O_NOFOLLOW and
 *   re-checked, and files are opened through its descriptor);
 * - the pool (the real bundled worker, dist/search-reader-worker.js): results per file in order across batches and
 *   threads; a ticket (`submit`) has its outcome synchronously once its batch is answered; a catastrophic regular expression on one file is stopped by the watchdog (that file `regex_timeout`, the
 *   others it held `fallback`), and the pool keeps serving afterwards; an unloadable worker degrades to `fallback`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { looksBinary } from '../../src/fs/text.js';
import { workerCode } from '../helpers/worker-code.js';
import { SearchReaderPool } from '../../src/fs/search-reader.js';
import {
  BatchRuns,
  batchRuns,
  NO_MATCH_OUTCOME,
  outcomesOf,
  ReplyOutcomes,
  type ReaderOptions,
  type ReadOutcome,
} from '../../src/fs/search-reader-protocol.js';
import { readCandidate } from '../../src/fs/search-reader-read.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-search-reader-')));
const root = path.join(base, 'root');
const outside = path.join(base, 'outside');
mkdirSync(path.join(root, 'd'), { recursive: true });
mkdirSync(outside);
afterAll(() => rmSync(base, { recursive: true, force: true }));

const WORKER = await workerCode('search-reader-worker');

const opts = (over: Partial<ReaderOptions> = {}): ReaderOptions => ({
  roots: [{ real: root }],
  maxFileBytes: 1_000_000,
  keepMaxBytes: 100_000,
  needle: null,
  match: null,
  ...over,
});
const scratch = () => ({ buf: Buffer.allocUnsafe(16) });
const write = (rel: string, content: string | Uint8Array) => {
  const p = path.join(root, rel);
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, content);
  return p;
};
const read = (p: string, o: ReaderOptions = opts()) => readCandidate(p, o, scratch());
const textOf = (r: ReadOutcome) => ('bytes' in r ? Buffer.from(r.bytes).toString('utf8') : null);

describe('readCandidate', () => {
  it('judges binary on the whole file alone: the same verdict as a first look at 8 KiB, then the whole', () => {
    // Around the 8 KiB boundary: UTF-8 multi-byte characters cut there, invalid bytes and NULs before and after it.
    const piece = fc.constantFrom(
      Buffer.from('a'.repeat(4093)),
      Buffer.from('é'),
      Buffer.from('😀'),
      Buffer.from([0xf0, 0x9f]),
      Buffer.from([0xff]),
      Buffer.from([0]),
      Buffer.from('x'),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (parts) => {
        const b = Buffer.concat(parts);
        const twoStep = looksBinary(b.subarray(0, 8192), b.length <= 8192) || looksBinary(b, true);
        expect(looksBinary(b, true)).toBe(twoStep);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads text, skips binary and too large files', () => {
    const t = write('d/a.txt', 'alpha\nbeta\n');
    expect(read(t).kind).toBe('text');
    expect(textOf(read(t))).toBe('alpha\nbeta\n');
    expect(read(write('d/b.bin', Buffer.from([0x61, 0, 0x62]))).kind).toBe('binary');
    expect(read(write('d/c.txt', Buffer.from([0xc3, 0x28]))).kind).toBe('binary'); // invalid UTF-8
    expect(read(write('d/big.txt', 'x'.repeat(2000)), opts({ maxFileBytes: 1000 })).kind).toBe('too_large');
  });

  it('applies the required bytes before anything is decoded or matched', () => {
    const p = write('d/n.txt', 'one\ntwo needle three\n');
    expect(read(p, opts({ needle: Buffer.from('absent') })).kind).toBe('no_match');
    expect(read(p, opts({ needle: Buffer.from('needle') })).kind).toBe('text');
  });

  it('matches lines itself: 0-based line and UTF-16 column of the first match, CRLF stripped', () => {
    const p = write('d/m.txt', 'no\r\n€€ hit hit\r\nnone\nhit$\n');
    const r = read(p, opts({ match: { source: 'hit\\$?$', flags: 'u', bounded: true } }));
    expect(r.kind).toBe('hits');
    expect(r.kind === 'hits' && r.hits).toEqual([
      [1, 7],
      [3, 0],
    ]);
    expect(textOf(r)).toBe('no\r\n€€ hit hit\r\nnone\nhit$\n');
    expect(read(p, opts({ match: { source: 'zzz', flags: 'u', bounded: false } })).kind).toBe('no_match');
    expect(read(p, opts({ match: { source: 'hit', flags: 'u', bounded: false }, keepMaxBytes: 5 })).kind).toBe(
      'deferred',
    );
  });

  it('answers fallback, without throwing, for a file on which the expression throws (backtracking stack overflow)', () => {
    // One 8,000,000-byte line: V8's regexp backtracking stack overflows on it (RangeError) for this pattern.
    const p = write('d/long.txt', `${'ab'.repeat(4_000_000)}\n`);
    const o = opts({ maxFileBytes: 10_000_000, match: { source: '^((a)|(b))*c', flags: 'u', bounded: true } });
    expect(read(p, o).kind).toBe('fallback');
    expect(read(p, opts({ maxFileBytes: 10_000_000, match: { source: 'ab', flags: 'u', bounded: true } })).kind).toBe(
      'deferred',
    );
    rmSync(p);
  });

  it('refuses a symlink, a FIFO and a file outside the roots', () => {
    const target = write('d/real.txt', 'x\n');
    symlinkSync(target, path.join(root, 'd', 'link.txt'));
    expect(read(path.join(root, 'd', 'link.txt')).kind).toBe('unreadable');
    execFileSync('mkfifo', [path.join(root, 'd', 'fifo')]);
    expect(read(path.join(root, 'd', 'fifo')).kind).toBe('unreadable');
    writeFileSync(path.join(outside, 'o.txt'), 'secret\n');
    expect(read(path.join(outside, 'o.txt')).kind).toBe('unreadable');
  });

  it('refuses a file whose parent directory was swapped for a link to outside the roots', () => {
    const p = write('swap/f.txt', 'inside\n');
    expect(textOf(read(p))).toBe('inside\n');
    mkdirSync(path.join(outside, 'swap'));
    writeFileSync(path.join(outside, 'swap', 'f.txt'), 'outside\n');
    renameSync(path.join(root, 'swap'), path.join(root, 'swap-old'));
    symlinkSync(path.join(outside, 'swap'), path.join(root, 'swap'));
    expect(read(p).kind).toBe('unreadable');
    // The same through a directory link deeper up the path.
    const deep = write('up/mid/f.txt', 'inside\n');
    renameSync(path.join(root, 'up'), path.join(root, 'up-old'));
    mkdirSync(path.join(outside, 'up', 'mid'), { recursive: true });
    writeFileSync(path.join(outside, 'up', 'mid', 'f.txt'), 'outside\n');
    symlinkSync(path.join(outside, 'up'), path.join(root, 'up'));
    expect(read(deep).kind).toBe('unreadable');
  });
});

describe('BatchRuns (the compact batch request)', () => {
  const name = fc.stringMatching(/^[^/\0]{1,12}$/).filter((n) => n !== '.' && n !== '..');
  const parent = fc.array(name, { maxLength: 4 }).map((parts) => `/${parts.join('/')}`);

  it('decodes to the runs it was given: each directory once per run, files numbered across runs', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(parent, fc.array(name, { minLength: 1, maxLength: 6 })), { maxLength: 6 }),
        (given) => {
          const runs = new BatchRuns();
          for (const [dir, names] of given) for (const n of names) runs.add(dir, n);
          const count = runs.count;
          const { runs: got, count: decoded } = batchRuns(runs.take());
          expect(decoded).toBe(count);
          expect(runs.count).toBe(0);
          // Consecutive runs of one directory are one run.
          const expected: Array<{ parent: string; names: string[]; first: number }> = [];
          let first = 0;
          for (const [dir, names] of given) {
            const last = expected[expected.length - 1];
            if (last?.parent === dir) last.names.push(...names);
            else expected.push({ parent: dir, names: [...names], first });
            first += names.length;
          }
          expect(got).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('counts a name before any directory (malformed) without putting it in a run', () => {
    expect(batchRuns('a\0\0/d\0b\0c')).toEqual({ runs: [{ parent: '/d', names: ['b', 'c'], first: 1 }], count: 3 });
    expect(batchRuns('')).toEqual({ runs: [], count: 0 });
  });
});

describe('outcomesOf (the compact batch reply)', () => {
  it('decodes one code per file, attaches bytes and hits, and answers fallback for anything missing or unknown', () => {
    const bytes = new Uint8Array([104, 105]);
    const out = outcomesOf(
      {
        id: 1,
        kinds: 'NHTBH?',
        found: [
          { index: 1, bytes, hits: [[0, 1]] },
          { index: 2, bytes },
        ],
      },
      7,
    );
    expect(out.map((o) => o.kind)).toEqual(['no_match', 'hits', 'text', 'binary', 'fallback', 'fallback', 'fallback']);
    expect(out[1]).toEqual({ kind: 'hits', bytes, hits: [[0, 1]] });
    expect(out[2]).toEqual({ kind: 'text', bytes });
  });

  it('ReplyOutcomes: one object per file however often it is asked, the shared no_match object for every no_match', () => {
    const bytes = new Uint8Array([104, 105]);
    const outcomes = new ReplyOutcomes({ id: 1, kinds: 'HNN', found: [{ index: 0, bytes, hits: [[0, 1]] }] });
    expect(outcomes.at(0)).toBe(outcomes.at(0));
    expect(outcomes.at(1)).toBe(NO_MATCH_OUTCOME);
    expect(outcomes.at(2)).toBe(NO_MATCH_OUTCOME);
    expect(outcomes.at(3)).toEqual({ kind: 'fallback' });
  });
});

describe('the pool (bundled worker)', () => {
  it('answers every file, in order, across batches and threads', async () => {
    const pool = new SearchReaderPool(2, WORKER);
    const files = Array.from({ length: 150 }, (_, i) =>
      write(`many/${String(i).padStart(3, '0')}.txt`, `file ${i}\n${i % 3 === 0 ? 'needle' : 'hay'}\n`),
    );
    const session = pool.session(
      opts({ needle: Buffer.from('needle'), match: { source: 'needle', flags: 'u', bounded: false } }),
    );
    const results = await Promise.all(files.map((f) => session.read(f)));
    results.forEach((r, i) => {
      expect(r.kind).toBe(i % 3 === 0 ? 'hits' : 'no_match');
      if (r.kind === 'hits') expect(textOf(r)).toBe(`file ${i}\nneedle\n`);
    });
  });

  it('submit: a ticket has no outcome until its batch is answered, then the same one synchronously', async () => {
    const pool = new SearchReaderPool(1, WORKER);
    const session = pool.session(
      opts({ needle: Buffer.from('needle'), match: { source: 'needle', flags: 'u', bounded: false } }),
    );
    write('t/hit.txt', 'x\nneedle\n');
    write('t/miss.txt', 'hay\n');
    const hit = session.submit(path.join(root, 't'), 'hit.txt');
    const miss = session.submit(path.join(root, 't'), 'miss.txt');
    expect([hit.outcome, miss.outcome]).toEqual([undefined, undefined]);
    const waited = await hit.wait();
    expect(hit.outcome).toBe(waited);
    expect(waited).toMatchObject({ kind: 'hits', hits: [[1, 0]] });
    expect(miss.outcome).toEqual({ kind: 'no_match' }); // same batch: answered together
  });

  it('stops a catastrophic regular expression on one file and keeps serving', async () => {
    const pool = new SearchReaderPool(1, WORKER, 300);
    const evil = write('evil/evil.txt', `${'a'.repeat(32)}!\n`);
    const fine = write('evil/fine.txt', 'aaa\n');
    const session = pool.session(opts({ match: { source: '(a+)+$', flags: 'u', bounded: true } }));
    const started = Date.now();
    const [before, stuck, after] = await Promise.all([session.read(fine), session.read(evil), session.read(fine)]);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(stuck.kind).toBe('regex_timeout');
    expect(['fallback', 'hits']).toContain(before.kind); // same batch: answered before the stall, or re-read by the caller
    expect(after.kind).toBe('fallback');
    const again = await pool.session(opts({ match: { source: 'a+', flags: 'u', bounded: true } })).read(fine);
    expect(again.kind).toBe('hits');
  });

  it('degrades to fallback when the worker fails to start, or the build embeds none', async () => {
    const p = write('d/z.txt', 'z\n');
    for (const pool of [new SearchReaderPool(1, 'throw new Error("broken worker")'), new SearchReaderPool(1, null)]) {
      expect((await pool.session(opts()).read(p)).kind).toBe('fallback');
      expect((await pool.session(opts()).read(p)).kind).toBe('fallback');
    }
  });
});
