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
 * Lines keep their terminators (a CRLF line differs from the same LF line; a last line without newline differs from
 * one with), as git compares them. Lines are interned to numbers before the diff: the library keys a plain object by
 * numbers before the diff (comparisons of small integers; no line content is ever used as an object key).
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

/** Splits text into lines, each keeping its `\n` (the last may have none). */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  return text.split(/(?<=\n)/);
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
function hunksOf(o: number[], x: number[], side: Hunk['side'], maxEdits: number): Hunk[] | null {
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

function sameLines(a: number[], aStart: number, aEnd: number, b: number[], bStart: number, bEnd: number): boolean {
  if (aEnd - aStart !== bEnd - bStart) return false;
  for (let i = 0; i < aEnd - aStart; i++) if (a[aStart + i] !== b[bStart + i]) return false;
  return true;
}

function range(start0: number, end0: number): LineRange {
  return [start0 + 1, end0];
}

/**
 * Merges their change and our change to `base` by git's rule (see the module comment).
 * @param maxEdits bound on each side's edit script against the base, in lines (default MERGE_MAX_EDITS)
 * @returns merged text and where their change lies in it; the conflicting regions; or too_large (nothing merged)
 */
export function merge3(base: string, theirs: string, ours: string, maxEdits = MERGE_MAX_EDITS): Merge3Result {
  const ids = new Map<string, number>();
  const intern = (lines: string[]) =>
    lines.map((l) => {
      let id = ids.get(l);
      if (id === undefined) ids.set(l, (id = ids.size));
      return id;
    });
  const lines = { o: splitLines(base), theirs: splitLines(theirs), ours: splitLines(ours) };
  const o = intern(lines.o);
  const sides = { theirs: intern(lines.theirs), ours: intern(lines.ours) };
  const t = hunksOf(o, sides.theirs, 'theirs', maxEdits);
  const u = hunksOf(o, sides.ours, 'ours', maxEdits);
  if (!t || !u) return { kind: 'too_large' };
  const hunks = [...t, ...u].sort(
    (a, b) => a.oStart - b.oStart || (a.side === b.side ? 0 : a.side === 'theirs' ? -1 : 1),
  );
  const out: string[] = [];
  const theirRanges: LineRange[] = [];
  const conflicts: MergeConflictRegion[] = [];
  let cursor = 0;
  let i = 0;
  while (i < hunks.length) {
    const first = hunks[i];
    const regionStart = first.oStart;
    let regionEnd = first.oStart + first.oLength;
    const region = [first];
    i++;
    // git's rule: a hunk that starts at or before the region's end (overlapping or adjacent) joins it.
    while (i < hunks.length && hunks[i].oStart <= regionEnd) {
      regionEnd = Math.max(regionEnd, hunks[i].oStart + hunks[i].oLength);
      region.push(hunks[i]);
      i++;
    }
    for (let k = cursor; k < regionStart; k++) out.push(lines.o[k]);
    cursor = regionEnd;
    // Each side's span over [regionStart, regionEnd): its hunks' extent, widened by the unchanged base lines around.
    const span = (side: Hunk['side']): [number, number] | null => {
      const hs = region.filter((h) => h.side === side);
      if (hs.length === 0) return null;
      const oS = hs[0].oStart;
      const last = hs[hs.length - 1];
      const oE = last.oStart + last.oLength;
      return [hs[0].xStart - (oS - regionStart), last.xStart + last.xLength + (regionEnd - oE)];
    };
    const ts = span('theirs');
    const us = span('ours');
    const take = (side: Hunk['side'], s: [number, number]) => {
      const from = out.length;
      for (let k = s[0]; k < s[1]; k++) out.push(lines[side][k]);
      if (side === 'theirs') theirRanges.push([from + 1, Math.max(from + 1, out.length)]);
    };
    if (ts && us) {
      if (sameLines(sides.theirs, ts[0], ts[1], sides.ours, us[0], us[1])) {
        take('theirs', ts); // both made the same change
      } else {
        conflicts.push({ base: range(regionStart, regionEnd), theirs: range(ts[0], ts[1]), ours: range(us[0], us[1]) });
      }
    } else if (ts) take('theirs', ts);
    else take('ours', us!);
  }
  if (conflicts.length) return { kind: 'conflict', regions: conflicts };
  for (let k = cursor; k < o.length; k++) out.push(lines.o[k]);
  const merged: LineRange[] = [];
  for (const r of theirRanges) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  return { kind: 'merged', text: out.join(''), theirRanges: merged };
}
