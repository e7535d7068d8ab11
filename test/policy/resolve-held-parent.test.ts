/**
 * resolveInRoots through a held parent directory (src/policy/resolve-path.ts `heldParentLookup`, issue #19): a
 * normalized path whose directory fs-tools holds open resolves without realpath, to the same answer realpath gives
 * (the same node, stats of the entry itself, no link followed); a final link, a missing entry, a path that is not
 * normalized and a directory outside the roots take the component walk as before. A held directory swapped since the
 * last call — renamed away and replaced by a link to outside, or by another directory — is never trusted: the next
 * call answers for what is at the path now (NOT_ALLOWED for the link, the new directory's file otherwise), and nothing
 * outside is reported.
 */
import { lstatSync, mkdirSync, readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { DESCRIPTOR_RELATIVE, releaseHeldDirs } from '../../src/fs/verified-dir.js';
import { resolveInRoots } from '../../src/policy/resolve-path.js';
import type { EffectiveRoot } from '../../src/policy/roots.js';
import { makeTree, symlink } from '../helpers/tree.js';

const tree = makeTree({
  proj: { dir: { 'f.txt': 'F', 'link.txt': symlink('f.txt'), sub: {} } },
  outside: { dir: { 'f.txt': 'OUTSIDE', 'inner.txt': 'OUTSIDE' } },
});
afterAll(() => {
  releaseHeldDirs();
  tree.cleanup();
});
afterEach(() => releaseHeldDirs());

const PROJ = path.join(tree.dir, 'proj');
const ROOTS: EffectiveRoot[] = [{ given: PROJ, real: PROJ, source: 'cli' }];
const FOLLOW = { followFinal: true };

const openDescriptors = (): number => readdirSync('/proc/self/fd').length;

async function refusal(p: string): Promise<ToolError> {
  try {
    await resolveInRoots(p, ROOTS, FOLLOW);
  } catch (error) {
    return error as ToolError;
  }
  throw new Error(`${p} resolved`);
}

describe.runIf(DESCRIPTOR_RELATIVE)('resolveInRoots with a held parent directory', () => {
  it('gives the answer realpath gives, on the first call and on later ones', async () => {
    const file = path.join(PROJ, 'dir', 'f.txt');
    const before = openDescriptors();
    await resolveInRoots(file, ROOTS, FOLLOW);
    expect(openDescriptors()).toBe(before + 1); // the directory is held: the shortcut answered
    for (let i = 0; i < 3; i++) {
      const r = await resolveInRoots(file, ROOTS, FOLLOW);
      expect(r.real).toBe(file);
      expect(r.viaSymlink).toBe(false);
      expect(r.stats?.ino).toBe(lstatSync(file).ino);
      expect(r.stats?.isFile()).toBe(true);
    }
    const dir = await resolveInRoots(path.join(PROJ, 'dir', 'sub'), ROOTS, FOLLOW);
    expect(dir.stats?.isDirectory()).toBe(true);
  });

  it('leaves links, missing entries and unnormalized spellings to the walk, with its answers', async () => {
    const link = await resolveInRoots(path.join(PROJ, 'dir', 'link.txt'), ROOTS, FOLLOW);
    expect(link.real).toBe(path.join(PROJ, 'dir', 'f.txt'));
    expect(link.viaSymlink).toBe(true);
    const missing = await resolveInRoots(path.join(PROJ, 'dir', 'nope.txt'), ROOTS, FOLLOW);
    expect(missing.stats).toBeNull();
    const dotted = await resolveInRoots(`${PROJ}/dir/./sub/../f.txt`, ROOTS, FOLLOW);
    expect(dotted.real).toBe(path.join(PROJ, 'dir', 'f.txt'));
  });

  it('never trusts a held directory that was swapped for a link to outside since the last call', async () => {
    const dir = path.join(PROJ, 'dir');
    const held = openDescriptors();
    await resolveInRoots(path.join(dir, 'f.txt'), ROOTS, FOLLOW);
    expect(openDescriptors()).toBe(held + 1); // proj/dir is held now
    renameSync(dir, path.join(PROJ, 'dir-away'));
    symlinkSync(path.join(tree.dir, 'outside', 'dir'), dir);
    try {
      for (const name of ['f.txt', 'inner.txt']) {
        const e = await refusal(path.join(dir, name));
        expect(e.code).toBe('NOT_ALLOWED');
        expect(JSON.stringify(e)).not.toContain('OUTSIDE');
      }
    } finally {
      renameSync(dir, path.join(PROJ, 'dir-link'));
      renameSync(path.join(PROJ, 'dir-away'), dir);
    }
  });

  it('answers for the directory now at the path when the held one was replaced', async () => {
    const dir = path.join(PROJ, 'dir');
    const before = await resolveInRoots(path.join(dir, 'f.txt'), ROOTS, FOLLOW);
    renameSync(dir, path.join(PROJ, 'dir-old'));
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'f.txt'), 'NEW');
    try {
      const after = await resolveInRoots(path.join(dir, 'f.txt'), ROOTS, FOLLOW);
      expect(after.stats?.ino).toBe(lstatSync(path.join(dir, 'f.txt')).ino);
      expect(after.stats?.ino).not.toBe(before.stats?.ino);
    } finally {
      renameSync(dir, path.join(PROJ, 'dir-new'));
      renameSync(path.join(PROJ, 'dir-old'), dir);
    }
  });
});
