/**
 * One sorted listing of a directory, shared. Every page of list_directory and every search re-walks
 * the directories it visits; a 200,000-entry directory read and sorted per page and per concurrent call held one
 * copy per call (4.5 GB at 150 concurrent listings). Here a directory's sorted listing is read once and shared:
 *
 *  - Identity: the directory's lstat (device, inode, mtime and ctime in nanoseconds) taken BEFORE the read. A later
 *    call reuses a listing only when the directory's lstat is still exactly that, so any entry created, removed or
 *    renamed since (which changes the directory's mtime/ctime), or a directory swapped for another (inode), is
 *    always seen. Calls that arrive while the read is in flight join it (single flight) under the same rule.
 *  - Racy timestamps: file-system timestamps are coarse (a kernel tick), so two changes in the same tick can leave
 *    mtime unchanged. A listing whose directory was modified less than RACY_MS before the read is not shared at all
 *    (every call reads its own), as git does with its "racily clean" index entries.
 *  - Bounds: only directories of at least CACHE_MIN_ENTRIES entries are kept after their read; the cache holds at
 *    most CACHE_MAX_BYTES of listings in all, by the estimate `listingBytes` (least recently used listings go
 *    first); `listingCacheStats` reports what it holds.
 *
 * The process's listings are one `ListingCache` object; `sharedListing` uses it. Directories
 * too small for it (SMALL_DIRECTORY_BYTES) have their own bounded cache, looked up and filled synchronously
 * (`smallListing`) under the same identity and racy-time rules: a deep tree is mostly small directories, and reading
 * one again (an opendir through `/proc/self/fd/N`, getdents, a sort) was a third of a depth-3 tree's time per page.
 *
 * The listing is immutable once published: callers must not sort or change the arrays they get.
 */
import { fstatSync, lstatSync, type BigIntStats, type Dirent } from 'node:fs';
import { processSlot } from '../process-slots.js';

/** A directory's entries sorted by name (code units), with the names alone for fast comparison. */
export interface SortedListing {
  readonly dirents: readonly Dirent[];
  readonly names: readonly string[];
}

/** Directories smaller than this are not kept after their read (re-reading them is cheap). */
export const CACHE_MIN_ENTRIES = 1024;
/** Most bytes of listings the cache holds in all (`listingBytes`): 64 MiB, about 500,000 names of 16 characters. */
export const CACHE_MAX_BYTES = 64 * 1024 * 1024;
/**
 * Bytes one listed name costs besides its characters: its Dirent object, the name string's header and the two array
 * slots (dirents, names). Measured on Node 20, x64: a sorted 10,000-entry listing of 6-character names took about
 * 96 bytes per entry of heap in all (`process.memoryUsage().heapUsed` after gc); with the characters counted at two
 * bytes each (`listingBytes`), the estimate errs high.
 */
const ENTRY_OVERHEAD_BYTES = 96;
/**
 * A directory whose own size (st_size) is at most this holds fewer than CACHE_MIN_ENTRIES entries on the common file
 * systems (ext4: at least 12 bytes per entry, so at most 341 in one 4 KiB block; tmpfs: 20 per entry; xfs: a block or
 * less), so `ListingCache` would not keep its listing: a walk reads it through `smallListing` instead (synchronous, its
 * own bound). On a file system whose directory sizes say less (btrfs counts name bytes) a directory of many short
 * names may go there too: it is then kept under the small cache's bound, never wrong.
 */
export const SMALL_DIRECTORY_BYTES = 4096;

/**
 * Directories whose own size (st_size: about 20–30 bytes per entry on ext4, xfs and tmpfs; 4 KiB blocks) is at most
 * this are read synchronously (a few thousand entries, well under a millisecond); larger ones through the thread pool.
 */
export const SYNC_READDIR_MAX_BYTES = 64 * 1024;
/** A directory modified less than this long before the read is not shared (coarse timestamps), ms. */
export const RACY_MS = 1000;

interface Slot {
  key: string;
  listing: Promise<SortedListing>;
  /** Names in the listing. */
  size: number;
  /** `listingBytes` of the listing. */
  bytes: number;
}

/** What a listing holds in memory, estimated: per name, its UTF-16 characters and ENTRY_OVERHEAD_BYTES. */
export function listingBytes(listing: SortedListing): number {
  let bytes = listing.names.length * ENTRY_OVERHEAD_BYTES;
  for (const name of listing.names) bytes += 2 * name.length;
  return bytes;
}

/**
 * True when a listing read under the directory stat `st` (bigint) may be kept: the directory was not modified within
 * RACY_MS before `now` (ms since the epoch), and its size is not 0. A directory of a pseudo file system (procfs,
 * sysfs, devpts, tracefs, debugfs, cgroup's) reports size 0 and timestamps that do not move when its entries change
 * (/proc gains a directory per new process with its mount-time stamps), so its identity proves nothing; on the disk
 * and memory file systems a directory's size is never 0 (ext4, xfs, tmpfs: at least its own entries; btrfs: 0 only
 * when empty, which costs nothing to read again).
 */
