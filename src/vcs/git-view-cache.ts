/**
 * What the sanitized view reuses between calls (docs/security.md "What git may read"), in one state object. Nothing
 * here skips a check: a cached answer is used only when what it was computed from is provably the same.
 *
 * - `indexes`: the validated, rebuilt index of a repository, reused when the index bytes read for this call are equal,
 *   byte for byte, to the bytes that were validated (validation is a pure function of the bytes and the object
 *   format). Bounded by INDEX_CACHE_BYTES in all (the bytes, and about 128 bytes per entry name and directory held).
 * - `listings`: the entries (names by type) of an object-store directory, reused while the directory's identity and
 *   version (dev, ino, mtime, ctime) are unchanged; never cached unless it has settled (`settled`: a coarse timestamp
 *   could hide a change made in the same tick). Entries that are links are verified again on every call.
 * - `mirrors`: per private dir, the object stores its mirror was built for; the mirror is reused only after its whole
 *   content (every entry, every link's text) is found to be what the server wrote.
 * - `stamps`: what a full check found an entry of a private dir to hold (the private index: the rebuilt index; a
 *   mirror directory: its entries), tied to the entry's `Stamp`. While the entry shows the same stamp it holds the
 *   same thing: a link, unlink or rename in a directory, and a write(2) or truncation of a file, moves its ctime, which
 *   no process can set back. A stamp is kept only when the entry had last changed RACY_MS before the check,
 *   or before the file system's own clock read just before the check (`settled`, `FsTime`), so a change made in the
 *   same clock tick as the check still shows as a later ctime. A write through a
 *   shared mapping of a file moves no time once its page is dirty: that is why the repository's index (a file of the
 *   roots, written by anyone who writes the repository) is read on every call and never trusted by its stamp; the
 *   private dir is the server's own (mode 0700, outside the roots), where a process able to map its files could as
 *   well change them after any check, before git reads them.
 */
import type { Stats } from 'node:fs';
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

/** An entry's identity and version: device, inode, size, modification and change times (ms). */
export interface Stamp {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** The stamp of `st`. */
export const stampOf = (st: Stats): Stamp => ({
  dev: st.dev,
  ino: st.ino,
  size: st.size,
  mtimeMs: st.mtimeMs,
  ctimeMs: st.ctimeMs,
});

/** True when `st` shows exactly `stamp`. */
export const sameStamp = (stamp: Stamp, st: Stats): boolean =>
  stamp.dev === st.dev &&
  stamp.ino === st.ino &&
  stamp.size === st.size &&
  stamp.mtimeMs === st.mtimeMs &&
  stamp.ctimeMs === st.ctimeMs;

/**
 * A file system's clock, read by changing a file of it (`fsTimeNow` in src/vcs/git-materialize.ts): the file's device
 * and the change time (ms) the change got. Every later change of any entry of that file system gets a change time no
 * earlier than this: the kernel stamps a change with its coarse clock cut to the file system's granularity (or a finer
 * time never before one already handed out), whatever that granularity is.
 */
export interface FsTime {
  dev: number;
  ctimeMs: number;
}

/**
 * True when the entry of `st` (a stat taken after `now` was read) has settled: a check of it may be tied to its stamp,
 * because any later change of it shows as a later time. Either it last changed at least RACY_MS ago (a coarse
 * timestamp cannot hide 2 s), or `now`, read on the same file system before the stat, is already past its last change:
 * a change made after the stat gets a change time of at least `now`, later than the one in the stamp.
 */
export const settled = (st: Stats, now: FsTime | null = null): boolean =>
  Date.now() - Math.max(st.mtimeMs, st.ctimeMs) >= RACY_MS ||
  (now !== null && now.dev === st.dev && Math.max(st.mtimeMs, st.ctimeMs) < now.ctimeMs);

/** What a full check found an entry of a private dir to hold (compared with `===`), and the entry's stamp then. */
export interface StampedCheck {
  stamp: Stamp;
  holds: unknown;
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
  /** By the path of a private dir's entry (its index, its mirror directories). */
  readonly stamps: Map<string, StampedCheck>;
}

/** The one state object (src/process-slots.ts). */
export const viewCaches = processSlot('vcs/git-view-cache', (): ViewCaches => ({
  indexes: new Map(),
  listings: new Map(),
  mirrors: new Map(),
  stamps: new Map(),
}));

/** Forgets everything reused (tests). */
export function clearViewCaches(): void {
  viewCaches.indexes.clear();
  viewCaches.listings.clear();
  viewCaches.mirrors.clear();
  viewCaches.stamps.clear();
}

/** Forgets the stamps of private dir `dir`'s entries (the dir is discarded). */
export function forgetStamps(dir: string): void {
  for (const key of viewCaches.stamps.keys()) if (key.startsWith(`${dir}/`)) viewCaches.stamps.delete(key);
}

/**
 * True when the private dir entry `file` (its stat `st`, taken before the check that would follow) was found by a
 * full check to hold `holds` and shows the same stamp since.
 */
export function heldSince(file: string, st: Stats, holds: unknown): boolean {
  const kept = viewCaches.stamps.get(file);
  return kept !== undefined && kept.holds === holds && sameStamp(kept.stamp, st);
}

/**
 * Records that a full check found `file` (stat `st`, taken before the check and after `now` was read) to hold `holds`,
 * if it had settled (`settled`).
 */
export function rememberHeld(file: string, st: Stats, holds: unknown, now: FsTime | null): void {
  if (settled(st, now)) viewCaches.stamps.set(file, { stamp: stampOf(st), holds });
  else viewCaches.stamps.delete(file);
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
