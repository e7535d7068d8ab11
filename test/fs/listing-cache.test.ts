/**
 * Issue #14, the shared sorted listing (src/fs/listing-cache.ts): concurrent and later readers of an unchanged
 * directory share one listing (one read); any change of the directory (an entry created or removed, the directory
 * swapped for another) is seen by the next call; a recently modified ("racy") directory is never shared; a failed
 * read is not cached; the cache is bounded by bytes (its estimate `listingBytes`), least recently used listings
 * dropped first, and reports what it holds.
 */
import { mkdirSync, readdirSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  CACHE_MIN_ENTRIES,
  ListingCache,
  RACY_MS,
  clearListingCache,
  listingBytes,
  listingCacheStats,
  sharedListing,
} from '../../src/fs/listing-cache.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({}, 'fs-tools-lcache-');
afterAll(() => scratch.cleanup());
beforeEach(() => clearListingCache());

/** A directory of n files, its mtime set well in the past (not racy). */
function bigDir(name: string, n: number): string {
  const dir = path.join(scratch.dir, name);
  mkdirSync(dir);
  for (let i = 0; i < n; i++) writeFileSync(path.join(dir, `f${String(n - i).padStart(5, '0')}`), '');
  settle(dir);
  return dir;
}
const settle = (dir: string) => utimesSync(dir, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
/** Lets the directory's ctime (which utimes cannot move back) leave the racy window. */
const pastRacy = () => new Promise((r) => setTimeout(r, RACY_MS + 50));

/** A reader that counts its calls. */
function counting(dir: string) {
  const reader = {
    reads: 0,
    read: async () => {
      reader.reads++;
      return readdir(dir, { withFileTypes: true });
    },
  };
  return reader;
}

describe('sharedListing', () => {
  it('concurrent and later readers of an unchanged directory share one sorted read', async () => {
    const dir = bigDir('shared', CACHE_MIN_ENTRIES + 10);
    await pastRacy();
    const r = counting(dir);
    const all = await Promise.all(Array.from({ length: 20 }, () => sharedListing(dir, r.read)));
    expect(r.reads).toBe(1);
    expect(new Set(all).size).toBe(1);
    expect(all[0].names).toEqual([...readdirSync(dir)].sort());
    expect(all[0].dirents.map((d) => d.name)).toEqual(all[0].names);
    await sharedListing(dir, r.read);
    expect(r.reads).toBe(1);
    expect(listingCacheStats()).toEqual({
      directories: 1,
      entries: CACHE_MIN_ENTRIES + 10,
      bytes: listingBytes(all[0]),
    });
    // Per name: its UTF-16 characters (here 6: f00001…) and a fixed overhead.
    expect(listingBytes(all[0]) / all[0].names.length).toBeGreaterThan(12);
  });

  it('sees a created and a removed entry at once (a changed directory is read again)', async () => {
    const dir = bigDir('changes', CACHE_MIN_ENTRIES + 1);
    await pastRacy();
    const r = counting(dir);
    await sharedListing(dir, r.read);
    await sharedListing(dir, r.read);
    expect(r.reads).toBe(1);
    writeFileSync(path.join(dir, 'new-file'), '');
    expect((await sharedListing(dir, r.read)).names).toContain('new-file');
    await pastRacy();
    expect((await sharedListing(dir, r.read)).names).toContain('new-file');
    expect(r.reads).toBe(3); // racy once, then read and kept
    settle(dir); // mtime moved back to the old value: ctime still tells
    rmSync(path.join(dir, 'new-file'));
    settle(dir);
    expect((await sharedListing(dir, r.read)).names).not.toContain('new-file');
    expect(r.reads).toBe(4);
  });

  it('a directory swapped for another under the same name is read again (inode)', async () => {
    const dir = bigDir('swap', CACHE_MIN_ENTRIES + 1);
    await pastRacy();
    const first = await sharedListing(dir, counting(dir).read);
    renameSync(dir, `${dir}-old`);
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'only'), '');
    settle(dir);
    const second = await sharedListing(dir, counting(dir).read);
    expect(second).not.toBe(first);
    expect(second.names).toEqual(['only']);
  });

  it('a racy (just modified) directory is never shared, a small one never kept', async () => {
    const racy = path.join(scratch.dir, 'racy');
    mkdirSync(racy);
    for (let i = 0; i < CACHE_MIN_ENTRIES + 1; i++) writeFileSync(path.join(racy, `r${i}`), '');
    const r = counting(racy);
    await Promise.all([sharedListing(racy, r.read), sharedListing(racy, r.read)]);
    expect(r.reads).toBe(2);
    const small = bigDir('small', 3);
    const s = counting(small);
    await sharedListing(small, s.read);
    await sharedListing(small, s.read);
    expect(s.reads).toBe(2);
    expect(listingCacheStats().directories).toBe(0);
  });

  it('a failed read rejects every joined reader and is not cached', async () => {
    const dir = bigDir('fails', 2);
    await pastRacy();
    let calls = 0;
    const failing = async () => {
      calls++;
      throw Object.assign(new Error('EACCES'), { code: 'EACCES' });
    };
    await expect(Promise.all([sharedListing(dir, failing), sharedListing(dir, failing)])).rejects.toThrow('EACCES');
    expect(calls).toBe(1);
    expect((await sharedListing(dir, counting(dir).read)).names).toHaveLength(2);
  });

  it('holds at most its byte bound: the least recently used listing goes first; one over the bound is not kept', async () => {
    const dirs = ['lru-a', 'lru-b', 'lru-c'].map((n) => bigDir(n, CACHE_MIN_ENTRIES));
    await pastRacy();
    const one = listingBytes(await new ListingCache().listing(dirs[0], counting(dirs[0]).read));
    const cache = new ListingCache(2 * one);
    const readers = dirs.map((d) => counting(d));
    await cache.listing(dirs[0], readers[0].read);
    await cache.listing(dirs[1], readers[1].read);
    await cache.listing(dirs[0], readers[0].read); // a is now the most recently used
    expect(cache.stats()).toEqual({ directories: 2, entries: 2 * CACHE_MIN_ENTRIES, bytes: 2 * one });
    await cache.listing(dirs[2], readers[2].read); // b goes
    expect(cache.stats().bytes).toBeLessThanOrEqual(2 * one);
    await cache.listing(dirs[0], readers[0].read);
    await cache.listing(dirs[1], readers[1].read);
    expect(readers.map((r) => r.reads)).toEqual([1, 2, 1]);
    const tiny = new ListingCache(one - 1);
    const t = counting(dirs[0]);
    await tiny.listing(dirs[0], t.read);
    await tiny.listing(dirs[0], t.read);
    expect(t.reads).toBe(2);
    expect(tiny.stats()).toEqual({ directories: 0, entries: 0, bytes: 0 });
  });
});
