/**
 * Matching lines of a text (docs/tools.md, search_files): what a line hit is and how lines are tested, shared by the
 * main thread (a literal query) and the reader threads (src/fs/search-reader-worker.ts: search batches and regular
 * expression jobs). Pure: no I/O, no state.
 */

/** 0-based line index and 0-based column of the first match on that line. */
export type LineHit = [line: number, column: number];

/**
 * Matching lines of `text`: each line (split on `\n`, a final `\r` removed) tested once; 0-based line index and
 * 0-based UTF-16 column of the first match. `re` must not be global or sticky.
 *
 * With `literal` — a string every matching line contains (the query itself for a case-sensitive literal search, or
 * `requiredLiteral` of a regular expression: the same promise the `needle` prefilter relies on) — only the lines that
 * contain it are tested (a regular expression whose literal is in most files was run on every line of
 * each; now the lines are found with `indexOf`, and each candidate line is still tested with `re` exactly as above,
 * so the hits are the same).
 */
export function matchLines(re: RegExp, text: string, literal?: string | null): LineHit[] {
  return literal ? matchLiteralLines(re, text, literal) : matchInThread(re, text);
}

/** `matchLines` over the lines that contain `literal` (non-empty) only. */
function matchLiteralLines(re: RegExp, text: string, literal: string): LineHit[] {
  const out: LineHit[] = [];
  let at = text.indexOf(literal);
  let lineStart = 0;
  let lineIndex = 0;
  while (at !== -1) {
    // Move to the line holding `at`, counting the lines passed.
    let lineEnd = text.indexOf('\n', lineStart);
    while (lineEnd !== -1 && lineEnd < at) {
      lineIndex++;
      lineStart = lineEnd + 1;
      lineEnd = text.indexOf('\n', lineStart);
    }
    if (lineEnd === -1) lineEnd = text.length;
    const line = text.slice(lineStart, lineEnd);
    const m = re.exec(line.endsWith('\r') ? line.slice(0, -1) : line);
    if (m) out.push([lineIndex, m.index]);
    if (lineEnd === text.length) break;
    lineStart = lineEnd + 1;
    lineIndex++;
    at = text.indexOf(literal, lineStart);
  }
  return out;
}

function matchInThread(re: RegExp, text: string): LineHit[] {
  const out: LineHit[] = [];
  let lineStart = 0;
  let lineIndex = 0;
  while (lineStart <= text.length) {
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd === -1) lineEnd = text.length;
    const line = text.slice(lineStart, lineEnd);
    const m = re.exec(line.endsWith('\r') ? line.slice(0, -1) : line);
    if (m) out.push([lineIndex, m.index]);
    if (lineEnd === text.length) break;
    lineStart = lineEnd + 1;
    lineIndex++;
  }
  return out;
}
