/**
 * The git view's stat batches in the native addon (native/fs_tools_native.c `statEntries`, `entryKinds`;
 * src/vcs/git-native-stat.ts). Pins:
 * - statEntries gives, per single entry name of a directory descriptor, exactly what `lstatSync` of the joined path
 *   gives (kind, dev, ino, mtimeMs, ctimeMs: the numbers a kept listing is compared with), a link not followed, a
 *   missing entry as kind 0 with zeros;
 * - entryKinds gives the kind `lstatSync` of each joined relative path gives (a link among the earlier components
 *   followed, the last one not);
 * - a name that is not one entry name, or a path that is not entry names joined by `/`, throws TypeError before any
 *   answer is written (the output keeps its bytes); an output too small or overlapping the names throws too.
 */
import { closeSync, constants, lstatSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync } from 'node:fs';
import { symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const loaded = loadBuiltAddon()?.addon ?? null;
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-native-stat-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const pack = (names: readonly string[]) => Buffer.concat(names.map((n) => Buffer.from(`${n}\0`)));
const kindOf = (p: string): number => {
  try {
    const st = lstatSync(p);
    return st.isDirectory() ? 1 : st.isSymbolicLink() ? 2 : 3;
  } catch {
    return 0;
  }
};

describe.runIf(loaded !== null)('the git view stat batches', () => {
  const addon = loaded!;
  const top = path.join(base, 'tree');
  mkdirSync(path.join(top, 'a', 'b', 'c'), { recursive: true });
  mkdirSync(path.join(base, 'outside', 'inner'), { recursive: true });
  writeFileSync(path.join(top, 'file'), 'x');
  writeFileSync(path.join(top, 'a', 'b', 'f'), 'x');
  symlinkSync(path.join(base, 'outside'), path.join(top, 'out'));
  symlinkSync('a', path.join(top, 'in'));
  const withDir = <T>(f: (fd: number) => T): T => {
    const fd = openSync(top, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      return f(fd);
    } finally {
      closeSync(fd);
    }
  };

  it('statEntries stamps each entry as lstatSync does, links not followed', () => {
    const names = ['a', 'file', 'out', 'in', 'missing'];
    const out = new Float64Array(5 * names.length);
    expect(withDir((fd) => addon.statEntries(fd, pack(names), out))).toBe(names.length);
    for (const [i, name] of names.entries()) {
      const kind = kindOf(path.join(top, name));
      expect(out[5 * i], name).toBe(kind);
      if (kind === 0) {
        expect([...out.subarray(5 * i + 1, 5 * i + 5)]).toEqual([0, 0, 0, 0]);
        continue;
      }
      const st = lstatSync(path.join(top, name));
      expect([...out.subarray(5 * i + 1, 5 * i + 5)], name).toEqual([st.dev, st.ino, st.mtimeMs, st.ctimeMs]);
    }
  });

  it('entryKinds reports what lstatSync of each joined path reports', () => {
    const paths = ['a', 'a/b', 'a/b/c', 'a/b/f', 'out', 'out/inner', 'in/b', 'in', 'file', 'nope/x', 'file/x'];
    const kinds = new Uint8Array(paths.length);
    expect(withDir((fd) => addon.entryKinds(fd, pack(paths), kinds))).toBe(paths.length);
    expect([...kinds]).toEqual(paths.map((p) => kindOf(path.join(top, p))));
    expect([...kinds]).toEqual([1, 1, 1, 3, 2, 1, 1, 2, 3, 0, 0]);
  });

  it('refuses anything but entry names before answering', () => {
    for (const bad of ['', '.', '..', 'a/b', '/a', 'a/']) {
      const out = new Float64Array(10).fill(7);
      expect(() => withDir((fd) => addon.statEntries(fd, pack(['ok', bad]), out)), JSON.stringify(bad)).toThrow(
        TypeError,
      );
      expect([...out]).toEqual(new Array(10).fill(7));
    }
    for (const bad of ['', '.', '..', '/a', 'a/', 'a//b', 'a/./b', 'a/../b', '../a', 'a/..']) {
      const kinds = new Uint8Array(2).fill(9);
      expect(() => withDir((fd) => addon.entryKinds(fd, pack(['a', bad]), kinds)), JSON.stringify(bad)).toThrow(
        TypeError,
      );
      expect([...kinds]).toEqual([9, 9]);
    }
    expect(() => withDir((fd) => addon.statEntries(fd, Buffer.from('a'), new Float64Array(5)))).toThrow(TypeError);
    expect(() => withDir((fd) => addon.entryKinds(fd, Buffer.from('a'), new Uint8Array(1)))).toThrow(TypeError);
  });

  it('refuses an output too small or overlapping the names', () => {
    expect(() => withDir((fd) => addon.statEntries(fd, pack(['a', 'file']), new Float64Array(9)))).toThrow(TypeError);
    expect(() => withDir((fd) => addon.entryKinds(fd, pack(['a', 'file']), new Uint8Array(1)))).toThrow(TypeError);
    const shared = new Uint8Array(64);
    shared.set(pack(['a']));
    expect(() => withDir((fd) => addon.entryKinds(fd, shared.subarray(0, 2), shared.subarray(1, 3)))).toThrow(
      TypeError,
    );
    expect(() => addon.statEntries(-1, pack(['a']), new Float64Array(5))).toThrow(TypeError);
  });
});
