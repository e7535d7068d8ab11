/**
 * edit_file's engine (docs/tools.md): exact-text replacements applied in order, all or none. Each old_text must match
 * exactly once (or replace_all): first exactly on the LF view (so CRLF-vs-LF differences match), then tolerating
 * trailing whitespace at line ends, then — whole lines only, exactly one region, never a guess — tolerating one uniform
 * change of indentation, with new_text re-indented the same way (src/patch/reindent.ts; reported as `reindented`).
 * Replacement text is inserted literally (no `$&` patterns). Failures are PATCH_FAILED with the edit's index, the
 * reason and the nearest region. `already_applied` only on evidence (src/patch/applied-evidence.ts, the rule apply_patch
 * shares). Pure: text in, text out; written as steps (src/patch/steps.ts), so a server runs the searches over the
 * file (the re-indent search, the nearest region) in slices of event-loop time (applyEditsSliced).
 */
import { PatchFailedError, ToolError } from '../errors/tool-error.js';
import { appliedOnEvidence, contentChars, editFramePinned, MIN_EVIDENCE_CHARS } from './applied-evidence.js';
import { applyToOriginalSteps, toEolTextSteps, toLf, type EolText, type ViewReplacement } from './eol-text.js';
import { allFailures, MAX_LISTED_FAILURES } from './failures.js';
import { splitView, splitViewSteps } from './line-match.js';
import { nearestRegionSteps } from './nearest-region.js';
import { describeShift, reindentedSteps, reindentText, sameFrame } from './reindent.js';
import { runSteps, runStepsSliced, STEP_LINES, type Steps } from './steps.js';

/** One edit as sent. */
export interface TextEdit {
  old_text: string;
  new_text: string;
  replace_all?: boolean;
}

/** What one edit did. */
export interface EditReport {
  index: number;
  replacements: number;
  match: 'exact' | 'trailing_whitespace' | 'reindented';
  /** For `reindented`: the indentation change from old_text to the file, applied to new_text too (describeShift). */
  indent_shift?: string;
  /** 1-based lines (in the text before this edit) where the matches start. */
  lines: number[];
}

/** The result of applying every edit. */
export interface EditsResult {
  text: string;
  edits: EditReport[];
}

/**
 * Applies `edits` to `original` (a file's full text, BOM included).
 * @param absolute the file's path, for messages
 * @param maxReplacements most replacements all edits together may make (docs/security.md "Bounded work"); matches
 *   are collected only up to one past what is left, so a huge count costs no more than the bound
 * @throws ToolError VALIDATION too_many_matches (field max_replacements) past maxReplacements, nothing applied;
 *   PatchFailedError reasons no_match, ambiguous (with count and candidate lines), already_applied; the first
 *   failing edit in the top-level details, every failing edit in `details.failures` (see allFailures)
 */
export function applyEdits(
  original: string,
  edits: readonly TextEdit[],
  absolute: string,
  maxReplacements = Infinity,
): EditsResult {
  return runSteps(applyEditsSteps(original, edits, absolute, maxReplacements));
}

/**
 * `applyEdits` in slices of event-loop time (src/patch/steps.ts): the same result or the same error, for a server that
 * must keep answering while it searches a large file (docs/security.md "Bounded work").
 */
export function applyEditsSliced(
  original: string,
  edits: readonly TextEdit[],
  absolute: string,
  maxReplacements = Infinity,
): Promise<EditsResult> {
  return runStepsSliced(applyEditsSteps(original, edits, absolute, maxReplacements));
}

/** One call's edits being applied: the bound, and what was made, reported and failed so far. */
interface EditRun {
  edits: readonly TextEdit[];
  absolute: string;
  maxReplacements: number;
  /** Replacements made by the edits so far. */
  made: number;
  reports: EditReport[];
  /**
   * Edits that failed (every failing edit is reported). A failing edit is skipped and the next edits are
   * tried on the text as it stands, so each listed failure is one the agent would meet; nothing is written anyway.
   */
  failed: Array<{ index: number; error: PatchFailedError }>;
}

