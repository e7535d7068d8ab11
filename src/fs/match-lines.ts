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
 * so the hits are the same). With several literals (`requiredLiteralSet`: every matching line contains one of them),
 * only the lines that contain one of them are tested.
 */
export function matchLines(re: RegExp, text: string, literal?: string | readonly string[] | null): LineHit[] {
  if (typeof literal === 'string') return literal ? matchLiteralLines(re, text, literal) : matchInThread(re, text);
  if (literal && literal.length > 0 && literal.every((l) => l !== '')) return matchAnyLines(re, text, literal);
  return matchInThread(re, text);
}

/**
 * `matchLines` over the lines that contain at least one of `literals` (non-empty strings; `requiredLiteralSet` of a
 * regular expression: every matching line contains one of them). Each candidate line is tested with `re` as in
 * `matchInThread`, so the hits are the same.
 */
function matchAnyLines(re: RegExp, text: string, literals: readonly string[]): LineHit[] {
  const out: LineHit[] = [];
  // The next occurrence of each literal at or after `lineStart` (-1: none left).
  const next = literals.map((l) => text.indexOf(l));
  let lineStart = 0;
  let lineIndex = 0;
  for (;;) {
    let at = -1;
    for (let k = 0; k < next.length; k++) {
      if (next[k] !== -1 && next[k] < lineStart) next[k] = text.indexOf(literals[k], lineStart);
      if (next[k] !== -1 && (at === -1 || next[k] < at)) at = next[k];
    }
    if (at === -1) return out;
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
    if (lineEnd === text.length) return out;
    lineStart = lineEnd + 1;
    lineIndex++;
  }
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
