/**
 * Verified directory access helpers (src/fs/verified-dir.ts), in-process on real trees. Pins:
 *  - lstatVerified: the entry's own lstat (a link is reported as a link), null for a missing entry or parent, and a
 *    root (whose parent lies outside) through its own descriptor;
 *  - openDirCreating: creates the missing levels one at a time and reports them outermost first; an existing path is
 *    opened as is; a file in the way is VALIDATION not_a_directory (what was created before is named in
 *    details.created_dirs); a link in the way is NOT_ALLOWED and nothing is created through it;
 *  - VerifiedDir refuses a name that is not one directory entry;
 *  - takeOpenStat: a subdirectory's fstat from its open, handed out once.
 */
import { existsSync, fstatSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
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

describe('VerifiedDir.takeOpenStat', () => {
  it("hands a subdirectory's fstat from its open once (what a fresh fstat says), then null", () => {
    const root = VerifiedDir.open(R, inside);
    const d = root.openDir('d');
    try {
      const st = d.takeOpenStat();
      const fresh = fstatSync(d.fd, { bigint: true });
      expect(st?.isDirectory()).toBe(true);
      expect([st?.dev, st?.ino, st?.mtimeNs, st?.ctimeNs]).toEqual([
        fresh.dev,
        fresh.ino,
        fresh.mtimeNs,
        fresh.ctimeNs,
      ]);
      expect([Number(st?.dev), Number(st?.ino)]).toEqual([d.identity.dev, d.identity.ino]);
      expect(d.takeOpenStat()).toBeNull();
    } finally {
      d.close();
      root.close();
    }
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

  it('opens a subdirectory, refuses a link or a file there, reads a bounded listing, and climbs only to the node it saw', async () => {
    mkdirSync(path.join(R, 'sub', 'x'), { recursive: true });
    writeFileSync(path.join(R, 'sub', 'one'), '1');
    writeFileSync(path.join(R, 'sub', 'two'), '2');
    symlinkSync(OUT, path.join(R, 'sub', 'link'));
    const root = VerifiedDir.open(R, inside);
    const sub = root.openDir('sub');
    try {
      expect(() => sub.openDir('link')).toThrow(expect.objectContaining({ code: 'NOT_ALLOWED' }));
      expect(() => sub.openDir('one')).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
      expect(() => sub.openDir('missing')).toThrow(expect.objectContaining({ code: 'ENOENT' }));
      expect(await sub.readdir(2)).toHaveLength(2);
      expect((await sub.readdir()).map((e) => e.name).sort()).toEqual(['link', 'one', 'two', 'x']);
      const x = sub.openDir('x');
      // Back up through `..`: the node seen going down is accepted, any other refused.
      const up = x.openParent(sub.identity, sub.path);
      expect(up.stat().ino).toBe(sub.identity.ino);
      up.close();
      expect(() => x.openParent(root.identity, sub.path)).toThrow(ToolError);
      x.close();
      expect((await sub.statAsync()).ino).toBe(sub.identity.ino);
      await sub.sync();
    } finally {
      sub.close();
      root.close();
    }
    expect(() => sub.assertStill()).toThrow(/used after close/);
    expect(() => sub.assertInside()).toThrow(/used after close/);
    expect(readdirSync(OUT)).toEqual([]);
  });
});
