/**
 * Review of the near paths' kept listings (src/policy/near-listings.ts) against the real server over stdio: a listing
 * kept between two failing calls may be reused only while it is the listing a verified read would give now
 * (docs/security.md "Security model"). Each case runs one server that has made the listings warm before the change
 * and one that never read them (its near paths are read afresh through the verified-access module): both must offer
 * the same list after the change.
 *
 * What worked before the fix: the anchor (a root) was checked by lstat of its path string. An ancestor of the root
 * lies outside the roots; moved away with a link to it in its place, the root's path resolves through the link to
 * the same directory, whose stamp is unchanged, so the warm server kept offering its names while a verified open of
 * the root is refused (the cold server offers none). Fixed by taking the anchor's stamp through a verified open.
 * What did not work (kept here as regressions): an entry added and the directory's mtime set back with utimes (its
 * ctime moves); a directory deleted and created again under the same name (inode reuse: a new ctime); a directory
 * changed within its racy second (never kept); a lock file, an own temporary, a secret, `.git` and the state
 * directory in kept listings (the policy and the built-in guards are applied on every call, warm or cold).
 */
import { mkdirSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RACY_MS } from '../../src/fs/listing-cache.js';
import { envelopeOf, StallSession } from '../helpers/stall-watchdog.js';
import { makeTree } from '../helpers/tree.js';

const tree = makeTree({}, 'fs-tools-near-listings-');
const sessions: StallSession[] = [];
const put = (p: string): void => {
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, 'x\n');
};
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, RACY_MS + 200));
const start = async (root: string, name: string): Promise<StallSession> => {
  const s = await StallSession.start(['--state-dir', path.join(tree.dir, `.state-${name}`), root]);
  sessions.push(s);
  return s;
};
/** `details.near` of a read_file of `p` (relative to `base`), [] when none; the call must fail. */
async function near(s: StallSession, p: string, base: string): Promise<string[]> {
  const envelope = envelopeOf(await s.call('read_file', { path: p }));
  expect(envelope).not.toBeNull();
  return ((envelope!.details.near as string[] | undefined) ?? []).map((n) => path.relative(base, n));
}

afterAll(async () => {
  for (const s of sessions) await s.close();
  tree.cleanup();
});

describe('the anchor of the chain: an ancestor of the root (outside the roots) swapped for a link', () => {
  const w = path.join(tree.dir, 'w');
  const root = path.join(w, 'r');
  let warm: StallSession;
  let cold: StallSession;
  beforeAll(async () => {
    put(path.join(root, 'a', 'util.ts'));
    put(path.join(root, 'b', 'c', 'util.ts'));
    await settle();
    [warm, cold] = await Promise.all([start(root, 'anchor-warm'), start(root, 'anchor-cold')]);
  }, 60_000);

  it('offers no name the verified read refuses', async () => {
    const outside = path.join(tree.dir, 'elsewhere', 'util.ts');
    // Warm: the root's listings are read and kept (the names are offered while the root is in place).
    expect(await near(warm, path.join(root, 'nowhere', 'util.ts'), root)).toEqual(['a/util.ts', 'b/c/util.ts']);
    expect(await near(warm, outside, root)).toEqual(['a/util.ts', 'b/c/util.ts']);
    // The root's parent moved away and a link to it in its place: the root's path now resolves through the link.
    renameSync(w, path.join(tree.dir, 'w-moved'));
    symlinkSync(path.join(tree.dir, 'w-moved'), w);
    const fresh = await near(cold, outside, root);
    expect(fresh).toEqual([]);
    expect(await near(warm, outside, root)).toEqual(fresh);
  });
});

describe('stamps that do not move', () => {
  const root = path.join(tree.dir, 'stamps');
  let warm: StallSession;
  let cold: StallSession;
  beforeAll(async () => {
    put(path.join(root, 'g', 'keep.ts'));
    put(path.join(root, 'e', 'util.ts'));
    put(path.join(root, 'k', 'keep.ts'));
    // g's mtime a whole second in the past (utimes takes seconds: a value it can set back exactly later).
    const second = Math.floor(Date.now() / 1000) - 60;
    utimesSync(path.join(root, 'g'), second, second);
    await settle();
    [warm, cold] = await Promise.all([start(root, 'stamps-warm'), start(root, 'stamps-cold')]);
  }, 60_000);

  it('an entry added, then the directory mtime set back (utimes): its ctime moved, the new name is offered', async () => {
    expect(await near(warm, path.join(root, 'nowhere', 'util.ts'), root)).toEqual(['e/util.ts']);
    const g = path.join(root, 'g');
    const before = statSync(g, { bigint: true });
    put(path.join(g, 'util.ts'));
    utimesSync(g, Number(before.atimeNs / 1_000_000_000n), Number(before.mtimeNs / 1_000_000_000n));
    expect(statSync(g, { bigint: true }).mtimeNs).toBe(before.mtimeNs);
    const fresh = await near(cold, path.join(root, 'nowhere', 'util.ts'), root);
    expect(fresh).toEqual(['e/util.ts', 'g/util.ts']);
    expect(await near(warm, path.join(root, 'nowhere', 'util.ts'), root)).toEqual(fresh);
  });

  it('a directory deleted and made again under its name (an inode reused): the old names are gone', async () => {
    await settle();
    expect(await near(warm, path.join(root, 'nowhere', 'util.ts'), root)).toEqual(['e/util.ts', 'g/util.ts']);
    rmSync(path.join(root, 'e'), { recursive: true });
    put(path.join(root, 'e', 'other.ts'));
    const fresh = await near(cold, path.join(root, 'nowhere', 'util.ts'), root);
    expect(fresh).toEqual(['g/util.ts']);
    expect(await near(warm, path.join(root, 'nowhere', 'util.ts'), root)).toEqual(fresh);
  });

  it('two changes within the racy second: the listing between them is never reused', async () => {
    put(path.join(root, 'k', 'util.ts'));
    expect(await near(warm, path.join(root, 'nowhere', 'util.ts'), root)).toContain('k/util.ts');
    rmSync(path.join(root, 'k', 'util.ts'));
    const fresh = await near(cold, path.join(root, 'nowhere', 'util.ts'), root);
    expect(fresh).not.toContain('k/util.ts');
    expect(await near(warm, path.join(root, 'nowhere', 'util.ts'), root)).toEqual(fresh);
  });
});

describe('guarded names in kept listings', () => {
  const root = path.join(tree.dir, 'guarded');
  const LOCK = `.fs-tools-lock-${'a'.repeat(32)}`;
  const TEMP = `.util.ts.fs-tools-${'b'.repeat(12)}.tmp`;
  let warm: StallSession;
  beforeAll(async () => {
    for (const f of [LOCK, TEMP, '.env', '.git/config', 'state/util.ts', 'src/util.ts']) put(path.join(root, f));
    await settle();
    warm = await StallSession.start(['--state-dir', path.join(root, 'state'), root]);
    sessions.push(warm);
  }, 60_000);

  it('a name the built-in guards or the secret rules hide is never offered, cold or warm', async () => {
    for (let round = 0; round < 2; round++) {
      expect(await near(warm, path.join(root, `${LOCK}x`), root)).toEqual([]);
      expect(await near(warm, path.join(root, `${TEMP}x`), root)).toEqual([]);
      expect(await near(warm, path.join(root, '.envx'), root)).toEqual([]);
      expect(await near(warm, path.join(root, 'nowhere', 'config'), root)).toEqual([]);
      expect(await near(warm, path.join(root, 'nowhere', 'util.ts'), root)).toEqual(['src/util.ts']);
    }
  });
});
