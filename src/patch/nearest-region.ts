/**
 * Diagnosis for an edit or hunk that did not match (docs/errors.md PATCH_FAILED details.nearest): the region of the file
 * most like the expected lines, the first line where they differ, and whether that difference is whitespace only —
 * so an agent can fix its edit in one step; failing that, the region that holds most of the expected lines in order
 * but not adjacent (a line moved away or inserted between: `in_order`, IN_ORDER_THRESHOLD); or nothing, when no
 * region is similar enough (NEAREST_THRESHOLD). Pure; bounded work (docs/errors.md "nearest"), written as steps
 * (src/patch/steps.ts) so a server computes it in slices of event-loop time (docs/security.md "Bounded work").
 */
import { runSteps, STEP_LINES, type Steps } from './steps.js';

/**
 * docs/errors.md `nearest`. Lines are 1-based. `first_difference` is null when the region is no line-by-line variant of the
 * expected lines (an `in_order` region: its lines are not adjacent, so no single line is "the" difference).
 */
export interface NearestRegion {
  line: number;
  excerpt: string;
  first_difference: { line: number; expected: string; actual: string; whitespace_only: boolean } | null;
  /**
   * Present when the region holds the expected lines in order but not adjacent: how many of the expected content
   * lines it holds (`found` of `of`), and up to MAX_MISSING of the others (`expected`), each with the 1-based `line`
   * where it occurs elsewhere in the file (its first occurrence outside the region), or null when it is nowhere.
   */
  in_order?: { found: number; of: number; missing: Array<{ expected: string; line: number | null }> };
}

const MAX_SCAN_LINES = 200_000;
const EXCERPT_LINES = 5;
const MAX_EXCERPT_CHARS = 600;
/** Starts re-scored in full after the cheap first scan. */
const SHORTLIST = 32;
/** Expected lines scored by similarity in the first scan (the rest only by equality). */
const FIRST_SCAN_SIMILAR = 3;
/** Expected content lines compared in the first scan, at most (bounded work per file line). */
const FIRST_SCAN_LINES = 48;
/**
 * Starts scored between two checkpoints of the first scan: each costs up to FIRST_SCAN_LINES comparisons and
 * FIRST_SCAN_SIMILAR similarity scores, some microseconds, so a checkpoint every STEP_LINES starts would be too rare.
 */
const SCAN_STEP = 128;

/**
 * Least score (the mean similarity of the expected lines that carry content, in [0, 1]) for a region to be reported:
 * below it `nearest` is absent rather than a guess.
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
 * lines do not count, so a blank line can never win on its own. Ties go to the first line. When no start reaches
 * NEAREST_THRESHOLD, or two or more content lines differ at the best one and an in-order region (inOrderRegionSteps)
 * holds more expected lines than it has equal, the in-order region is returned instead. Linear in the file's lines
 * (up to MAX_SCAN_LINES starts); nearestRegionSteps is the same search as steps.
 * @returns null when the file or the expected text has no content, or no region reaches either threshold
 */
export function findNearestRegion(fileLines: readonly string[], expected: readonly string[]): NearestRegion | null {
  return runSteps(nearestRegionSteps(fileLines, expected));
}

/**
 * `findNearestRegion` as steps (src/patch/steps.ts): yields every STEP_LINES file lines of each pass over the file,
 * every SCAN_STEP starts of the first scan and after each start re-scored in full; the same result run at once
 * (runSteps) or in slices (runStepsSliced).
 */
