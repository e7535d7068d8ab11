/**
 * Finding matching lines in text for search_files, and replacing in them for replace_in_files (docs/tools.md). A
 * literal query runs in this thread (an escaped pattern has no backtracking to blow up). A user regular expression
 * runs in the process's reader threads (src/fs/search-reader.ts), where a watchdog stops a thread stuck on one file
 * past the time limit, so a catastrophic pattern costs at most that long and never blocks other calls.
 */
import { ToolError } from '../errors/tool-error.js';
import { matchLines, type LineHit } from './match-lines.js';
import { replaceLinesSteps, type LineReplacement } from './replace-lines.js';
import { requiredLiteral, requiredLiteralSet } from './required-literal.js';
import { searchReaderPool, type SearchReaderPool } from './search-reader.js';
import { loopSlicer } from './tree-ops.js';

/** A compiled query. */
export interface LineMatcher {
  /** Lines of `text` that match. */
  match(text: string): Promise<LineHit[]>;
  /**
   * UTF-8 bytes that every matching line contains, or null when none is known (case-insensitive queries, a regular
   * expression without a provable literal). A file without them has no match: search skips it without decoding it.
   */
  readonly needle: Buffer | null;
  /**
   * UTF-8 strings of which every matching line contains at least one, or null when no such set is known or it would
   * rule out no more than `needle` (src/fs/required-literal.ts `requiredLiteralSet`). A file with none of them has no
   * match: search skips it without decoding it, and tests only the lines holding one of them.
   */
  readonly anyOf: readonly Buffer[] | null;
  /**
   * Replaces every match in each line of `text` (src/fs/replace-lines.ts; replace_in_files): a literal query inserts
   * `replacement` as typed, a regular expression expands `$1`, `$<name>`, `$&`, `$$`. A regular expression runs in the
   * same threads and under the same per-file time limit as matching. A result longer than `maxChars` UTF-16 code units
   * is not built: `tooLarge` is set and `text` is the input (a replacement bomb, src/fs/replace-lines.ts); nor is one
   * of more than `maxCount` matches: `tooMany` is set, and counting stopped at the match after `maxCount`.
   * @throws ToolError VALIDATION regex_timeout
   */
  replace(text: string, replacement: string, maxChars: number, maxCount: number): Promise<LineReplacement>;
}

/**
 * The longest query compiled, in UTF-16 code units (docs/security.md "Bounded work"). `new RegExp` parses a pattern
 * on this thread; an 8 MB query held the event loop for 160–700 ms, so a longer one is refused before any work.
 */
export const MAX_QUERY_CHARS = 65_536;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Compiles a query.
 * @param pool where a regular expression runs (default: the process's reader threads)
 * @throws ToolError VALIDATION (reason invalid_regex) for a pattern that does not compile, (reason query_too_long)
 *   for a query over MAX_QUERY_CHARS
 */
export function createLineMatcher(
  query: string,
  options: { regex: boolean; caseSensitive: boolean },
  pool: SearchReaderPool = searchReaderPool,
): LineMatcher {
  if (query.length > MAX_QUERY_CHARS) {
    throw new ToolError('VALIDATION', `The query is ${query.length} characters long; at most ${MAX_QUERY_CHARS}.`, {
      details: { reason: 'query_too_long', field: 'query', limit: MAX_QUERY_CHARS },
      suggestion: 'Search for a shorter distinctive part of the text.',
    });
  }
  const { source, flags } = matcherSpec(query, options);
  let re: RegExp;
  try {
    re = new RegExp(source, flags);
  } catch (error) {
    throw new ToolError('VALIDATION', `The regular expression does not compile: ${(error as Error).message}.`, {
      details: { reason: 'invalid_regex', field: 'query' },
      suggestion: 'Fix the pattern (JavaScript syntax, u flag), or pass regex: false for a literal search.',
    });
  }
  if (!options.regex) {
    return {
      match: (text) => Promise.resolve().then(() => matchLines(re, text, options.caseSensitive ? query : null)),
      needle: options.caseSensitive ? Buffer.from(query, 'utf8') : null,
      anyOf: null,
      replace: (text, replacement, maxChars, maxCount) =>
        runSliced(replaceLinesSteps(re, text, replacement, true, maxChars, maxCount)),
    };
  }
  const literal = requiredLiteral(source, flags);
  const set = requiredLiteralSet(source, flags);
  return {
    match: (text) => pool.regexLines(source, flags, text),
    needle: literal === null ? null : Buffer.from(literal, 'utf8'),
    // A set of one string that is the needle itself rules out nothing more.
    anyOf: set === null || (set.length === 1 && set[0] === literal) ? null : set.map((x) => Buffer.from(x, 'utf8')),
    replace: (text, replacement, maxChars, maxCount) =>
      pool.regexReplace(source, flags, text, { replacement, maxChars, maxCount }),
  };
}

/**
 * Runs a literal replacement's steps (src/fs/replace-lines.ts) on this thread, letting the event loop answer other
 * calls every ~10 ms (loopSlicer; docs/security.md "Bounded work"). Starts after the current microtask, as before.
 */
async function runSliced(steps: Generator<void, LineReplacement, void>): Promise<LineReplacement> {
  await Promise.resolve();
  const slice = loopSlicer();
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    const wait = slice();
    if (wait) await wait;
  }
}

/**
 * The (source, flags) a search reader thread compiles to match lines itself (src/fs/search-reader-match.ts), and
 * whether it is a user regular expression (then its time per file is bounded by REGEX_FILE_TIMEOUT_MS).
 */
export function matcherSpec(
  query: string,
  options: { regex: boolean; caseSensitive: boolean },
): { source: string; flags: string; bounded: boolean } {
  return {
    source: options.regex ? query : escapeRegExp(query),
    flags: options.caseSensitive ? 'u' : 'iu',
    bounded: options.regex,
  };
}
