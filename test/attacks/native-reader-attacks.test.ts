/**
 * Attacks on content search's native addon (issue #19 review: native/fs_tools_native.c, src/fs/native-reader.ts,
 * `readBatch` in src/fs/search-reader-read.ts), against the real server over stdio and the real primitive:
 * - differential through the server: the same search_files answers (matches, counts, truncation, skip counts, binary
 *   detection) with the addon and with `--native=off`, on a tree of text, binary, invalid UTF-8, empty, at-cap,
 *   over-cap, larger-than-the-output-buffer files, odd names (newline, invalid UTF-8), symlinks in and out, a hard link
 *   to a file outside the roots (read by both, as a hard link is the same file), a secret file, a FIFO, and more than
 *   one batch of files; no byte of the secret or of the outside file's other content in any answer;
 * - a FIFO with a writer blocked on it: neither path opens it (the writer stays blocked, nothing is read from it);
 * - a shipped addon that is not the one built (a corrupt file): the installed layout (cli.js beside native/) refuses
 *   it at start-up (its sha256 differs from the digest in the bundle), says so on stderr, and falls back to the
 *   JavaScript path with the same answers and nothing on stdout but MCP (the client would fail to parse);
 * - JavaScript run by the call itself (an accessor on the names array) that detaches or shrinks a buffer: a TypeError,
 *   not a write into freed memory;
 * - a file shorter than its reported size (sysfs): the same short read as the JavaScript path;
 * - descriptors: hundreds of batches of refused and failing names leave no descriptor open;
 * - distribution: the built addon needs nothing newer from glibc than Node 20 itself (glibc 2.28), so the shipped
 *   binary loads on every Linux that Node 20 runs on instead of falling back silently.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  constants,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBuffers, nativeReadRun, packByteSet, type NativeAddon } from '../../src/fs/native-reader.js';
import { nativeAddonUrl } from '../../src/fs/native-load.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';
import { closeDir, readBatch, readerState } from '../../src/fs/search-reader-read.js';
import type { ReaderOptions } from '../../src/fs/search-reader-protocol.js';
import { CLI, connect, type TestClient } from '../helpers/server.js';

const DIST = new URL('../../dist/', import.meta.url);
const ADDON = fileURLToPath(nativeAddonUrl(DIST));
const addon = loadBuiltAddon()?.addon ?? null;
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-native-attack-')));
const root = path.join(base, 'root');
const outside = path.join(base, 'outside');
const CAP = 400_000;
const children: ChildProcess[] = [];
/** The answers of `--native=off` (the first case), for the fallback case to compare with. */
let offAnswers: unknown[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
  rmSync(base, { recursive: true, force: true });
});

