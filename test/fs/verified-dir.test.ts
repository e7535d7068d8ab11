/**
 * Verified directory access helpers (src/fs/verified-dir.ts), in-process on real trees. Pins:
 *  - lstatVerified: the entry's own lstat (a link is reported as a link), null for a missing entry or parent, and a
 *    root (whose parent lies outside) through its own descriptor;
 *  - openDirCreating: creates the missing levels one at a time and reports them outermost first; an existing path is
 *    opened as is; a file in the way is VALIDATION not_a_directory (what was created before is named in
 *    details.created_dirs); a link in the way is NOT_ALLOWED and nothing is created through it;
 *  - VerifiedDir refuses a name that is not one directory entry.
 */
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lstatVerified, openDirCreating, VerifiedDir } from '../../src/fs/verified-dir.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({ root: { f: 'F', d: {} }, out: {} }, 'fs-tools-verified-dir-');
afterAll(() => T.cleanup());
const R = path.join(T.dir, 'root');
const OUT = path.join(T.dir, 'out');
const inside = (p: string): boolean => p === R || p.startsWith(`${R}/`);
symlinkSync(OUT, path.join(R, 'lnk'));

describe('lstatVerified', () => {
  it('reports an entry (a link as a link), null when missing, and a root through its own descriptor', () => {
    expect(lstatVerified(path.join(R, 'f'), inside)?.isFile()).toBe(true);
    expect(lstatVerified(path.join(R, 'lnk'), inside)?.isSymbolicLink()).toBe(true);
    expect(lstatVerified(path.join(R, 'none'), inside)).toBeNull();
    expect(lstatVerified(path.join(R, 'none', 'deeper'), inside)).toBeNull();
    expect(lstatVerified(R, inside)?.isDirectory()).toBe(true);
  });
});

describe('openDirCreating', () => {
  it('creates the missing levels, outermost first, and opens an existing directory as is', () => {
    const made = openDirCreating(path.join(R, 'd', 'a', 'b'), inside);
    made.dir.close();
    expect(made.created).toEqual([path.join(R, 'd', 'a'), path.join(R, 'd', 'a', 'b')]);
    const again = openDirCreating(path.join(R, 'd', 'a', 'b'), inside);
    again.dir.close();
    expect(again.created).toEqual([]);
  });

  it('a file in the way is not_a_directory', () => {
    expect(() => openDirCreating(path.join(R, 'f', 'x'), inside)).toThrow(
      expect.objectContaining({ code: 'VALIDATION', details: { reason: 'not_a_directory' } }),
    );
    mkdirSync(path.join(R, 'p'));
    writeFileSync(path.join(R, 'p', 'file'), '');
    expect(() => openDirCreating(path.join(R, 'p', 'file', 'y'), inside)).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ reason: 'not_a_directory' }) }),
    );
  });

  it('a link in the way is NOT_ALLOWED and nothing is created outside', () => {
    expect(() => openDirCreating(path.join(R, 'lnk', 'x', 'y'), inside)).toThrow(
      expect.objectContaining({ code: 'NOT_ALLOWED' }),
    );
    expect(readdirSync(OUT)).toEqual([]);
    expect(existsSync(path.join(R, 'x'))).toBe(false);
  });
});

describe('VerifiedDir names', () => {
  it('refuses anything but one directory entry name', () => {
    const d = VerifiedDir.open(R, inside);
    try {
      for (const bad of ['', '.', '..', 'a/b', 'a\0b']) expect(() => d.lstat(bad), JSON.stringify(bad)).toThrow();
      expect(d.lstat('f')?.isFile()).toBe(true);
    } finally {
      d.close();
    }
  });
});