export function keepable(st: BigIntStats, now: number): boolean {
  return st.size !== 0n && now - Number(st.mtimeMs) >= RACY_MS && now - Number(st.ctimeMs) >= RACY_MS;
}

/** A directory's identity from its fstat (bigint): device, inode, mtime and ctime in nanoseconds. */
export function keyOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.mtimeNs}:${st.ctimeNs}`;
}

/**
 * The identity a kept listing is keyed by (device, inode, mtime and ctime in nanoseconds of the directory's fstat), or
 * null when that stat is not `keepable` at `now` (racy, or a pseudo file system's), when no listing
 * may be shared under it. A later fstat with the same identity proves the directory's entries unchanged (the module
 * comment); src/tools/list-memo.ts keys pages on it.
 */
export function listingIdentity(st: BigIntStats, now: number): string | null {
  return keepable(st, now) ? keyOf(st) : null;
}

/** Sorted listings of large directories, shared by every walk of the process (see the module comment). */
export class ListingCache {
  private readonly cache = new Map<string, Slot>();
  private readonly inFlight = new Map<string, Slot>();
  private cachedEntries = 0;
  private cachedBytes = 0;

  /**
   * @param maxBytes most bytes of listings held (`listingBytes`)
   */
  constructor(private readonly maxBytes: number = CACHE_MAX_BYTES) {}

  /**
   * The sorted listing of `dirAbs`, read with `read` (the caller's raw readdir: it decides how the directory is
   * opened) unless a listing taken under the same directory identity is cached or in flight. `fd`, when given, is an
   * open descriptor of that very directory (src/fs/verified-dir.ts): its identity is taken with fstat, so a path
   * another process re-points meanwhile can never pair one directory's identity with another's listing.
   * @throws whatever `read` throws (nothing is cached then)
   */
  async listing(dirAbs: string, read: () => Promise<Dirent[]>, fd?: number): Promise<SortedListing> {
    const identity = (): BigIntStats | undefined => {
      try {
        return fd !== undefined
          ? fstatSync(fd, { bigint: true })
          : lstatSync(dirAbs, { bigint: true, throwIfNoEntry: false });
      } catch {
        return undefined;
      }
    };
    const st = identity();
    if (!st || !keepable(st, Date.now())) return sortListing(await read());
    const key = keyOf(st);
    const hit = this.cache.get(dirAbs);
    if (hit && hit.key === key) {
      this.cache.delete(dirAbs); // refresh its LRU position
      this.cache.set(dirAbs, hit);
      return hit.listing;
    }
    const flying = this.inFlight.get(dirAbs);
    if (flying && flying.key === key) return flying.listing;
    const slot: Slot = { key, size: 0, bytes: 0, listing: read().then(sortListing) };
    this.inFlight.set(dirAbs, slot);
    try {
      const listing = await slot.listing;
      slot.size = listing.names.length;
      // Kept only when the directory is still the one whose identity keys it (not changed or swapped during the read).
      const after = identity();
      if (slot.size >= CACHE_MIN_ENTRIES && after !== undefined && keyOf(after) === key) {
        slot.bytes = listingBytes(listing);
        this.remember(dirAbs, slot);
      }
      return listing;
    } finally {
      if (this.inFlight.get(dirAbs) === slot) this.inFlight.delete(dirAbs);
    }
  }

  private remember(dirAbs: string, slot: Slot): void {
    const old = this.cache.get(dirAbs);
    if (old) this.drop(dirAbs, old);
    if (slot.bytes > this.maxBytes) return;
    this.cache.set(dirAbs, slot);
    this.cachedEntries += slot.size;
    this.cachedBytes += slot.bytes;
    for (const [dir, s] of this.cache) {
      if (this.cachedBytes <= this.maxBytes) break;
      this.drop(dir, s);
    }
  }

  private drop(dirAbs: string, slot: Slot): void {
    this.cache.delete(dirAbs);
    this.cachedEntries -= slot.size;
    this.cachedBytes -= slot.bytes;
  }

  /** Drops every cached listing (tests; a process that wants the memory back). */
  clear(): void {
    this.cache.clear();
    this.cachedEntries = 0;
    this.cachedBytes = 0;
  }

  /** What the cache holds: directories, names, and bytes (`listingBytes`). */
  stats(): { directories: number; entries: number; bytes: number } {
    return { directories: this.cache.size, entries: this.cachedEntries, bytes: this.cachedBytes };
  }
}

/**
 * Most bytes of small directories kept (`smallSlotBytes`): 8 MiB, about 12,000 directories of three short names at
 * 60-character paths, 30,000 empty ones.
 */
export const SMALL_CACHE_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Bytes one kept small directory costs besides its listing and its path: the Map entry, the slot, the listing object
 * and its two arrays, the identity key string (about 50 characters). Estimated high.
 */
const SMALL_SLOT_OVERHEAD_BYTES = 256;

/**
 * What one kept small directory holds, estimated: `listingBytes` of its listing, its path's UTF-16 characters (the
 * Map's key) and SMALL_SLOT_OVERHEAD_BYTES — never 0, so empty directories count against the bound too.
 */
export function smallSlotBytes(dirAbs: string, listing: SortedListing): number {
  return listingBytes(listing) + 2 * dirAbs.length + SMALL_SLOT_OVERHEAD_BYTES;
}

/** A small directory's sorted listing, kept with the identity it was read under. */
interface SmallSlot {
  key: string;
  listing: SortedListing;
  bytes: number;
}

/**
 * Sorted listings of small directories (SMALL_DIRECTORY_BYTES), looked up and filled synchronously: the caller
 * passes the directory's fstat (bigint, of the verified descriptor) taken before the read, as `ListingCache.listing`
 * takes it. Least recently used listings go first past `maxBytes`.
 */
export class SmallListingCache {
  private readonly cache = new Map<string, SmallSlot>();
  private cachedBytes = 0;

  /** @param maxBytes most bytes held (`smallSlotBytes` of each kept directory) */
  constructor(private readonly maxBytes: number = SMALL_CACHE_MAX_BYTES) {}

  /**
   * The sorted listing of the directory open as `fd` (path `dirAbs`, the cache's key), whose fstat before the read is
   * `st`: the kept one when it was read under exactly this identity, else `read()` sorted, kept when the directory
   * was not modified within RACY_MS and its identity after the read is still `st`'s. Each kept directory costs
   * `smallSlotBytes`; past `maxBytes`, the least recently used go until 7/8 of it is held.
   * @throws whatever `read` throws (nothing is kept then)
   */
  listing(dirAbs: string, fd: number, st: BigIntStats, read: () => Dirent[]): SortedListing {
    const now = Date.now();
    if (!keepable(st, now)) return sortListing(read());
    const key = keyOf(st);
    const hit = this.cache.get(dirAbs);
    if (hit !== undefined && hit.key === key) {
      this.cache.delete(dirAbs); // refresh its LRU position
      this.cache.set(dirAbs, hit);
      return hit.listing;
    }
    const listing = sortListing(read());
    let after: BigIntStats | undefined;
    try {
      after = fstatSync(fd, { bigint: true });
    } catch {
      after = undefined;
    }
    if (after !== undefined && keyOf(after) === key)
      this.remember(dirAbs, { key, listing, bytes: smallSlotBytes(dirAbs, listing) });
    return listing;
  }

  private remember(dirAbs: string, slot: SmallSlot): void {
    const old = this.cache.get(dirAbs);
    if (old !== undefined) {
      this.cache.delete(dirAbs);
      this.cachedBytes -= old.bytes;
    }
    if (slot.bytes > this.maxBytes) return;
    this.cache.set(dirAbs, slot);
    this.cachedBytes += slot.bytes;
    if (this.cachedBytes <= this.maxBytes) return;
    // Past the bound, down to 7/8 of it at once: a Map iterates over the holes its deletions leave at its start until
    // it is rehashed, so one eviction per insertion from a full cache walked thousands of holes each time (a walk of
    // 100,000 small directories: 2.2 s of CPU instead of 0.9 s).
    const lowWater = this.maxBytes - this.maxBytes / 8;
    for (const [dir, s] of this.cache) {
      if (this.cachedBytes <= lowWater) break;
      this.cache.delete(dir);
      this.cachedBytes -= s.bytes;
    }
  }

  /** Drops every kept listing. */
  clear(): void {
    this.cache.clear();
    this.cachedBytes = 0;
  }

  /** What the cache holds: directories and bytes (`smallSlotBytes`). */
  stats(): { directories: number; bytes: number } {
    return { directories: this.cache.size, bytes: this.cachedBytes };
  }
}

/** The process's listings (src/process-slots.ts): large directories' and small ones'. */
const listings = processSlot('fs/listing-cache', () => ({
  large: new ListingCache(),
  small: new SmallListingCache(),
}));

/** `SmallListingCache.listing` of the process's cache of small directories (src/fs/walk.ts). */
export function smallListing(dirAbs: string, fd: number, st: BigIntStats, read: () => Dirent[]): SortedListing {
  return listings.small.listing(dirAbs, fd, st, read);
}

/** The process's `ListingCache.listing(dirAbs, read, fd)`. */
export function sharedListing(dirAbs: string, read: () => Promise<Dirent[]>, fd?: number): Promise<SortedListing> {
  return listings.large.listing(dirAbs, read, fd);
}

/**
 * `dirents` sorted in place by name (code units), with the names alone: a listing of its own (not shared), for a
 * directory too small to be kept (see `SMALL_DIRECTORY_BYTES`).
 */
export function sortListing(dirents: Dirent[]): SortedListing {
  dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { dirents, names: dirents.map((d) => d.name) };
}

/** Drops every cached listing of the process (tests). */
export function clearListingCache(): void {
  listings.large.clear();
  listings.small.clear();
}

/**
 * What the process's caches hold: the large directories' (directories, names, bytes) and, under `small`, the small
 * directories' (directories, bytes as `smallSlotBytes` counts them). Tests and diagnostics.
 */
export function listingCacheStats(): {
  directories: number;
  entries: number;
  bytes: number;
  small: { directories: number; bytes: number };
} {
  return { ...listings.large.stats(), small: listings.small.stats() };
}
