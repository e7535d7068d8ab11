/**
 * Three-way line merge (docs/tools.md "Merging instead of refusing"): the version an agent read (base), the file as it
 * is now (theirs: someone else's change) and the agent's change applied to the base (ours).
 *
 * The rule is git's (`git merge-file`, xdiff's xdl_merge): each side's changes against the base are found by a line
 * diff; changes of one side only are taken; changes of both sides that overlap or touch (no unchanged base line between
 * them) are a conflict, unless both sides made exactly the same change. The line diffs are jsdiff's `diffArrays`
 * (Myers' O(ND) algorithm, the family xdiff belongs to) written as steps (src/patch/myers-diff.ts), after the common
 * prefix and suffix are removed, as xdiff does; the grouping into regions is this module's (the rule above). node-diff3 was measured and not used: its
 * Hunt–McIlroy candidate scan is cubic on repeated lines (0.5 s for 1,000 blank lines against 1,000), and its merge
 * diffs whole files.
 *
 * Lines are compared with their terminators' meaning (a CRLF line differs from the same LF line; a last line without
 * newline differs from one with), as git compares them. The diff compares lines as strings (===); no line content is ever used as an
 * object key.
 *
 * Repeated lines can be aligned in several ways of the same cost, and git's diff may pick one where the two sides'
 * changes touch: the merge is computed with both tie-breaks (earliest and latest alignment) and stands only when both
 * give the same bytes (test/attacks/merge-alignment.test.ts).
 *
 * Work is bounded (`maxEdits`): each pairwise diff stops once its edit script would pass this many inserted plus
 * deleted lines, and the merge is then refused (`too_large`). Myers' cost grows with the square of that length, not
 * with the file's size beyond a linear pass: at the default 300 one diff takes well under 100 ms also on a
 * 250,000-line file (docs/tools.md "Merging instead of refusing"). Every pass over the lines is written as steps
 * (src/patch/steps.ts), so a server runs the merge in slices of event-loop time (merge3Sliced; docs/security.md
 * "Bounded work"): the same result as merge3.
 */
import { diffLinesSteps, type DiffRun } from './myers-diff.js';
import { runSteps, runStepsSliced, STEP_LINES, type Steps } from './steps.js';

/** Default bound on one side's edit script against the base: inserted plus deleted lines. */
export const MERGE_MAX_EDITS = 300;

/** 1-based inclusive line range; an empty side [n, n-1] names the position before line n. */
export type LineRange = [number, number];

/** A region both sides changed: lines of the base, of theirs, of ours. */
export interface MergeConflictRegion {
  base: LineRange;
  theirs: LineRange;
  ours: LineRange;
}

/** What `merge3` found. */
export type Merge3Result =
  | {
      kind: 'merged';
      text: string;
      /** 1-based inclusive line ranges of the merged text that came from their change (a deletion marks the line after). */
      theirRanges: LineRange[];
    }
  | { kind: 'conflict'; regions: MergeConflictRegion[] }
  | { kind: 'too_large' };

/**
 * Splits text into lines for comparison without copying them: a line ended by `\n` is its content without the `\n`;
 * a last line without terminator is its content followed by `\n` (no other entry can contain one), so the two differ
 * as git's lines do. `joinLines` is the inverse.
 */
export function splitLines(text: string): string[] {
  return runSteps(splitLinesSteps(text));
}

/** `splitLines` as steps: yields every STEP_LINES lines. */
function* splitLinesSteps(text: string): Steps<string[]> {
  const lines: string[] = [];
  let start = 0;
  for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
    lines.push(text.slice(start, nl));
    start = nl + 1;
    if (lines.length % STEP_LINES === 0) yield;
  }
  if (start < text.length) lines.push(`${text.slice(start)}\n`);
  return lines;
}

/** The text of lines from `splitLines`. */
export function joinLines(lines: readonly string[]): string {
  return runSteps(joinLinesSteps(lines));
}

/**
 * `joinLines` as steps: joins every STEP_LINES lines into one chunk and yields, then joins the chunks (one join of a
 * few large strings: a join of a quarter million small pieces held the event loop for tens of milliseconds).
 */
function* joinLinesSteps(lines: readonly string[]): Steps<string> {
  const chunks: string[] = [];
  let pieces: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (l.endsWith('\n')) pieces.push(l.slice(0, -1));
    else pieces.push(l, '\n');
    if (i % STEP_LINES === STEP_LINES - 1) {
      chunks.push(pieces.join(''));
      pieces = [];
      yield;
    }
  }
  chunks.push(pieces.join(''));
  return chunks.join('');
}

