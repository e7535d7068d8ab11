/**
 * Diagnosis for an edit or hunk that did not match (SPEC §3.1 PATCH_FAILED details.nearest): the region of the file
 * most like the expected lines, the first line where they differ, and whether that difference is whitespace only —
 * so an agent can fix its edit in one step. Pure.
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

/**
 * Finds the region of `fileLines` that best matches `expected` (both LF-split, without terminators).
 * Score: how many expected lines match at that start (exact, then ignoring whitespace), then similarity of the first
 * line. Returns null when the file is empty or nothing resembles the expected text at all.
 */
export function findNearestRegion(fileLines: readonly string[], expected: readonly string[]): NearestRegion | null {
  if (fileLines.length === 0 || expected.length === 0) return null;
  const anchorIndex = expected.findIndex((l) => l.trim() !== '');
  if (anchorIndex === -1) return null;
  let best = -1;
  let bestScore = 0;
  const limit = Math.min(fileLines.length, MAX_SCAN_LINES);
  for (let i = 0; i < limit; i++) {
    let score = 0;
    for (let j = 0; j < expected.length && i + j < fileLines.length; j++) {
      const a = fileLines[i + j];
      const b = expected[j];
      if (a === b) score += 2;
      else if (squash(a) === squash(b)) score += 1.5;
      else if (j < 3 && b.trim() !== '' && similarity(a.trim(), b.trim()) >= 0.6) score += 1;
    }
    if (score > bestScore) {
      bestScore = score;
      best = i;
    }
  }
  if (best === -1) {
    // Fall back to the line most similar to the first non-blank expected line.
    const anchor = expected[anchorIndex].trim();
    let bestSim = 0.4;
    for (let i = 0; i < limit; i++) {
      const s = similarity(fileLines[i].trim(), anchor);
      if (s > bestSim) { bestSim = s; best = i - anchorIndex; }
    }
    if (best === -1 && bestSim <= 0.4) return null;
    best = Math.max(0, best);
  }
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
    if (n > 0) { hits++; grams.set(g, n - 1); }
  }
  return (2 * hits) / (a.length - 1 + b.length - 1);
}
