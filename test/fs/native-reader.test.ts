/**
 * The native addon of content search (native/fs_tools_native.c, src/fs/native-reader.ts; issue #19). Pins:
 * - it is built into dist/ wherever a C compiler exists (the global setup runs scripts/bundle.mjs), and loads;
 * - differential: `readBatch` gives the same outcome for every file through the addon as through the JavaScript path
 *   (kind, bytes, hits), on random trees of text, binary (NUL, every kind of invalid UTF-8), empty, oversized and
 *   unreadable files, FIFOs, symlinks (inside, outside, dangling), directories, names with odd bytes, a directory
 *   that is a link, a directory outside the roots, missing files, files whose size fstat reports as 0 (/proc), with
 *   and without a needle and a line expression, and an output buffer too small for the files (it grows and resumes);
 * - its binary verdict equals looksBinary (NUL, buffer.isUtf8) and its byte search Buffer#indexOf, on random and
 *   adversarial bytes (the search stays linear on input built against it);
 * - what it refuses: a name that is empty, ".", "..", or holds "/" or NUL throws a TypeError (nothing opened, no
 *   descriptor left), a symlink as the final name, a FIFO (without blocking), a directory, a device;
 * - a swapped directory cannot redirect it: names resolve in the directory the descriptor holds, not the path;
 * - bounds: the output buffer grows only to what a file within the cap needs; a file over the cap is not read;
 * - no descriptor is left open after a run, whatever the files were.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { isUtf8 } from 'node:buffer';
import {
  chmodSync,
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { looksBinary } from '../../src/fs/text.js';
import {
  NATIVE_CODES,
  nativeBuffers,
  nativeReadRun,
  packByteSet,
  type NativeAddon,
} from '../../src/fs/native-reader.js';
import { loadNativeAddon } from '../../src/fs/native-load.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';
import { closeDir, readBatch, readerState } from '../../src/fs/search-reader-read.js';
import type { ReaderOptions, ReadOutcome } from '../../src/fs/search-reader-protocol.js';

const hasCompiler = spawnSync('cc', ['--version']).status === 0;
const loaded = loadBuiltAddon()?.addon ?? null;

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-native-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let serial = 0;
const freshDir = (prefix: string) => {
  const d = path.join(base, `${prefix}-${serial++}`);
  mkdirSync(d, { recursive: true });
  return d;
};
const openFds = () => readdirSync('/proc/self/fd').length;
const dirFd = (d: string) => openSync(d, constants.O_RDONLY | constants.O_DIRECTORY);

it('is built into dist/ and loads wherever a C compiler exists', () => {
  expect(process.platform).toBe('linux');
  if (hasCompiler) expect(loaded).not.toBeNull();
  expect(loadNativeAddon(new URL('file:///nonexistent/fs_tools_native.node'), 'a'.repeat(64)).loaded).toBeNull();
});

const addon = loaded as NativeAddon;
describe.runIf(loaded !== null)('the addon', () => {
  /** One run of `names` in `dir`, as [code, text] pairs. */
  const run = (dir: string, names: string[], maxFileBytes = 1_000_000, needle: string | null = null) => {
    const fd = dirFd(dir);
    try {
      const out: Array<[number, string | null]> = [];
      nativeReadRun(
        addon,
        fd,
        names,
        maxFileBytes,
        needle === null ? null : Buffer.from(needle),
        nativeBuffers(),
        (i, r) => {
          out[i] = [r.code, r.code === NATIVE_CODES.candidate ? r.bytes.toString('utf8') : null];
        },
      );
      return out;
    } finally {
      closeSync(fd);
    }
  };

  it('refuses a name that is not one directory entry, before opening anything', () => {
    const d = freshDir('names');
    writeFileSync(path.join(d, 'a'), 'a\n');
    mkdirSync(path.join(d, 'sub'));
    writeFileSync(path.join(d, 'sub', 'f'), 'f\n');
    const fd = dirFd(d);
    try {
      const before = openFds();
      for (const bad of ['', '.', '..', 'sub/f', '/etc/passwd', 'a\0b', 'a/', '../a', '\0']) {
        const meta = new Float64Array(6).fill(-1);
        expect(() => addon.readFiles(fd, [bad], 0, 1e6, null, Buffer.alloc(64), meta)).toThrow(TypeError);
        expect(meta[0]).toBe(-1); // nothing answered for it
        // A refused name stops the run where it stands: the names after it are not read either.
        expect(() => addon.readFiles(fd, ['a', bad], 0, 1e6, null, Buffer.alloc(64), meta)).toThrow(TypeError);
      }
      expect(openFds()).toBe(before);
      // Malformed arguments are refused too.
      const meta = new Float64Array(3);
      expect(() => addon.readFiles(-1, ['a'], 0, 1, null, Buffer.alloc(1), meta)).toThrow(TypeError);
      expect(() => addon.readFiles(fd, 'a' as unknown as string[], 0, 1, null, Buffer.alloc(1), meta)).toThrow(
        TypeError,
      );
      expect(() => addon.readFiles(fd, [1] as unknown as string[], 0, 1, null, Buffer.alloc(1), meta)).toThrow(
        TypeError,
      );
      expect(() => addon.readFiles(fd, ['a', 'a'], 0, 1, null, Buffer.alloc(1), meta)).toThrow(TypeError); // meta short
      expect(() => addon.readFiles(fd, ['a'], 0, -1, null, Buffer.alloc(1), meta)).toThrow(TypeError);
      expect(() => addon.readFiles(fd, ['a'], 0, 1, 'x' as unknown as Uint8Array, Buffer.alloc(1), meta)).toThrow(
        TypeError,
      );
      // The output may not overlap where codes go or the needle it is compared with.
      const shared = new ArrayBuffer(4096);
      const overMeta = new Float64Array(shared, 0, 3);
      expect(() => addon.readFiles(fd, ['a'], 0, 1e6, null, new Uint8Array(shared, 16, 64), overMeta)).toThrow(
        TypeError,
      );
      const needle = new Uint8Array(shared, 100, 4);
      expect(() => addon.readFiles(fd, ['a'], 0, 1e6, needle, new Uint8Array(shared, 64, 64), meta)).toThrow(TypeError);
      expect(addon.readFiles(fd, ['a'], 0, 1e6, needle, new Uint8Array(shared, 200, 64), meta)).toBe(1); // disjoint
      expect(() => addon.readFiles(fd, ['a'], 0, 1, null, new Float64Array(1) as unknown as Uint8Array, meta)).toThrow(
        TypeError,
      );
    } finally {
      closeSync(fd);
    }
  });

  it('never follows a final symlink, never blocks on a FIFO, reads regular files only', () => {
    const d = freshDir('kinds');
    const outside = freshDir('kinds-outside');
    writeFileSync(path.join(d, 'real.txt'), 'real\n');
    writeFileSync(path.join(outside, 'secret.txt'), 'SECRET\n');
    symlinkSync(path.join(d, 'real.txt'), path.join(d, 'link-in'));
    symlinkSync(path.join(outside, 'secret.txt'), path.join(d, 'link-out'));
    symlinkSync('missing', path.join(d, 'dangling'));
    symlinkSync(outside, path.join(d, 'dirlink'));
    execFileSync('mkfifo', [path.join(d, 'fifo')]);
    mkdirSync(path.join(d, 'dir'));
    symlinkSync('/dev/zero', path.join(d, 'zero-link'));
    const before = openFds();
    const got = run(d, ['real.txt', 'link-in', 'link-out', 'dangling', 'dirlink', 'fifo', 'dir', 'zero-link', 'nope']);
    expect(got).toEqual([
      [NATIVE_CODES.candidate, 'real\n'],
      ...Array.from({ length: 8 }, () => [NATIVE_CODES.unreadable, null]),
    ]);
    // A device (opened through /dev itself) is not a regular file either.
    expect(run('/dev', ['zero', 'null'])).toEqual([
      [NATIVE_CODES.unreadable, null],
      [NATIVE_CODES.unreadable, null],
    ]);
    expect(openFds()).toBe(before);
  });

  it('resolves names in the directory the descriptor holds: a directory swapped for a link cannot redirect it', () => {
    const d = freshDir('swap');
    const outside = freshDir('swap-outside');
    mkdirSync(path.join(d, 'sub'));
    writeFileSync(path.join(d, 'sub', 'f.txt'), 'INSIDE\n');
    writeFileSync(path.join(outside, 'f.txt'), 'OUTSIDE\n');
    const fd = dirFd(path.join(d, 'sub'));
    try {
      renameSync(path.join(d, 'sub'), path.join(d, 'sub-moved'));
      symlinkSync(outside, path.join(d, 'sub'));
      const got: string[] = [];
      nativeReadRun(addon, fd, ['f.txt'], 1e6, null, nativeBuffers(), (_, r) => {
        got.push(r.code === NATIVE_CODES.candidate ? r.bytes.toString('utf8') : `code ${r.code}`);
      });
      expect(got).toEqual(['INSIDE\n']);
    } finally {
      closeSync(fd);
    }
  });

  it('grows its output only to what a file within the cap needs, and never reads a file over the cap', () => {
    const d = freshDir('bounds');
    writeFileSync(path.join(d, 'small.txt'), 'a'.repeat(100));
    writeFileSync(path.join(d, 'mid.txt'), 'b'.repeat(900));
    writeFileSync(path.join(d, 'huge.txt'), 'c'.repeat(5_000_000));
    writeFileSync(path.join(d, 'at-cap.txt'), 'd'.repeat(1000));
    writeFileSync(path.join(d, 'over-cap.txt'), 'e'.repeat(1001));
    const buffers = { out: Buffer.alloc(8), meta: new Float64Array(3), names: Buffer.alloc(0) };
    const got: Array<[number, number]> = [];
    const fd = dirFd(d);
    try {
      const names = ['small.txt', 'huge.txt', 'mid.txt', 'small.txt', 'at-cap.txt', 'over-cap.txt'];
      nativeReadRun(addon, fd, names, 1000, null, buffers, (i, r) => {
        got[i] = [r.code, r.code === NATIVE_CODES.candidate ? r.bytes.length : -1];
      });
    } finally {
      closeSync(fd);
    }
    expect(got).toEqual([
      [NATIVE_CODES.candidate, 100],
      [NATIVE_CODES.too_large, -1],
      [NATIVE_CODES.candidate, 900],
      [NATIVE_CODES.candidate, 100],
      [NATIVE_CODES.candidate, 1000],
      [NATIVE_CODES.too_large, -1],
    ]);
    expect(buffers.out.length).toBe(1000);
    expect(buffers.meta.length).toBe(18);
  });

  it('applies the binary test and the required bytes as the JavaScript path does', () => {
    const d = freshDir('prefilter');
    writeFileSync(path.join(d, 'hit.txt'), 'one\ntwo needle\n');
    writeFileSync(path.join(d, 'miss.txt'), 'one\ntwo\n');
    writeFileSync(path.join(d, 'nul.txt'), 'needle\0');
    writeFileSync(path.join(d, 'bad.txt'), Buffer.from([0x6e, 0xc3, 0x28]));
    writeFileSync(path.join(d, 'empty.txt'), '');
    writeFileSync(path.join(d, 'short.txt'), 'ne');
    const names = ['hit.txt', 'miss.txt', 'nul.txt', 'bad.txt', 'empty.txt', 'short.txt'];
    expect(run(d, names, 1e6, 'needle')).toEqual([
      [NATIVE_CODES.candidate, 'one\ntwo needle\n'],
      [NATIVE_CODES.no_match, null],
      [NATIVE_CODES.binary, null],
      [NATIVE_CODES.binary, null],
      [NATIVE_CODES.no_match, null],
      [NATIVE_CODES.no_match, null],
    ]);
    // An empty needle is found everywhere, as Buffer#indexOf finds it.
    expect(run(d, ['miss.txt', 'empty.txt'], 1e6, '').map((r) => r[0])).toEqual([
      NATIVE_CODES.candidate,
      NATIVE_CODES.candidate,
    ]);
  });

  it('applies the required set (anyOf) as matched() does, and refuses a malformed set before opening anything', () => {
    const d = freshDir('set');
    writeFileSync(path.join(d, 'alice.txt'), 'x\n// TODO(alice): a\n');
    writeFileSync(path.join(d, 'bob.txt'), '// TODO(bob): b');
    writeFileSync(path.join(d, 'needle-only.txt'), '// TODO(carol): c\n');
    writeFileSync(path.join(d, 'none.txt'), 'nothing\n');
    writeFileSync(path.join(d, 'nul.txt'), 'TODO(alice):\0');
    const names = ['alice.txt', 'bob.txt', 'needle-only.txt', 'none.txt', 'nul.txt'];
    const fd = dirFd(d);
    const codes = (needle: string | null, set: Uint8Array | null) => {
      const got: number[] = [];
      nativeReadRun(
        addon,
        fd,
        names,
        1e6,
        needle === null ? null : Buffer.from(needle),
        nativeBuffers(),
        (i, r) => {
          got[i] = r.code;
        },
        set,
      );
      return got;
    };
    const { candidate: C, no_match: N, binary: B } = NATIVE_CODES;
    try {
      const set = packByteSet([Buffer.from('TODO(alice):'), Buffer.from('TODO(bob):')]);
      expect(codes('TODO(', set)).toEqual([C, C, N, N, B]);
      expect(codes(null, set)).toEqual([C, C, N, N, B]);
      expect(codes('TODO(', null)).toEqual([C, C, C, N, B]);
      // The needle and the set both hold: a file with one of the set but not the needle is no_match.
      expect(codes('x', set)).toEqual([C, N, N, N, B]);
      // An empty set rules out every text file, as holdsAny over no strings does; an empty string is everywhere.
      expect(codes(null, packByteSet([]))).toEqual([N, N, N, N, B]);
      expect(codes(null, packByteSet([Buffer.alloc(0)]))).toEqual([C, C, C, C, B]);
      const before = openFds();
      const meta = new Float64Array(3 * names.length).fill(-1);
      const malformed = [
        new Uint8Array([1, 0, 0]), // a length cut short
        new Uint8Array([5, 0, 0, 0, 0x61]), // a string longer than what is left
        Uint8Array.from([...packByteSet([Buffer.from('ab')]), 0]), // a byte left over
        new Uint8Array([0xff, 0xff, 0xff, 0xff]),
      ];
      for (const bad of malformed) {
        expect(() => addon.readFiles(fd, names, 0, 1e6, null, Buffer.alloc(64), meta, bad)).toThrow(TypeError);
      }
      expect(() =>
        addon.readFiles(fd, names, 0, 1e6, null, Buffer.alloc(64), meta, 'ab' as unknown as Uint8Array),
      ).toThrow(TypeError);
      // The output may not overlap the set either.
      const shared = new ArrayBuffer(4096);
      const inShared = new Uint8Array(shared, 100, 8);
      inShared.set(packByteSet([Buffer.from('ab')]));
      expect(() => addon.readFiles(fd, names, 0, 1e6, null, new Uint8Array(shared, 64, 64), meta, inShared)).toThrow(
        TypeError,
      );
      expect(Array.from(meta)).toEqual(new Array<number>(3 * names.length).fill(-1)); // nothing answered
      expect(openFds()).toBe(before);
    } finally {
      closeSync(fd);
    }
  });

  it('judges text exactly where looksBinary does (NUL, and UTF-8 as buffer.isUtf8 says), at any offset', () => {
    const piece = fc.oneof(
      fc.uint8Array({ maxLength: 12 }),
      fc.constantFrom(
        ...[
          [0],
          [0xc0, 0x80],
          [0xc1, 0xbf],
          [0xc2, 0x80],
          [0xdf, 0xbf],
          [0xe0, 0x80, 0x80],
          [0xe0, 0x9f, 0xbf],
          [0xe0, 0xa0, 0x80],
          [0xed, 0x9f, 0xbf],
          [0xed, 0xa0, 0x80],
          [0xee, 0x80, 0x80],
          [0xef, 0xbf, 0xbf],
          [0xf0, 0x8f, 0xbf, 0xbf],
          [0xf0, 0x90, 0x80, 0x80],
          [0xf4, 0x8f, 0xbf, 0xbf],
          [0xf4, 0x90, 0x80, 0x80],
          [0xf5, 0x80, 0x80, 0x80],
          [0xff],
          [0x80],
          [0xe2, 0x82],
          [0xf0, 0x9f, 0x98],
        ].map((b) => Uint8Array.from(b)),
      ),
      // ASCII runs of every length around the 8-, 16- and 64-byte strides.
      fc
        .integer({ min: 1, max: 140 })
        .map((n) => Buffer.from('abcdefghijklmnopqrstuvwxyz0123456789'.repeat(4).slice(0, n))),
      fc.constantFrom(Buffer.from('é€😀')),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 6 }), (parts) => {
        const b = Buffer.concat(parts);
        expect(addon.isText(b)).toBe(!looksBinary(b, true));
        expect(addon.isText(b)).toBe(isUtf8(b) && !b.includes(0));
      }),
      { numRuns: 5000 },
    );
    expect(addon.isText(new Uint8Array(0))).toBe(true);
    // One byte that is not ASCII-without-NUL at every offset of an ASCII text, across several 64-byte steps.
    const ascii = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz\n'.repeat(8).slice(0, 260));
    for (const bad of [0x00, 0x80, 0xc3, 0xff, 0x7f, 0x01]) {
      for (let at = 0; at < ascii.length; at++) {
        const b = Buffer.from(ascii);
        b[at] = bad;
        expect(addon.isText(b)).toBe(isUtf8(b) && !b.includes(0));
      }
    }
  });

  it('finds the required bytes exactly where Buffer#indexOf does, in linear time on hostile input', () => {
    const small = fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b.map((x) => 97 + (x % 3)))); // "abc"
    const needle = fc.oneof(
      fc.uint8Array({ maxLength: 6 }).map((b) => Buffer.from(b.map((x) => 97 + (x % 3)))),
      fc.constantFrom(Buffer.from('needle_7f3a9c'), Buffer.from('TODO('), Buffer.from('é'), Buffer.alloc(0)),
      fc.uint8Array({ minLength: 60, maxLength: 80 }).map((b) => Buffer.from(b.map((x) => 97 + (x % 2)))),
    );
    fc.assert(
      fc.property(small, needle, fc.nat(3), (h, n, cut) => {
        const hay = Buffer.concat([h, n.subarray(0, n.length - cut)]);
        expect(addon.contains(hay, n)).toBe(hay.indexOf(n) !== -1);
      }),
      { numRuns: 5000 },
    );
    // A needle whose rarest byte recurs every few bytes and whose prefix keeps matching: memmem takes over.
    const period = 'Zaaaaaaaaaaaaaaa';
    const hostile = Buffer.from(period.repeat(400_000)); // 6.4 MB
    for (const n of [period.repeat(3) + 'Y', period.repeat(60) + 'Y', 'aaZ', 'Zaaaaaaaaaaaaaab']) {
      const started = performance.now();
      expect(addon.contains(hostile, Buffer.from(n))).toBe(hostile.indexOf(n) !== -1);
      expect(performance.now() - started).toBeLessThan(2000);
    }
  });

  it('a run with a name the addon refuses is read by the JavaScript path, with the same outcome', () => {
    // basename('/') is '' (never a walk entry, but readBatch must not trust that): the addon throws, nothing opened.
    const options: ReaderOptions = {
      roots: [{ real: '/' }],
      maxFileBytes: 1e6,
      keepMaxBytes: 1e5,
      needle: null,
      match: null,
    };
    expect(outcomes(['/'], options, addon)).toEqual([{ kind: 'unreadable' }]);
    expect(outcomes(['/'], options, null)).toEqual([{ kind: 'unreadable' }]);
  });

  it('reads a file whose size fstat reports as 0 as the JavaScript path does: as empty', () => {
    const dir = `/proc/${process.pid}`;
    const files = [`${dir}/status`, `${dir}/cmdline`];
    const options: ReaderOptions = {
      roots: [{ real: '/proc' }],
      maxFileBytes: 1e6,
      keepMaxBytes: 1e5,
      needle: null,
      match: null,
    };
    expect(outcomes(files, options, null)).toEqual(outcomes(files, options, addon));
    expect(outcomes(files, options, addon)[0]).toEqual({ kind: 'text', bytes: '' });
  });
});

