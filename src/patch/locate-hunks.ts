/**
 * Hunk location and application for one file (docs/tools.md). Every hunk is located by content in the ORIGINAL
 * file, so hunks may come in any order: exact first, then ignoring trailing whitespace (and line endings, since
 * matching runs on the LF view), then with typographic quotes and dashes normalized. Among several equal matches the
 * place is singled out by what the diff states — end/start-of-file anchoring, the header line shifted by the offset
 * carried from the previous hunk (as GNU patch), the header line, the section heading, the order of the hunks — or
 * the hunk is refused as `ambiguous` with the candidate lines: never the nearest match on distance alone. Each applied
 * hunk reports how it was placed (HunkReport). A hunk that matches nowhere is `no_match` (with the nearest region), or
 * `already_applied` when its new side is there on evidence; hunks whose regions overlap are refused (`overlap`).
 * Context lines keep the file's own text (its trailing spaces, its curly quotes); only removed and added lines change.
 * Line endings, BOM and final-newline state are preserved through src/patch/eol-text.ts. Pure; written as steps
 * (src/patch/steps.ts), so a server runs the passes over the file in slices of event-loop time (applyHunksSliced).
 */
import { PatchFailedError, type PatchFailedDetails } from '../errors/tool-error.js';
import { appliedOnEvidence, contentChars, MIN_EVIDENCE_CHARS } from './applied-evidence.js';
import { applyToOriginal, toEolText, type ViewReplacement } from './eol-text.js';
import { nearestRegionSteps } from './nearest-region.js';
import type { FilePatch, Hunk } from './parse-unified.js';
import { describeShift, reindentedSteps, sameFrame, shiftIndent, type IndentShift } from './reindent.js';
import { runSteps, runStepsSliced, STEP_LINES, type Steps } from './steps.js';

/**
 * How a hunk matched (the tolerance that was needed); `reindented`: whole lines but for one uniform indentation shift,
 * the added lines re-indented the same way (src/patch/reindent.ts, docs/errors.md "How edits and hunks match").
 */
export type MatchKind = 'exact' | 'trailing_whitespace' | 'typography' | 'reindented';

/**
 * What singled out the place where a hunk applied:
 * - `header`: its old side matched at the header's line;
 * - `offset`: at the header's line shifted by the offset an earlier hunk of the same file was found at (GNU patch);
 * - `anchored_end` / `anchored_start`: the hunk has fewer trailing than leading context lines, so it ends at the end
 *   of the file (or the mirror: fewer leading than trailing, so it starts at line 1), as `git apply` and GNU patch
 *   read a diff, and it matched there;
 * - `section`: of several matches, the only one below the section heading git writes after `@@`;
 * - `order`: of several matches, the only one between the hunks placed before and after it in the patch (when those
 *   lie in patch order, as a diff lists them);
 * - `content`: its old side matched in exactly one place, away from the header (or there was no header).
 */
export type Placement = 'header' | 'offset' | 'anchored_end' | 'anchored_start' | 'section' | 'order' | 'content';

/** Where one hunk applied, and why there (a person or an agent can check every placement). */
export interface HunkReport {
  /** 1-based hunk number in the file's patch. */
  hunk: number;
  /** 1-based line of the original file where the hunk's old side starts (for insertions: where it inserts). */
  line: number;
  /** The tolerance needed for the match. */
  match: MatchKind;
  placed_by: Placement;
  /** How many places of the original file the hunk's old side matched with that tolerance (0 for a pure insertion). */
  candidates: number;
  /** `line` minus the header's line (the offset GNU patch reports); null for `@@ @@`. */
  offset: number | null;
  /** For `reindented`: the indentation change from the hunk to the file, applied to its added lines too. */
  indent_shift?: string;
}

const TYPOGRAPHY: Array<[RegExp, string]> = [
  [/[\u2018\u2019\u201A\u201B\u2032\u02BC]/g, "'"],
  [/[\u201C\u201D\u201E\u201F\u2033]/g, '"'],
  [/[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]/g, '-'],
  [/\u2026/g, '...'],
  [/[\u00A0\u2007\u202F]/g, ' '],
];

/** Normalizes typographic punctuation to ASCII (curly quotes, dashes, ellipsis, non-breaking spaces). */
export function normalizeTypography(s: string): string {
  let out = s;
  for (const [re, to] of TYPOGRAPHY) out = out.replace(re, to);
  return out;
}

