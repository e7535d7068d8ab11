/**
 * list_directory's page memo (docs/tools.md "list_directory"): a names-and-types page whose every input is proven
 * unchanged is handed out again instead of being walked, built and serialized again. A page is a pure function of:
 *
 *  - the call's arguments (path as given, depth, include, exclude, respect_gitignore, the page size, the cursor) and
 *    what policy resolved the path to (the directory's real path and its root's) — the memo's key;
 *  - the process's policy (the roots snapshot, the policy rules, the secret and exec-config switches, the guarded
 *    paths), compared by identity: a new roots snapshot (a client's roots/list_changed) misses;
 *  - the directory's entries, proven unchanged by its identity (src/fs/listing-cache.ts `listingIdentity`: device,
 *    inode, mtime and ctime in nanoseconds of its verified descriptor's fstat, with the kept listings' racy rule),
 *    and the text of every `.gitignore` the walk read from the root down (src/fs/walk.ts WalkTrace, `probeWalk`),
 *    read again on every call and compared in full.
 *
 * Only pages that depend on nothing else are kept: names and types (not `long`: sizes and times change without the
 * directory changing), a walk that opened no subdirectory (a depth-1 listing, or a deeper one over a directory without
 * subdirectories), no symlink (its target's type lies outside the directory), a base listing taken under a non-racy
 * identity, a walk not cancelled. Any doubt is a miss, and the page is built as without the memo.
 * The kept page is sealed (src/tools/sealed-result.ts): deep-frozen, so the transport may reuse its serialization.
 *
 * Bounds: at most LIST_MEMO_MAX_BYTES by the estimate `pageBytes` (its strings and its serialized bytes),
 * least recently used pages first; `listMemoStats` reports what it holds.
 */
import type { PolicyContext } from '../policy/authorize.js';
import type { WalkTrace } from '../fs/walk-shapes.js';
import { processSlot } from '../process-slots.js';
import type { z } from 'zod';
import type { ListDirectoryOutput } from './list-schema.js';
import { sealResult } from './sealed-result.js';

/** Most bytes of pages the memo holds (`pageBytes`): 4 MiB, a few pages of 10,000 short names. */
export const LIST_MEMO_MAX_BYTES = 4 * 1024 * 1024;

/** Bytes a kept page costs besides its characters: its entry, key, trace and parts objects (estimated high). */
const PAGE_OVERHEAD_BYTES = 512;
/** Bytes an entry of a page costs besides its characters: its array slot, a string header, an object entry's fields. */
const ENTRY_OVERHEAD_BYTES = 48;

/** A page as list_directory returns it: the structured result and its text. */
export interface ListPageResult {
  readonly structured: z.infer<typeof ListDirectoryOutput>;
  readonly text: string;
}

/** One kept page with everything it was built from. */
interface KeptPage {
  readonly key: string;
  readonly policy: PolicyContext;
  readonly trace: WalkTrace;
  readonly page: ListPageResult;
  readonly bytes: number;
}

/**
 * What a kept page holds in memory, estimated high: its key's, text's, entries' and `.gitignore` texts' UTF-16
 * characters at two bytes each, the bytes of its serialized parts (`sealedBytes`: src/tools/sealed-result.ts), and
 * per-entry and per-page overheads. Units: bytes.
 */
export function pageBytes(
  key: string,
  trace: WalkTrace,
  page: ListPageResult,
  entries: readonly unknown[],
  sealedBytes: number,
): number {
  let chars = key.length + page.text.length;
  for (const e of entries) chars += typeof e === 'string' ? e.length : JSON.stringify(e).length;
  for (const t of trace.ignoreTexts) if (t !== null) chars += t.length;
  return 2 * chars + sealedBytes + entries.length * ENTRY_OVERHEAD_BYTES + PAGE_OVERHEAD_BYTES;
}

/** Whether two calls' policies are the same objects and switches (a page built under one is the page of the other). */
function samePolicy(a: PolicyContext, b: PolicyContext): boolean {
  return (
    a.roots === b.roots &&
    a.policy === b.policy &&
    a.allowSecrets === b.allowSecrets &&
    a.guarded === b.guarded &&
    (a.allowExecConfig ?? false) === (b.allowExecConfig ?? false)
  );
}

