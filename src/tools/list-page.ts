/**
 * One page of list_directory (docs/tools.md): entries added in walk order, each charged to the response budget with
 * its text line and room for the cursor that would follow it; the walk's skips counted only once an entry after them
 * is on the page (a skip after the page's last entry is seen again by the next page, which resumes there). This file
 * changes when what a page holds, how it is cut, or how it reads changes.
 */
import type { z } from 'zod';
import type { WalkEntry, WalkItem } from '../fs/walk.js';
import { kindOf } from '../policy/authorize.js';
import { MAX_PATH_COMPONENTS } from '../fs/path-within.js';
import { afterCursorBytesBound } from './cursor.js';
import { compactEntry, entryBytes, entryLine, type EntryObject, type EntrySchema } from './list-schema.js';
import { jsonStringBytes, ResponseBudget } from './response-budget.js';
import { quoteName } from './text-safe.js';

/** Bytes of the text's truncation line around its cursor (`[fs-tools: listing truncated at N entries; …]`), at most. */
const CURSOR_LINE_BYTES = 96;

/** A listed entry in both forms, and what it costs the response budget (bytes). */
interface Shaped {
  shaped: z.infer<typeof EntrySchema>;
  line: string;
  cost: number;
}

/**
 * A name of printable ASCII other than `"` and `\`: its JSON string is its characters (one byte each) and its text
 * line is itself (quoteName leaves it as is: src/tools/text-safe.ts). One native regex test per entry instead of a
 * quoting test and a character loop: nearly every listed name is one, and the first calls of a process run this
 * code before it is optimized.
 */