const PASSES: Array<{ kind: MatchKind; norm: (s: string) => string }> = [
  { kind: 'exact', norm: (s) => s },
  { kind: 'trailing_whitespace', norm: (s) => s.replace(/[ \t\r]+$/, '') },
  { kind: 'typography', norm: (s) => normalizeTypography(s).replace(/[ \t\r]+$/, '') },
];

/** Splits an LF view into lines (without terminators) and its final-newline state. */
export function splitView(view: string): { lines: string[]; finalNewline: boolean } {
  if (view === '') return { lines: [], finalNewline: false };
  const lines = view.split('\n');
  const finalNewline = lines[lines.length - 1] === '';
  if (finalNewline) lines.pop();
  return { lines, finalNewline };
}

/**
 * All start indices where `needle` occurs in `hay` as consecutive lines under `norm`, as steps: yields about every
 * STEP_LINES line comparisons.
 */
function* findAll(
  hay: readonly string[],
  needle: readonly string[],
  norm: (s: string) => string,
  normHay: string[],
): Steps<number[]> {
  const out: number[] = [];
  if (needle.length === 0) return out;
  const n = needle.map(norm);
  let work = 0;
  outer: for (let i = 0; i + n.length <= hay.length; i++) {
    if (work >= STEP_LINES) {
      work = 0;
      yield;
    }
    for (let j = 0; j < n.length; j++) {
      work++;
      if (normHay[i + j] !== n[j]) continue outer;
    }
    out.push(i);
  }
  return out;
}

interface Located {
  index: number;
  start: number;
  count: number;
  match: MatchKind;
  placedBy: Placement;
  candidates: number;
  hunk: Hunk;
  /** The indentation shift of a `reindented` match. */
  shift?: IndentShift;
}

/** The shape of a hunk: its two sides, and how many context lines lead and trail its changes. */
interface Shape {
  oldSide: string[];
  newSide: string[];
  leading: number;
  trailing: number;
  changes: boolean;
  /** Non-blank characters in its context lines. */
  contextChars: number;
}

function shapeOf(hunk: Hunk): Shape {
  const ls = hunk.lines;
  let leading = 0;
  while (leading < ls.length && ls[leading].op === ' ') leading++;
  let trailing = 0;
  while (trailing < ls.length - leading && ls[ls.length - 1 - trailing].op === ' ') trailing++;
  return {
    oldSide: ls.filter((l) => l.op !== '+').map((l) => l.text),
    newSide: ls.filter((l) => l.op !== '-').map((l) => l.text),
    leading,
    trailing,
    changes: leading < ls.length,
    contextChars: ls.reduce((n, l) => n + (l.op === ' ' ? contentChars(l.text) : 0), 0),
  };
}

/** Lines that start a section for git's default funcname rule: a letter, `_` or `$` first. */
const SECTION_START = /^[A-Za-z_$]/;

/**
 * For every line index i, the index of the nearest section-starting line above i (or -1): one pass over the file, so
 * checking many candidates costs O(1) each (a one-line hunk may match thousands of places).
 */
function sectionLinesAbove(lines: readonly string[]): Int32Array {
  const above = new Int32Array(lines.length + 1);
  let last = -1;
  for (let i = 0; i <= lines.length; i++) {
    above[i] = last;
    if (i < lines.length && SECTION_START.test(lines[i])) last = i;
  }
  return above;
}

/**
 * Applies a file's hunks to its current text.
 *
 * Placement, for the hunk's old side matched with the first tolerance that finds it anywhere:
 * one match is taken. Of several, the one singled out by the hunk's anchoring (fewer trailing than leading context
 * lines: the match that ends at the end of the file; the mirror: the one at line 1), else by the header's line
 * shifted by the offset the previous hunk of this file was found at, else by the header's line itself, else by the
 * section heading after `@@` (the only match whose nearest section line above is that heading), else — once the other
 * hunks are placed, and when they lie in patch order — by being the only match between its neighbours. When anchoring
 * and the header single out different matches, or nothing singles one out, the hunk is refused as `ambiguous` with
 * the candidates — the nearest match is never taken on distance alone.
 *
 * `already_applied` needs evidence: the hunk's new side sits where its old side would be — at the end (start) of the
 * file for an end-anchored (start-anchored) hunk, right after every match of its context for an append, or between
 * its leading and trailing context — and its context lines carry at least MIN_EVIDENCE_CHARS non-blank characters;
 * for a pure insertion (no context), the inserted lines sit exactly at the header's line after the carried offset.
 * @param original the current content (BOM and original line endings included); '' for a file to create
 * @returns the new content and where and how each hunk applied
 * @throws PatchFailedError no_match (with nearest and expected), ambiguous (with candidates), already_applied, overlap
 */
