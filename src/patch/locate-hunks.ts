/**
 * Hunk location and application for one file (docs/tools.md). Every hunk is located by content in the ORIGINAL
 * file, so hunks may come in any order: exact first, then ignoring trailing whitespace (and line endings, since
 * matching runs on the LF view), then with typographic quotes and dashes normalized (src/patch/line-match.ts). Among
 * several equal matches the place is singled out by what the diff states (src/patch/hunk-placement.ts) — end/start-of-
 * file anchoring, the header line shifted by the offset carried from the previous hunk (as GNU patch), the header
 * line, the section heading, the order of the hunks — or the hunk is refused as `ambiguous` with the candidate lines:
 * never the nearest match on distance alone. Each applied hunk reports how it was placed (HunkReport). A hunk that
 * matches nowhere is `no_match` (with the nearest region), or `already_applied` when its new side is there on
 * evidence; hunks whose regions overlap are refused (`overlap`). Context lines keep the file's own text
 * (src/patch/hunk-text.ts). Line endings, BOM and final-newline state are preserved through src/patch/eol-text.ts.
 * Pure; written as steps (src/patch/steps.ts), so a server runs the passes over the file in slices of event-loop time
 * (applyHunksSliced).
 */
import { PatchFailedError } from '../errors/tool-error.js';
import { appliedOnEvidence, contentChars, MIN_EVIDENCE_CHARS } from './applied-evidence.js';
import { applyToOriginalSteps, toEolTextSteps } from './eol-text.js';
import { allFailures, MAX_LISTED_FAILURES } from './failures.js';
import {
  choose,
  placeByOrder,
  sectionLinesAbove,
  type DeferredHunk,
  type Located,
  type Placement,
} from './hunk-placement.js';
import { hunkReplacements } from './hunk-text.js';
import {
  alreadyThere,
  findAll,
  normalizedLines,
  PASSES,
  sameLines,
  splitViewSteps,
  type MatchKind,
  type MatchPass,
} from './line-match.js';
import { nearestRegionSteps } from './nearest-region.js';
import type { FilePatch, Hunk } from './parse-unified.js';
import { describeShift, reindentedSteps, sameFrame, shiftIndent } from './reindent.js';
import { runSteps, runStepsSliced, type Steps } from './steps.js';

export type { MatchKind } from './line-match.js';
export type { Placement } from './hunk-placement.js';

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

/** One file's hunks being located: the file, and what is placed, deferred and failed so far. */
interface FileSearch {
  file: FilePatch;
  absolute: string;
  /** The file's number of hunks. */
  total: number;
  /** The file's LF view, and its lines. */
  view: string;
  lines: string[];
  /** The file's lines under a pass's normalization (computed once per pass). */
  normalized: (pass: MatchPass) => Steps<string[]>;
  sectionsAbove: () => Int32Array;
  /** Offset (found line − header line) of the previous hunk placed in this file: GNU patch looks there first. */
  carried: number;
  located: Located[];
  /** Hunks that matched several places with nothing in themselves to tell which. */
  deferred: DeferredHunk[];
  /** Hunks that failed (every failing hunk is reported, not only the first). */
  failed: Array<{ index: number; error: PatchFailedError }>;
}

