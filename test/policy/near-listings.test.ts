/**
 * src/policy/near-listings.ts: the near-path search reuses directory listings between calls. After each kind of
 * change between two calls, the list offered with the kept listings equals the list of a search that reads every
 * directory afresh (the kept listings dropped), and it reflects the change. Real directories; the tree is made once
 * and left alone for more than the racy window (RACY_MS), so its listings are kept.
 */
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { RACY_MS } from '../../src/fs/listing-cache.js';
import { entryBytes, MAX_DEPTH, NearListings, processNearListings } from '../../src/policy/near-listings.js';
import { NEAR_MAX_ENTRIES, nearPaths, outsideNearPaths } from '../../src/policy/near-paths.js';
import { resolveInRoots } from '../../src/policy/resolve-path.js';

/** Three directories of 20 names of 200 characters each (the bytes bound). */
const BYTE_DIRS = ['one', 'two', 'three'];
const LONG_NAME = (i: number) => `${String(i).padStart(2, '0')}${'n'.repeat(198)}`;
let T = '';
let R = '';
let OUT = '';
const ctx = (over: Partial<PolicyContext> = {}): PolicyContext => ({
  roots: [{ given: R, real: R, source: 'cli' }],
  allowSecrets: false,
  policy: { rules: [{ pattern: 'hid/**', access: 'hidden' }] },
  ...over,
});
const put = (rel: string, base = R) => {
  mkdirSync(path.dirname(path.join(base, rel)), { recursive: true });
  writeFileSync(path.join(base, rel), 'x\n');
};
const rel = (list: string[]) => list.map((p) => path.relative(R, p));

/** The near list of `request` with the kept listings, then with none; both must agree. */
async function both(request: string, c = ctx()): Promise<string[]> {
  const find = async () => nearPaths(await resolveInRoots(request, c.roots, { followFinal: true }), c);
  const kept = await find();
  processNearListings.clear();
  const fresh = await find();
  expect(kept).toEqual(fresh);
  return rel(fresh);
}

beforeAll(async () => {
  T = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'near-listings-')));
  R = path.join(T, 'root');
  OUT = path.join(T, 'outside');
  put('a/b/util.ts');
  put('c/util.ts');
  put('c/d/keep.ts');
  put('e/f/util.ts');
  put('g/h/x.ts');
  put('k/key.txt');
  put('p/q/r.ts');
  put('d/util.ts', OUT);
  for (const d of BYTE_DIRS) for (let i = 0; i < 20; i++) put(path.join(d, LONG_NAME(i)), path.join(T, 'bytes'));
  put('w/r/a/util.ts', T);
  put(path.join(...Array.from({ length: MAX_DEPTH }, () => 'd'), 'x.ts'), path.join(T, 'deep'));
  // Old enough that the listings are kept (a directory changed within RACY_MS is read afresh every time).
  await new Promise((r) => setTimeout(r, RACY_MS + 100));
  // A first search compiles the policy's matchers: done here, outside the search's time bound of the tests.
  await both('zz/warm-up.ts');
  processNearListings.clear();
});
afterAll(() => rmSync(T, { recursive: true, force: true }));