interface Hunk {
  side: 'theirs' | 'ours';
  oStart: number;
  oLength: number;
  xStart: number;
  xLength: number;
}

/** A side's hunks against the base, as steps; null when its edit script is longer than `maxEdits`. */
type HunksSteps = (o: string[], x: string[], side: Hunk['side'], maxEdits: number) => Steps<Hunk[] | null>;

/**
 * The changed hunks of `x` against `o` (0-based line indices), the common prefix and suffix removed before the diff.
 * As steps: yields every STEP_LINES lines of the prefix and suffix scans, and while the diff runs.
 * @returns null when the edit script is longer than `maxEdits`
 */
function* hunksOf(o: string[], x: string[], side: Hunk['side'], maxEdits: number): Steps<Hunk[] | null> {
  let pre = 0;
  while (pre < o.length && pre < x.length && o[pre] === x[pre]) {
    pre++;
    if (pre % STEP_LINES === 0) yield;
  }
  let suf = 0;
  while (suf < o.length - pre && suf < x.length - pre && o[o.length - 1 - suf] === x[x.length - 1 - suf]) {
    suf++;
    if (suf % STEP_LINES === 0) yield;
  }
  const om = o.slice(pre, o.length - suf);
  const xm = x.slice(pre, x.length - suf);
  if (om.length === 0 && xm.length === 0) return [];
  if (om.length === 0 || xm.length === 0)
    return [{ side, oStart: pre, oLength: om.length, xStart: pre, xLength: xm.length }];
  if (Math.abs(om.length - xm.length) > maxEdits) return null;
  const runs = yield* diffLinesSteps(om, xm, maxEdits);
  if (!runs) return null;
  return hunksOfRuns(runs, side, pre);
}

/** The hunks of an edit script's runs (each stretch of inserted and deleted lines), from line `pre` of both sides. */
function hunksOfRuns(runs: readonly DiffRun[], side: Hunk['side'], pre: number): Hunk[] {
  const hunks: Hunk[] = [];
  let oi = pre;
  let xi = pre;
  let open: Hunk | null = null;
  for (const run of runs) {
    const n = run.count;
    if (!run.added && !run.removed) {
      open = null;
      oi += n;
      xi += n;
      continue;
    }
    if (!open) {
      open = { side, oStart: oi, oLength: 0, xStart: xi, xLength: 0 };
      hunks.push(open);
    }
    if (run.removed) {
      open.oLength += n;
      oi += n;
    } else {
      open.xLength += n;
      xi += n;
    }
  }
  return hunks;
}

/** One changed region of a two-way line diff: 0-based start and length in the old and the new lines. */
export interface LineHunk {
  oStart: number;
  oLength: number;
  xStart: number;
  xLength: number;
}

/**
 * The changed regions between two texts, line by line (terminators kept), with the same bound as the merge: null
 * when the edit script would pass `maxEdits` lines. For changed_ranges of an OCC conflict (src/policy/occ.ts).
 */
export function diffLineHunks(before: string, after: string, maxEdits = MERGE_MAX_EDITS): LineHunk[] | null {
  return runSteps(hunksOf(splitLines(before), splitLines(after), 'theirs', maxEdits));
}

function sameLines(a: string[], aStart: number, aEnd: number, b: string[], bStart: number, bEnd: number): boolean {
  if (aEnd - aStart !== bEnd - bStart) return false;
  for (let i = 0; i < aEnd - aStart; i++) if (a[aStart + i] !== b[bStart + i]) return false;
  return true;
}

function range(start0: number, end0: number): LineRange {
  return [start0 + 1, end0];
}

/**
 * How far a hunk could slide (a block whose first line equals the line after it, or whose last line equals the line
 * before it, can be placed lower or higher with the same result): the range of base lines any diff could give it.
 * xdiff and Myers may place such a block differently; the merge treats the whole range as the hunk's, so a placement
 * that would touch the other side's change in git's diff touches it here too. As steps: yields every STEP_LINES lines
 * a slide passes (in a file of repeated lines a block slides over all of them).
 * @returns [lowest oStart, highest oEnd) in base lines, within [lo, hi) (the neighbouring hunks of the same side)
 */
function* extentOf(h: Hunk, o: string[], x: string[], lo: number, hi: number): Steps<[number, number]> {
  let up = 0;
  let down = 0;
  function* slide(arr: string[], s: number, e: number): Steps<void> {
    if (e === s) return;
    let k = 0;
    while (h.oStart - k - 1 >= lo && s - k - 1 >= 0 && arr[s - k - 1] === arr[e - k - 1]) {
      k++;
      if (k % STEP_LINES === 0) yield;
    }
    up = Math.max(up, k);
    k = 0;
    while (h.oStart + h.oLength + k < hi && e + k < arr.length && arr[s + k] === arr[e + k]) {
      k++;
      if (k % STEP_LINES === 0) yield;
    }
    down = Math.max(down, k);
  }
  yield* slide(o, h.oStart, h.oStart + h.oLength);
  yield* slide(x, h.xStart, h.xStart + h.xLength);
  return [h.oStart - up, h.oStart + h.oLength + down];
}