/** One hunk being located (its old side is not empty). */
interface HunkCase {
  hunk: Hunk;
  /** 0-based hunk number in the file's patch. */
  index: number;
  shape: Shape;
  /** `hunk N of M (path)`, for messages. */
  label: string;
  /** It ends at the end of the file (fewer trailing than leading context lines). */
  anchorEnd: boolean;
  /** It starts at line 1 (fewer leading than trailing context lines). */
  anchorStart: boolean;
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
  const t = yield* toEolTextSteps(original);
  const { lines, finalNewline } = yield* splitViewSteps(t.view);
  let sectionIndex: Int32Array | null = null;
  const s: FileSearch = {
    file,
    absolute,
    total: file.hunks.length,
    view: t.view,
    lines,
    normalized: normalizedLines(lines),
    sectionsAbove: () => (sectionIndex ??= sectionLinesAbove(lines)),
    carried: 0,
    located: [],
    deferred: [],
    failed: [],
  };
  for (const [index, hunk] of file.hunks.entries()) {
    try {
      yield* locateOne(s, hunk, index);
    } catch (error) {
      if (!(error instanceof PatchFailedError)) throw error;
      s.failed.push({ index, error });
    }
  }
  placeByOrder(s.located, s.deferred, lines.length, file.hunks);
  for (const d of s.deferred) s.failed.push({ index: d.index, error: ambiguous(s, d) });
  if (s.failed.length > 0) throw allFailures(s.failed, 'hunk');
  refuseOverlaps(s);
  const replacements = yield* hunkReplacements(s.located, lines, finalNewline, t.view.length);
  const text = yield* applyToOriginalSteps(t, replacements);
  return { text, hunks: reportsOf(s.located) };
}

/**
 * Locates one hunk: places it in `s.located`, defers it to `s.deferred` (several matches, nothing in itself to tell
 * which), or throws its PatchFailedError.
 */
function* locateOne(s: FileSearch, hunk: Hunk, index: number): Steps<void> {
  const shape = shapeOf(hunk);
  const { file, total } = s;
  const label = `hunk ${index + 1} of ${total}${total > 1 || file.newPath ? ` (${file.newPath ?? file.oldPath ?? 'file'})` : ''}`;
  if (shape.oldSide.length === 0) {
    locateInsertion(s, hunk, index, shape, label);
    return;
  }
  const c: HunkCase = { hunk, index, shape, label, ...(yield* anchoringOf(s, hunk, shape)) };
  if (yield* locateByPasses(s, c)) return;
  if (shape.changes && (yield* locateReindented(s, c))) return;
  yield* refuseIfApplied(s, c);
  // The nearest search scans the file: done for the failures that will be listed, not for every failing hunk.
  const nearest = s.failed.length < MAX_LISTED_FAILURES ? yield* nearestRegionSteps(s.lines, shape.oldSide) : null;
  throw new PatchFailedError(
    `${label} does not match ${s.absolute}${nearest ? `; the closest region starts at line ${nearest.line}` : ''}.`,
    {
      path: s.absolute,
      details: {
        reason: 'no_match',
        hunk: index + 1,
        hunks: total,
        expected: shape.oldSide.slice(0, 50),
        ...(nearest ? { nearest } : {}),
      },
      suggestion: 'Read the file and regenerate this hunk from its current content; do not resend the same patch.',
    },
  );
}