export function applyHunks(original: string, file: FilePatch, absolute: string): { text: string; hunks: HunkReport[] } {
  return runSteps(applyHunksSteps(original, file, absolute));
}

/**
 * `applyHunks` in slices of event-loop time (src/patch/steps.ts): the same result or the same error, for a server that
 * must keep answering while it searches a large file (docs/security.md "Bounded work").
 */
export function applyHunksSliced(
  original: string,
  file: FilePatch,
  absolute: string,
): Promise<{ text: string; hunks: HunkReport[] }> {
  return runStepsSliced(applyHunksSteps(original, file, absolute));
}

function* applyHunksSteps(
  original: string,
  file: FilePatch,
  absolute: string,
): Steps<{ text: string; hunks: HunkReport[] }> {
  const t = toEolText(original);
  const { lines, finalNewline } = splitView(t.view);
  const total = file.hunks.length;
  const located: Located[] = [];
  const normCache = new Map<MatchKind, string[]>();
  /** The file's lines under `norm`, computed once per kind (as steps: yields every STEP_LINES lines). */
  function* normalized(kind: MatchKind, norm: (s: string) => string): Steps<string[]> {
    let v = normCache.get(kind);
    if (!v) {
      v = [];
      for (let i = 0; i < lines.length; i++) {
        v.push(norm(lines[i]));
        if (i % STEP_LINES === STEP_LINES - 1) yield;
      }
      normCache.set(kind, v);
    }
    return v;
  }
  /** Offset (found line − header line) of the previous hunk placed in this file: GNU patch looks there first. */
  let carried = 0;
  let sectionIndex: Int32Array | null = null;
  const sectionsAbove = () => (sectionIndex ??= sectionLinesAbove(lines));
  /** Hunks that matched several places with nothing in themselves to tell which. */
  const deferred: Array<{
    index: number;
    candidates: number[];
    count: number;
    match: MatchKind;
    label: string;
    expected: string[];
  }> = [];

  /** Hunks that failed (every failing hunk is reported, not only the first). */
  const failed: Array<{ index: number; error: PatchFailedError }> = [];
  for (const [index, hunk] of file.hunks.entries()) {
    try {
      yield* locateOne(hunk, index);
    } catch (error) {
      if (!(error instanceof PatchFailedError)) throw error;
      failed.push({ index, error });
    }
  }

  function* locateOne(hunk: Hunk, index: number): Steps<void> {
    const shape = shapeOf(hunk);
    const { oldSide, newSide } = shape;
    const label = `hunk ${index + 1} of ${total}${total > 1 || file.newPath ? ` (${file.newPath ?? file.oldPath ?? 'file'})` : ''}`;
    const place = (start: number, count: number, match: MatchKind, placedBy: Placement, candidates: number) => {
      located.push({ index, start, count, match, placedBy, candidates, hunk });
    };
    if (oldSide.length === 0) {
      // Pure insertion: no context to locate by; only the header can place it (or the file is empty/new).
      if (lines.length === 0) {
        place(0, 0, 'exact', 'anchored_start', 0);
        return;
      }
      if (hunk.oldStart === null) {
        throw new PatchFailedError(`${label} has no context lines and no line numbers, so it cannot be placed.`, {
          path: absolute,
          details: { reason: 'no_match', hunk: index + 1, hunks: total, expected: [] },
          suggestion: 'Add a few unchanged lines around the insertion as context (lines starting with a space).',
        });
      }
      // "-N,0" inserts after line N, shifted by the offset carried from the previous hunk.
      const at = Math.min(Math.max(hunk.oldStart + carried, 0), lines.length);
      // Evidence by position: the inserted lines already sit exactly where the header (after the offset) puts them.
      if (alreadyThere(lines, newSide, at)) {
        throw alreadyApplied(label, absolute, index, total);
      }
      place(at, 0, 'exact', carried === 0 ? 'header' : 'offset', 0);
      return;
    }
    // Empty lines after the hunk that might have been empty context lines (counts absent or wrong) could make the
    // trailing context longer: then the hunk is end-anchored only when no match is followed by such blank lines.
    const blanks = hunk.uncertainTrailingBlanks ?? 0;
    let anchorEnd = shape.changes && shape.trailing < shape.leading;
    if (anchorEnd && blanks > 0) {
      const padded = [...oldSide, ...Array<string>(blanks).fill('')];
      const normLines = yield* normalized(PASSES[1].kind, PASSES[1].norm);
      anchorEnd = (yield* findAll(lines, padded, PASSES[1].norm, normLines)).length === 0;
    }
    const anchorStart = shape.changes && shape.leading < shape.trailing;
    for (const pass of PASSES) {
      const normLines = yield* normalized(pass.kind, pass.norm);
      const candidates = yield* findAll(lines, oldSide, pass.norm, normLines);
      if (candidates.length === 0) continue;
      if (shape.changes && shape.contextChars >= MIN_EVIDENCE_CHARS) {
        // Already applied, on evidence: an append whose new side follows every match of its context; an anchored
        // hunk whose new side is what the file now ends (starts) with.
        const appended =
          newSide.length > oldSide.length && candidates.every((c) => alreadyThere(lines, newSide, c, pass.norm));
        const atEnd =
          anchorEnd &&
          alreadyThere(lines, newSide, lines.length - newSide.length, pass.norm) &&
          !sameLines(oldSide, newSide);
        const atStart = anchorStart && alreadyThere(lines, newSide, 0, pass.norm) && !sameLines(oldSide, newSide);
        if (appended || atEnd || atStart) throw alreadyApplied(label, absolute, index, total);
      }
      const hint = hunk.oldStart === null ? null : Math.max(hunk.oldStart - 1, 0);
      const chosen = choose(
        candidates,
        oldSide.length,
        lines,
        hint,
        carried,
        anchorEnd,
        anchorStart,
        hunk.section ?? null,
        sectionsAbove,
      );
      if (chosen === null) {
        // Maybe the order of the hunks settles it, once the others are placed.
        deferred.push({ index, candidates, count: oldSide.length, match: pass.kind, label, expected: oldSide });
        return;
      }
      if (hint !== null) carried = chosen.at - hint;
      place(chosen.at, oldSide.length, pass.kind, chosen.by, candidates.length);
      return;
    }
    // Indentation-tolerant, never a guess (the rule edit_file shares): one region, one uniform shift, and added lines
    // in the old side's frame that can take it. A search out of budget (null) re-indents nothing.
    if (shape.changes) {
      const regions = (yield* reindentedSteps(lines, oldSide, MAX_REINDENTED + 1)) ?? [];
      if (regions.length > 1) {
        throw new PatchFailedError(
          `${label} matches ${regions.length}${regions.length > MAX_REINDENTED ? '+' : ''} places of ${absolute} once ` +
            `indentation is ignored (lines ${regions
              .slice(0, 20)
              .map((r) => r.at + 1)
              .join(', ')}), and none exactly.`,
          {
            path: absolute,
            details: {
              reason: 'ambiguous',
              hunk: index + 1,
              hunks: total,
              match: 'reindented',
              count: regions.length,
              candidates: regions.slice(0, MAX_REINDENTED).map((r) => r.at + 1),
              expected: oldSide.slice(0, 50),
            },
            suggestion:
              "Regenerate the hunk from the file's own lines (their indentation), with enough context to match once.",
          },
        );
      }
      if (regions.length === 1) {
        const { at, shift } = regions[0];
        const added = hunk.lines.filter((l) => l.op === '+' && l.text.trim() !== '');
        const fits =
          sameFrame(oldSide.join('\n'), newSide.join('\n')) &&
          added.every((l) => shiftIndent(/^[ \t]*/.exec(l.text)![0], shift) !== null);
        if (fits) {
          located.push({
            index,
            start: at,
            count: oldSide.length,
            match: 'reindented',
            placedBy: 'content',
            candidates: 1,
            hunk,
            shift,
          });
          if (hunk.oldStart !== null) carried = at - Math.max(hunk.oldStart - 1, 0);
          return;
        }
      }
    }
    // No match at all: already applied (on evidence, the rule edit_file shares), or a real mismatch with a diagnosis.
    if (shape.changes && shape.contextChars >= MIN_EVIDENCE_CHARS) {
      for (const pass of PASSES) {
        const found = yield* findAll(lines, newSide, pass.norm, yield* normalized(pass.kind, pass.norm));
        const between =
          shape.leading > 0 && shape.trailing > 0 && found.length > 0 && contextPinsNewSide(lines, shape, pass.norm);
        const anchored = found.some(
          (p) => (anchorEnd && p + newSide.length === lines.length) || (anchorStart && p === 0),
        );
        const evidence = appliedOnEvidence(t.view, {
          oldText: oldSide.join('\n'),
          newText: newSide.join('\n'),
          contextChars: shape.contextChars,
          foundPinned: between || anchored,
          anchored: anchored && !between,
        });
        if (evidence) throw alreadyApplied(label, absolute, index, total);
      }
    }
    // The nearest search scans the file: done for the failures that will be listed, not for every failing hunk.
    const nearest = failed.length < MAX_LISTED_FAILURES ? yield* nearestRegionSteps(lines, oldSide) : null;
    throw new PatchFailedError(
      `${label} does not match ${absolute}${nearest ? `; the closest region starts at line ${nearest.line}` : ''}.`,
      {
        path: absolute,
        details: {
          reason: 'no_match',
          hunk: index + 1,
          hunks: total,
          expected: oldSide.slice(0, 50),
          ...(nearest ? { nearest } : {}),
        },
        suggestion: 'Read the file and regenerate this hunk from its current content; do not resend the same patch.',
      },
    );
  }

  // The order of the hunks is stated too: when the hunks placed so far lie in patch order (a diff lists a file's hunks
  // top to bottom), a deferred hunk lies between its placed neighbours; one candidate there is taken. Repeated while
  // that places more; what is left is ambiguous.
  for (let progress = true; progress && deferred.length > 0;) {
    progress = false;
    const placed = [...located].sort((a, b) => a.index - b.index);
    if (!placed.every((l, k) => k === 0 || placed[k - 1].start + placed[k - 1].count <= l.start)) break;
    for (let k = 0; k < deferred.length; k++) {
      const d = deferred[k];
      const prev = placed.filter((l) => l.index < d.index).pop();
      const next = placed.find((l) => l.index > d.index);
      const low = prev ? prev.start + prev.count : 0;
      const high = next ? next.start : lines.length;
      const fits = d.candidates.filter((c) => c >= low && c + d.count <= high);
      if (fits.length === 1 && (prev || next)) {
        located.push({
          index: d.index,
          start: fits[0],
          count: d.count,
          match: d.match,
          placedBy: 'order',
          candidates: d.candidates.length,
          hunk: file.hunks[d.index],
        });
        deferred.splice(k, 1);
        progress = true;
        break;
      }
    }
  }
  for (const d of deferred) {
    failed.push({
      index: d.index,
      error: new PatchFailedError(
        `${d.label} matches ${d.candidates.length} places (lines ${d.candidates
          .slice(0, 20)
          .map((c) => c + 1)
          .join(
            ', ',
          )}) and neither its header line, its anchoring, its section heading nor the order of the hunks tells which.`,
        {
          path: absolute,
          details: {
            reason: 'ambiguous',
            hunk: d.index + 1,
            hunks: total,
            count: d.candidates.length,
            candidates: d.candidates.slice(0, 50).map((c) => c + 1),
            expected: d.expected.slice(0, 50),
          },
          suggestion: 'Add more context lines so the hunk matches once, or give the correct @@ -line numbers.',
        },
      ),
    });
  }
  if (failed.length > 0) throw allFailures(failed, 'hunk');

  // Overlaps (in original coordinates).
  const byStart = [...located].sort((a, b) => a.start - b.start || a.count - b.count);
  for (let k = 1; k < byStart.length; k++) {
    const prev = byStart[k - 1];
    const cur = byStart[k];
    if (cur.start < prev.start + prev.count || (cur.start === prev.start && cur.count === 0 && prev.count === 0)) {
      throw new PatchFailedError(
        `Hunks ${prev.index + 1} and ${cur.index + 1} overlap (original lines ${prev.start + 1}-${prev.start + Math.max(prev.count, 1)} and ${cur.start + 1}-${cur.start + Math.max(cur.count, 1)}).`,
        {
          path: absolute,
          details: {
            reason: 'overlap',
            hunk: cur.index + 1,
            hunks: total,
            candidates: [prev.start + 1, cur.start + 1],
          },
          suggestion: 'Merge the overlapping hunks into one and send the diff again.',
        },
      );
    }
  }

  // Build view replacements. Line i starts at lineStart[i]; lineStart[lines.length] is the end of the view.
  const lineStart: number[] = [0];
  for (let i = 0; i < lines.length; i++)
    lineStart.push(lineStart[i] + lines[i].length + (i < lines.length - 1 || finalNewline ? 1 : 0));
  const replacements: ViewReplacement[] = [];
  for (const loc of located) {
    const h = loc.hunk;
    const out: string[] = [];
    let cursor = loc.start;
    for (const l of h.lines) {
      if (l.op === ' ')
        out.push(lines[cursor++] ?? l.text); // keep the file's own text for context
      else if (l.op === '-') cursor++;
      else if (loc.shift && l.text.trim() !== '') {
        const indent = /^[ \t]*/.exec(l.text)![0];
        out.push(shiftIndent(indent, loc.shift)! + l.text.slice(indent.length)); // checked when it was placed
      } else out.push(l.text);
    }
    const endLine = loc.start + loc.count;
    const touchesEof = endLine === lines.length;
    let text = out.map((l) => `${l}\n`).join('');
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
    if (touchesEof && loc.count === 0) start = t.view.length;
    replacements.push({ start, end: touchesEof ? t.view.length : lineStart[endLine], text });
  }
  const text = applyToOriginal(t, replacements);
  const hunks = located
    .sort((a, b) => a.index - b.index)
    .map((l): HunkReport => ({
      hunk: l.index + 1,
      line: l.start + 1,
      match: l.match,
      placed_by: l.placedBy,
      candidates: l.candidates,
      // A pure insertion's header "-N,0" names the line it goes after; any other header the first line of the hunk.
      offset:
        l.hunk.oldStart === null
          ? null
          : l.count === 0 && l.hunk.lines.every((x) => x.op === '+')
            ? l.start - l.hunk.oldStart
            : l.start + 1 - Math.max(l.hunk.oldStart, 1),
      ...(l.shift ? { indent_shift: describeShift(l.shift) } : {}),
    }));
  return { text, hunks };
}