export function* nearestRegionSteps(
  fileLines: readonly string[],
  expected: readonly string[],
): Steps<NearestRegion | null> {
  if (fileLines.length === 0 || expected.length === 0) return null;
  const content = expected.flatMap((l, j) => (l.trim() === '' ? [] : [j]));
  if (content.length === 0) return null;
  const limit = Math.min(fileLines.length, MAX_SCAN_LINES);
  const squashedFile: string[] = [];
  for (let i = 0; i < Math.min(fileLines.length, limit + expected.length); i++) {
    squashedFile.push(squash(fileLines[i]));
    if (i % STEP_LINES === STEP_LINES - 1) yield;
  }
  const squashedExpected = expected.map(squash);
  const scan: Scan = { fileLines, expected, content, limit, squashedFile, squashedExpected };
  const shortlist = yield* firstScan(scan);
  // Full score of the shortlisted starts.
  let best = -1;
  let bestScore = 0;
  for (const { at } of shortlist) {
    yield;
    let sum = 0;
    for (const j of content) sum += lineSimilarity(fileLines[at + j], expected[j]);
    const score = sum / content.length;
    if (score > bestScore || (score === bestScore && at < best)) {
      bestScore = score;
      best = at;
    }
  }
  if (best === -1 || bestScore < NEAREST_THRESHOLD)
    return yield* inOrderRegionSteps(fileLines, expected, content, limit);
  // Two or more lines differ line by line: when more expected lines sit in order, not adjacent, elsewhere (a line moved
  // away or one inserted between), that region explains the mismatch; line-by-line differences there would mislead.
  const equal = content.filter((j) => squashedFile[best + j] === squashedExpected[j]).length;
  if (equal < content.length - 1) {
    const inOrder = yield* inOrderRegionSteps(fileLines, expected, content, limit);
    if (inOrder && inOrder.in_order!.found > equal) return inOrder;
  }
  const excerpt = fileLines.slice(best, best + Math.max(EXCERPT_LINES, Math.min(expected.length, 12))).join('\n');
  return {
    line: best + 1,
    excerpt: excerpt.length > MAX_EXCERPT_CHARS ? `${excerpt.slice(0, MAX_EXCERPT_CHARS)}…` : excerpt,
    first_difference: firstDifference(fileLines, expected, best),
  };
}

/** What the scans of one search share: the file's and the expected lines, also with their blanks squashed. */
interface Scan {
  fileLines: readonly string[];
  expected: readonly string[];
  /** Indices of the expected lines that carry content. */
  content: readonly number[];
  /** Starts scanned: 0 to `limit` (exclusive). */
  limit: number;
  squashedFile: readonly string[];
  squashedExpected: readonly string[];
}

/**
 * The first scan: equality (exact or whitespace-only) on up to FIRST_SCAN_LINES content lines (the first few, then
 * evenly spaced: a 400-line old_text in a 50,000-line file would be 20 million comparisons), similarity on the first
 * few. As steps: yields every SCAN_STEP starts.
 * @returns the SHORTLIST best starts, best first (ties: the first line), to be scored on every line
 */