/** A pure insertion (no context to locate by): only the header can place it (or the file is empty or new). */
function locateInsertion(s: FileSearch, hunk: Hunk, index: number, shape: Shape, label: string): void {
  const { lines, absolute, total } = s;
  const place = (start: number, placedBy: Placement) => {
    s.located.push({ index, start, count: 0, match: 'exact', placedBy, candidates: 0, hunk });
  };
  if (lines.length === 0) {
    place(0, 'anchored_start');
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
  const at = Math.min(Math.max(hunk.oldStart + s.carried, 0), lines.length);
  // Evidence by position: the inserted lines already sit exactly where the header (after the offset) puts them.
  if (alreadyThere(lines, shape.newSide, at)) throw alreadyApplied(label, absolute, index, total);
  place(at, s.carried === 0 ? 'header' : 'offset');
}

/**
 * The hunk's anchoring at the end or the start of the file. Empty lines after the hunk that might have been empty
 * context lines (counts absent or wrong) could make the trailing context longer: then the hunk is end-anchored only
 * when no match is followed by such blank lines.
 */
function* anchoringOf(s: FileSearch, hunk: Hunk, shape: Shape): Steps<{ anchorEnd: boolean; anchorStart: boolean }> {
  const blanks = hunk.uncertainTrailingBlanks ?? 0;
  let anchorEnd = shape.changes && shape.trailing < shape.leading;
  if (anchorEnd && blanks > 0) {
    const padded = [...shape.oldSide, ...Array<string>(blanks).fill('')];
    const normLines = yield* s.normalized(PASSES[1]);
    anchorEnd = (yield* findAll(s.lines, padded, PASSES[1].norm, normLines)).length === 0;
  }
  const anchorStart = shape.changes && shape.leading < shape.trailing;
  return { anchorEnd, anchorStart };
}

/**
 * The hunk's old side matched with the first tolerance pass that finds it anywhere: placed (or deferred) there, or
 * refused as already applied on evidence.
 * @returns false when no pass finds it
 */
function* locateByPasses(s: FileSearch, c: HunkCase): Steps<boolean> {
  const { lines } = s;
  const { hunk, index, shape, label, anchorEnd, anchorStart } = c;
  const { oldSide, newSide } = shape;
  for (const pass of PASSES) {
    const normLines = yield* s.normalized(pass);
    const candidates = yield* findAll(lines, oldSide, pass.norm, normLines);
    if (candidates.length === 0) continue;
    if (shape.changes && shape.contextChars >= MIN_EVIDENCE_CHARS) {
      // Already applied, on evidence: an append whose new side follows every match of its context; an anchored
      // hunk whose new side is what the file now ends (starts) with.
      const appended =
        newSide.length > oldSide.length && candidates.every((x) => alreadyThere(lines, newSide, x, pass.norm));
      const atEnd =
        anchorEnd &&
        alreadyThere(lines, newSide, lines.length - newSide.length, pass.norm) &&
        !sameLines(oldSide, newSide);
      const atStart = anchorStart && alreadyThere(lines, newSide, 0, pass.norm) && !sameLines(oldSide, newSide);
      if (appended || atEnd || atStart) throw alreadyApplied(label, s.absolute, index, s.total);
    }
    const hint = hunk.oldStart === null ? null : Math.max(hunk.oldStart - 1, 0);
    const chosen = choose(candidates, oldSide.length, lines, {
      hint,
      carried: s.carried,
      anchorEnd,
      anchorStart,
      section: hunk.section ?? null,
      sectionsAbove: s.sectionsAbove,
    });
    if (chosen === null) {
      // Maybe the order of the hunks settles it, once the others are placed.
      s.deferred.push({ index, candidates, count: oldSide.length, match: pass.kind, label, expected: oldSide });
      return true;
    }
    if (hint !== null) s.carried = chosen.at - hint;
    s.located.push({
      index,
      start: chosen.at,
      count: oldSide.length,
      match: pass.kind,
      placedBy: chosen.by,
      candidates: candidates.length,
      hunk,
    });
    return true;
  }
  return false;
}

/** Re-indented candidates listed in an ambiguous envelope. */
const MAX_REINDENTED = 50;

/**
 * Indentation-tolerant, never a guess (the rule edit_file shares): one region, one uniform shift, and added lines in
 * the old side's frame that can take it. A search out of budget (null) re-indents nothing.
 * @returns whether the hunk was placed as `reindented`
 * @throws PatchFailedError ambiguous when several regions match
 */
function* locateReindented(s: FileSearch, c: HunkCase): Steps<boolean> {
  const { hunk, index, shape, label } = c;
  const { oldSide, newSide } = shape;
  const regions = (yield* reindentedSteps(s.lines, oldSide, MAX_REINDENTED + 1)) ?? [];
  if (regions.length > 1) {
    throw new PatchFailedError(
      `${label} matches ${regions.length}${regions.length > MAX_REINDENTED ? '+' : ''} places of ${s.absolute} once ` +
        `indentation is ignored (lines ${regions
          .slice(0, 20)
          .map((r) => r.at + 1)
          .join(', ')}), and none exactly.`,
      {
        path: s.absolute,
        details: {
          reason: 'ambiguous',
          hunk: index + 1,
          hunks: s.total,
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
  if (regions.length !== 1) return false;
  const { at, shift } = regions[0];
  const added = hunk.lines.filter((l) => l.op === '+' && l.text.trim() !== '');
  const fits =
    sameFrame(oldSide.join('\n'), newSide.join('\n')) &&
    added.every((l) => shiftIndent(/^[ \t]*/.exec(l.text)![0], shift) !== null);
  if (!fits) return false;
  s.located.push({
    index,
    start: at,
    count: oldSide.length,
    match: 'reindented',
    placedBy: 'content',
    candidates: 1,
    hunk,
    shift,
  });
  if (hunk.oldStart !== null) s.carried = at - Math.max(hunk.oldStart - 1, 0);
  return true;
}

/**
 * No match at all: already applied on evidence (the rule edit_file shares, src/patch/applied-evidence.ts) throws
 * `already_applied`; otherwise it returns and the hunk is a real mismatch.
 */
function* refuseIfApplied(s: FileSearch, c: HunkCase): Steps<void> {
  const { shape, anchorEnd, anchorStart } = c;
  const { lines } = s;
  if (!shape.changes || shape.contextChars < MIN_EVIDENCE_CHARS) return;
  const { oldSide, newSide } = shape;
  for (const pass of PASSES) {
    const found = yield* findAll(lines, newSide, pass.norm, yield* s.normalized(pass));
    const between =
      shape.leading > 0 && shape.trailing > 0 && found.length > 0 && contextPinsNewSide(lines, shape, pass.norm);
    const anchored = found.some((p) => (anchorEnd && p + newSide.length === lines.length) || (anchorStart && p === 0));
    const evidence = appliedOnEvidence(s.view, {
      oldText: oldSide.join('\n'),
      newText: newSide.join('\n'),
      contextChars: shape.contextChars,
      foundPinned: between || anchored,
      anchored: anchored && !between,
    });
    if (evidence) throw alreadyApplied(c.label, s.absolute, c.index, s.total);
  }
}

/** The PATCH_FAILED `ambiguous` of a hunk that is still deferred once the order of the hunks has placed what it can. */
function ambiguous(s: FileSearch, d: DeferredHunk): PatchFailedError {
  return new PatchFailedError(
    `${d.label} matches ${d.candidates.length} places (lines ${d.candidates
      .slice(0, 20)
      .map((c) => c + 1)
      .join(
        ', ',
      )}) and neither its header line, its anchoring, its section heading nor the order of the hunks tells which.`,
    {
      path: s.absolute,
      details: {
        reason: 'ambiguous',
        hunk: d.index + 1,
        hunks: s.total,
        count: d.candidates.length,
        candidates: d.candidates.slice(0, 50).map((c) => c + 1),
        expected: d.expected.slice(0, 50),
      },
      suggestion: 'Add more context lines so the hunk matches once, or give the correct @@ -line numbers.',
    },
  );
}

/** @throws PatchFailedError overlap for the first two placed hunks (in original coordinates) whose regions overlap */
function refuseOverlaps(s: FileSearch): void {
  const byStart = [...s.located].sort((a, b) => a.start - b.start || a.count - b.count);
  for (let k = 1; k < byStart.length; k++) {
    const prev = byStart[k - 1];
    const cur = byStart[k];
    if (cur.start < prev.start + prev.count || (cur.start === prev.start && cur.count === 0 && prev.count === 0)) {
      throw new PatchFailedError(
        `Hunks ${prev.index + 1} and ${cur.index + 1} overlap (original lines ${prev.start + 1}-${prev.start + Math.max(prev.count, 1)} and ${cur.start + 1}-${cur.start + Math.max(cur.count, 1)}).`,
        {
          path: s.absolute,
          details: {
            reason: 'overlap',
            hunk: cur.index + 1,
            hunks: s.total,
            candidates: [prev.start + 1, cur.start + 1],
          },
          suggestion: 'Merge the overlapping hunks into one and send the diff again.',
        },
      );
    }
  }
}

/** Where and how each placed hunk applied, in patch order. */
function reportsOf(located: Located[]): HunkReport[] {
  return located
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
