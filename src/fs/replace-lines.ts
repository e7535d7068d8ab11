/**
 * Line-wise replacement for replace_in_files, shared by the main thread (literal queries) and the regex
 * reader threads (src/fs/search-reader-match.ts, user regular expressions under the 1-second bound of src/fs/search-reader.ts). The
 * pattern is applied to each line on its own, exactly as search_files matches lines: split on `\n`, a final `\r` not
 * part of the line, so `^`/`$` mean line start/end and a match never spans lines; line terminators are kept as they
 * are; the empty remainder after a final newline is not a line. Pure: no IO, never throws for a compiled pattern.
 */

/** What a replacement did to one text. */
export interface LineReplacement {
  /** The text after replacing (identical to the input when count is 0). */
  text: string;
  /** Matches replaced (a zero-length match, e.g. `^`, counts too). */
  count: number;
  /** Set when the result would exceed `maxChars`: `text` is then the input, unchanged (nothing was built). */
  tooLarge?: true;
  /** Set when the text has more than `maxCount` matches: `text` is then the input and `count` 0 (nothing built). */
  tooMany?: true;
}

/** Thrown by the counting pass of `replaceLines` as soon as the result's bound exceeds `maxChars`. */
const TOO_LARGE = new Error('replacement result over its bound');
/** Thrown by the counting pass of `replaceLines` at the match after `maxCount`. */
const TOO_MANY = new Error('more matches than maxCount');

/**
 * Replaces every match of `re` in each line of `text`.
 * @param re a compiled pattern; it is used with the `g` flag added (a copy is made when it lacks it; a global one is
 *   used as is and left at `lastIndex` 0, as String.prototype.replace leaves it)
 * @param replacement with `literal` true it is inserted as typed (`$&`, `$1`, `$$` stay); otherwise JavaScript's
 *   replacement patterns apply (`$1`, `$<name>`, `$&`, `$$`), as String.prototype.replace defines them
 * @param maxChars most UTF-16 code units the result may hold (replace_in_files passes --max-search-file-bytes). A
 *   line is replaced only after a bound of its result is known to fit (exact for a literal; for a pattern each `$` of
 *   the replacement counted as the longest of the match, its groups, or — with `` $` `` / `$'` — the line), so a
 *   replacement bomb (a long replacement for many short matches) stops with `tooLarge` before building anything big.
 * @param maxCount most matches the text may have (replace_in_files passes max_replacements, since a file is replaced
 *   whole or not at all): the counting pass stops at the match after it with `tooMany`, so a file of millions of
 *   matches costs about `maxCount` matches, not all of them. When both bounds are crossed, the first crossed is said.
 */
