/**
 * Attacks on the packed form of the native addon's names (native/fs_tools_native.c `readFiles` with a Uint8Array of
 * NUL-terminated names; src/fs/native-reader.ts `packNames`), which the reader threads use so that no JavaScript runs
 * between the addon's reads:
 * - the same answers as the array form, for every kind of entry (text, binary, a link, a directory, a FIFO, a missing
 *   name, names over NAME_MAX);
 * - a malformed list (no final NUL, an empty name, `.`, `..`, a name with `/`) is a TypeError before any file is opened:
 *   not one per-file record is written;
 * - the list in shared memory (another thread could rewrite a name between its check and its open), or overlapping
 *   the output or the records (a file's bytes would rewrite names after they were checked): a TypeError, nothing
 *   written;
 * - a name holding NUL cannot be packed (it would read as two names).
 */
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeBuffers, nativeReadRun, packNames } from '../../src/fs/native-reader.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const addon = loadBuiltAddon()?.addon ?? null;
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-packed-names-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** A fresh Uint8Array of its own holding `text`'s UTF-8 bytes. */
const bytes = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));

describe.runIf(addon !== null)('the addon: packed names', () => {
  const d = path.join(base, 'tree');
  mkdirSync(d);
  writeFileSync(path.join(d, 'a.txt'), 'needle hello\n');
  writeFileSync(path.join(d, 'b.txt'), 'nothing here\n');
  writeFileSync(path.join(d, 'bin'), Buffer.from([0x6e, 0, 0x65]));
  writeFileSync(path.join(d, 'é.txt'), 'needle é\n');
  symlinkSync('a.txt', path.join(d, 'link'));
  mkdirSync(path.join(d, 'dir'));
  spawnSync('mkfifo', [path.join(d, 'fifo')]);
  const names = ['a.txt', 'b.txt', 'bin', 'é.txt', 'link', 'dir', 'fifo', 'missing', 'x'.repeat(300), 'é'.repeat(600)];
  const withDir = (use: (fd: number) => void) => {
    const fd = openSync(d, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      use(fd);
    } finally {
      closeSync(fd);
    }
  };

  it('answers as the array form does, name by name, and resumes from `start` in the list', () => {
    withDir((fd) => {
      const needle = bytes('needle');
      const viaArray = new Float64Array(3 * names.length);
      const viaPacked = new Float64Array(3 * names.length);
      const outA = Buffer.alloc(1024);
      const outP = Buffer.alloc(1024);
      expect(addon!.readFiles(fd, names, 0, 1e6, needle, outA, viaArray)).toBe(names.length);
      const packed = packNames(names, nativeBuffers());
      expect(addon!.readFiles(fd, packed, 0, 1e6, needle, outP, viaPacked)).toBe(names.length);
      expect(Array.from(viaPacked)).toEqual(Array.from(viaArray));
      expect(outP.subarray(0, 32)).toEqual(outA.subarray(0, 32));
      // Two candidates (a.txt, é.txt), the rest unreadable, binary or no match.
      expect(Array.from(viaPacked).filter((_, i) => i % 3 === 0)).toEqual([0, 4, 3, 0, 1, 1, 1, 1, 1, 1]);
      const fromThird = new Float64Array(3 * names.length).fill(7);
      expect(addon!.readFiles(fd, packed, 3, 1e6, needle, Buffer.alloc(64), fromThird)).toBe(names.length);
      expect(Array.from(fromThird.subarray(0, 9))).toEqual([7, 7, 7, 7, 7, 7, 7, 7, 7]);
      expect(Array.from(fromThird.subarray(9, 12))).toEqual([0, 0, 10]);
    });
  });

  it('a malformed list is a TypeError before any file is opened (no record written)', () => {
    withDir((fd) => {
      for (const list of ['a.txt', 'a.txt\0\0', '\0', 'a.txt\0.\0', 'a.txt\0..\0', 'a.txt\0dir/x\0', '../a.txt\0']) {
        const meta = new Float64Array(30).fill(7);
        expect(() => addon!.readFiles(fd, bytes(list), 0, 1e6, null, Buffer.alloc(64), meta)).toThrow(TypeError);
        expect(meta.every((v) => v === 7)).toBe(true);
      }
      expect(addon!.readFiles(fd, new Uint8Array(0), 0, 1e6, null, Buffer.alloc(64), new Float64Array(0))).toBe(0);
    });
  });

  it('a list in shared memory, or over the output or the records: a TypeError, nothing written', () => {
    withDir((fd) => {
      const list = 'a.txt\0b.txt\0';
      const shared = new Uint8Array(new SharedArrayBuffer(list.length));
      shared.set(bytes(list));
      const meta = new Float64Array(6).fill(7);
      expect(() => addon!.readFiles(fd, shared, 0, 1e6, null, Buffer.alloc(64), meta)).toThrow(TypeError);
      // The names inside the output buffer: a.txt's bytes would land on them.
      const out = Buffer.alloc(256);
      out.write(list, 100, 'latin1');
      expect(() => addon!.readFiles(fd, out.subarray(100, 112), 0, 1e6, null, out, meta)).toThrow(TypeError);
      // The names inside the records' memory.
      const both = new Float64Array(16).fill(7);
      const over = new Uint8Array(both.buffer, 0, list.length);
      over.set(bytes(list));
      const records = new Float64Array(both.buffer, 0, 6);
      expect(() => addon!.readFiles(fd, over, 0, 1e6, null, Buffer.alloc(64), records)).toThrow(TypeError);
      expect(Array.from(meta)).toEqual([7, 7, 7, 7, 7, 7]);
      expect(Buffer.from(over).toString('latin1')).toBe(list);
    });
  });

  it('a name holding NUL is not packed; one holding "/" makes the run refuse before opening', () => {
    const buffers = nativeBuffers();
    expect(() => packNames(['a.txt', 'b.txt\0a.txt'], buffers)).toThrow(TypeError);
    withDir((fd) => {
      const seen: number[] = [];
      expect(() =>
        nativeReadRun(addon!, fd, ['a.txt', 'dir/../a.txt'], 1e6, null, buffers, (i) => seen.push(i)),
      ).toThrow(TypeError);
      expect(seen).toEqual([]);
    });
  });
});