function* firstScan(scan: Scan): Steps<Array<{ at: number; score: number }>> {
  const { fileLines, expected, content, limit, squashedFile, squashedExpected } = scan;
  const shortlist: Array<{ at: number; score: number }> = [];
  const first = content.slice(0, FIRST_SCAN_SIMILAR);
  const firstScore = first.map((j) => similarityTo(expected[j].trim()));
  const stride = Math.max(
    1,
    Math.ceil((content.length - FIRST_SCAN_SIMILAR) / (FIRST_SCAN_LINES - FIRST_SCAN_SIMILAR)),
  );
  const scanned = content.filter((_, k) => k < FIRST_SCAN_SIMILAR || (k - FIRST_SCAN_SIMILAR) % stride === 0);
  for (let i = 0; i < limit; i++) {
    if (i % SCAN_STEP === SCAN_STEP - 1) yield;
    let score = 0;
    for (let k = 0; k < scanned.length; k++) {
      const j = scanned[k];
      const a = fileLines[i + j];
      if (a === undefined) continue;
      if (a === expected[j]) score += 1;
      else if (squashedFile[i + j] === squashedExpected[j]) score += 0.9;
      else if (k < FIRST_SCAN_SIMILAR) score += firstScore[k](a.trim());
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
  return shortlist;
}

/** The first line where the region at `best` differs from the expected lines, or null when none does. */
function firstDifference(
  fileLines: readonly string[],
  expected: readonly string[],
  best: number,
): NearestRegion['first_difference'] {
  for (let j = 0; j < expected.length; j++) {
    const actual = fileLines[best + j];
    if (actual !== expected[j]) {
      return {
        line: best + j + 1,
        expected: expected[j],
        actual: actual ?? '(end of file)',
        whitespace_only: actual !== undefined && squash(actual) === squash(expected[j]),
      };
    }
  }
  return null;
}

function squash(s: string): string {
  return s.replace(/\s+/g, '');
}

/**
 * `similarity(·, expected)` as a function prepared once for many calls (the first scan calls it for every file line):
 * the expected bigrams are counted once, keyed by their two UTF-16 code units, and each call only reads the other
 * string's bigrams — no allocation per call but one small copy of the counts. Same value as similarity.
 */
export function similarityTo(expected: string): (actual: string) => number {
  const index = new Map<number, number>();
  const counts: number[] = [];
  for (let i = 0; i < expected.length - 1; i++) {
    const key = expected.charCodeAt(i) * 65536 + expected.charCodeAt(i + 1);
    const at = index.get(key);
    if (at === undefined) {
      index.set(key, counts.length);
      counts.push(1);
    } else counts[at]++;
  }
  const left = new Int32Array(counts.length);
  return (actual) => {
    if (actual === expected) return 1;
    if (actual.length < 2 || expected.length < 2) return 0;
    left.set(counts);
    let hits = 0;
    for (let i = 0; i < actual.length - 1; i++) {
      const at = index.get(actual.charCodeAt(i) * 65536 + actual.charCodeAt(i + 1));
      if (at !== undefined && left[at] > 0) {
        hits++;
        left[at]--;
      }
    }
    return (2 * hits) / (actual.length - 1 + expected.length - 1);
  };
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

/**
 * Least share of the expected content lines an in-order region must hold (found whitespace-insensitively, in order,
 * at least two): below it `nearest` is absent rather than a guess.
 */
export const IN_ORDER_THRESHOLD = 0.5;
/** Expected content lines considered by the in-order search (the first ones). */
const MAX_IN_ORDER_LINES = 400;
/** A line occurring at most this often in the file anchors candidate regions (a `}` on every other line does not). */
const MAX_ANCHOR_OCCURRENCES = 16;
/** Candidate regions (the starts most anchors agree on) scored in full. */
const IN_ORDER_CANDIDATES = 16;
/** Matching (expected line, file line) pairs scored per candidate region. */
const MAX_PAIRS = 20_000;
/** Missing lines listed. */
const MAX_MISSING = 10;

/**
 * The region holding the most expected content lines in order (the longest common subsequence of whole lines,
 * ignoring whitespace) within a window of twice the expected length around where anchors put the start, so the
 * region is one the change fits: at most twice as long as the expected lines, holding at least IN_ORDER_THRESHOLD of
 * their content lines. Bounded: one pass over the file lines (up to `limit`), IN_ORDER_CANDIDATES windows, MAX_PAIRS
 * pairs each, solved as a longest increasing subsequence (O(pairs log pairs)). As steps: yields every STEP_LINES
 * file lines and after each candidate region.
 * @param content indices of the expected lines that carry content
 * @returns null when no region reaches the threshold or fewer than two content lines are expected
 */
function* inOrderRegionSteps(
  fileLines: readonly string[],
  expected: readonly string[],
  content: readonly number[],
  limit: number,
): Steps<NearestRegion | null> {
  const used = content.slice(0, MAX_IN_ORDER_LINES);
  if (used.length < 2) return null;
  const keys = used.map((j) => squash(expected[j]));
  const wanted = new Set(keys);
  const positions = new Map<string, number[]>();
  for (let i = 0; i < limit; i++) {
    if (i % STEP_LINES === STEP_LINES - 1) yield;
    const key = squash(fileLines[i]);
    if (!wanted.has(key)) continue;
    const list = positions.get(key);
    if (list) list.push(i);
    else positions.set(key, [i]);
  }
  // Anchors vote for the start (the file line of expected line 0) their position implies.
  const votes = new Map<number, number>();
  used.forEach((j, k) => {
    const ps = positions.get(keys[k]) ?? [];
    if (ps.length > MAX_ANCHOR_OCCURRENCES) return;
    for (const p of ps) votes.set(p - j, (votes.get(p - j) ?? 0) + 1);
  });
  const starts = [...votes.entries()]
    .sort((a, b) => b[1] - a[1] || a[0] - b[0])
    .slice(0, IN_ORDER_CANDIDATES)
    .map(([s]) => s);
  const half = Math.floor(expected.length / 2);
  let best: Array<{ k: number; p: number }> = [];
  for (const s of starts) {
    yield;
    const chain = longestInOrder(keys, positions, s - half, s + expected.length + half);
    const span = (c: typeof chain) => (c.length ? c[c.length - 1].p - c[0].p : Infinity);
    if (chain.length > best.length || (chain.length === best.length && span(chain) < span(best))) best = chain;
  }
  if (best.length < 2 || best.length < IN_ORDER_THRESHOLD * used.length) return null;
  const first = best[0].p;
  const last = best[best.length - 1].p;
  const inChain = new Set(best.map((m) => m.k));
  const missing: Array<{ expected: string; line: number | null }> = [];
  for (let k = 0; k < used.length && missing.length < MAX_MISSING; k++) {
    if (inChain.has(k)) continue;
    const elsewhere = (positions.get(keys[k]) ?? []).find((p) => p < first || p > last);
    missing.push({ expected: expected[used[k]], line: elsewhere === undefined ? null : elsewhere + 1 });
  }
  const excerpt = fileLines.slice(first, Math.min(last + 1, first + 12)).join('\n');
  return {
    line: first + 1,
    excerpt: excerpt.length > MAX_EXCERPT_CHARS ? `${excerpt.slice(0, MAX_EXCERPT_CHARS)}…` : excerpt,
    first_difference: null,
    in_order: { found: best.length, of: used.length, missing },
  };
}

/**
 * The longest chain of expected lines (k ascending) at file lines (p ascending) within [low, high): Hunt–Szymanski,
 * each expected line's positions visited in descending order, then a longest strictly increasing subsequence.
 */
function longestInOrder(
  keys: readonly string[],
  positions: ReadonlyMap<string, number[]>,
  low: number,
  high: number,
): Array<{ k: number; p: number }> {
  const pairs: Array<{ k: number; p: number }> = [];
  for (let k = 0; k < keys.length && pairs.length < MAX_PAIRS; k++) {
    const ps = positions.get(keys[k]);
    if (!ps) continue;
    let hi = lowerBound(ps, high) - 1;
    for (; hi >= 0 && ps[hi] >= low && pairs.length < MAX_PAIRS; hi--) pairs.push({ k, p: ps[hi] });
  }
  // tails[len-1] = index (in pairs) of the smallest last position of a chain of length len.
  const tails: number[] = [];
  const prev = new Int32Array(pairs.length).fill(-1);
  for (let x = 0; x < pairs.length; x++) {
    const p = pairs[x].p;
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pairs[tails[mid]].p < p) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) prev[x] = tails[lo - 1];
    tails[lo] = x;
  }
  const chain: Array<{ k: number; p: number }> = [];
  for (let x = tails.length ? tails[tails.length - 1] : -1; x !== -1; x = prev[x]) chain.push(pairs[x]);
  return chain.reverse();
}

/** First index of `sorted` whose value is >= `value`. */
function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