/** One edit being applied to the text as it stands: its LF view, old_text and new_text in LF, its label. */
interface EditCase {
  edit: TextEdit;
  index: number;
  t: EolText;
  oldText: string;
  newText: string;
  /** `edit` or `edits[i] (n of m)`, for messages. */
  label: string;
}

function* applyEditsSteps(
  original: string,
  edits: readonly TextEdit[],
  absolute: string,
  maxReplacements: number,
): Steps<EditsResult> {
  const r: EditRun = { edits, absolute, maxReplacements, made: 0, reports: [], failed: [] };
  let text = original;
  for (const [index, edit] of edits.entries()) {
    try {
      text = yield* applyOne(r, text, edit, index);
    } catch (error) {
      if (!(error instanceof PatchFailedError)) throw error;
      r.failed.push({ index, error });
    }
  }
  if (r.failed.length > 0) throw allFailures(r.failed, 'edit');
  return { text, edits: r.reports };
}

/**
 * Applies one edit to `text`: its exact (then trailing-whitespace tolerant) matches replaced, or its one re-indented
 * region; records what it did in `r`.
 * @returns the text after the edit
 * @throws ToolError VALIDATION too_many_matches; PatchFailedError no_match, ambiguous, already_applied
 */
function* applyOne(r: EditRun, text: string, edit: TextEdit, index: number): Steps<string> {
  const { edits, absolute, maxReplacements } = r;
  const t = yield* toEolTextSteps(text);
  const c: EditCase = {
    edit,
    index,
    t,
    oldText: toLf(edit.old_text),
    newText: toLf(edit.new_text),
    label: edits.length === 1 ? 'edit' : `edits[${index}] (${index + 1} of ${edits.length})`,
  };
  const { oldText, newText, label } = c;
  const { spans, match } = matchesOf(t.view, oldText, maxReplacements - r.made + 1); // one past what is left
  if (spans.length > 1 && edit.replace_all && r.made + spans.length > maxReplacements) {
    throw new ToolError(
      'VALIDATION',
      `${edits.length === 1 ? 'edit' : `edits[${index}]`}: old_text matches more places than max_replacements ` +
        `(${maxReplacements}) allows in ${absolute}; nothing was written.`,
      {
        path: absolute,
        details: { reason: 'too_many_matches', field: 'max_replacements', limit: maxReplacements, edit_index: index },
        suggestion: 'Pass a higher max_replacements (up to its maximum), or narrow old_text.',
      },
    );
  }
  if (spans.length === 0) return yield* applyUnmatched(r, c);
  // Inserting after old_text (new_text contains it) where the result is already there: already applied.
  const at = newText.indexOf(oldText);
  if (
    at !== -1 &&
    newText !== oldText &&
    contentChars(oldText) >= MIN_EVIDENCE_CHARS &&
    spans.every((s) => t.view.startsWith(newText, s.start - at))
  ) {
    throw new PatchFailedError(
      `${label}: ${absolute} already contains new_text around every match; the edit looks already applied.`,
      {
        path: absolute,
        details: { reason: 'already_applied', edit_index: index },
        suggestion: 'Read the file to confirm; do not apply this edit again.',
      },
    );
  }
  const lines = yield* linesOfOffsets(t.view, spans);
  if (spans.length > 1 && !edit.replace_all) {
    const viewLines = (yield* splitViewSteps(t.view)).lines;
    throw new PatchFailedError(
      `${label}: old_text matches ${spans.length} places in ${absolute} (lines ${lines.slice(0, 20).join(', ')}).`,
      {
        path: absolute,
        details: {
          reason: 'ambiguous',
          edit_index: index,
          count: spans.length,
          candidates: lines.slice(0, MAX_CANDIDATES),
          candidate_context: candidateContext(viewLines, lines, splitView(oldText).lines.length),
        },
        suggestion: 'Add surrounding lines to old_text so it matches once, or pass replace_all: true.',
      },
    );
  }
  const replacements: ViewReplacement[] = spans.map((s) => ({ start: s.start, end: s.end, text: newText }));
  r.reports.push({ index, replacements: spans.length, match, lines });
  r.made += spans.length;
  return yield* applyToOriginalSteps(t, replacements);
}