/** Whether a probe now (`now`) proves every input `kept` recorded unchanged. */
function sameInputs(kept: WalkTrace, now: WalkTrace | null): boolean {
  if (now === null || now.baseKey === null || now.baseKey !== kept.baseKey) return false;
  if (now.ignoreTexts.length !== kept.ignoreTexts.length) return false;
  for (let i = 0; i < now.ignoreTexts.length; i++) if (now.ignoreTexts[i] !== kept.ignoreTexts[i]) return false;
  return true;
}

/** Pages of list_directory kept under their inputs (see the module comment). */
export class ListPageMemo {
  private readonly pages = new Map<string, KeptPage>();
  private heldBytes = 0;

  /** @param maxBytes most bytes of pages held (`pageBytes`) */
  constructor(private readonly maxBytes: number = LIST_MEMO_MAX_BYTES) {}

  /**
   * The page kept under `key` when it was built under the same policy and `probe` (the walk's inputs read now,
   * src/fs/walk.ts `probeWalk`, given whether the base's own `.gitignore` was looked for) finds every input as it
   * was; null otherwise (a page that no longer holds is dropped).
   */
  lookup(
    key: string,
    policy: PolicyContext,
    probe: (baseIgnoreTried: boolean) => WalkTrace | null,
  ): ListPageResult | null {
    const kept = this.pages.get(key);
    if (kept === undefined || !samePolicy(kept.policy, policy)) return null;
    if (!sameInputs(kept.trace, probe(kept.trace.baseIgnoreTried))) {
      this.drop(kept);
      return null;
    }
    this.pages.delete(key); // refresh its LRU position
    this.pages.set(key, kept);
    return kept.page;
  }

  /**
   * Keeps `page`, built under `policy` by a walk that noted `trace`, when the trace says it depends on nothing but
   * what `lookup` checks (a base identity, no subdirectory opened) and it fits the bound; seals it
   * (src/tools/sealed-result.ts: deep-frozen from here on). `entries` are the page's entries (for its size).
   * @returns whether the page was kept
   */
  remember(
    key: string,
    policy: PolicyContext,
    trace: WalkTrace,
    page: ListPageResult,
    entries: readonly unknown[],
  ): boolean {
    if (trace.baseKey === null || trace.descents !== 0 || 2 * page.text.length > this.maxBytes) return false;
    // A page whose estimate is over the bound even before its serialized parts are counted (they take at least one
    // byte per character of its text) is not sealed at all: it would be dropped at once, and sealing costs.
    if (pageBytes(key, trace, page, entries, page.text.length) > this.maxBytes) return false;
    const sealed = sealResult(page.structured, page.text);
    const bytes = pageBytes(key, trace, page, entries, sealed.textBytes.length + sealed.structuredBytes.length);
    if (bytes > this.maxBytes) return false;
    const old = this.pages.get(key);
    if (old !== undefined) this.drop(old);
    this.pages.set(key, { key, policy, trace, page, bytes });
    this.heldBytes += bytes;
    for (const p of this.pages.values()) {
      if (this.heldBytes <= this.maxBytes) break;
      this.drop(p);
    }
    return true;
  }

  private drop(kept: KeptPage): void {
    if (this.pages.get(kept.key) !== kept) return;
    this.pages.delete(kept.key);
    this.heldBytes -= kept.bytes;
  }

  /** Drops every kept page. */
  clear(): void {
    this.pages.clear();
    this.heldBytes = 0;
  }

  /** What the memo holds: pages and bytes (`pageBytes`). */
  stats(): { pages: number; bytes: number } {
    return { pages: this.pages.size, bytes: this.heldBytes };
  }
}

/** The process's page memo (src/process-slots.ts). */
const memo = processSlot('tools/list-memo', () => new ListPageMemo());

/** The process's page memo (list_directory). */
export function listPageMemo(): ListPageMemo {
  return memo;
}

/** What the process's page memo holds: pages and bytes (`pageBytes`). Tests and diagnostics, as `listingCacheStats`. */
export function listMemoStats(): { pages: number; bytes: number } {
  return memo.stats();
}

/** Drops every kept page of the process (tests; a process that wants the memory back). */
export function clearListMemo(): void {
  memo.clear();
}