/**
 * Merges their change and our change to `base` by git's rule (see the module comment), conservatively where a diff is
 * ambiguous: each hunk counts with every base line it could slide over (`extentOf`), and changes of both sides in one
 * region merge only when they are the very same hunks (same base lines, same new lines); otherwise the region is a
 * conflict. So where git would report a conflict this never produces bytes, and where git merges it produces git's
 * bytes or refuses (test/patch/merge3-differential.test.ts checks it on this repository's history).
 * @param maxEdits bound on each side's edit script against the base, in lines (default MERGE_MAX_EDITS)
 * @returns merged text and where their change lies in it; the conflicting regions; or too_large (nothing merged)
 */
export function merge3(base: string, theirs: string, ours: string, maxEdits = MERGE_MAX_EDITS): Merge3Result {
  return runSteps(merge3Steps(base, theirs, ours, maxEdits));
}

/**
 * `merge3` in slices of event-loop time (src/patch/steps.ts): the same result, for a server that must keep answering
 * while it merges a large file (docs/security.md "Bounded work").
 */
export function merge3Sliced(
  base: string,
  theirs: string,
  ours: string,
  maxEdits = MERGE_MAX_EDITS,
): Promise<Merge3Result> {
  return runStepsSliced(merge3Steps(base, theirs, ours, maxEdits));
}

function* merge3Steps(base: string, theirs: string, ours: string, maxEdits: number): Steps<Merge3Result> {
  const lines = {
    o: yield* splitLinesSteps(base),
    theirs: yield* splitLinesSteps(theirs),
    ours: yield* splitLinesSteps(ours),
  };
  const early = yield* mergeAligned(lines, maxEdits, hunksOf);
  if (early.kind !== 'merged') return early;
  // A line diff can align repeated lines in several ways of the same cost (not only slides of one hunk), and git's
  // diff may pick one where the two sides' changes touch. The merge stands only when the opposite tie-break (each
  // diff computed on the reversed lines) merges to the very same bytes; otherwise it is that alignment's conflict.
  const late = yield* mergeAligned(lines, maxEdits, lateHunksOf);
  if (late.kind !== 'merged') return late;
  if (late.text !== early.text) {
    const n = lines.o.length;
    return {
      kind: 'conflict',
      regions: [{ base: [1, n], theirs: [1, lines.theirs.length], ours: [1, lines.ours.length] }],
    };
  }
  return early;
}

/** `hunksOf` with the opposite tie-break: the diff of the reversed lines, mapped back (same edit length). */
function* lateHunksOf(o: string[], x: string[], side: Hunk['side'], maxEdits: number): Steps<Hunk[] | null> {
  const ro = o.slice().reverse();
  yield;
  const rx = x.slice().reverse();
  yield;
  const hunks = yield* hunksOf(ro, rx, side, maxEdits);
  if (!hunks) return null;
  return hunks
    .map((h) => ({
      side,
      oStart: o.length - h.oStart - h.oLength,
      oLength: h.oLength,
      xStart: x.length - h.xStart - h.xLength,
      xLength: h.xLength,
    }))
    .reverse();
}

/** The three versions' lines (splitLines). */
interface MergeLines {
  o: string[];
  theirs: string[];
  ours: string[];
}

/** A hunk with the base lines it could slide over (`extentOf`): [from, to). */
interface Extended {
  h: Hunk;
  from: number;
  to: number;
}

/** Hunks of both sides whose extents overlap or touch (git's rule): one region of base lines [start, end). */
interface Region {
  start: number;
  end: number;
  hunks: Hunk[];
}

/** What the merge builds: the merged lines, where their change went, and the conflicts. */
interface MergeOut {
  out: string[];
  theirRanges: LineRange[];
  conflicts: MergeConflictRegion[];
}

