/**
 * Where a hunk goes when its old side matched several places of the file (docs/design-choices.md "Patch placement"):
 * only what the diff states singles one out — end/start-of-file anchoring, the header line shifted by the offset
 * carried from the previous hunk (as GNU patch), the header line, the section heading git writes after `@@`, and the
 * order of the hunks — never the nearest match on distance alone. Pure.
 */
import type { MatchKind } from './line-match.js';
import type { Hunk } from './parse-unified.js';
import type { IndentShift } from './reindent.js';

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

/** A hunk placed in the original file: 0-based `start`, `count` original lines replaced. */
export interface Located {
  /** 0-based hunk number in the file's patch. */
  index: number;
  start: number;
  count: number;
  match: MatchKind;
  placedBy: Placement;
  /** How many places its old side matched with that tolerance (0 for a pure insertion). */
  candidates: number;
  hunk: Hunk;
  /** The indentation shift of a `reindented` match. */
  shift?: IndentShift;
}

/** A hunk that matched several places with nothing in itself to tell which: the order of the hunks may. */
export interface DeferredHunk {
  /** 0-based hunk number in the file's patch. */
  index: number;
  /** 0-based starts of its matches, ascending. */
  candidates: number[];
  /** Its old side's length, in lines. */
  count: number;
  match: MatchKind;
  /** `hunk N of M (path)`, for the message. */
  label: string;
  /** Its old side's lines. */
  expected: string[];
}

/** Lines that start a section for git's default funcname rule: a letter, `_` or `$` first. */
const SECTION_START = /^[A-Za-z_$]/;

/**
 * For every line index i, the index of the nearest section-starting line above i (or -1): one pass over the file, so
 * checking many candidates costs O(1) each (a one-line hunk may match thousands of places).
 */
export function sectionLinesAbove(lines: readonly string[]): Int32Array {
  const above = new Int32Array(lines.length + 1);
  let last = -1;
  for (let i = 0; i <= lines.length; i++) {
    above[i] = last;
    if (i < lines.length && SECTION_START.test(lines[i])) last = i;
  }
  return above;
}

/** What the diff states about a hunk's place, beside its content. */
export interface StatedPlace {
  /** The header's 0-based line, or null for `@@ @@`. */
  hint: number | null;
  /** The offset the previous hunk of the file was found at. */
  carried: number;
  /** Fewer trailing than leading context lines: it ends at the end of the file. */
  anchorEnd: boolean;
  /** Fewer leading than trailing context lines: it starts at line 1. */
  anchorStart: boolean;
  /** The section heading after `@@`, or null. */
  section: string | null;
  /** sectionLinesAbove of the file, computed on first use. */
  sectionsAbove: () => Int32Array;
}

/**
 * Picks one of `candidates` (0-based starts, ascending) or returns null when nothing stated singles one out.
 * @param count the old side's length, in lines
 */
export function choose(
  candidates: readonly number[],
  count: number,
  lines: readonly string[],
  stated: StatedPlace,
): { at: number; by: Placement } | null {
  const { hint, carried, anchorEnd, anchorStart, section } = stated;
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
    const above = stated.sectionsAbove();
    const fits = candidates.filter((c) => above[c] !== -1 && lines[above[c]].trimEnd().startsWith(section));
    if (fits.length === 1) return { at: fits[0], by: 'section' };
  }
  return null;
}

/**
 * The order of the hunks is stated too: when the hunks placed so far lie in patch order (a diff lists a file's hunks
 * top to bottom), a deferred hunk lies between its placed neighbours; one candidate there is taken (`order`). Repeated
 * while that places more. Moves what it places from `deferred` to `located`; what is left in `deferred` is ambiguous.
 * @param lineCount the file's number of lines
 * @param hunks the file's hunks (indexed by `index`)
 */
export function placeByOrder(
  located: Located[],
  deferred: DeferredHunk[],
  lineCount: number,
  hunks: readonly Hunk[],
): void {
  for (let progress = true; progress && deferred.length > 0;) {
    progress = false;
    const placed = [...located].sort((a, b) => a.index - b.index);
    if (!placed.every((l, k) => k === 0 || placed[k - 1].start + placed[k - 1].count <= l.start)) break;
    for (let k = 0; k < deferred.length; k++) {
      const d = deferred[k];
      const prev = placed.filter((l) => l.index < d.index).pop();
      const next = placed.find((l) => l.index > d.index);
      const low = prev ? prev.start + prev.count : 0;
      const high = next ? next.start : lineCount;
      const fits = d.candidates.filter((c) => c >= low && c + d.count <= high);
      if (fits.length === 1 && (prev || next)) {
        located.push({
          index: d.index,
          start: fits[0],
          count: d.count,
          match: d.match,
          placedBy: 'order',
          candidates: d.candidates.length,
          hunk: hunks[d.index],
        });
        deferred.splice(k, 1);
        progress = true;
        break;
      }
    }
  }
}