function makeTree(): void {
  mkdirSync(path.join(root, 'sub', 'deep'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  const w = (rel: string, data: string | Buffer) => writeFileSync(path.join(root, rel), data);
  w('a.txt', 'needle one\nhay\nneedle two\n');
  w('empty.txt', '');
  w('nul.txt', 'needle\0after\n');
  w('bad-utf8.txt', Buffer.concat([Buffer.from('needle '), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('\n')]));
  w('cut-utf8.txt', Buffer.concat([Buffer.from('needle \n'), Buffer.from([0xf0, 0x9f, 0x98])]));
  w('emoji.txt', 'needle 😀 é\n');
  w('at-cap.txt', 'needle\n'.padEnd(CAP, 'q'));
  w('over-cap.txt', 'needle\n'.padEnd(CAP + 1, 'q'));
  // Larger than the reader's first output buffer (256 KiB): it grows and resumes at this file.
  w('big.txt', `${'x'.repeat(300_000)}\nneedle at the end\n`);
  w('short.txt', 'nee');
  w('name\nwith newline.txt', 'needle in an odd name\n');
  writeFileSync(Buffer.from(`${root}/bad\xffname.txt`, 'latin1'), 'needle in a name that is not UTF-8\n');
  w('.env', 'needle=TOPSECRETVALUE\n');
  writeFileSync(path.join(outside, 'target.txt'), 'needle OUTSIDECONTENT\n');
  symlinkSync(path.join(outside, 'target.txt'), path.join(root, 'link-out.txt'));
  symlinkSync(path.join(root, 'a.txt'), path.join(root, 'link-in.txt'));
  writeFileSync(path.join(outside, 'hard.txt'), 'needle through a hard link\n');
  linkSync(path.join(outside, 'hard.txt'), path.join(root, 'hard.txt'));
  spawnSync('mkfifo', [path.join(root, 'fifo.txt')]);
  // More than one batch (256 files) across directories.
  for (let i = 0; i < 300; i++) {
    w(path.join(i % 2 ? 'sub' : 'sub/deep', `f${i}.txt`), i % 7 === 0 ? `line\nneedle ${i}\n` : `hay ${i}\n`);
  }
}

/** The tool answers that depend on the read path. */
async function answers(client: TestClient, all = true) {
  const calls: Array<Record<string, unknown>> = [
    { query: 'needle' },
    { query: 'ne+dle \\d+', regex: true, max_results: 7 },
    ...(all
      ? [
          { query: 'needle', output_mode: 'count' },
          { query: 'NEEDLE', case_sensitive: false, context_lines: 1, path: 'sub' },
          { query: 'nee' },
        ]
      : []),
  ];
  const out: unknown[] = [];
  for (const args of calls) {
    const r = await client.call('search_files', args);
    const result = (r.isError ? JSON.parse(r.content[0].text!) : r.structuredContent) as Record<string, unknown>;
    // A continuation cursor is signed with its process's own key: two servers give the same page different cursors.
    if (typeof result.next_cursor === 'string') result.next_cursor = '<cursor>';
    out.push(result);
  }
  return out;
}

describe('content search through the addon: the same answers as --native=off', () => {
  beforeAll(makeTree);

  it.runIf(existsSync(ADDON))(
    'matches, counts, truncation, skip counts; no secret or outside byte; a blocked FIFO writer stays blocked',
    async () => {
      // A writer blocked on opening the FIFO: an open for reading (by either path) would release it.
      const marker = path.join(base, 'fifo-writer-ran');
      const writer = spawn('sh', ['-c', `echo needle > '${path.join(root, 'fifo.txt')}'; : > '${marker}'`], {
        stdio: 'ignore',
      });
      children.push(writer);
      const results: unknown[][] = [];
      for (const native of [[], ['--native=off']]) {
        const client = await connect('modern', { args: [`--max-search-file-bytes=${CAP}`, root, ...native] });
        try {
          results.push(await answers(client));
          if (native.length > 0) offAnswers = results[1];
          expect(client.stderr()).not.toMatch(/warning|INTERNAL|incident/i);
        } finally {
          await client.close();
        }
      }
      expect(results[0]).toEqual(results[1]);
      const text = JSON.stringify(results[0]);
      expect(text).not.toContain('TOPSECRETVALUE');
      expect(text).not.toContain('OUTSIDECONTENT');
      expect(text).toContain('needle through a hard link'); // the JavaScript path reads it too: the same file
      expect(text).toContain('needle at the end');
      expect(text).not.toContain('nul.txt'); // binary (a NUL byte after the needle)
      expect(text).not.toContain('utf8.txt'); // binary (not UTF-8: a surrogate, a cut sequence)
      const first = results[0][0] as { matches: Array<{ path: string }>; skipped?: Record<string, number> };
      expect(first.skipped).toMatchObject({ too_large: 1 });
      expect(first.matches.some((m) => m.path === 'at-cap.txt')).toBe(true);
      expect(first.matches.some((m) => m.path.startsWith('fifo'))).toBe(false);
      expect(existsSync(marker)).toBe(false);
      expect(writer.exitCode).toBeNull();
    },
    60_000,
  );

  it.runIf(existsSync(ADDON))(
    'an installed layout whose addon does not load: the JavaScript path, nothing on stdout but MCP',
    async () => {
      const expected = offAnswers.slice(0, 2);
      expect(expected).toHaveLength(2);
      // The installed package's layout (package.json beside dist/: the server reads its version there), with a
      // corrupt addon where the server loads it at start-up: its digest is not the recorded one, so it is not loaded.
      const pkg = path.join(base, 'pkg');
      const dist = path.join(pkg, 'dist');
      cpSync(fileURLToPath(DIST), dist, { recursive: true });
      cpSync(fileURLToPath(new URL('../package.json', DIST)), path.join(pkg, 'package.json'));
      writeFileSync(fileURLToPath(nativeAddonUrl(new URL(`file://${dist}/`))), '\x7fELF\x02\x01\x01 truncated');
      const client = await connect('modern', {
        command: process.execPath,
        args: [path.join(dist, path.basename(CLI)), `--max-search-file-bytes=${CAP}`, root],
      });
      try {
        expect(await answers(client, false)).toEqual(expected);
        expect(client.stderr()).not.toMatch(/warning|INTERNAL|incident/i);
        expect(client.stderr()).toMatch(/native addon .* not the one this build recorded/);
        expect(readFileSync(`/proc/${client.pid()}/maps`, 'utf8')).not.toContain('fs_tools_native.node');
      } finally {
        await client.close();
      }
    },
    60_000,
  );
});

describe.runIf(addon !== null)('the primitive', () => {
  it('leaves no descriptor open after hundreds of batches of refused and failing names', () => {
    const d = mkdtempSync(path.join(base, 'fds-'));
    writeFileSync(path.join(d, 'ok.txt'), 'needle\n');
    symlinkSync('/etc/hostname', path.join(d, 'link'));
    mkdirSync(path.join(d, 'dir'));
    spawnSync('mkfifo', [path.join(d, 'fifo')]);
    const count = () => readdirSync('/proc/self/fd').length;
    const fd = openSync(d, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      const before = count();
      const names = ['ok.txt', 'link', 'dir', 'fifo', 'missing', 'x'.repeat(300), 'é'.repeat(600)];
      let seen = 0;
      for (let i = 0; i < 500; i++) {
        nativeReadRun(addon!, fd, names, 4, Buffer.from('needle'), nativeBuffers(1), () => seen++);
        expect(() =>
          addon!.readFiles(fd, ['ok.txt', '../ok.txt'], 0, 1e6, null, Buffer.alloc(16), new Float64Array(6)),
        ).toThrow(TypeError);
      }
      expect(seen).toBe(500 * names.length);
      expect(count()).toBe(before);
    } finally {
      closeSync(fd);
    }
  });
});

const SYSFS = '/sys/kernel/mm/transparent_hugepage';
it.runIf(addon !== null && existsSync(`${SYSFS}/enabled`))(
  'a file shorter than the size fstat reports (sysfs says 4096): read to its end, as the JavaScript path reads it',
  () => {
    const files = [`${SYSFS}/enabled`, `${SYSFS}/defrag`, `${SYSFS}/missing`];
    const options: ReaderOptions = {
      roots: [{ real: '/sys' }],
      maxFileBytes: 1e6,
      keepMaxBytes: 1e5,
      needle: null,
      match: null,
    };
    const read = (withAddon: NativeAddon | null) => {
      const state = readerState(withAddon);
      const got: unknown[] = [];
      readBatch(files, options, state, (i, r) => {
        got[i] = 'bytes' in r ? { kind: r.kind, text: Buffer.from(r.bytes).toString('latin1') } : r;
      });
      closeDir(state.dir);
      return got;
    };
    const native = read(addon);
    expect(native).toEqual(read(null));
    expect(native[0]).toMatchObject({ kind: 'text', text: expect.stringMatching(/^[^\0]{1,200}\n$/) });
    expect(native[2]).toEqual({ kind: 'unreadable' });
  },
);

describe.runIf(addon !== null)('the primitive: JavaScript run by the call itself', () => {
  // napi_get_element runs an accessor on the names array: one that detaches or shrinks a buffer frees (or cuts) the
  // memory the addon was writing to. Before the fix the call went on writing there (a use after free under ASan).
  const d = mkdtempSync(path.join(base, 'accessor-'));
  writeFileSync(path.join(d, 'a.txt'), 'needle hello\n');
  const namesThen = (act: () => void): string[] => {
    const names = ['a.txt'];
    Object.defineProperty(names, 1, {
      enumerable: true,
      get() {
        act();
        return 'a.txt';
      },
    });
    names.push('a.txt');
    return names;
  };
  const detach = (b: ArrayBufferLike) => structuredClone(b, { transfer: [b as ArrayBuffer] });
  it('a buffer detached or shrunk by an accessor: a TypeError, not a write into freed memory', () => {
    const fd = openSync(d, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      const out = new Uint8Array(1 << 16);
      expect(() =>
        addon!.readFiles(
          fd,
          namesThen(() => detach(out.buffer)),
          0,
          1e6,
          null,
          out,
          new Float64Array(9),
        ),
      ).toThrow(TypeError);
      const meta = new Float64Array(9);
      expect(() =>
        addon!.readFiles(
          fd,
          namesThen(() => detach(meta.buffer)),
          0,
          1e6,
          null,
          Buffer.alloc(64),
          meta,
        ),
      ).toThrow(TypeError);
      const needle = new Uint8Array(Buffer.from('needle'));
      const run = () =>
        addon!.readFiles(
          fd,
          namesThen(() => detach(needle.buffer)),
          0,
          1e6,
          needle,
          Buffer.alloc(64),
          new Float64Array(9),
        );
      expect(run).toThrow(TypeError);
      // The required set: detached, or rewritten so that a length points past its end (the addon would read past it).
      const setOf = () => packByteSet([Buffer.from('needle'), Buffer.from('hello')]);
      const set = setOf();
      const runSet = (act: () => void, s: Uint8Array) =>
        addon!.readFiles(fd, namesThen(act), 0, 1e6, null, Buffer.alloc(64), new Float64Array(9), s);
      expect(() => runSet(() => detach(set.buffer), set)).toThrow(TypeError);
      const rewritten = setOf();
      expect(() => runSet(() => rewritten.set([0xff, 0xff, 0, 0], 0), rewritten)).toThrow(TypeError);
      const same = setOf();
      expect(runSet(() => {}, same)).toBe(3); // an accessor that changes nothing: the same answers
      // A resizable ArrayBuffer (ES2024; the TypeScript target here does not type it yet).
      type Resizable = ArrayBuffer & { resize(n: number): void };
      const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => Resizable;
      const resizable = new Resizable(64, { maxByteLength: 128 });
      const shrink = () => resizable.resize(4);
      expect(() =>
        addon!.readFiles(fd, namesThen(shrink), 0, 1e6, null, new Uint8Array(resizable), new Float64Array(9)),
      ).toThrow(TypeError);
      // An accessor that changes nothing is only a slower array: the same answers.
      const meta2 = new Float64Array(9);
      expect(
        addon!.readFiles(
          fd,
          namesThen(() => {}),
          0,
          1e6,
          null,
          Buffer.alloc(64),
          meta2,
        ),
      ).toBe(3);
      expect(Array.from(meta2)).toEqual([0, 0, 13, 0, 13, 13, 0, 26, 13]);
    } finally {
      closeSync(fd);
    }
  });
});

/** The newest glibc symbol version an ELF file needs (objdump -T), or null without binutils. */
function newestGlibc(file: string): number[] | null {
  const r = spawnSync('objdump', ['-T', file], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  const versions = [...r.stdout.matchAll(/\(GLIBC_(\d+)\.(\d+)(?:\.(\d+))?\)/g)].map((m) =>
    [m[1], m[2], m[3] ?? '0'].map(Number),
  );
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
  return versions.at(-1) ?? [0, 0, 0];
}

it.runIf(existsSync(ADDON) && newestGlibc(ADDON) !== null)(
  'the built addon needs no glibc newer than Node 20 does (2.28): it loads wherever the server runs',
  () => {
    const [major, minor] = newestGlibc(ADDON)!;
    expect(major * 1000 + minor).toBeLessThanOrEqual(2 * 1000 + 28);
  },
);
