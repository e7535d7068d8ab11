/**
 * A process-wide cache of the whole-file facts a read reports (docs/errors.md "Optimistic concurrency": the content hash always covers the whole
 * file; docs/tools.md: total lines, EOL style, BOM, UTF-8 validity), plus a sparse line index, so that a range read of a
 * large unchanged file neither re-hashes nor re-scans it. Used by read_file / read_files (src/fs/read-range.ts);
 * mutations never trust it (their optimistic-concurrency check always hashes the bytes it replaces,
 * src/fs/read-current.ts).
 *
 * Validity. An entry is keyed by file identity (device, inode) and is used only while the file's size, mtime and
 * ctime (as fstat reports them on the open handle, in ms with sub-ms fraction) are exactly those seen when it was
 * filled. Any write through the file system changes mtime and ctime to "now"; ctime cannot be set back by utimes, and
 * an atomic replace (rename) changes the inode. The one gap is timestamp granularity: file systems stamp with a
 * coarse clock (a few ms on Linux), so a same-size rewrite in place within the same tick as the cached version keeps
 * every key field. The cache closes it as git does for "racily clean" index entries: a scan is stored only when the
 * file's mtime and ctime were already `racyMarginMs` (default 2 s) older than the moment the scan started, and only
 * when fstat after the scan still shows the identity it showed before (no write during the scan). A file that
 * changed within the last 2 s is therefore always re-scanned; any later change gets a timestamp after the cached one.
 * Not covered: writes through a shared memory mapping whose mtime update the kernel defers, and network file systems
 * whose server clock lags this host's by more than the margin.
 */
import type { Stats } from 'node:fs';
import { processSlot } from '../process-slots.js';

/** The key fields of an open file (fstat). Times in ms since the epoch, as Node's Stats reports them. */
export interface FileIdentity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** Whole-file facts of one version of a file, as one pass over its bytes finds them. */
export interface FileFacts {
  /** `sha256:` + 64 hex over the raw bytes. */
  hash: string;
  /** Bytes. */
  size: number;
  /** Lines (0 for an empty file; a last line without terminator counts). */
  totalLines: number;
  /** Terminators that are CRLF, and bare LF. */
  crlf: number;
  lf: number;
  bom: boolean;
  validUtf8: boolean;
  endsWithNewline: boolean;
}

/**
 * File facts and a sparse line index: `checkpointNewlines[k]` is the number of `\n` bytes in
 * `[0, k * checkpointBytes)` for every k with `k * checkpointBytes <= size` (k = 0 included).
 */
export interface ContentFacts extends FileFacts {
  checkpointBytes: number;
  checkpointNewlines: Float64Array;
}

/** Options of a cache. */
export interface ContentCacheOptions {
  /** Most files remembered (least recently used goes first). Default 64. */
  maxEntries?: number;
  /**
   * Most bytes the entries may hold together, by `entryBytes` (least recently used goes first); an entry larger than
   * this alone is not stored. Default 16 MiB (the line index of 64 files of 2 GiB).
   */
  maxBytes?: number;
  /** Files smaller than this are not worth caching (a scan is cheaper than the bookkeeping). Default 1 MiB. */
  minFileBytes?: number;
  /** The racy-timestamp margin in ms (see the module comment). Default 2000. */
  racyMarginMs?: number;
  /** Clock, ms since the epoch (a test seam). Default Date.now. */
  now?: () => number;
}

/** Byte spacing of the sparse line index. 64 KiB: a lookup scans at most 64 KiB; 1 GiB costs 128 KiB of index. */
export const CHECKPOINT_BYTES = 64 * 1024;

/** The identity fields of a Stats. */
export function identityOf(stats: Stats): FileIdentity {
  return { dev: stats.dev, ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs, ctimeMs: stats.ctimeMs };
}

/**
 * What one entry holds in memory, bytes: its line index (8 bytes a checkpoint), its hash string and a fixed 256 for
 * the objects and the key around them. An estimate of what it keeps alive, for the cache's byte bound.
 */
export function entryBytes(facts: ContentFacts): number {
  return facts.checkpointNewlines.byteLength + 2 * facts.hash.length + 256;
}

function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

/** The cache (see the module comment for when an entry may be used). */
export class ContentFactsCache {
  private readonly entries = new Map<string, { identity: FileIdentity; facts: ContentFacts; bytes: number }>();
  private heldBytes = 0;
  readonly maxEntries: number;
  readonly maxBytes: number;
  readonly minFileBytes: number;
  readonly racyMarginMs: number;
  private readonly now: () => number;

  constructor(options: ContentCacheOptions = {}) {
    this.maxEntries = options.maxEntries ?? 64;
    this.maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
    this.minFileBytes = options.minFileBytes ?? 1024 * 1024;
    this.racyMarginMs = options.racyMarginMs ?? 2000;
    this.now = options.now ?? Date.now;
  }

  /** The current time by this cache's clock (ms since the epoch); take it before a scan and pass it to `store`. */
  clock(): number {
    return this.now();
  }

  /** True when a file of this size would be cached at all (so the scan should build the line index). */
  wants(size: number): boolean {
    return size >= this.minFileBytes;
  }

  /** The facts of exactly this version of the file, or undefined. */
  lookup(identity: FileIdentity): ContentFacts | undefined {
    const key = `${identity.dev}:${identity.ino}`;
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (!sameIdentity(hit.identity, identity)) {
      this.drop(key);
      return undefined;
    }
    // LRU: move to the end.
    this.entries.delete(key);
    this.entries.set(key, hit);
    return hit.facts;
  }

  /**
   * Stores the facts of a completed scan when it is safe to reuse them.
   * @param before fstat of the handle before the scan (the identity the facts describe)
   * @param after fstat of the handle after the scan
   * @param scanStartedMs `clock()` taken before the scan read its first byte
   * @returns true when stored; false for a small file, a file that changed during the scan, or a racily fresh one
   */
  store(before: FileIdentity, after: FileIdentity, scanStartedMs: number, facts: ContentFacts): boolean {
    if (!this.wants(before.size) || facts.size !== before.size || !sameIdentity(before, after)) return false;
    if (Math.max(before.mtimeMs, before.ctimeMs) > scanStartedMs - this.racyMarginMs) return false;
    const bytes = entryBytes(facts);
    if (bytes > this.maxBytes) return false;
    const key = `${before.dev}:${before.ino}`;
    this.drop(key);
    this.entries.set(key, { identity: { ...before }, facts, bytes });
    this.heldBytes += bytes;
    while (this.entries.size > this.maxEntries || this.heldBytes > this.maxBytes) {
      this.drop(this.entries.keys().next().value as string);
    }
    return true;
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.heldBytes -= entry.bytes;
  }

  /** Drops every entry. */
  clear(): void {
    this.entries.clear();
    this.heldBytes = 0;
  }

  /** Bytes the entries hold together (`entryBytes` of each): at most `maxBytes`. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Number of files remembered. */
  get size(): number {
    return this.entries.size;
  }
}

/** The one cache of this process (read_file and read_files; src/process-slots.ts). */
export const contentFactsCache = processSlot('fs/content-cache', () => new ContentFactsCache());