/**
 * old_text's matches in the view, at most `limit`: exact, else tolerating trailing whitespace (findTolerant); a
 * match starting inside a line's indentation is none (startsInsideIndentation).
 */
function matchesOf(view: string, oldText: string, limit: number): { spans: Span[]; match: EditReport['match'] } {
  const exact = findExact(view, oldText, limit).filter((sp) => !startsInsideIndentation(view, sp.start, oldText));
  if (exact.length > 0) return { spans: exact, match: 'exact' };
  const tolerant = findTolerant(view, oldText, limit).filter((sp) => !startsInsideIndentation(view, sp.start, oldText));
  return { spans: tolerant, match: 'trailing_whitespace' };
}

/**
 * An edit whose old_text matched nowhere: its one re-indented region (reindented), else already applied on evidence,
 * else no_match with the nearest region.
 * @returns the text after the re-indented edit
 * @throws PatchFailedError ambiguous (several re-indented regions), already_applied, no_match
 */
function* applyUnmatched(r: EditRun, c: EditCase): Steps<string> {
  const { index, t, oldText, newText, label } = c;
  const { absolute } = r;
  const reindented = yield* applyReindented(r, c);
  if (reindented.text !== undefined) return reindented.text;
  // Evidence only (docs/errors.md): new_text is found at every place its frame occurs, it adds something (a pure
  // deletion's remaining text proves nothing), the frame old_text and new_text share (their common start and end, where
  // the old text would have been) carries at least MIN_EVIDENCE_CHARS non-blank characters, and old_text's
  // distinctive lines are gone.
  if (
    newText !== '' &&
    appliedOnEvidence(t.view, {
      oldText,
      newText,
      contextChars: contentChars(sharedFrame(oldText, newText)),
      foundPinned: editFramePinned(t.view, oldText, newText),
      anchored: false,
    })
  ) {
    throw new PatchFailedError(
      `${label}: old_text is not in ${absolute}, but new_text already is; the edit looks already applied.`,
      {
        path: absolute,
        details: { reason: 'already_applied', edit_index: index },
        suggestion: 'Read the file to confirm; do not apply this edit again.',
      },
    );
  }
  // Whole lines on both sides: a final newline of old_text ends its last line, it is no empty line.
  const nearest =
    r.failed.length < MAX_LISTED_FAILURES
      ? yield* nearestRegionSteps((yield* splitViewSteps(t.view)).lines, splitView(oldText).lines)
      : null;
  throw new PatchFailedError(
    `${label}: old_text not found${nearest ? `; closest region at line ${nearest.line}` : ''}.${reindented.refused}`,
    {
      path: absolute,
      details: { reason: 'no_match', edit_index: index, ...(nearest ? { nearest } : {}) },
      suggestion: 'Copy old_text exactly from a fresh read.',
    },
  );
}

/**
 * Indentation-tolerant, never a guess: whole lines, one region, one uniform shift, new_text in old_text's frame.
 * @returns `text`: the text after the re-indented edit (recorded in `r`); else `refused`: why one region found was not
 *   re-indented, for the no_match message ('' when none was found)
 * @throws PatchFailedError ambiguous when several regions match once indentation is ignored
 */
