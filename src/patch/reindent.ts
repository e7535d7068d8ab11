/**
 * Indentation-tolerant matching, never a guess (docs/errors.md "Indentation-tolerant edits"): an old_text that matches
 * whole lines of the file except for ONE uniform change of leading whitespace on every non-blank line — the same
 * prefix added, the same prefix removed, or tabs turned into spaces (or spaces into tabs) at one consistent width —
 * and the new text re-indented by that same change. Pure: lines in, lines out. The search over a file is also written
 * as steps (src/patch/steps.ts), for a server that computes it in slices (docs/security.md "Bounded work").
 */
import { runSteps, STEP_LINES, type Steps } from './steps.js';

/**
 * A uniform change of indentation, from the agent's text to the file:
 * - `add`: the file has `prefix` before old_text's indentation on every non-blank line;
 * - `remove`: old_text has `prefix` before the file's indentation on every non-blank line;
 * - `tabs_to_spaces`: old_text's leading tabs are `width` spaces each in the file (alignment spaces after the tabs kept);
 * - `spaces_to_tabs`: the mirror: each `width` leading spaces of old_text are one tab in the file (fewer than `width`
 *   spaces left over stay spaces).
 */
export type IndentShift =
  { kind: 'add' | 'remove'; prefix: string } | { kind: 'tabs_to_spaces' | 'spaces_to_tabs'; width: number };

/** Widest tab (in spaces) a tabs↔spaces change may use. */
const MAX_TAB_WIDTH = 8;

/** Leading blanks of a line. */
function indentOf(line: string): string {
  return /^[ \t]*/.exec(line)![0];
}