describe('near paths with kept listings', () => {
  it('keeps listings, and offers the same list with and without them after each change', async () => {
    // c/util.ts first: `zz` within edit distance 2 of `c` (a mistyped directory), then the walk.
    expect(await both('zz/util.ts')).toEqual(['c/util.ts', 'a/b/util.ts', 'e/f/util.ts']);
    await both('zz/util.ts'); // warms the kept listings again
    expect(processNearListings.stats().directories).toBeGreaterThan(5);

    // A file created (in a directory whose listing is kept).
    put('g/h/util.ts');
    expect(await both('zz/util.ts')).toEqual(['c/util.ts', 'a/b/util.ts', 'e/f/util.ts', 'g/h/util.ts']);
    // Renamed away.
    renameSync(path.join(R, 'a/b/util.ts'), path.join(R, 'a/b/util2.ts'));
    expect(await both('zz/util.ts')).toEqual(['c/util.ts', 'e/f/util.ts', 'g/h/util.ts']);
    // Deleted.
    rmSync(path.join(R, 'c/util.ts'));
    expect(await both('zz/util.ts')).toEqual(['e/f/util.ts', 'g/h/util.ts']);
  });

  it('a kept directory replaced by a link (to outside, or to its own moved self) is never read through the link', async () => {
    await both('zz/util.ts');
    // e/f unchanged itself (same inode, mtime, ctime of f's listing) but its parent e moved and a link in its place.
    renameSync(path.join(R, 'e'), path.join(R, 'e2'));
    symlinkSync(path.join(R, 'e2'), path.join(R, 'e'));
    expect(await both('zz/util.ts')).toEqual(['e2/f/util.ts', 'g/h/util.ts']);
    // c/d replaced by a link to an outside directory holding util.ts: no outside name offered.
    await both('zz/util.ts');
    renameSync(path.join(R, 'c/d'), path.join(T, 'd-moved'));
    symlinkSync(path.join(OUT, 'd'), path.join(R, 'c/d'));
    expect(await both('zz/util.ts')).toEqual(['e2/f/util.ts', 'g/h/util.ts']);
    const c = ctx();
    const outside = await outsideNearPaths(path.join(OUT, 'd', 'util.ts'), c);
    processNearListings.clear();
    expect(outside).toEqual(await outsideNearPaths(path.join(OUT, 'd', 'util.ts'), c));
    expect(rel(outside)).toEqual(['e2/f/util.ts', 'g/h/util.ts']);
  });

  it('policy-relevant renames: to a secret name, into a hidden directory; the policy is applied on every call', async () => {
    await both('zz/id_rsa');
    renameSync(path.join(R, 'k/key.txt'), path.join(R, 'k/id_rsa'));
    expect(await both('zz/id_rsa')).toEqual([]);
    // The same kept listings under a policy that allows secrets offer it.
    expect(await both('zz/id_rsa', ctx({ allowSecrets: true }))).toEqual(['k/id_rsa']);
    await both('zz/util.ts');
    renameSync(path.join(R, 'g'), path.join(R, 'hid'));
    expect(await both('zz/util.ts')).toEqual(['e2/f/util.ts']);
  });

  it('a kept directory whose parent is moved and replaced by a link to it is not read through the link', async () => {
    const isInside = (p: string) => p === R || p.startsWith(R + path.sep);
    const q = path.join(R, 'p', 'q');
    const read = processNearListings.reader(isInside, NEAR_MAX_ENTRIES);
    await read(R);
    await read(path.join(R, 'p'));
    const first = await read(q);
    expect(first?.entries.map((e) => e.name)).toEqual(['r.ts']);
    // q itself is untouched (same inode, mtime, ctime): only the chain from the root shows p is now a link.
    renameSync(path.join(R, 'p'), path.join(R, 'p2'));
    symlinkSync(path.join(R, 'p2'), path.join(R, 'p'));
    expect(await processNearListings.reader(isInside, NEAR_MAX_ENTRIES)(q)).toBe(null);
    expect(
      (await processNearListings.reader(isInside, NEAR_MAX_ENTRIES)(path.join(R, 'p2', 'q')))?.entries.length,
    ).toBe(1);
  });

  it('a root whose ancestor (outside the roots) is moved and replaced by a link: its kept listing is not reused', async () => {
    const root = path.join(T, 'w', 'r');
    const isInside = (p: string) => p === root || p.startsWith(root + path.sep);
    const first = await processNearListings.reader(isInside, NEAR_MAX_ENTRIES)(root);
    expect(first?.entries.map((e) => e.name)).toEqual(['a']);
    // The root itself is untouched: only its path now resolves through a link, which a verified open refuses.
    renameSync(path.join(T, 'w'), path.join(T, 'w-moved'));
    symlinkSync(path.join(T, 'w-moved'), path.join(T, 'w'));
    expect(await processNearListings.reader(isInside, NEAR_MAX_ENTRIES)(root)).toBe(null);
    expect(await processNearListings.reader(isInside, NEAR_MAX_ENTRIES)(path.join(root, 'a'))).toBe(null);
  });

  it('a directory deeper than MAX_DEPTH is read but not kept (its chain check would cost the square of its depth)', async () => {
    const base = path.join(T, 'deep');
    const isInside = (p: string) => p === base || p.startsWith(base + path.sep);
    const listings = new NearListings();
    const read = listings.reader(isInside, NEAR_MAX_ENTRIES);
    const deepest = path.join(base, ...Array.from({ length: MAX_DEPTH }, () => 'd'));
    expect(deepest.split(path.sep).length - 1).toBeGreaterThan(MAX_DEPTH);
    expect((await read(deepest))?.entries.map((e) => e.name)).toEqual(['x.ts']);
    expect(listings.stats().directories).toBe(0);
    expect((await read(path.join(base, 'd')))?.entries.map((e) => e.name)).toEqual(['d']);
    expect(listings.stats().directories).toBe(1);
  });

  it('roots changed between calls (a root narrowed): no kept name outside the current roots is offered', async () => {
    expect(await both('zz/util.ts')).toContain('e2/f/util.ts');
    const narrow = path.join(R, 'e2');
    const c = ctx({ roots: [{ given: narrow, real: narrow, source: 'client' }] });
    // Kept listings of R and its other directories stay, but only what lies under the current root is offered.
    expect(processNearListings.stats().directories).toBeGreaterThan(0);
    const request = path.join(narrow, 'zz', 'util.ts');
    const kept = await nearPaths(await resolveInRoots(request, c.roots, { followFinal: true }), c);
    processNearListings.clear();
    const fresh = await nearPaths(await resolveInRoots(request, c.roots, { followFinal: true }), c);
    expect(kept).toEqual(fresh);
    expect(rel(fresh)).toEqual(['e2/f/util.ts']);
  });

  it('keeps at most the bytes it is given (least recently used first out), and no listing over the bound alone', async () => {
    const base = path.join(T, 'bytes');
    const isInside = (p: string) => p === base || p.startsWith(base + path.sep);
    const one = 20 * entryBytes(LONG_NAME(0));
    const listings = new NearListings({ dirs: 100, entries: 1000, bytes: 2 * one + 100 });
    const read = listings.reader(isInside, NEAR_MAX_ENTRIES);
    for (const d of BYTE_DIRS) expect((await read(path.join(base, d)))?.entries.length).toBe(20);
    expect(listings.stats()).toEqual({ directories: 2, entries: 40, bytes: 2 * one });
    // The first one read was dropped: read afresh (and kept again, dropping the next oldest).
    expect((await listings.reader(isInside, NEAR_MAX_ENTRIES)(path.join(base, 'one')))?.entries.length).toBe(20);
    expect(listings.stats()).toEqual({ directories: 2, entries: 40, bytes: 2 * one });
    // A listing over the bound on its own is given to the caller, never kept.
    const small = new NearListings({ dirs: 100, entries: 1000, bytes: one - 1 });
    expect((await small.reader(isInside, NEAR_MAX_ENTRIES)(path.join(base, 'two')))?.entries.length).toBe(20);
    expect(small.stats()).toEqual({ directories: 0, entries: 0, bytes: 0 });
    const few = new NearListings({ dirs: 100, entries: 19, bytes: 10 * one });
    expect((await few.reader(isInside, NEAR_MAX_ENTRIES)(path.join(base, 'two')))?.entries.length).toBe(20);
    expect(few.stats()).toEqual({ directories: 0, entries: 0, bytes: 0 });
  });
});