function* applyReindented(r: EditRun, c: EditCase): Steps<{ text?: string; refused: string }> {
  const { index, t, oldText, newText, label } = c;
  const fileLines = (yield* splitViewSteps(t.view)).lines;
  const oldLines = splitView(oldText).lines;
  // null: the search ran out of budget, so uniqueness is unknown and nothing is re-indented (fail closed).
  const regions = (yield* reindentedSteps(fileLines, oldLines, MAX_CANDIDATES + 1)) ?? [];
  if (regions.length > 1) {
    const starts = regions.map((x) => x.at + 1);
    throw new PatchFailedError(
      `${label}: old_text matches ${regions.length}${regions.length > MAX_CANDIDATES ? '+' : ''} places in ` +
        `${r.absolute} once indentation is ignored (lines ${starts.slice(0, 20).join(', ')}), and none exactly.`,
      {
        path: r.absolute,
        details: {
          reason: 'ambiguous',
          edit_index: index,
          match: 'reindented',
          count: regions.length,
          candidates: starts.slice(0, MAX_CANDIDATES),
          candidate_context: candidateContext(fileLines, starts, oldLines.length),
        },
        suggestion:
          "Copy old_text with the file's own indentation from a fresh read, with a line that singles out one place.",
      },
    );
  }
  if (regions.length === 0) return { refused: '' };
  const { at, shift } = regions[0];
  const reindented = sameFrame(oldText, newText) ? reindentText(newText, shift) : null;
  const shifted = reindented === null ? null : keepUnchangedLines(reindented, oldText, newText, fileLines, at);
  const span = lineSpan(t.view, at, oldLines.length, oldText.endsWith('\n'));
  if (shifted !== null && span) {
    r.reports.push({
      index,
      replacements: 1,
      match: 'reindented',
      indent_shift: describeShift(shift),
      lines: [at + 1],
    });
    r.made += 1;
    return { text: yield* applyToOriginalSteps(t, [{ ...span, text: shifted }]), refused: '' };
  }
  return {
    refused:
      ` It matches line ${at + 1} with indentation ${describeShift(shift)}, but new_text is not indented like ` +
      'old_text, so re-indenting it would be a guess.',
  };
}

/** Candidate lines listed in an ambiguous envelope. */
const MAX_CANDIDATES = 50;
/** Candidates given context in an ambiguous envelope (the first ones), lines of context on each side, characters per line. */
const CONTEXT_CANDIDATES = 10;
const CONTEXT_LINES = 2;
const CONTEXT_LINE_CHARS = 200;

/**
 * The lines around each of the first CONTEXT_CANDIDATES ambiguous matches (enough for an agent to extend
 * old_text with the neighbouring line that singles out the match it means, without reading the file): for each, its
 * 1-based `line`, up to CONTEXT_LINES lines `before` the match and `after` it (a match spanning `span` lines), each cut
 * to CONTEXT_LINE_CHARS characters. Content of the file being edited, as `nearest` already carries.
 */
function candidateContext(
  viewLines: readonly string[],
  starts: readonly number[],
  span: number,
): Array<{ line: number; before: string[]; after: string[] }> {
  const cut = (l: string) => l.slice(0, CONTEXT_LINE_CHARS);
  return starts.slice(0, CONTEXT_CANDIDATES).map((line) => ({
    line,
    before: viewLines.slice(Math.max(0, line - 1 - CONTEXT_LINES), line - 1).map(cut),
    after: viewLines.slice(line - 1 + span, line - 1 + span + CONTEXT_LINES).map(cut),
  }));
}

/**
 * True when a match of `needle` that starts with blanks begins inside a line's indentation, after other blanks (old_text
 * `  x = 1` inside `    x = 1`): replacing it would keep the extra indentation and silently change the line's
 * indentation, which docs/tools.md forbids — so it is no match (the nearest region then says whitespace_only).
 */
function startsInsideIndentation(view: string, start: number, needle: string): boolean {
  if (!/^[ \t]/.test(needle) || start === 0) return false;
  const lineStart = view.lastIndexOf('\n', start - 1) + 1;
  return lineStart < start && /^[ \t]+$/.test(view.slice(lineStart, start));
}

/**
 * The re-indented new_text with the lines old_text and new_text share at their start and at their end (whole lines,
 * as the agent typed them on both sides) put back as the file has them: those lines are not targeted by the edit,
 * so their blanks (a blank line holding the file's indentation, trailing blanks old_text left out) stay the file's.
 * Only the changed lines in between carry the re-indentation (docs/errors.md "How edits and hunks match").
 * @param shifted reindentText(newText, shift): as many lines as newText
 * @param fileLines the file's view lines; the match starts at 0-based line `at` and covers old_text's whole lines
 */
