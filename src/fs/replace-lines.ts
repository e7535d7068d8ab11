/**
 * Line-wise replacement for replace_in_files (issue 18), shared by the main thread (literal queries) and the regex
 * worker (src/fs/regex-worker.ts, user regular expressions under the 1-second bound of src/fs/line-matcher.ts). The
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
}

/**
 * Replaces every match of `re` in each line of `text`.
 * @param re a compiled pattern; it is used with the `g` flag added (a copy is made when it lacks it)
 * @param replacement with `literal` true it is inserted as typed (`$&`, `$1`, `$$` stay); otherwise JavaScript's
 *   replacement patterns apply (`$1`, `$<name>`, `$&`, `$$`), as String.prototype.replace defines them
 */
export function replaceLines(re: RegExp, text: string, replacement: string, literal: boolean): LineReplacement {
  const global = re.global ? re : new RegExp(re.source, `${re.flags}g`);
  let count = 0;
  const count1 = (m: string): string => {
    count++;
    return literal ? replacement : m;
  };
  const out: string[] = [];
  let lineStart = 0;
  // The empty remainder after a final newline (or an empty text) is no line: `^` adds nothing there.
  while (lineStart < text.length) {
    const nl = text.indexOf('\n', lineStart);
    const lineEnd = nl === -1 ? text.length : nl;
    const hasCr = lineEnd > lineStart && text.charCodeAt(lineEnd - 1) === 13;
    const line = text.slice(lineStart, hasCr ? lineEnd - 1 : lineEnd);
    global.lastIndex = 0;
    const before = count;
    let replaced = line.replace(global, count1);
    if (!literal && count > before) {
      global.lastIndex = 0;
      replaced = line.replace(global, replacement);
    }
    out.push(replaced, hasCr ? '\r' : '', nl === -1 ? '' : '\n');
    if (nl === -1) break;
    lineStart = nl + 1;
  }
  return count === 0 ? { text, count } : { text: out.join(''), count };
}
