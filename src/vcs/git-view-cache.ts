/**
 * What the sanitized view reuses between calls (docs/security.md "What git may read"), in one state object. Nothing
 * here skips a check: a cached answer is used only when what it was computed from is provably the same.
 *
 * - `indexes`: the validated, rebuilt index of a repository, reused when the index bytes read for this call are equal,
 *   byte for byte, to the bytes that were validated (validation is a pure function of the bytes and the object
 *   format). Bounded by INDEX_CACHE_BYTES in all (the bytes, and about 128 bytes per entry name and directory held).
 * - `listings`: the entries (names by type) of an object-store directory, reused while the directory's identity and
 *   version (dev, ino, mtime, ctime) are unchanged; never cached within RACY_MS of its last change (a coarse timestamp
 *   could hide a change made in the same tick). Entries that are links are verified again on every call.
 * - `mirrors`: per private dir, the object stores its mirror was built for; the mirror is reused only after its whole
 *   content (every entry, every link's text) is found to be what the server wrote.
 */
import type { ValidatedIndex } from './git-index.js';
import { processSlot } from '../process-slots.js';

/** A directory changed less than this long ago (ms) is not cached. */
export const RACY_MS = 2000;
/** Most validated-index bytes kept in all (an index larger than this is validated on every call). */
export const INDEX_CACHE_BYTES = 64 * 1024 * 1024;
/** Most object-store directory listings kept (a full cache is cleared). */
const LISTINGS_MAX = 4096;

/** A validated index and the exact bytes it was validated from. */
export interface ReusedIndex {
  bytes: Buffer;
  hashBytes: 20 | 32;
  validated: ValidatedIndex;
  /** The work-tree directories its entries pass through (`entryDirectories`). */
  directories: Buffer[];
}

/**
 * One object-store directory's entries at one version, sorted by what the view does with them: the links (verified
 * again on every call), the subdirectories and the regular files. Anything else (a socket, a FIFO) is in none.
 */
export interface CachedListing {
  dev: number;
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
  links: string[];
  directories: string[];
  files: string[];
}

/** The view's process-wide state. */
export interface ViewCaches {
  /** By the index's real path, least recently used first. */
  readonly indexes: Map<string, ReusedIndex>;
  /** By the directory's real path. */
  readonly listings: Map<string, CachedListing>;
  /** By private dir: the fingerprint of the object stores its mirror shows. */
  readonly mirrors: Map<string, string>;
}

/** The one state object (src/process-slots.ts). */
export const viewCaches = processSlot('vcs/git-view-cache', (): ViewCaches => ({
  indexes: new Map(),
  listings: new Map(),
  mirrors: new Map(),
}));

/** Forgets everything reused (tests). */
export function clearViewCaches(): void {
  viewCaches.indexes.clear();
  viewCaches.listings.clear();
  viewCaches.mirrors.clear();
}

/** The memory a reused index holds, bytes: the file's bytes and about 128 per entry name or directory (a view each). */
const indexCost = (e: ReusedIndex): number => e.bytes.length + (e.validated.names.length + e.directories.length) * 128;

/** Keeps `entry` for index file `file`, evicting the least recently used until all fit INDEX_CACHE_BYTES. */
export function rememberIndex(file: string, entry: ReusedIndex): void {
  viewCaches.indexes.delete(file);
  if (indexCost(entry) > INDEX_CACHE_BYTES) return;
  let total = indexCost(entry);
  for (const e of viewCaches.indexes.values()) total += indexCost(e);
  for (const [key, e] of viewCaches.indexes) {
    if (total <= INDEX_CACHE_BYTES) break;
    viewCaches.indexes.delete(key);
    total -= indexCost(e);
  }
  viewCaches.indexes.set(file, entry);
}

/** Keeps a directory listing (the caller checked it is not racy); a full cache is cleared first. */
export function rememberListing(dir: string, listing: CachedListing): void {
  if (viewCaches.listings.size >= LISTINGS_MAX) viewCaches.listings.clear();
  viewCaches.listings.set(dir, listing);
}
