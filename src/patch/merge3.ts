/**
 * Three-way line merge (docs/tools.md "Merging instead of refusing"): the version an agent read (base), the file as it
 * is now (theirs: someone else's change) and the agent's change applied to the base (ours).
 *
 * The rule is git's (`git merge-file`, xdiff's xdl_merge): each side's changes against the base are found by a line
 * diff; changes of one side only are taken; changes of both sides that overlap or touch (no unchanged base line between
 * them) are a conflict, unless both sides made exactly the same change. The line diffs come from jsdiff's `diffArrays`
 * (Myers' O(ND) algorithm, the family xdiff belongs to), after the common prefix and suffix are removed, as xdiff does;
 * the grouping into regions is this module's (the rule above). node-diff3 was measured and not used: its
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
 * 250,000-line file (docs/tools.md "Merging instead of refusing").
 */
import { diffArrays } from 'diff';

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
  if (text === '') return [];
  const parts = text.split('\n');
  const last = parts.pop()!;
  if (last !== '') parts.push(`${last}\n`);
  return parts;
}

/** The text of lines from `splitLines`. */
export function joinLines(lines: readonly string[]): string {
  const pieces: string[] = [];
  for (const l of lines) {
    if (l.endsWith('\n')) pieces.push(l.slice(0, -1));
    else pieces.push(l, '\n');
  }
  return pieces.join('');
}

interface Hunk {
  side: 'theirs' | 'ours';
  oStart: number;
  oLength: number;
  xStart: number;
  xLength: number;
}

/**
 * The changed hunks of `x` against `o` (0-based line indices), the common prefix and suffix removed before the diff.
 * @returns null when the edit script is longer than `maxEdits`
 */
