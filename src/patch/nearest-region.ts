/**
 * Diagnosis for an edit or hunk that did not match (SPEC §3.1 PATCH_FAILED details.nearest): the region of the file
 * most like the expected lines, the first line where they differ, and whether that difference is whitespace only —
 * so an agent can fix its edit in one step — or nothing, when no region is similar enough (NEAREST_THRESHOLD). Pure.
 */

/** SPEC §3.1 `nearest`. Lines are 1-based. */
export interface NearestRegion {
  line: number;
  excerpt: string;
  first_difference: { line: number; expected: string; actual: string; whitespace_only: boolean } | null;
}

const MAX_SCAN_LINES = 200_000;
const EXCERPT_LINES = 5;
const MAX_EXCERPT_CHARS = 600;
/** Starts re-scored in full after the cheap first scan. */
const SHORTLIST = 32;
/** Expected lines scored by similarity in the first scan (the rest only by equality). */
const FIRST_SCAN_SIMILAR = 3;

/**
 * Least score (the mean similarity of the expected lines that carry content, in [0, 1]) for a region to be reported:
 * below it `nearest` is absent rather than a guess (issue 21).
 */
export const NEAREST_THRESHOLD = 0.6;

/** Similarity of one expected line to one file line: 1 equal, 0.9 equal but for whitespace, else bigram Dice. */
function lineSimilarity(actual: string | undefined, expected: string): number {
  if (actual === undefined) return 0;
  if (actual === expected) return 1;
  if (squash(actual) === squash(expected)) return 0.9;
  return similarity(actual.trim(), expected.trim());
}

/**
 * Finds the region of `fileLines` that best matches `expected` (both whole lines without terminators: split an
 * old_text that ends in a newline with splitView, so its final newline is no empty line). The score of a start is
 * the mean similarity (lineSimilarity) of the expected lines that carry content, aligned line by line; blank expected
 * lines do not count, so a blank line can never win on its own. Ties go to the first line.
 * @returns null when the file or the expected text has no content, or no region scores NEAREST_THRESHOLD
 */
export function findNearestRegion(fileLines: readonly string[], expected: readonly string[]): NearestRegion | null {
  if (fileLines.length === 0 || expected.length === 0) return null;
  const content = expected.flatMap((l, j) => (l.trim() === '' ? [] : [j]));
  if (content.length === 0) return null;
  const limit = Math.min(fileLines.length, MAX_SCAN_LINES);
  const squashedFile = fileLines.slice(0, limit + expected.length).map(squash);
  const squashedExpected = expected.map(squash);
  // First scan: equality (exact or whitespace-only) on every content line, similarity on the first few.
  const shortlist: Array<{ at: number; score: number }> = [];
  const first = content.slice(0, FIRST_SCAN_SIMILAR);
  const firstTrim = first.map((j) => expected[j].trim());
  for (let i = 0; i < limit; i++) {
    let score = 0;
    for (let k = 0; k < content.length; k++) {
      const j = content[k];
      const a = fileLines[i + j];
      if (a === undefined) continue;
      if (a === expected[j]) score += 1;
      else if (squashedFile[i + j] === squashedExpected[j]) score += 0.9;
      else if (k < FIRST_SCAN_SIMILAR) score += similarity(a.trim(), firstTrim[k]);
    }
    if (score === 0) continue;
    if (shortlist.length < SHORTLIST) {
      shortlist.push({ at: i, score });
      shortlist.sort((x, y) => y.score - x.score || x.at - y.at);
    } else if (score > shortlist[SHORTLIST - 1].score) {
      shortlist[SHORTLIST - 1] = { at: i, score };
      shortlist.sort((x, y) => y.score - x.score || x.at - y.at);
    }
  }
  // Full score of the shortlisted starts.
  let best = -1;
  let bestScore = 0;
  for (const { at } of shortlist) {
    let sum = 0;
    for (const j of content) sum += lineSimilarity(fileLines[at + j], expected[j]);
    const score = sum / content.length;
    if (score > bestScore || (score === bestScore && at < best)) {
      bestScore = score;
      best = at;
    }
  }
  if (best === -1 || bestScore < NEAREST_THRESHOLD) return null;
  let firstDifference: NearestRegion['first_difference'] = null;
  for (let j = 0; j < expected.length; j++) {
    const actual = fileLines[best + j];
    if (actual !== expected[j]) {
      firstDifference = {
        line: best + j + 1,
        expected: expected[j],
        actual: actual ?? '(end of file)',
        whitespace_only: actual !== undefined && squash(actual) === squash(expected[j]),
      };
      break;
    }
  }
  const excerpt = fileLines.slice(best, best + Math.max(EXCERPT_LINES, Math.min(expected.length, 12))).join('\n');
  return {
    line: best + 1,
    excerpt: excerpt.length > MAX_EXCERPT_CHARS ? `${excerpt.slice(0, MAX_EXCERPT_CHARS)}…` : excerpt,
    first_difference: firstDifference,
  };
}

function squash(s: string): string {
  return s.replace(/\s+/g, '');
}

/** Similarity in [0, 1]: the Dice coefficient of character bigrams (linear time, fine for a scan of every line). */
export function similarity(a: string, b: string): number {
  if (a === b) return 1;
  if (a.length < 2 || b.length < 2) return 0;
  const grams = new Map<string, number>();
  for (let i = 0; i < a.length - 1; i++) {
    const g = a.slice(i, i + 2);
    grams.set(g, (grams.get(g) ?? 0) + 1);
  }
  let hits = 0;
  for (let i = 0; i < b.length - 1; i++) {
    const g = b.slice(i, i + 2);
    const n = grams.get(g) ?? 0;
    if (n > 0) {
      hits++;
      grams.set(g, n - 1);
    }
  }
  return (2 * hits) / (a.length - 1 + b.length - 1);
}