const PLAIN_NAME = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * An entry's compact form, text line and cost, for every entry but a plain-named file or directory (ListPage.add
 * handles those itself, see PLAIN_NAME). A file or directory that is not a secret and has no stats is just its path (a
 * directory's with `/` after it), its text line the same string unless the name must be quoted
 * (src/tools/text-safe.ts). Anything else is an object; size and mtime only on request (`long`: they tripled a
 * listing's bytes in every client's context).
 */
function shape(entry: WalkItem | WalkEntry, secret: boolean, linkTarget: EntryObject['link_target_type']): Shaped {
  if (!('stats' in entry) && !secret && (entry.type === 'file' || entry.type === 'directory')) {
    const shaped = entry.type === 'directory' ? `${entry.relative}/` : entry.relative;
    const quoted = quoteName(entry.relative);
    const line = quoted === entry.relative ? shaped : entry.type === 'directory' ? `${quoted}/` : quoted;
    const bytes = jsonStringBytes(shaped);
    return { shaped, line, cost: bytes + (line === shaped ? bytes : jsonStringBytes(line)) + 2 };
  }
  const type = 'stats' in entry ? kindOf(entry.stats) : (entry.special ?? entry.type);
  const item: EntryObject = {
    path: entry.relative,
    type,
    ...('stats' in entry ? { size: entry.stats.size, mtime: entry.stats.mtime.toISOString() } : {}),
    ...(secret ? { secret: true } : {}),
    ...(type === 'symlink' ? { link_target_type: linkTarget } : {}),
  };
  const line = entryLine(item);
  const shaped = compactEntry(item);
  const cost = (typeof shaped === 'string' ? jsonStringBytes(shaped) : entryBytes(shaped)) + jsonStringBytes(line) + 2;
  return { shaped, line, cost };
}

/**
 * An empty array whose elements are already of V8's kind for objects and strings (PACKED_ELEMENTS). A `[]` starts as
 * an array of small integers and changes kind at its first push; once V8 (Node 20) had allocated feedback for the
 * page's constructor, a fresh server's second or third page began with the other kind, and `add`, compiled against
 * the first, was deoptimized (wrong map, then not a Smi) and compiled again.
 */
function objectArray<T>(): T[] {
  const array = [''] as unknown[];
  array.length = 0;
  return array as T[];
}

/**
 * One list_directory page. `add` returns false when the page is full (`truncated`); `skip` notes a walk skip.
 * The first entry always goes in (a page makes progress).
 */
export class ListPage {
  readonly entries: z.infer<typeof EntrySchema>[] = objectArray();
  lastPath: string | undefined;
  truncated = false;
  unreadable = 0;
  nameTooLong = 0;
  /** Directories not descended because their entries would be deeper than MAX_PATH_COMPONENTS. */
  tooDeep = 0;
  ignoreRules = 0;
  /**
   * The text lines, once one differs from its entry (a quoted name, an object entry); null while every entry is a
   * string that is its own line, the common page, whose text is then its entries joined (one array, not two).
   */
  private lines: string[] | null = null;
  private pendingUnreadable = 0;
  private pendingNameTooLong = 0;
  private pendingTooDeep = 0;
  // Each entry (structured + its text line) is charged to the response budget as it is added.
  private readonly budget = new ResponseBudget();

  constructor(private readonly maxEntries: number) {
    this.budget.charge(2048);
  }

  /** A skip the walk reported (counted once an entry after it is on this page). */
  skip(reason: string): void {
    if (reason === 'unreadable') this.pendingUnreadable++;
    else if (reason === 'name_too_long') this.pendingNameTooLong++;
    else if (reason === 'too_deep') this.pendingTooDeep++;
    else if (reason === 'ignore_rule') this.ignoreRules++;
  }

  /** Adds one entry (false: the page is full, stop the walk). */
  add(entry: WalkItem | WalkEntry, secret: boolean, linkTarget?: EntryObject['link_target_type']): boolean {
    if (this.entries.length >= this.maxEntries) {
      this.truncated = true;
      return false;
    }
    const relative = entry.relative;
    let shaped: z.infer<typeof EntrySchema>;
    let line: string;
    let cost: number;
    if (
      !secret &&
      !('stats' in entry) &&
      (entry.type === 'file' || entry.type === 'directory') &&
      PLAIN_NAME.test(relative)
    ) {
      // The common entry: shape()'s result without building it (JSON string and line are the same characters).
      line = entry.type === 'directory' ? `${relative}/` : relative;
      shaped = line;
      cost = 2 * line.length + 2;
    } else {
      ({ shaped, line, cost } = shape(entry, secret, linkTarget));
    }
    // Each entry also leaves room for the cursor that would follow it (next_cursor and the text's last line: a
    // deep path's cursor is kilobytes, past the fixed 2 KiB), so a truncated page stays within the budget.
    if (cost + 2 * afterCursorBytesBound(relative.length) + CURSOR_LINE_BYTES > this.budget.remaining) {
      if (this.entries.length > 0) {
        this.truncated = true;
        return false;
      }
    }
    this.budget.charge(cost); // (the first entry always goes: a page makes progress)
    if (this.pendingUnreadable !== 0 || this.pendingNameTooLong !== 0 || this.pendingTooDeep !== 0) this.commitSkips();
    if (this.lines === null && line !== shaped) this.lines = (this.entries as string[]).slice();
    this.entries.push(shaped);
    this.lastPath = relative;
    if (this.lines !== null) this.lines.push(line);
    return true;
  }

  /**
   * Counts the skips noted so far (an entry after them is on the page, or the walk ended untruncated). A counter is
   * written only when it changes: V8 (Node 20) treats a field never written after its initialization as constant,
   * and the first rewrite of one (0 with 0, at the end of a fresh server's first listing) deoptimized `add` and the
   * walk's loop, which were compiled against it.
   */
  commitSkips(): void {
    if (this.pendingUnreadable !== 0) {
      this.unreadable += this.pendingUnreadable;
      this.pendingUnreadable = 0;
    }
    if (this.pendingNameTooLong !== 0) {
      this.nameTooLong += this.pendingNameTooLong;
      this.pendingNameTooLong = 0;
    }
    if (this.pendingTooDeep !== 0) {
      this.tooDeep += this.pendingTooDeep;
      this.pendingTooDeep = 0;
    }
  }

  /** The page's text: one line per entry, then the truncation line (its cursor) or `(empty)`. */
  text(nextCursor: string | null): string {
    // While `lines` is null every entry is a string that is its own line.
    let body = (this.lines ?? (this.entries as string[])).join('\n');
    if (this.tooDeep !== 0) {
      // Said in the text as well: a text-only client must not take the listing for complete.
      const note = `[fs-tools: ${this.tooDeep} directories not listed: deeper than ${MAX_PATH_COMPONENTS} path components]`;
      body = body === '' ? note : `${body}\n${note}`;
    }
    const last = this.truncated
      ? `[fs-tools: listing truncated at ${this.entries.length} entries; continue with cursor: ${nextCursor}]`
      : null;
    if (this.entries.length === 0 && this.tooDeep === 0) return last === null ? '(empty)' : `${last}\n(empty)`;
    return last === null ? body : `${body}\n${last}`;
  }
}
