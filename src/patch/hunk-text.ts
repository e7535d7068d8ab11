/**
 * The text placed hunks write (docs/tools.md apply_patch): each hunk's new side as a replacement of the lines its old
 * side covers on the file's LF view. Context lines keep the file's own text (its trailing spaces, its curly quotes);
 * only removed and added lines change; a `reindented` hunk's added lines take its indentation shift. The final-newline
 * state follows the diff's `\ No newline at end of file` markers. Pure; written as steps (src/patch/steps.ts).
 */
import type { ViewReplacement } from './eol-text.js';
import type { Located } from './hunk-placement.js';
import { shiftIndent } from './reindent.js';
import { STEP_LINES, type Steps } from './steps.js';

/**
 * The view replacements of `located` (non-overlapping, checked by the caller), as steps: yields every STEP_LINES
 * lines of the pass that finds where each line starts.
 * @param lines the view's lines (splitView); `finalNewline` its final-newline state; `viewLength` its length
 */
export function* hunkReplacements(
  located: readonly Located[],
  lines: readonly string[],
  finalNewline: boolean,
  viewLength: number,
): Steps<ViewReplacement[]> {
  // Line i starts at lineStart[i]; lineStart[lines.length] is the end of the view.
  const lineStart: number[] = [0];
  for (let i = 0; i < lines.length; i++) {
    lineStart.push(lineStart[i] + lines[i].length + (i < lines.length - 1 || finalNewline ? 1 : 0));
    if (i % STEP_LINES === STEP_LINES - 1) yield;
  }
  const replacements: ViewReplacement[] = [];
  for (const loc of located) {
    const h = loc.hunk;
    const endLine = loc.start + loc.count;
    const touchesEof = endLine === lines.length;
    let text = newSideOf(loc, lines)
      .map((l) => `${l}\n`)
      .join('');
    let start = lineStart[loc.start];
    if (touchesEof) {
      // Final-newline state after this hunk: the new side's marker decides; otherwise the file keeps its state,
      // unless the old side's marker said the old last line had none (then the patch adds one).
      const keepsNone = h.newNoNewline || (!h.oldNoNewline && !finalNewline && loc.count > 0);
      if (keepsNone && text.endsWith('\n')) text = text.slice(0, -1);
      if (loc.count === 0 && !finalNewline && lines.length > 0 && text.length > 0) {
        // Appending after a last line without a terminator: terminate it first.
        text = `\n${text}`;
        if (!h.newNoNewline && text.endsWith('\n') && !finalNewline) text = text.slice(0, -1);
      }
    }
    if (touchesEof && loc.count === 0) start = viewLength;
    replacements.push({ start, end: touchesEof ? viewLength : lineStart[endLine], text });
  }
  return replacements;
}

/** The lines a placed hunk writes: context lines as the file has them, added lines (re-indented by its shift). */
function newSideOf(loc: Located, lines: readonly string[]): string[] {
  const out: string[] = [];
  let cursor = loc.start;
  for (const l of loc.hunk.lines) {
    if (l.op === ' ')
      out.push(lines[cursor++] ?? l.text); // keep the file's own text for context
    else if (l.op === '-') cursor++;
    else if (loc.shift && l.text.trim() !== '') {
      const indent = /^[ \t]*/.exec(l.text)![0];
      out.push(shiftIndent(indent, loc.shift)! + l.text.slice(indent.length)); // checked when it was placed
    } else out.push(l.text);
  }
  return out;
}