function hunksOf(o: string[], x: string[], side: Hunk['side'], maxEdits: number): Hunk[] | null {
  let pre = 0;
  while (pre < o.length && pre < x.length && o[pre] === x[pre]) pre++;
  let suf = 0;
  while (suf < o.length - pre && suf < x.length - pre && o[o.length - 1 - suf] === x[x.length - 1 - suf]) suf++;
  const om = o.slice(pre, o.length - suf);
  const xm = x.slice(pre, x.length - suf);
  if (om.length === 0 && xm.length === 0) return [];
  if (om.length === 0 || xm.length === 0)
    return [{ side, oStart: pre, oLength: om.length, xStart: pre, xLength: xm.length }];
  if (Math.abs(om.length - xm.length) > maxEdits) return null;
  const parts = diffArrays(om, xm, { maxEditLength: maxEdits });
  if (!parts) return null;
  const hunks: Hunk[] = [];
  let oi = pre;
  let xi = pre;
  let open: Hunk | null = null;
  for (const part of parts) {
    const n = part.value.length;
    if (!part.added && !part.removed) {
      open = null;
      oi += n;
      xi += n;
      continue;
    }
    if (!open) {
      open = { side, oStart: oi, oLength: 0, xStart: xi, xLength: 0 };
      hunks.push(open);
    }
    if (part.removed) {
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
  return hunksOf(splitLines(before), splitLines(after), 'theirs', maxEdits);
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
 * that would touch the other side's change in git's diff touches it here too.
 * @returns [lowest oStart, highest oEnd) in base lines, within [lo, hi) (the neighbouring hunks of the same side)
 */
function extentOf(h: Hunk, o: string[], x: string[], lo: number, hi: number): [number, number] {
  let up = 0;
  let down = 0;
  const slide = (arr: string[], s: number, e: number) => {
    if (e === s) return;
    let k = 0;
    while (h.oStart - k - 1 >= lo && s - k - 1 >= 0 && arr[s - k - 1] === arr[e - k - 1]) k++;
    up = Math.max(up, k);
    k = 0;
    while (h.oStart + h.oLength + k < hi && e + k < arr.length && arr[s + k] === arr[e + k]) k++;
    down = Math.max(down, k);
  };
  slide(o, h.oStart, h.oStart + h.oLength);
  slide(x, h.xStart, h.xStart + h.xLength);
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
  const lines = { o: splitLines(base), theirs: splitLines(theirs), ours: splitLines(ours) };
  const early = mergeAligned(lines, maxEdits, hunksOf);
  if (early.kind !== 'merged') return early;
  // A line diff can align repeated lines in several ways of the same cost (not only slides of one hunk), and git's
  // diff may pick one where the two sides' changes touch. The merge stands only when the opposite tie-break (each
  // diff computed on the reversed lines) merges to the very same bytes; otherwise it is that alignment's conflict.
  const late = mergeAligned(lines, maxEdits, lateHunksOf);
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
function lateHunksOf(o: string[], x: string[], side: Hunk['side'], maxEdits: number): Hunk[] | null {
  const hunks = hunksOf([...o].reverse(), [...x].reverse(), side, maxEdits);
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

/** The merge of `merge3` with the hunks one diff (`diff`) finds. */
function mergeAligned(
  lines: { o: string[]; theirs: string[]; ours: string[] },
  maxEdits: number,
  diff: typeof hunksOf,
): Merge3Result {
  const o = lines.o;
  const sides = { theirs: lines.theirs, ours: lines.ours };
  const t = diff(o, sides.theirs, 'theirs', maxEdits);
  const u = diff(o, sides.ours, 'ours', maxEdits);
  if (!t || !u) return { kind: 'too_large' };
  const extended = [t, u].flatMap((hs) =>
    hs.map((h, k) => {
      const lo = k > 0 ? hs[k - 1].oStart + hs[k - 1].oLength : 0;
      const hi = k + 1 < hs.length ? hs[k + 1].oStart : o.length;
      const [from, to] = extentOf(h, o, sides[h.side], lo, hi);
      return { h, from, to };
    }),
  );
  extended.sort((a, b) => a.from - b.from || a.h.oStart - b.h.oStart);
  const out: string[] = [];
  const theirRanges: LineRange[] = [];
  const conflicts: MergeConflictRegion[] = [];
  let cursor = 0;
  let i = 0;
  while (i < extended.length) {
    const regionStart = extended[i].from;
    let regionEnd = extended[i].to;
    const region: Hunk[] = [extended[i].h];
    i++;
    // git's rule: a hunk that starts at or before the region's end (overlapping or adjacent) joins it.
    while (i < extended.length && extended[i].from <= regionEnd) {
      regionEnd = Math.max(regionEnd, extended[i].to);
      region.push(extended[i].h);
      i++;
    }
    for (let k = cursor; k < regionStart; k++) out.push(lines.o[k]);
    cursor = regionEnd;
    const of = (side: Hunk['side']) => region.filter((h) => h.side === side).sort((a, b) => a.oStart - b.oStart);
    const th = of('theirs');
    const oh = of('ours');
    // Each side's span over [regionStart, regionEnd): its hunks' extent, widened by the unchanged base lines around.
    const span = (hs: Hunk[]): [number, number] => {
      const last = hs[hs.length - 1];
      return [
        hs[0].xStart - (hs[0].oStart - regionStart),
        last.xStart + last.xLength + (regionEnd - last.oStart - last.oLength),
      ];
    };
    const take = (side: Hunk['side'], hs: Hunk[]) => {
      const s = span(hs);
      const from = out.length;
      for (let k = s[0]; k < s[1]; k++) out.push(lines[side][k]);
      if (side === 'theirs') {
        for (const h of hs) {
          const at = from + (h.xStart - s[0]) + 1;
          theirRanges.push([at, at + Math.max(h.xLength, 1) - 1]);
        }
      }
    };
    if (th.length && oh.length) {
      const same =
        th.length === oh.length &&
        th.every(
          (h, k) =>
            h.oStart === oh[k].oStart &&
            h.oLength === oh[k].oLength &&
            sameLines(
              sides.theirs,
              h.xStart,
              h.xStart + h.xLength,
              sides.ours,
              oh[k].xStart,
              oh[k].xStart + oh[k].xLength,
            ),
        );
      if (same)
        take('theirs', th); // both made the very same change
      else {
        const ts = span(th);
        const us = span(oh);
        conflicts.push({ base: range(regionStart, regionEnd), theirs: range(ts[0], ts[1]), ours: range(us[0], us[1]) });
      }
    } else if (th.length) take('theirs', th);
    else take('ours', oh);
  }
  if (conflicts.length) return { kind: 'conflict', regions: conflicts };
  for (let k = cursor; k < o.length; k++) out.push(lines.o[k]);
  const merged: LineRange[] = [];
  for (const r of theirRanges) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  return { kind: 'merged', text: joinLines(out), theirRanges: merged };
}