export function replaceLines(
  re: RegExp,
  text: string,
  replacement: string,
  literal: boolean,
  maxChars = Number.POSITIVE_INFINITY,
  maxCount = Number.POSITIVE_INFINITY,
): LineReplacement {
  const steps = replaceLinesSteps(re, text, replacement, literal, maxChars, maxCount);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Lines replaced between two checkpoints of replaceLinesSteps. */
const REPLACE_STEP_LINES = 1024;

/**
 * `replaceLines` as steps: a generator that yields (nothing) every REPLACE_STEP_LINES lines and returns the same
 * result, so the main thread can run a literal replacement in slices of event-loop time (src/fs/line-matcher.ts;
 * docs/security.md "Bounded work"). The same shape as src/patch/steps.ts, without importing it (the regex worker's
 * bundle stays free of other modules).
 */
export function* replaceLinesSteps(
  re: RegExp,
  text: string,
  replacement: string,
  literal: boolean,
  maxChars = Number.POSITIVE_INFINITY,
  maxCount = Number.POSITIVE_INFINITY,
): Generator<void, LineReplacement, void> {
  const global = re.global ? re : new RegExp(re.source, `${re.flags}g`);
  const c: LineCount = {
    global,
    replacement,
    dollars: literal ? 0 : replacement.split('$').length - 1,
    usesContext: !literal && /\$[`']/.test(replacement),
    unicode: global.unicode || global.flags.includes('v'),
    maxChars,
    maxCount,
    count: 0,
    grown: 0,
    lineLength: 0,
    total: 0,
  };
  // Only the changed lines are pushed, each after the unchanged text before it (`copied`: where that starts): a text
  // of millions of short lines and few matches no longer builds an array of three strings per line (10,000,000
  // empty lines took about a second, over the 1 s regex bound: VALIDATION regex_timeout for a pattern search_files
  // answers on the same file in a fraction of that).
  const out: string[] = [];
  let copied = 0;
  let lineStart = 0;
  let sinceYield = 0;
  // The empty remainder after a final newline (or an empty text) is no line: `^` adds nothing there.
  while (lineStart < text.length) {
    if (++sinceYield === REPLACE_STEP_LINES) {
      sinceYield = 0;
      yield;
    }
    const nl = text.indexOf('\n', lineStart);
    const lineEnd = nl === -1 ? text.length : nl;
    const hasCr = lineEnd > lineStart && text.charCodeAt(lineEnd - 1) === 13;
    const line = text.slice(lineStart, hasCr ? lineEnd - 1 : lineEnd);
    const before = c.count;
    c.grown = 0;
    c.lineLength = line.length;
    // First pass: count the matches and bound the line's result; nothing larger than the line is built.
    try {
      countLine(c, line);
    } catch (e) {
      // Stopped mid-line, the exec loop left lastIndex inside the line: a caller's own global pattern is left at 0,
      // as String.prototype.replace leaves it.
      global.lastIndex = 0;
      if (e === TOO_LARGE) return { text, count: 0, tooLarge: true };
      if (e === TOO_MANY) return { text, count: 0, tooMany: true };
      throw e;
    }
    c.total += line.length + Math.max(c.grown, 0) + (hasCr ? 1 : 0) + (nl === -1 ? 0 : 1);
    if (c.total > maxChars) return { text, count: 0, tooLarge: true };
    if (c.count > before) {
      global.lastIndex = 0;
      out.push(
        text.slice(copied, lineStart),
        literal ? line.replace(global, () => replacement) : line.replace(global, replacement),
      );
      copied = lineStart + line.length;
    }
    if (nl === -1) break;
    lineStart = nl + 1;
  }
  if (c.count === 0) return { text, count: c.count };
  out.push(text.slice(copied));
  return { text: out.join(''), count: c.count };
}

/** The counting pass over one text: the pattern and its bounds, and the counts so far. */
interface LineCount {
  /** The pattern with the `g` flag. */
  global: RegExp;
  replacement: string;
  /** `$` signs in the replacement (0 for a literal one): each may insert up to the longest of the match or a group. */
  dollars: number;
  /** The replacement uses `` $` `` or `$'` (the line before or after the match). */
  usesContext: boolean;
  /** The pattern has the u or v flag (a zero-length match steps over a whole code point). */
  unicode: boolean;
  maxChars: number;
  maxCount: number;
  /** Matches counted so far, in the whole text. */
  count: number;
  /** Bound of the current line's result length (a line's own length plus each match's growth). */
  grown: number;
  lineLength: number;
  /** Result length bound of the lines before the current one. */
  total: number;
}

/**
 * First pass over one line: counts the matches and bounds the line's result, building nothing larger than a match.
 * An `exec` loop, not `String.prototype.replace` with a callback: V8 collects every match of a global pattern
 * before it calls the callback, so a bomb of millions of one-character matches cost the whole collection (hundreds
 * of milliseconds idle, over the 1 s regex bound under load) however early the callback wanted to stop.
 * @throws TOO_LARGE as soon as the line cannot fit; TOO_MANY at the match after `maxCount`
 */
function countLine(c: LineCount, line: string): void {
  const { global, replacement, dollars } = c;
  global.lastIndex = 0;
  for (let m = global.exec(line); m !== null; m = global.exec(line)) {
    if (++c.count > c.maxCount) throw TOO_MANY;
    const matched = m[0];
    let longest = matched.length;
    if (dollars > 0) {
      for (let g = 1; g < m.length; g++) {
        const group = m[g];
        if (group !== undefined && group.length > longest) longest = group.length;
      }
    }
    if (c.usesContext) longest = c.lineLength;
    c.grown += replacement.length + dollars * longest - matched.length;
    // Stop the pass as soon as the line cannot fit whatever follows: the later matches lie in the rest of the line
    // and can shrink the result by at most its length.
    if (c.total + c.lineLength + c.grown - (c.lineLength - m.index - matched.length) > c.maxChars) throw TOO_LARGE;
    // A zero-length match (`^`, `\b`, `x*`) does not move lastIndex: step past it as replace does (by a code point
    // under the u or v flag).
    if (matched.length === 0) global.lastIndex = advance(line, global.lastIndex, c.unicode);
  }
}

/**
 * The index after `index` in `s`, as the ECMAScript AdvanceStringIndex operation defines it: one code unit, or a whole
 * surrogate pair when `unicode` is set and one starts at `index`.
 */
function advance(s: string, index: number, unicode: boolean): number {
  if (!unicode || index + 1 >= s.length) return index + 1;
  const first = s.charCodeAt(index);
  if (first < 0xd800 || first > 0xdbff) return index + 1;
  const second = s.charCodeAt(index + 1);
  return second >= 0xdc00 && second <= 0xdfff ? index + 2 : index + 1;
}
