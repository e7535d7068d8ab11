/**
 * The process's content summaries (native/fs_tools_native_summary.c; docs/tools.md "Content summaries"): what content
 * search keeps between searches about each file it read whole — the binary verdict or a Bloom bitset of the file's
 * byte trigrams, keyed by mount, device, inode, size, mtime and ctime — so that a later search skips, with one statx, a file
 * whose summary proves it cannot hold the query's required bytes. They live in the native addon (one table for the
 * process, both reader threads), so without the addon there are none. This module reports and controls them, as
 * src/fs/listing-cache.ts `listingCacheStats` reports the listings.
 */
import { mainThreadNativeAddon } from './native-load.js';
import type { NativeAddon } from './native-reader.js';

/** What the summaries hold and did (counts since the process started). */
export interface ContentSummaryStats {
  enabled: boolean;
  /** Files with a summary now. */
  entries: number;
  /** Bytes the table holds (entries, indexes, bitsets; 0 before its first use). */
  bytes: number;
  /** Directories remembered as read before (summaries are built only there). */
  directories: number;
  /** Files a summary answered without a read. */
  skipped: number;
  /** Summaries stored. */
  stored: number;
  /** Times the table was emptied (a bound reached, or `clearContentSummaries`). */
  cleared: number;
}

function call(op: 0 | 1 | 2 | 3 | 4, addon: NativeAddon | null, ...bounds: number[]): ContentSummaryStats | null {
  if (!addon) return null;
  const [enabled, entries, bytes, directories, skipped, stored, cleared] = addon.contentSummaries(op, ...bounds);
  return { enabled: enabled === 1, entries, bytes, directories, skipped, stored, cleared };
}

/** What the summaries hold (null: no addon in this process, so no summaries). Tests and diagnostics. */
export function contentSummaryStats(addon: NativeAddon | null = mainThreadNativeAddon()): ContentSummaryStats | null {
  return call(0, addon);
}

/**
 * Turns the summaries on or off for the whole process (off also drops every entry); returns the stats after. Both
 * settings give the same search results (but for what a summary does not see: docs/security.md "Content summaries"):
 * only the reads saved differ.
 */
export function setContentSummaries(
  on: boolean,
  addon: NativeAddon | null = mainThreadNativeAddon(),
): ContentSummaryStats | null {
  return call(on ? 1 : 2, addon);
}

/** Drops every summary and remembered directory (they stay on or off as they were); returns the stats after. */
export function clearContentSummaries(addon: NativeAddon | null = mainThreadNativeAddon()): ContentSummaryStats | null {
  return call(3, addon);
}

/**
 * Lowers the table's bounds (at most `entries` summaries and `bytes` of bitsets; each capped at the compiled bound)
 * and drops every entry; returns the stats after. For tests of the bound.
 */
export function setContentSummaryBounds(
  entries: number,
  bytes: number,
  addon: NativeAddon | null = mainThreadNativeAddon(),
): ContentSummaryStats | null {
  return call(4, addon, entries, bytes);
}