/** The line without its indentation and trailing blanks (what must be equal for a reindented match). */
function body(line: string): string {
  return line.trim() === '' ? '' : line.slice(indentOf(line).length).replace(/[ \t]+$/, '');
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** Words for a prefix of blanks: `4 spaces`, `1 tab`, `1 tab 2 spaces`. */
function blanks(prefix: string): string {
  const parts: string[] = [];
  for (const run of prefix.match(/\t+| +/g) ?? []) parts.push(plural(run.length, run[0] === '\t' ? 'tab' : 'space'));
  return parts.join(' ');
}

/**
 * The shift as reported in `edits[i].indent_shift` / a hunk's `indent_shift`, from the agent's text to the file:
 * `+4 spaces`, `-1 tab`, `tab=4 spaces` (each leading tab became 4 spaces), `4 spaces=tab`.
 */
export function describeShift(shift: IndentShift): string {
  switch (shift.kind) {
    case 'add':
      return `+${blanks(shift.prefix)}`;
    case 'remove':
      return `-${blanks(shift.prefix)}`;
    case 'tabs_to_spaces':
      return `tab=${plural(shift.width, 'space')}`;
    case 'spaces_to_tabs':
      return `${plural(shift.width, 'space')}=tab`;
  }
}

/** Splits an indentation into leading tabs and the spaces after them, or null when tabs follow a space. */
function tabsThenSpaces(indent: string): { tabs: number; spaces: number } | null {
  const m = /^(\t*)( *)$/.exec(indent);
  return m ? { tabs: m[1].length, spaces: m[2].length } : null;
}

/**
 * Applies `shift` to one indentation (the agent's side → the file's side), or null when that indentation cannot take
 * it (a prefix to remove that is not there; tabs after spaces; a tab where spaces are to become tabs).
 */
export function shiftIndent(indent: string, shift: IndentShift): string | null {
  switch (shift.kind) {
    case 'add':
      return shift.prefix + indent;
    case 'remove':
      return indent.startsWith(shift.prefix) ? indent.slice(shift.prefix.length) : null;
    case 'tabs_to_spaces': {
      const ts = tabsThenSpaces(indent);
      return ts ? ' '.repeat(ts.tabs * shift.width + ts.spaces) : null;
    }
    case 'spaces_to_tabs':
      return /^ *$/.test(indent)
        ? '\t'.repeat(Math.floor(indent.length / shift.width)) + ' '.repeat(indent.length % shift.width)
        : null;
  }
}

/**
 * The one uniform shift that turns every `from` indentation into its `to` (pairs of non-blank lines), or null: when
 * the lines are already indented alike (no shift), when no kind of shift fits every pair, or when the pairs fit
 * different shifts of a kind (a non-uniform difference). Kinds are tried in order add, remove, tabs→spaces,
 * spaces→tabs; for a tab width, the first line with a tab (or a full tab's worth of spaces) decides it and every
 * line must agree (checked by re-applying it).
 */
export function uniformShift(pairs: ReadonlyArray<{ from: string; to: string }>): IndentShift | null {
  if (pairs.length === 0 || pairs.every((p) => p.from === p.to)) return null;
  const fits = (shift: IndentShift) => pairs.every((p) => shiftIndent(p.from, shift) === p.to);
  const first = pairs[0];
  if (first.to.length > first.from.length && first.to.endsWith(first.from)) {
    const shift: IndentShift = { kind: 'add', prefix: first.to.slice(0, first.to.length - first.from.length) };
    if (fits(shift)) return shift;
  }
  if (first.from.length > first.to.length && first.from.endsWith(first.to)) {
    const shift: IndentShift = { kind: 'remove', prefix: first.from.slice(0, first.from.length - first.to.length) };
    if (fits(shift)) return shift;
  }
  // tabs → spaces: the width from the first agent line that has tabs.
  const tabbed = pairs.find((p) => tabsThenSpaces(p.from)?.tabs && /^ *$/.test(p.to));
  if (tabbed) {
    const ts = tabsThenSpaces(tabbed.from)!;
    const width = (tabbed.to.length - ts.spaces) / ts.tabs;
    if (Number.isInteger(width) && width >= 1 && width <= MAX_TAB_WIDTH) {
      const shift: IndentShift = { kind: 'tabs_to_spaces', width };
      if (fits(shift)) return shift;
    }
  }
  // spaces → tabs: the width from the first file line that has tabs.
  const tabbedFile = pairs.find((p) => tabsThenSpaces(p.to)?.tabs && /^ *$/.test(p.from));
  if (tabbedFile) {
    const ts = tabsThenSpaces(tabbedFile.to)!;
    const width = (tabbedFile.from.length - ts.spaces) / ts.tabs;
    if (Number.isInteger(width) && width >= 1 && width <= MAX_TAB_WIDTH && ts.spaces < width) {
      const shift: IndentShift = { kind: 'spaces_to_tabs', width };
      if (fits(shift)) return shift;
    }
  }
  return null;
}

/** A region of the file that matches the agent's lines but for one uniform shift. */
export interface ReindentedRegion {
  /** 0-based index of the region's first line. */
  at: number;
  shift: IndentShift;
}

/** Line comparisons one search may make (a file of 50,000 equal lines and a 400-line old_text would take 20 million). */
export const MAX_REINDENT_COMPARISONS = 1_000_000;

/**
 * Regions of `fileLines` where `expected` (the agent's whole lines) matches line for line except for one uniform
 * indentation shift (uniformShift), each region with its own shift; trailing blanks are ignored, a blank expected
 * line matches a blank file line. At most `limit` regions are returned (one past what the caller accepts is enough to
 * know there are several). Cost: one pass to strip the file's lines, then one comparison per line for the first
 * non-blank expected line and the rest only where that matched, at most MAX_REINDENT_COMPARISONS in all.
 * @param expected the agent's lines, without terminators
 * @returns the regions; null when the comparison budget ran out before the search was complete (then nothing is
 *   known about uniqueness, and the caller must not apply: fail closed)
 */
export function findReindented(
  fileLines: readonly string[],
  expected: readonly string[],
  limit: number,
): ReindentedRegion[] | null {
  return runSteps(reindentedSteps(fileLines, expected, limit));
}

/**
 * `findReindented` as steps (src/patch/steps.ts): yields every STEP_LINES file lines (and every STEP_LINES
 * comparisons of the regions compared in full); the same result run at once or in slices.
 */
export function* reindentedSteps(
  fileLines: readonly string[],
  expected: readonly string[],
  limit: number,
): Steps<ReindentedRegion[] | null> {
  const firstContent = expected.findIndex((l) => l.trim() !== '');
  if (firstContent === -1 || expected.length > fileLines.length) return [];
  const bodies = expected.map(body);
  const fileBodies: string[] = [];
  for (let i = 0; i < fileLines.length; i++) {
    fileBodies.push(body(fileLines[i]));
    if (i % STEP_LINES === STEP_LINES - 1) yield;
  }
  const out: ReindentedRegion[] = [];
  let budget = MAX_REINDENT_COMPARISONS;
  let sinceYield = 0;
  for (let i = 0; i + expected.length <= fileLines.length && out.length < limit; i++) {
    if (++sinceYield >= STEP_LINES) {
      sinceYield = 0;
      yield;
    }
    if (fileBodies[i + firstContent] !== bodies[firstContent]) continue;
    if ((budget -= expected.length) < 0) return null;
    sinceYield += expected.length;
    const pairs: Array<{ from: string; to: string }> = [];
    let same = true;
    for (let j = 0; j < expected.length && same; j++) {
      if (fileBodies[i + j] !== bodies[j]) same = false;
      else if (bodies[j] !== '') pairs.push({ from: indentOf(expected[j]), to: indentOf(fileLines[i + j]) });
    }
    if (!same) continue;
    const shift = uniformShift(pairs);
    if (shift) out.push({ at: i, shift });
  }
  return out;
}

/**
 * Re-indents `text` (the agent's new text, LF) by `shift`: every non-blank line's indentation goes through
 * shiftIndent; blank lines stay as they are. Null when some line cannot take the shift (then applying would be a
 * guess).
 */
export function reindentText(text: string, shift: IndentShift): string | null {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      out.push(line);
      continue;
    }
    const indent = indentOf(line);
    const shifted = shiftIndent(indent, shift);
    if (shifted === null) return null;
    out.push(shifted + line.slice(indent.length));
  }
  return out.join('\n');
}

/**
 * True when `newText` was written in the same indentation frame as `oldText`: their first non-blank lines have the same
 * indentation (or new_text has no non-blank line). Otherwise the agent may have indented new_text for the file
 * already while only old_text is off, and re-indenting it would be a guess.
 */
export function sameFrame(oldText: string, newText: string): boolean {
  const firstIndent = (s: string) => {
    const line = s.split('\n').find((l) => l.trim() !== '');
    return line === undefined ? null : indentOf(line);
  };
  const n = firstIndent(newText);
  return n === null || n === firstIndent(oldText);
}
