/**
 * Issue #14, the shared sorted listing (src/fs/listing-cache.ts): concurrent and later readers of an unchanged
 * directory share one listing (one read); any change of the directory (an entry created or removed, the directory
 * swapped for another) is seen by the next call; a recently modified ("racy") directory is never shared; a failed
 * read is not cached; the cache is bounded by bytes (its estimate `listingBytes`), least recently used listings
 * dropped first, and reports what it holds.
 */
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  CACHE_MIN_ENTRIES,
  ListingCache,
  RACY_MS,
  SmallListingCache,
  clearListingCache,
  smallSlotBytes,
  listingBytes,
  listingCacheStats,
  sharedListing,
  smallListing,
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
      small: { directories: 0, bytes: 0 },
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

describe('SmallListingCache (directories too small for ListingCache)', () => {
  /** Reads `dir` through a counting synchronous reader, with its fstat taken before the read (as src/fs/walk.ts). */
  function smallRead(cache: SmallListingCache, dir: string, reads: { n: number }) {
    const fd = openSync(dir, 'r');
    try {
      return cache.listing(dir, fd, fstatSync(fd, { bigint: true }), () => {
        reads.n++;
        return readdirSync(dir, { withFileTypes: true });
      });
    } finally {
      closeSync(fd);
    }
  }

  it('reuses an unchanged small directory, and reads it again after any change or swap', async () => {
    const dir = bigDir('small-kept', 3);
    await pastRacy();
    const cache = new SmallListingCache();
    const reads = { n: 0 };
    const first = smallRead(cache, dir, reads);
    expect(smallRead(cache, dir, reads)).toBe(first);
    expect(reads.n).toBe(1);
    expect(first.names).toEqual(['f00001', 'f00002', 'f00003']);
    expect(cache.stats()).toEqual({ directories: 1, bytes: smallSlotBytes(dir, first) });
    // Created, then removed with the mtime put back: ctime still tells.
    writeFileSync(path.join(dir, 'added'), '');
    expect(smallRead(cache, dir, reads).names).toContain('added');
    settle(dir);
    rmSync(path.join(dir, 'added'));
    settle(dir);
    expect(smallRead(cache, dir, reads).names).not.toContain('added');
    expect(reads.n).toBe(3);
    renameSync(dir, `${dir}-old`);
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'only'), '');
    settle(dir);
    expect(smallRead(cache, dir, reads).names).toEqual(['only']);
    expect(reads.n).toBe(4);
  });

  it('keeps nothing of a racy directory, and at most its byte bound (least recently used first)', async () => {
    const racy = path.join(scratch.dir, 'small-racy');
    mkdirSync(racy);
    writeFileSync(path.join(racy, 'x'), '');
    const cache = new SmallListingCache();
    const reads = { n: 0 };
    smallRead(cache, racy, reads);
    smallRead(cache, racy, reads);
    expect(reads.n).toBe(2);
    expect(cache.stats().directories).toBe(0);
    const dirs = ['small-a', 'small-b', 'small-c'].map((n) => bigDir(n, 4));
    await pastRacy();
    const one = smallSlotBytes(dirs[0], smallRead(new SmallListingCache(), dirs[0], { n: 0 }));
    // (Past its bound the cache drops down to 7/8 of it: two and a half slots' bound keeps two.)
    const bounded = new SmallListingCache(2.5 * one);
    const counts = dirs.map(() => ({ n: 0 }));
    smallRead(bounded, dirs[0], counts[0]);
    smallRead(bounded, dirs[1], counts[1]);
    smallRead(bounded, dirs[0], counts[0]); // a is now the most recently used
    smallRead(bounded, dirs[2], counts[2]); // b goes
    expect(bounded.stats()).toEqual({ directories: 2, bytes: 2 * one });
    smallRead(bounded, dirs[0], counts[0]);
    smallRead(bounded, dirs[1], counts[1]);
    expect(counts.map((c) => c.n)).toEqual([1, 2, 1]);
  });

  it("the process's small listings are reported by listingCacheStats and dropped by clearListingCache", async () => {
    const dir = bigDir('small-process', 2);
    await pastRacy();
    const fd = openSync(dir, 'r');
    let kept;
    try {
      kept = smallListing(dir, fd, fstatSync(fd, { bigint: true }), () => readdirSync(dir, { withFileTypes: true }));
    } finally {
      closeSync(fd);
    }
    expect(kept.names).toEqual(['f00001', 'f00002']);
    expect(listingCacheStats()).toEqual({
      directories: 0,
      entries: 0,
      bytes: 0,
      small: { directories: 1, bytes: smallSlotBytes(dir, kept) },
    });
    clearListingCache();
    expect(listingCacheStats().small).toEqual({ directories: 0, bytes: 0 });
  });

  it('a failed read keeps nothing and throws', async () => {
    const dir = bigDir('small-fails', 2);
    await pastRacy();
    const cache = new SmallListingCache();
    const fd = openSync(dir, 'r');
    try {
      const st = fstatSync(fd, { bigint: true });
      expect(() =>
        cache.listing(dir, fd, st, () => {
          throw Object.assign(new Error('EACCES'), { code: 'EACCES' });
        }),
      ).toThrow('EACCES');
    } finally {
      closeSync(fd);
    }
    expect(cache.stats()).toEqual({ directories: 0, bytes: 0 });
  });
});