/**
 * Picks one of `candidates` (0-based starts, ascending) or returns null when nothing stated singles one out.
 * @param hint the header's 0-based line, or null for `@@ @@`
 * @param carried the offset the previous hunk of the file was found at
 */
function choose(
  candidates: readonly number[],
  count: number,
  lines: readonly string[],
  hint: number | null,
  carried: number,
  anchorEnd: boolean,
  anchorStart: boolean,
  section: string | null,
  sectionsAbove: () => Int32Array,
): { at: number; by: Placement } | null {
  const atEnd = (c: number) => c + count === lines.length;
  const byPosition = (c: number): Placement | null => {
    if (hint === null) return null;
    if (c === hint) return 'header';
    if (c === hint + carried) return 'offset';
    return null;
  };
  if (candidates.length === 1) {
    const c = candidates[0];
    const by =
      byPosition(c) ?? (anchorEnd && atEnd(c) ? 'anchored_end' : anchorStart && c === 0 ? 'anchored_start' : 'content');
    return { at: c, by };
  }
  // What the diff states about the place: its anchoring, and its header line (after the carried offset). When both
  // single out a match and they differ, the diff contradicts itself: nothing is guessed.
  const anchored = anchorEnd ? candidates.find(atEnd) : anchorStart && candidates[0] === 0 ? 0 : undefined;
  const positioned =
    hint === null
      ? undefined
      : candidates.includes(hint + carried)
        ? hint + carried
        : candidates.includes(hint)
          ? hint
          : undefined;
  if (anchored !== undefined && positioned !== undefined && anchored !== positioned) return null;
  if (anchored !== undefined) return { at: anchored, by: anchorEnd ? 'anchored_end' : 'anchored_start' };
  if (positioned !== undefined) return { at: positioned, by: positioned === hint ? 'header' : 'offset' };
  if (section !== null) {
    const above = sectionsAbove();
    const fits = candidates.filter((c) => above[c] !== -1 && lines[above[c]].trimEnd().startsWith(section));
    if (fits.length === 1) return { at: fits[0], by: 'section' };
  }
  return null;
}