/** The merge of `merge3` with the hunks one diff (`diff`) finds, as steps. */
function* mergeAligned(lines: MergeLines, maxEdits: number, diff: HunksSteps): Steps<Merge3Result> {
  const o = lines.o;
  const t = yield* diff(o, lines.theirs, 'theirs', maxEdits);
  const u = yield* diff(o, lines.ours, 'ours', maxEdits);
  if (!t || !u) return { kind: 'too_large' };
  const extended: Extended[] = [];
  for (const hs of [t, u]) {
    for (let k = 0; k < hs.length; k++) {
      const h = hs[k];
      const lo = k > 0 ? hs[k - 1].oStart + hs[k - 1].oLength : 0;
      const hi = k + 1 < hs.length ? hs[k + 1].oStart : o.length;
      const [from, to] = yield* extentOf(h, o, lines[h.side], lo, hi);
      extended.push({ h, from, to });
    }
  }
  extended.sort((a, b) => a.from - b.from || a.h.oStart - b.h.oStart);
  const m: MergeOut = { out: [], theirRanges: [], conflicts: [] };
  let cursor = 0;
  for (const region of regionsOf(extended)) {
    yield* copyLines(o, cursor, region.start, m.out);
    cursor = region.end;
    yield* mergeRegion(lines, region, m);
  }
  if (m.conflicts.length) return { kind: 'conflict', regions: m.conflicts };
  yield* copyLines(o, cursor, o.length, m.out);
  return { kind: 'merged', text: yield* joinLinesSteps(m.out), theirRanges: coalesced(m.theirRanges) };
}

/**
 * The regions of hunks sorted by extent: git's rule, a hunk that starts at or before the region's end (overlapping or
 * adjacent) joins it.
 */
function regionsOf(extended: readonly Extended[]): Region[] {
  const regions: Region[] = [];
  let i = 0;
  while (i < extended.length) {
    const region: Region = { start: extended[i].from, end: extended[i].to, hunks: [extended[i].h] };
    i++;
    while (i < extended.length && extended[i].from <= region.end) {
      region.end = Math.max(region.end, extended[i].to);
      region.hunks.push(extended[i].h);
      i++;
    }
    regions.push(region);
  }
  return regions;
}

/** Appends `lines[from, to)` to `out`, as steps (yields every STEP_LINES lines). */
function* copyLines(lines: readonly string[], from: number, to: number, out: string[]): Steps<void> {
  for (let k = from; k < to; k++) {
    out.push(lines[k]);
    if ((k - from) % STEP_LINES === STEP_LINES - 1) yield;
  }
}

/**
 * One region into the merge: one side's change is taken; both sides' only when they are the very same hunks (taken
 * once); otherwise the region is a conflict.
 */
function* mergeRegion(lines: MergeLines, region: Region, m: MergeOut): Steps<void> {
  const of = (side: Hunk['side']) => region.hunks.filter((h) => h.side === side).sort((a, b) => a.oStart - b.oStart);
  const th = of('theirs');
  const oh = of('ours');
  if (th.length && oh.length) {
    const same =
      th.length === oh.length &&
      th.every(
        (h, k) =>
          h.oStart === oh[k].oStart &&
          h.oLength === oh[k].oLength &&
          sameLines(
            lines.theirs,
            h.xStart,
            h.xStart + h.xLength,
            lines.ours,
            oh[k].xStart,
            oh[k].xStart + oh[k].xLength,
          ),
      );
    if (same)
      yield* take(lines, 'theirs', th, region, m); // both made the very same change
    else {
      const ts = sideSpan(th, region);
      const us = sideSpan(oh, region);
      m.conflicts.push({
        base: range(region.start, region.end),
        theirs: range(ts[0], ts[1]),
        ours: range(us[0], us[1]),
      });
    }
  } else if (th.length) yield* take(lines, 'theirs', th, region, m);
  else yield* take(lines, 'ours', oh, region, m);
}

/** A side's span over the region: its hunks' extent, widened by the unchanged base lines around them. */
function sideSpan(hs: readonly Hunk[], region: Region): [number, number] {
  const last = hs[hs.length - 1];
  return [
    hs[0].xStart - (hs[0].oStart - region.start),
    last.xStart + last.xLength + (region.end - last.oStart - last.oLength),
  ];
}

/** Takes one side's lines over the region into the merge; for theirs, notes where each of its hunks went. */
function* take(lines: MergeLines, side: Hunk['side'], hs: readonly Hunk[], region: Region, m: MergeOut): Steps<void> {
  const s = sideSpan(hs, region);
  const from = m.out.length;
  yield* copyLines(lines[side], s[0], s[1], m.out);
  if (side === 'theirs') {
    for (const h of hs) {
      const at = from + (h.xStart - s[0]) + 1;
      m.theirRanges.push([at, at + Math.max(h.xLength, 1) - 1]);
    }
  }
}

/** Ranges in ascending order with the overlapping and adjacent ones joined. */
function coalesced(ranges: readonly LineRange[]): LineRange[] {
  const merged: LineRange[] = [];
  for (const r of ranges) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  return merged;
}
