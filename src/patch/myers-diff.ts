/**
 * Myers' O(ND) diff of two line arrays as steps (src/patch/steps.ts), for the three-way merge (src/patch/merge3.ts):
 * the diff package's `diffArrays` with `maxEditLength` (jsdiff 9, src/diff/base.ts, BSD-3-Clause), written as a
 * generator that yields about every STEP_LINES line comparisons, so a diff of two 100,000-line files whose repeated
 * lines make every diagonal a long snake never holds the event loop for long (docs/security.md "Bounded work").
 * The search is jsdiff's, step for step — the same diagonals in the same order, the same choice between an insertion
 * and a deletion, the same pruning at the edges of the edit graph — so it finds the same edit script (the merge's
 * tie-breaks depend on it; test/patch/myers-diff.test.ts compares the two on random inputs). Lines are compared with
 * `===`.
 */
import { STEP_LINES, type Steps } from './steps.js';

/** One run of the edit script: `count` lines kept (neither flag), inserted (`added`) or deleted (`removed`). */
export interface DiffRun {
  count: number;
  added: boolean;
  removed: boolean;
}

/** A run in the reversed linked list a path carries. */
interface Component extends DiffRun {
  previous: Component | undefined;
}

/** The furthest-reaching path on one diagonal: its last old line (0-based; -1 before the first) and its runs. */
interface DiffPath {
  oldPos: number;
  last: Component | undefined;
}

/**
 * The shortest edit script turning `oldLines` into `newLines`, as runs in order (jsdiff's `diffArrays(oldLines,
 * newLines, { maxEditLength })` gives the same runs, as change objects with the lines as `value`).
 * @param maxEditLength most inserted plus deleted lines the script may have
 * @returns the runs, or null when the script would be longer than `maxEditLength`
 */
export function* diffLinesSteps(
  oldLines: readonly string[],
  newLines: readonly string[],
  maxEditLength: number,
): Steps<DiffRun[] | null> {
  const newLen = newLines.length;
  const oldLen = oldLines.length;
  const maxEdits = Math.min(newLen + oldLen, maxEditLength);
  let work = 0;
  /** Furthest-reaching paths by diagonal (old position minus new position). */
  const best = new Map<number, DiffPath>([[0, { oldPos: -1, last: undefined }]]);
  const seed = best.get(0)!;
  // Each snake (a run of equal lines down a diagonal) is followed in pieces of what is left of STEP_LINES comparisons,
  // inline: a generator per diagonal and edit length cost more than the comparisons of short snakes.
  for (;;) {
    work += follow(oldLines, newLines, seed, 0, STEP_LINES - work);
    if (work < STEP_LINES) break;
    work = 0;
    yield;
  }
  let newPos = seed.oldPos;
  if (seed.oldPos + 1 >= oldLen && newPos + 1 >= newLen) return runsOf(seed.last);
  // Once a path reaches the right (bottom) edge of the edit graph, diagonals beyond it cannot do better: jsdiff's
  // pruning, kept because it decides which equal-cost script is found.
  let minDiagonal = -Infinity;
  let maxDiagonal = Infinity;
  for (let editLength = 1; editLength <= maxEdits; editLength++) {
    for (
      let diagonal = Math.max(minDiagonal, -editLength);
      diagonal <= Math.min(maxDiagonal, editLength);
      diagonal += 2
    ) {
      if (++work >= STEP_LINES) {
        work = 0;
        yield;
      }
      const removePath = best.get(diagonal - 1);
      const addPath = best.get(diagonal + 1);
      if (removePath) best.delete(diagonal - 1); // no later diagonal reads it
      let canAdd = false;
      if (addPath) {
        const addPathNewPos = addPath.oldPos - diagonal;
        canAdd = 0 <= addPathNewPos && addPathNewPos < newLen;
      }
      const canRemove = removePath !== undefined && removePath.oldPos + 1 < oldLen;
      if (!canAdd && !canRemove) {
        best.delete(diagonal);
        continue;
      }
      // Branch from the path that is furthest along the old lines without leaving the graph.
      const path =
        !canRemove || (canAdd && removePath.oldPos < addPath!.oldPos)
          ? extended(addPath!, true, false, 0)
          : extended(removePath, false, true, 1);
      for (;;) {
        work += follow(oldLines, newLines, path, diagonal, STEP_LINES - work);
        if (work < STEP_LINES) break;
        work = 0;
        yield;
      }
      newPos = path.oldPos - diagonal;
      if (path.oldPos + 1 >= oldLen && newPos + 1 >= newLen) return runsOf(path.last);
      best.set(diagonal, path);
      if (path.oldPos + 1 >= oldLen) maxDiagonal = Math.min(maxDiagonal, diagonal - 1);
      if (newPos + 1 >= newLen) minDiagonal = Math.max(minDiagonal, diagonal + 1);
    }
  }
  return null;
}

/**
 * Follows `path` down `diagonal` over at most `limit` equal lines (jsdiff's extractCommon, in pieces): the lines
 * followed join the path's last run when that is a run of kept lines (the previous piece of the same snake: a snake
 * always follows an insertion or a deletion, or starts the seed path), else a new kept run.
 * @returns the lines followed; `limit` means there may be more
 */
function follow(
  oldLines: readonly string[],
  newLines: readonly string[],
  path: DiffPath,
  diagonal: number,
  limit: number,
): number {
  let oldPos = path.oldPos;
  let newPos = oldPos - diagonal;
  let common = 0;
  while (
    common < limit &&
    newPos + 1 < newLines.length &&
    oldPos + 1 < oldLines.length &&
    oldLines[oldPos + 1] === newLines[newPos + 1]
  ) {
    newPos++;
    oldPos++;
    common++;
  }
  if (common) {
    const last = path.last;
    if (last && !last.added && !last.removed) last.count += common;
    else path.last = { count: common, added: false, removed: false, previous: last };
  }
  path.oldPos = oldPos;
  return common;
}

/** `path` with one more inserted (`added`) or deleted (`removed`) line, as a new path (jsdiff's addToPath). */
function extended(path: DiffPath, added: boolean, removed: boolean, oldPosInc: number): DiffPath {
  const last = path.last;
  if (last && last.added === added && last.removed === removed) {
    return {
      oldPos: path.oldPos + oldPosInc,
      last: { count: last.count + 1, added, removed, previous: last.previous },
    };
  }
  return { oldPos: path.oldPos + oldPosInc, last: { count: 1, added, removed, previous: last } };
}

/** The runs of a path's reversed list, in order. */
function runsOf(last: Component | undefined): DiffRun[] {
  const runs: DiffRun[] = [];
  for (let c = last; c; c = c.previous) runs.push({ count: c.count, added: c.added, removed: c.removed });
  return runs.reverse();
}
