/**
 * Directory listings of the near-path search (src/policy/near-paths.ts), reused between calls. A failing call
 * (NOT_FOUND, NOT_ALLOWED outside the roots) walks the roots breadth first; without reuse every failing call opened
 * every directory of the walk from its root, component by component, and read it again.
 *
 * What is kept: per directory (absolute real path), its raw entries as the verified read returned them (at most the
 * reader's `max`, in readdir order), and the directory's stamp: device, inode, mtime and ctime in nanoseconds, from
 * fstat of the verified descriptor taken BEFORE the read and checked unchanged AFTER it. Nothing the policy decides is
 * kept: hidden/deny/secret rules and containment are applied by the caller on every call, to the current
 * configuration and roots.
 *
 * When a kept listing is reused: only when every directory from the anchor (the outermost prefix of the path inside
 * the current roots, where a verified open starts) down to it has a kept listing whose stamp equals its stamp now, and
 * each one's name is a directory in its parent's kept listing. The anchor's stamp now is taken through a verified open
 * of it (src/fs/verified-dir.ts: its location proven), never by its path string: the path above a root lies outside
 * the roots, and a link put there (an ancestor of the root moved, a link to it in its place) leaves the root's own
 * stamp unchanged while a verified open refuses it. The others are lstat'ed by path string once the anchor is proven.
 * Why that is the listing a verified read would give now:
 *  - ctime cannot be set by a process and changes on every change of the inode, a rename of it included, and mtime
 *    changes on every entry created, removed or renamed in a directory; so an unchanged stamp means the directory
 *    holds the same names, and was not moved, since its listing was read through a verified descriptor.
 *  - A directory has one parent, so a chain of unmoved directories from the anchor is still the chain the verified
 *    open walked: no link can have taken a component's place (that changes the parent's mtime), and a directory moved
 *    out of the roots (its ctime) or replaced (its inode) is read afresh, through a verified open, which refuses it.
 *  - Racy timestamps: a directory modified less than RACY_MS before its read is not kept (coarse timestamps can
 *    hide a second change in the same tick), nor one of size 0 (a pseudo file system's, whose stamps do not move):
 *    src/fs/listing-cache.ts `keepable`, the one rule of both.
 * Bounds: at most MAX_DIRS directories, MAX_ENTRIES names and MAX_BYTES bytes (estimated: `entryBytes`) in all,
 * least recently used first out; a listing over a bound on its own is not kept (read afresh on every call). A
 * directory more than MAX_DEPTH components deep is not kept either: the chain check lstats every directory above it by
 * path string, each a walk from `/`, so its cost grows with the square of the depth (2,000 levels: ~150-200 ms in one
 * synchronous stretch); bounded so, it stays under a few milliseconds.
 * Docs: docs/security.md, "Security model" (verified reads); docs/benchmarks.md, "Mutations: the one-line edit and the mixed load".
 */
import { fstatSync, lstatSync, type BigIntStats, type Dirent } from 'node:fs';
import path from 'node:path';
import { keepable, SYNC_READDIR_MAX_BYTES } from '../fs/listing-cache.js';
import { VerifiedDir, withVerifiedDir } from '../fs/verified-dir.js';
import { processSlot } from '../process-slots.js';

/** Most directories kept. */
export const MAX_DIRS = 4096;
/** Most names kept over all directories. */
export const MAX_ENTRIES = 200_000;
/** Deepest directory kept, in path components (see the module comment). */
export const MAX_DEPTH = 128;
/** Most bytes kept over all directories (`entryBytes`): names of up to 255 bytes would otherwise hold ~70 MB. */
export const MAX_BYTES = 16 * 1024 * 1024;
/** Memory of one kept entry besides its name (its Dirent, two array slots, a set slot), bytes; measured ~90. */
const ENTRY_OVERHEAD_BYTES = 96;

/** What one kept entry holds in memory, estimated: ENTRY_OVERHEAD_BYTES and two bytes per UTF-16 unit of its name. */
export function entryBytes(name: string): number {
  return ENTRY_OVERHEAD_BYTES + 2 * name.length;
}

/** The bounds of a NearListings (tests give smaller ones). */
export interface NearLimits {
  dirs: number;
  entries: number;
  bytes: number;
}

/** One directory's entries as read (readdir order), shared: callers must not change the array or its entries. */
export interface NearListing {
  readonly entries: readonly Dirent[];
  /** The entries sorted by `localeCompare` of their names (computed once, then shared). */
  sorted(): readonly Dirent[];
}

interface Kept {
  stamp: string;
  listing: NearListing;
  /** `entryBytes` of its entries. */
  bytes: number;
  /** Names of the entries that are directories (the chain check). */
  dirs: ReadonlySet<string>;
}

function stampOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.mtimeNs}:${st.ctimeNs}`;
}

/**
 * The stamp of the anchor `dir` now, through a verified open (its location proven, see the module comment).
 * @throws as VerifiedDir.open (a link on the way or in its place, outside the roots, missing)
 */
function anchorStamp(dir: string, isInside: (p: string) => boolean): BigIntStats {
  const d = VerifiedDir.open(dir, isInside);
  try {
    return fstatSync(d.fd, { bigint: true });
  } finally {
    d.close();
  }
}

/** Components of the absolute path `dir` (`/` is 0, `/a/b` is 2). */
function depthOf(dir: string): number {
  let n = 0;
  for (let i = 0; i < dir.length; i++) if (dir[i] === path.sep) n++;
  return dir.endsWith(path.sep) ? n - 1 : n;
}

function listingOf(entries: Dirent[]): NearListing {
  let sorted: Dirent[] | undefined;
  return {
    entries,
    sorted: () => (sorted ??= [...entries].sort((a, b) => a.name.localeCompare(b.name))),
  };
}

/** The kept listings of the process (see the module comment). */
export class NearListings {
  private readonly kept = new Map<string, Kept>();
  private names = 0;
  private bytes = 0;

  /** @param limits the bounds (MAX_DIRS, MAX_ENTRIES, MAX_BYTES unless given) */
  constructor(private readonly limits: NearLimits = { dirs: MAX_DIRS, entries: MAX_ENTRIES, bytes: MAX_BYTES }) {}

  /**
   * A reader for one search: `read(dir)` gives the listing of `dir` (absolute, real) as a verified read (at most `max`
   * entries) would give it now, or null when it cannot be read (missing, not a directory, a link on the way, outside).
   * Directories found current are remembered for the rest of the search (one lstat per directory per search).
   * @param isInside containment predicate of the current roots (from policy)
   */
  reader(isInside: (p: string) => boolean, max: number): (dir: string) => Promise<NearListing | null> {
    const current = new Set<string>();
    return async (dir) => {
      if (!isInside(dir)) return null;
      if (this.isCurrent(dir, isInside, current)) {
        const kept = this.kept.get(dir)!;
        this.kept.delete(dir); // refresh its LRU position
        this.kept.set(dir, kept);
        return kept.listing;
      }
      try {
        return await withVerifiedDir(dir, isInside, async (d) => {
          const before = fstatSync(d.fd, { bigint: true });
          // A small directory in one synchronous read (getdents on this thread: well under a millisecond), the same
          // entries in the same order as the iteration, which costs an opendir and two reads through the I/O pool.
          const entries = before.size <= SYNC_READDIR_MAX_BYTES ? d.readdirSync().slice(0, max) : await d.readdir(max);
          const listing = listingOf(entries);
          const after = fstatSync(d.fd, { bigint: true });
          if (keepable(before, Date.now()) && stampOf(after) === stampOf(before)) {
            this.keep(dir, stampOf(before), listing);
            current.add(dir);
          }
          return listing;
        });
      } catch {
        return null;
      }
    };
  }

  /** Whether `dir`'s kept listing is current: its chain from the anchor is unchanged (see the module comment). */
  private isCurrent(dir: string, isInside: (p: string) => boolean, current: Set<string>): boolean {
    if (current.has(dir)) return this.kept.has(dir);
    const kept = this.kept.get(dir);
    if (!kept) return false;
    const parent = path.dirname(dir);
    const anchor = parent === dir || !isInside(parent);
    if (!anchor && !(this.isCurrent(parent, isInside, current) && this.kept.get(parent)!.dirs.has(path.basename(dir))))
      return false;
    let st: BigIntStats | undefined;
    try {
      st = anchor ? anchorStamp(dir, isInside) : lstatSync(dir, { bigint: true, throwIfNoEntry: false });
    } catch {
      st = undefined;
    }
    if (!st || !st.isDirectory() || stampOf(st) !== kept.stamp) {
      this.drop(dir);
      return false;
    }
    current.add(dir);
    return true;
  }

  private keep(dir: string, stamp: string, listing: NearListing): void {
    this.drop(dir);
    let bytes = 0;
    for (const e of listing.entries) bytes += entryBytes(e.name);
    if (listing.entries.length > this.limits.entries || bytes > this.limits.bytes) return;
    if (depthOf(dir) > MAX_DEPTH) return;
    const dirs = new Set(listing.entries.filter((e) => e.isDirectory()).map((e) => e.name));
    this.kept.set(dir, { stamp, listing, bytes, dirs });
    this.names += listing.entries.length;
    this.bytes += bytes;
    const { limits } = this;
    for (const [d] of this.kept) {
      if (this.kept.size <= limits.dirs && this.names <= limits.entries && this.bytes <= limits.bytes) break;
      this.drop(d);
    }
  }

  private drop(dir: string): void {
    const kept = this.kept.get(dir);
    if (!kept) return;
    this.kept.delete(dir);
    this.names -= kept.listing.entries.length;
    this.bytes -= kept.bytes;
  }

  /** Drops every kept listing (tests: the same search without reuse). */
  clear(): void {
    this.kept.clear();
    this.names = 0;
    this.bytes = 0;
  }

  /** Directories, names and bytes (`entryBytes`) kept (tests, diagnostics). */
  stats(): { directories: number; entries: number; bytes: number } {
    return { directories: this.kept.size, entries: this.names, bytes: this.bytes };
  }
}

/** The process's kept near-path listings (src/process-slots.ts). */
export const processNearListings = processSlot('policy/near-listings', () => new NearListings());