function sameLines(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function alreadyThere(
  lines: readonly string[],
  newSide: readonly string[],
  at: number,
  norm: (s: string) => string = (s) => s,
): boolean {
  if (newSide.length === 0 || at < 0 || at + newSide.length > lines.length) return false;
  for (let j = 0; j < newSide.length; j++) if (norm(lines[at + j]) !== norm(newSide[j])) return false;
  return true;
}

/**
 * Whether the hunk's context pins the place its new side was found (the already_applied evidence, docs/errors.md
 * "already_applied only on evidence"): every place the leading context lines occur followed — after no more lines than
 * either side's middle has — by the trailing context lines holds the new side. Context that also frames other lines
 * (two functions with the same `total = 0` … `return total`) pins nothing: the new side found in one says nothing of
 * the other, whose removed line may just differ by a typo. Cost: one scan of the file per pass, as findAll.
 * @param norm the pass's line normalization
 */
function contextPinsNewSide(lines: readonly string[], shape: Shape, norm: (s: string) => string): boolean {
  const { newSide, oldSide, leading, trailing } = shape;
  const lead = newSide.slice(0, leading).map(norm);
  const trail = newSide.slice(newSide.length - trailing).map(norm);
  const maxMiddle = Math.max(oldSide.length, newSide.length) - leading - trailing;
  const at = (i: number, want: readonly string[]) => {
    if (i < 0 || i + want.length > lines.length) return false;
    for (let j = 0; j < want.length; j++) if (norm(lines[i + j]) !== want[j]) return false;
    return true;
  };
  for (let i = 0; i + leading + trailing <= lines.length; i++) {
    if (!at(i, lead)) continue;
    for (let m = 0; m <= maxMiddle; m++) {
      if (at(i + leading + m, trail) && !alreadyThere(lines, newSide, i, norm)) return false;
    }
  }
  return true;
}

function alreadyApplied(label: string, absolute: string, index: number, total: number): PatchFailedError {
  return new PatchFailedError(`${label} looks already applied to ${absolute}: its new lines are already there.`, {
    path: absolute,
    details: { reason: 'already_applied', hunk: index + 1, hunks: total },
    suggestion: 'Read the file to confirm; do not apply this patch again.',
  });
}

/** Re-indented candidates listed in an ambiguous envelope. */
const MAX_REINDENTED = 50;

/** Most failures listed in `details.failures` (each carries up to 50 expected lines and a nearest region). */
export const MAX_LISTED_FAILURES = 20;

/**
 * One PATCH_FAILED for every failing hunk or edit (all known problems in one envelope): the first failure
 * (lowest index) keeps its message, suggestion and top-level details for compatibility; when two or more failed,
 * `details.failures` lists each failure's own details in order (without the file-wide `hunks` total), at most
 * MAX_LISTED_FAILURES, and `details.failed_count` says how many failed in all. With one failure the envelope is
 * exactly that failure's (no list: the top-level fields are the whole story).
 * @param failed the failures, any order; at least one
 * @param unit 'hunk' (apply_patch) or 'edit' (edit_file), for the message
 */
export function allFailures(
  failed: ReadonlyArray<{ index: number; error: PatchFailedError }>,
  unit: 'hunk' | 'edit',
): PatchFailedError {
  const sorted = [...failed].sort((a, b) => a.index - b.index);
  const first = sorted[0].error;
  if (sorted.length === 1) return first;
  const failures = sorted.slice(0, MAX_LISTED_FAILURES).map(({ error }) => {
    const { hunks: _total, ...own } = error.details;
    return own;
  });
  const more =
    sorted.length > 1
      ? ` ${sorted.length} ${unit}s failed in all (${unit === 'hunk' ? 'hunks' : 'edits'} ${sorted.map((f) => (unit === 'hunk' ? f.index + 1 : f.index)).join(', ')}); each is in details.failures.`
      : '';
  return new PatchFailedError(`${first.message}${more}`, {
    path: first.path,
    details: { ...(first.details as PatchFailedDetails), failures, failed_count: sorted.length },
    suggestion: first.suggestion,
  });
}
