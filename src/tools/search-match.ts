/**
 * search_files, step 2 of 3 (walk → match → page): what a candidate file holds for a content search —
 * its matching lines, or why it is skipped (secret, too large, unreadable, binary) — docs/tools.md Candidates go to the
 * search reader threads (src/fs/search-reader.ts) as the walk yields them, up to READ_AHEAD ahead of the page, and
 * are consumed in walk order; a large candidate, or any when the threads are unavailable, is read on this thread.
 * A user regular expression runs bounded either way (src/fs/line-matcher.ts). This file changes when how a
 * candidate is read or matched changes.
 */
import { openForRead } from '../fs/open-file.js';
import { looksBinary } from '../fs/text.js';
import { regexTimeoutError, searchReaderPool, type ReadTicket } from '../fs/search-reader.js';
import type { ReadOutcome } from '../fs/search-reader-protocol.js';
import type { WalkItem } from '../fs/walk.js';
import { matcherSpec, type LineMatcher } from '../fs/line-matcher.js';
import type { LineHit } from '../fs/match-lines.js';
import { isSecretEntry, type PolicyContext } from '../policy/authorize.js';
import { isInsideRoots } from '../policy/containment.js';
import { FileLines } from './search-line.js';

/**
 * A candidate file's content, or why content search skips it. `no_match`: a text file without a matching line
 * (scanned, nothing to report). `hits` are 0-based [line, UTF-16 column] pairs, in line order, of `lines`.
 */
export type Loaded =
  | { kind: 'secret' | 'too_large' | 'unreadable' | 'binary' | 'no_match' }
  | { kind: 'text'; lines: FileLines; hits: LineHit[] };

/** The outcomes without content, one frozen object each (shared by every file with that outcome). */
const SIMPLE = Object.freeze({
  secret: Object.freeze({ kind: 'secret' }),
  too_large: Object.freeze({ kind: 'too_large' }),
  unreadable: Object.freeze({ kind: 'unreadable' }),
  binary: Object.freeze({ kind: 'binary' }),
  no_match: Object.freeze({ kind: 'no_match' }),
} as const);

/**
 * How many walk entries are prepared ahead of the one being paged. Files are read concurrently with paging, by the
 * search reader threads, and results are still consumed strictly in walk order, so pages and cursors do not depend
 * on it. The window keeps every reader thread busy while the main thread walks.
 */
export const READ_AHEAD = 1024;
/**
 * Only candidates up to this size are held by read-ahead (bounds its memory to READ_AHEAD × this, bytes); a larger
 * one is read when the search gets to it.
 */
const READ_AHEAD_MAX_FILE_BYTES = 32 * 1024;

/** Options of `contentMatcher`. */
export interface ContentMatchOptions {
  policy: PolicyContext;
  /** The compiled query (its `needle` skips files without the required bytes undecoded). */
  matcher: LineMatcher;
  query: string;
  regex: boolean;
  caseSensitive: boolean;
  /** Larger files are `too_large` (--max-search-file-bytes), bytes. */
  maxFileBytes: number;
}

/**
 * A candidate handed to the reader threads (its ticket), or what it is known to be already (a secret file: not read).
 */
export type Started = ReadTicket | Loaded;

/** Starts reading and matching candidate files (`start`), and gives what each holds once read (`finish`). */
export interface ContentMatch {
  /**
   * Starts loading `entry` (whose last path component is `name`, in the directory `parent`, absolute) now, on a reader
   * thread when one is available: its ticket, whose `outcome` is there, synchronously, once its batch is answered (no
   * promise or closure per file); or the file's outcome when it is known without reading (a secret file).
   */
  start(entry: WalkItem, name: string, parent: string): Started;
  /**
   * What `entry` holds, from the reader threads' `outcome` for it: the value itself when nothing is left to do on this
   * thread, else a promise of it (a deferred large candidate, or one the threads could not take, is read now, so
   * read-ahead never holds more than READ_AHEAD small files). It throws (or rejects with) the REGEX_TIMEOUT ToolError
   * when a user regular expression ran out of time.
   */
  finish(entry: WalkItem, outcome: ReadOutcome): Loaded | Promise<Loaded>;
}

/**
 * The content side of one search call (docs/tools.md: binary files skipped, secret files skipped and counted, files over
 * the size cap skipped and counted, a user regex bounded per file).
 */
export function contentMatcher(o: ContentMatchOptions): ContentMatch {
  const isInside = (p: string) => isInsideRoots(o.policy.roots, p);
  const isSecret = (entry: WalkItem) => isSecretEntry(o.policy, entry.absolute);

  /** Reads one candidate file on this thread (large candidates, or when the reader threads are unavailable). */
  const load = async (entry: WalkItem): Promise<Loaded> => {
    if (isSecret(entry)) return { kind: 'secret' };
    let bytes: Buffer;
    try {
      const { handle, stats } = await openForRead(entry.absolute, isInside);
      try {
        if (stats.size > o.maxFileBytes) return { kind: 'too_large' };
        // The size is known from the open's fstat: read exactly that (handle.readFile would fstat again and read
        // once more to see the end).
        bytes = Buffer.allocUnsafe(stats.size);
        let filled = 0;
        while (filled < bytes.length) {
          const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        bytes = bytes.subarray(0, filled);
      } finally {
        await handle.close();
      }
    } catch {
      return { kind: 'unreadable' };
    }
    if (looksBinary(bytes, true)) return { kind: 'binary' }; // as the reader threads judge it
    if (o.matcher.needle && bytes.indexOf(o.matcher.needle) === -1) return { kind: 'no_match' };
    if (o.matcher.anyOf && !o.matcher.anyOf.some((b) => bytes.indexOf(b) !== -1)) return { kind: 'no_match' };
    const text = bytes.toString('utf8');
    const hits = await o.matcher.match(text);
    return hits.length === 0 ? { kind: 'no_match' } : { kind: 'text', lines: new FileLines(text), hits };
  };

  const reader = searchReaderPool.session({
    roots: o.policy.roots.map((r) => ({ real: r.real })),
    maxFileBytes: o.maxFileBytes,
    keepMaxBytes: READ_AHEAD_MAX_FILE_BYTES,
    needle: o.matcher.needle,
    anyOf: o.matcher.anyOf ? [...o.matcher.anyOf] : null,
    // The reader threads match lines themselves (a user regex under the same per-file time limit).
    match: matcherSpec(o.query, { regex: o.regex, caseSensitive: o.caseSensitive }),
  });

  /** What the reader thread found, as the page sees it (ContentMatch.finish). */
  const fromReader = (entry: WalkItem, outcome: ReadOutcome): Loaded | Promise<Loaded> => {
    const bytesOf = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    switch (outcome.kind) {
      case 'hits':
        // Only the matching lines (and their context) are decoded.
        return { kind: 'text', lines: new FileLines(bytesOf(outcome.bytes)), hits: outcome.hits };
      case 'text': {
        const text = bytesOf(outcome.bytes).toString('utf8');
        return o.matcher
          .match(text)
          .then((hits): Loaded =>
            hits.length === 0 ? { kind: 'no_match' } : { kind: 'text', lines: new FileLines(text), hits },
          );
      }
      case 'deferred':
      case 'fallback':
        return load(entry);
      case 'regex_timeout':
        throw regexTimeoutError();
      default:
        return SIMPLE[outcome.kind];
    }
  };

  return {
    start: (entry, name, parent) =>
      isSecretEntry(o.policy, entry.absolute, name) ? SIMPLE.secret : reader.submit(parent, name),
    finish: fromReader,
  };
}