/** readBatch's outcomes, with bytes as text (latin1: every byte kept) for comparison. */
function outcomes(files: string[], options: ReaderOptions, with_: NativeAddon | null, outBytes?: number) {
  const state = readerState(with_);
  if (outBytes !== undefined) state.buffers.out = Buffer.alloc(outBytes);
  const got: Array<Record<string, unknown>> = [];
  readBatch(files, options, state, (i, r: ReadOutcome) => {
    got[i] = 'bytes' in r ? { ...r, bytes: Buffer.from(r.bytes).toString('latin1') } : { ...r };
  });
  closeDir(state.dir);
  expect(got.length).toBe(files.length);
  return got;
}

describe.runIf(loaded !== null)('differential: the addon and the JavaScript path give the same outcomes', () => {
  const textPiece = fc.constantFrom(
    'needle',
    'needl',
    'x',
    'hello world',
    'é',
    '😀',
    '\n',
    '\r\n',
    'TODO(alice): ',
    ' ',
  );
  const badPiece = fc.constantFrom(
    ...[[0], [0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x80]].map((b) =>
      Uint8Array.from(b),
    ),
  );
  const content = fc.oneof(
    { weight: 5, arbitrary: fc.array(textPiece, { maxLength: 40 }).map((p) => Buffer.from(p.join(''))) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.array(textPiece, { maxLength: 10 }), badPiece, fc.array(textPiece, { maxLength: 10 }))
        .map(([a, bad, b]) => Buffer.concat([Buffer.from(a.join('')), bad, Buffer.from(b.join(''))])),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)) },
    { weight: 1, arbitrary: fc.constant(Buffer.alloc(0)) },
    // Exactly at and one byte over the size caps below.
    {
      weight: 3,
      arbitrary: fc.constantFrom(100, 101, 1000, 1001).map((n) => Buffer.from('needle\n'.padEnd(n, 'q'))),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 150, max: 3000 }).map((n) => Buffer.from(`needle ${'z'.repeat(n)}\n`)),
    },
  );
  const kind = fc.constantFrom(
    'file',
    'file',
    'file',
    'file',
    'fifo',
    'link-in',
    'link-out',
    'dangling',
    'dir',
    'unreadable',
    'missing',
  );
  const name = fc.constantFrom(
    'a.txt',
    'b.ts',
    'with space',
    'new\nline',
    'é.txt',
    '-dash',
    'back\\slash',
    "quote'",
    ' lead',
    '.hidden',
    '*',
    'x'.repeat(255),
    'bad\ufffdbyte',
    'z',
  );
  const entry = fc.record({ dir: fc.integer({ min: 0, max: 3 }), name, kind, content });
  const optionsArb = fc.record({
    needle: fc.constantFrom(null, 'needle', 'é', 'hello world', 'zzzz'),
    match: fc.constantFrom(null, 'needle', 'l+o', 'TODO\\((alice|bob)\\):'),
    // The required set (LineMatcher.anyOf): tested by Buffer#indexOf on the JavaScript path, the addon's `contains`
    // on the native one.
    anyOf: fc.constantFrom(null, ['needle', 'zzzz'], ['hello', 'é'], ['TODO(alice):', 'TODO(bob):']),
    maxFileBytes: fc.constantFrom(100, 1000, 1_000_000),
    keepMaxBytes: fc.constantFrom(10, 100_000),
    outBytes: fc.constantFrom(undefined, 0, 16, 200),
  });

  it('on random trees', () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 24 }), optionsArb, (entries, o) => {
        const root = freshDir('diff');
        const outside = freshDir('diff-outside');
        writeFileSync(path.join(outside, 'target.txt'), 'needle outside\n');
        // dir 0, 1: plain; 2: a link to dir 0 (not verifiable); 3: outside the roots.
        const dirs = [path.join(root, 'd0'), path.join(root, 'd1'), path.join(root, 'd2'), path.join(outside, 'd3')];
        mkdirSync(dirs[0]);
        mkdirSync(dirs[1]);
        symlinkSync(dirs[0], dirs[2]);
        mkdirSync(dirs[3]);
        const files: string[] = [];
        for (const e of entries) {
          const p = path.join(dirs[e.dir], e.name);
          files.push(p);
          if (e.dir === 2) continue;
          rmSync(p, { recursive: true, force: true });
          if (e.kind === 'file' || e.kind === 'unreadable') {
            writeFileSync(p, e.content);
            if (e.kind === 'unreadable') chmodSync(p, 0);
          } else if (e.kind === 'fifo') execFileSync('mkfifo', [p]);
          else if (e.kind === 'link-in') {
            writeFileSync(path.join(root, 'linked.txt'), e.content);
            symlinkSync(path.join(root, 'linked.txt'), p);
          } else if (e.kind === 'link-out') symlinkSync(path.join(outside, 'target.txt'), p);
          else if (e.kind === 'dangling') symlinkSync('nowhere', p);
          else if (e.kind === 'dir') mkdirSync(p);
        }
        // A name with a byte that is not UTF-8 (the walk lists it as U+FFFD: neither path can open that spelling).
        writeFileSync(Buffer.from(`${dirs[0]}/bad\xffbyte`, 'latin1'), 'needle\n');
        const options: ReaderOptions = {
          roots: [{ real: root }],
          maxFileBytes: o.maxFileBytes,
          keepMaxBytes: o.keepMaxBytes,
          needle: o.needle === null ? null : Buffer.from(o.needle),
          match: o.match === null ? null : { source: o.match, flags: 'u', bounded: false },
          anyOf: o.anyOf === null ? null : o.anyOf.map((s) => Buffer.from(s)),
        };
        const before = openFds();
        const viaJs = outcomes(files, options, null);
        const viaNative = outcomes(files, options, addon, o.outBytes);
        expect(viaNative).toEqual(viaJs);
        expect(openFds()).toBe(before);
      }),
      { numRuns: 100 },
    );
  });
});