function keepUnchangedLines(
  shifted: string,
  oldText: string,
  newText: string,
  fileLines: readonly string[],
  at: number,
): string {
  const o = oldText.split('\n');
  const nw = newText.split('\n');
  const out = shifted.split('\n');
  // old_text's whole lines: a final newline ends its last line, the empty piece after it is no line of the file.
  const whole = oldText.endsWith('\n') ? o.length - 1 : o.length;
  let p = 0;
  for (; p < whole && p < nw.length && o[p] === nw[p]; p++) out[p] = fileLines[at + p];
  for (let k = 1; k <= o.length - p && k <= nw.length - p && o[o.length - k] === nw[nw.length - k]; k++) {
    const line = o.length - k;
    if (line < whole) out[nw.length - k] = fileLines[at + line];
  }
  return out.join('\n');
}

/** The common start and common end of `a` and `b` (not overlapping), concatenated. */
function sharedFrame(a: string, b: string): string {
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  let q = 0;
  while (q < a.length - p && q < b.length - p && a[a.length - 1 - q] === b[b.length - 1 - q]) q++;
  return a.slice(0, p) + a.slice(a.length - q);
}

interface Span {
  start: number;
  end: number;
}

/**
 * The view offsets of `count` whole lines from 0-based line `at`: through the last line's newline when `withNewline`
 * (null when that line has none: old_text's final newline is not in the file), else up to the end of its text.
 */
function lineSpan(view: string, at: number, count: number, withNewline: boolean): Span | null {
  let start = 0;
  for (let k = 0; k < at; k++) start = view.indexOf('\n', start) + 1;
  let end = start;
  for (let k = 0; k < count - 1; k++) end = view.indexOf('\n', end) + 1;
  const eol = view.indexOf('\n', end);
  if (!withNewline) return { start, end: eol === -1 ? view.length : eol };
  return eol === -1 ? null : { start, end: eol + 1 };
}

/**
 * 1-based lines of ascending span starts, counted in one pass (a line count from the start for each span cost
 * spans × file: 10,000 matches in a 50,000-line file); as steps (yields every STEP_LINES lines counted).
 */
function* linesOfOffsets(view: string, spans: readonly Span[]): Steps<number[]> {
  const out: number[] = [];
  let line = 1;
  let next = view.indexOf('\n'); // the first newline not yet counted (each is searched for once)
  for (const s of spans) {
    while (next !== -1 && next < s.start) {
      line++;
      next = view.indexOf('\n', next + 1);
      if (line % STEP_LINES === 0) yield;
    }
    out.push(line);
  }
  return out;
}

/** Matches of `needle` in `view`, at most `limit`. */
function findExact(view: string, needle: string, limit = Infinity): Span[] {
  const out: Span[] = [];
  for (let i = view.indexOf(needle); i !== -1 && out.length < limit; i = view.indexOf(needle, i + needle.length)) {
    out.push({ start: i, end: i + needle.length });
  }
  return out;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Matches with any trailing spaces/tabs at each line end (on either side); indentation stays exact. */
function findTolerant(view: string, needle: string, limit = Infinity): Span[] {
  const lines = needle.split('\n');
  if (lines.every((l) => l.trimEnd() === l) && !needle.includes('\n')) return [];
  // A trailing [ \t]* only after a non-empty last line: after a final newline it would eat the next line's indentation.
  // And only at a line end: old_text may stop mid-line ("x = 1;" of "x = 1;  y = 2;"), where the blanks that follow
  // are content, not trailing whitespace; there the last line's own trailing blanks must match as typed.
  const last = lines[lines.length - 1];
  const lastTail = escapeRegExp(/[ \t]*$/.exec(last)![0]);
  const source =
    lines.map((l) => escapeRegExp(l.replace(/[ \t]+$/, ''))).join('[ \\t]*\\n') +
    (last === '' ? '' : `(?:[ \\t]*(?=\\n|$)|${lastTail})`);
  const re = new RegExp(source, 'g');
  const out: Span[] = [];
  for (let m = re.exec(view); m && out.length < limit; m = re.exec(view)) {
    if (m[0].length === 0) {
      re.lastIndex++;
      continue;
    }
    out.push({ start: m.index, end: m.index + m[0].length });
  }
  return out;
}
