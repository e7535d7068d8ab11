/**
 * A unified diff of two versions of a file that costs what the change costs, not what the file costs: the diff
 * package tokenizes, compares and re-joins every line of both texts, which for a one-line edit of a 1 MB file was
 * most of edit_file's time. Here only a window is diffed — the lines between the common whole-line prefix and suffix
 * (src/patch/common-frame.ts) plus WINDOW_MARGIN unchanged lines on each side — and the hunks are shifted back to the
 * file's line numbers.
 *
 * What the diff says is exact: applied to `before` it gives `after`, and it changes as few lines as the full diff
 * (cutting a common prefix and suffix never lengthens a shortest edit script). Its text equals the diff package's
 * `createTwoFilesPatch(oldName, newName, before, after, undefined, undefined, { context })` except in one kind of tie:
 * where inserted or deleted lines equal the unchanged lines next to them, the package may show another of the
 * identical lines as the changed one (it sees more of the suffix). test/patch/window-diff.test.ts pins both: exact
 * application and minimality over random texts, and identical text whenever the prefix alone is cut.
 */
import { formatPatch, structuredPatch, type StructuredPatchHunk } from 'diff';
import { commonLineFrame, countNewlines } from './common-frame.js';
import { runSteps, runStepsSliced, STEP_LINES, type Steps } from './steps.js';

/**
 * Work the exact (Myers) diff of a window may do: its edit length is capped at MYERS_WORK / (lines in the window),
 * so its cost, about lines × edit length, stays near this many line comparisons (docs/security.md "Bounded work").
 */
export const MYERS_WORK = 2_000_000;

/** A unified diff and whether it was cut. */
export interface BoundedDiff {
  text: string;
  /** True when the text was cut at `maxChars` (the hunks after the cut are left out). */
  truncated: boolean;
  /**
   * False when the window changed too much for the exact diff within MYERS_WORK: the hunks then come from the
   * anchored diff (still exact when applied, possibly longer than the shortest).
   */
  minimal: boolean;
}

/**
 * A unified diff of `before` → `after` (the diff package's format and headers).
 * @param context lines of context around each change (the diff package's `context` option)
 */
export function unifiedDiff(oldName: string, newName: string, before: string, after: string, context: number): string {
  return boundedUnifiedDiff(oldName, newName, before, after, context, Infinity).text;
}

/**
 * `unifiedDiff` in bounded time and size: the common prefix and suffix are cut (linear), the window between them is
 * diffed exactly (Myers, the diff package) when its edit length fits MYERS_WORK, else by the anchored diff below
 * (linear in the window, plus a sort of the anchors); hunks are produced in order and production stops once the text
 * passes `maxChars` (the caller cuts the text there).
 * @param myersWork the exact diff's work bound (MYERS_WORK; tests pass 0 to exercise the anchored diff)
 */
export function boundedUnifiedDiff(
  oldName: string,
  newName: string,
  before: string,
  after: string,
  context: number,
  maxChars: number,
  myersWork = MYERS_WORK,
): BoundedDiff {
  return runSteps(boundedDiffSteps(oldName, newName, before, after, context, maxChars, myersWork));
}

/**
 * `boundedUnifiedDiff` in slices of event-loop time (src/patch/steps.ts): the same text, for the tools' diffs of
 * large files in a server that must keep answering (docs/security.md "Bounded work"). The exact diff's own call
 * (bounded by MYERS_WORK) runs as one slice.
 */
export function boundedUnifiedDiffSliced(
  oldName: string,
  newName: string,
  before: string,
  after: string,
  context: number,
  maxChars: number,
): Promise<BoundedDiff> {
  return runStepsSliced(boundedDiffSteps(oldName, newName, before, after, context, maxChars, MYERS_WORK));
}

/**
 * `boundedUnifiedDiff` as steps: yields between its phases and every STEP_LINES lines of its own loops. The exact diff
 * runs only when it can succeed within its edit length (surplusLines), so the one block left is a search that can
 * finish.
 */
function* boundedDiffSteps(
  oldName: string,
  newName: string,
  before: string,
  after: string,
  context: number,
  maxChars: number,
  myersWork: number,
): Steps<BoundedDiff> {
  const { start, endBefore, endAfter } = commonLineFrame(before, after);
  // Unchanged lines kept on each side: the hunks' context, and room for nearby hunks to merge as they would.
  const margin = 2 * context + 1;
  let from = start;
  for (let k = 0; k < margin && from > 0; k++) from = from < 2 ? 0 : before.lastIndexOf('\n', from - 2) + 1;
  let toBefore = endBefore;
  for (let k = 0; k < margin && toBefore < before.length; k++) {
    const j = before.indexOf('\n', toBefore);
    toBefore = j === -1 ? before.length : j + 1;
  }
  const toAfter = endAfter + (toBefore - endBefore); // the suffix is the same text in both
  const skipped = countNewlines(before, 0, from);
  const oldText = before.slice(from, toBefore);
  const newText = after.slice(from, toAfter);
  const windowLines = countNewlines(oldText) + countNewlines(newText) + 2;
  const maxEditLength = Math.max(1, Math.floor(myersWork / windowLines));
  const oldLines = yield* tokenize(oldText);
  const newLines = yield* tokenize(newText);
  // The exact diff gives up (undefined) past maxEditLength removed plus added lines; a line's surplus on one side must
  // be removed or added whatever the alignment, so when the surplus alone is over it the exact diff is not started (it
  // would tokenize and search the whole window in one block, only to give up) and the anchored diff is taken, as it
  // would have been.
  const hopeless = (yield* surplusLines(oldLines, newLines)) > maxEditLength;
  yield;
  const exact = hopeless
    ? undefined
    : structuredPatch(oldName, newName, oldText, newText, undefined, undefined, { context, maxEditLength });
  yield;
  const patch = exact ?? {
    oldFileName: oldName,
    newFileName: newName,
    oldHeader: undefined,
    newHeader: undefined,
    hunks: yield* anchoredHunks(oldLines, newLines, context, maxChars),
  };
  let chars = 0;
  let truncated = false;
  const hunks: StructuredPatchHunk[] = [];
  for (const hunk of patch.hunks) {
    yield;
    if (chars > maxChars) {
      truncated = true;
      break;
    }
    hunk.oldStart += skipped;
    hunk.newStart += skipped;
    hunks.push(hunk);
    for (const l of hunk.lines) chars += l.length + 1;
  }
  if (chars > maxChars) truncated = true;
  return { text: formatPatch({ ...patch, hunks }), truncated, minimal: exact !== undefined };
}

/** Lines as the diff package tokenizes them: each with its `\n` (the last one without, when the text has none). */
function* tokenize(text: string): Steps<string[]> {
  const out: string[] = [];
  let at = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', at)) {
    if (out.length % STEP_LINES === 0) yield;
    out.push(text.slice(at, i + 1));
    at = i + 1;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/**
 * The lines any edit script from `a` to `b` must remove or add: for each distinct line, how many more times it occurs
 * on one side than on the other, summed (a lower bound of the diff package's edit length). Linear; yields every
 * STEP_LINES lines.
 */
export function* surplusLines(a: readonly string[], b: readonly string[]): Steps<number> {
  const balance = new Map<string, number>();
  for (let i = 0; i < a.length; i++) {
    if (i % STEP_LINES === 0) yield;
    balance.set(a[i], (balance.get(a[i]) ?? 0) + 1);
  }
  for (let j = 0; j < b.length; j++) {
    if (j % STEP_LINES === 0) yield;
    balance.set(b[j], (balance.get(b[j]) ?? 0) - 1);
  }
  yield;
  let surplus = 0;
  for (const n of balance.values()) surplus += Math.abs(n);
  return surplus;
}

/** One run of an edit script over two token arrays: equal lines, lines removed from `a`, or lines added from `b`. */
interface Run {
  kind: 'equal' | 'removed' | 'added';
  /** Index of the run's first line in `a` (equal, removed) or `b` (added). */
  at: number;
  count: number;
}

/**
 * A linear-time edit script (patience-style anchoring): lines that occur exactly once in each text are paired, the
 * longest increasing run of pairs (by position in `b`) is kept, and between consecutive pairs the common leading and
 * trailing lines are equal while what remains is removed and added whole. Exact when applied; not always shortest.
 */
function* anchoredRuns(a: readonly string[], b: readonly string[]): Steps<Run[]> {
  const seen = new Map<string, { inA: number; inB: number; atA: number; atB: number }>();
  for (let i = 0; i < a.length; i++) {
    if (i % STEP_LINES === 0) yield;
    const line = a[i];
    const s = seen.get(line);
    if (s) s.inA++;
    else seen.set(line, { inA: 1, inB: 0, atA: i, atB: -1 });
  }
  for (let j = 0; j < b.length; j++) {
    if (j % STEP_LINES === 0) yield;
    const s = seen.get(b[j]);
    if (s) {
      s.inB++;
      s.atB = j;
    }
  }
  const pairs: Array<[number, number]> = [];
  for (const s of seen.values()) if (s.inA === 1 && s.inB === 1) pairs.push([s.atA, s.atB]);
  yield;
  pairs.sort((x, y) => x[0] - y[0]);
  yield;
  // Longest increasing subsequence of the b positions (patience sorting, O(k log k)).
  const tails: number[] = [];
  const prev: number[] = new Array<number>(pairs.length);
  for (let k = 0; k < pairs.length; k++) {
    if (k % STEP_LINES === 0) yield;
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (pairs[tails[mid]][1] < pairs[k][1]) lo = mid + 1;
      else hi = mid;
    }
    prev[k] = lo > 0 ? tails[lo - 1] : -1;
    tails[lo] = k;
  }
  const anchors: Array<[number, number]> = [];
  for (let k = tails.length ? tails[tails.length - 1] : -1; k !== -1; k = prev[k]) anchors.push(pairs[k]);
  anchors.reverse();
  anchors.push([a.length, b.length]); // the end, as a last anchor (not itself a line)
  const runs: Run[] = [];
  const push = (kind: Run['kind'], at: number, count: number) => {
    if (count === 0) return;
    const last = runs[runs.length - 1];
    if (last && last.kind === kind && last.at + last.count === at) last.count += count;
    else runs.push({ kind, at, count });
  };
  let i = 0;
  let j = 0;
  for (let n = 0; n < anchors.length; n++) {
    if (n % STEP_LINES === 0) yield;
    const [ai, bj] = anchors[n];
    let p = 0;
    while (i + p < ai && j + p < bj && a[i + p] === b[j + p]) p++;
    let q = 0;
    while (ai - q > i + p && bj - q > j + p && a[ai - 1 - q] === b[bj - 1 - q]) q++;
    push('equal', i, p);
    push('removed', i + p, ai - q - (i + p));
    push('added', j + p, bj - q - (j + p));
    push('equal', ai - q, q);
    if (ai < a.length) push('equal', ai, 1);
    i = ai + 1;
    j = bj + 1;
  }
  return runs;
}

/**
 * The hunks of the anchored edit script, grouped as the diff package groups them (changes closer than 2 × context
 * lines share a hunk), lines without their `\n` and "\\ No newline at end of file" after a last line without one.
 * Stops after the hunk that passes `maxChars` of line text.
 */
function* anchoredHunks(a: string[], b: string[], context: number, maxChars: number): Steps<StructuredPatchHunk[]> {
  const runs = yield* anchoredRuns(a, b);
  const hunks: StructuredPatchHunk[] = [];
  let chars = 0;
  let hunk: StructuredPatchHunk | null = null;
  let oldLine = 1;
  let newLine = 1;
  const put = (prefix: string, line: string) => {
    hunk!.lines.push(prefix + (line.endsWith('\n') ? line.slice(0, -1) : line));
    if (!line.endsWith('\n')) hunk!.lines.push('\\ No newline at end of file');
    chars += line.length + 1;
  };
  for (let r = 0; r < runs.length && chars <= maxChars; r++) {
    if (r % STEP_LINES === 0) yield;
    const run = runs[r];
    if (run.kind === 'equal') {
      if (hunk) {
        const last = r === runs.length - 1;
        if (run.count <= 2 * context && !last) {
          for (let k = 0; k < run.count; k++) put(' ', a[run.at + k]);
        } else {
          const n = Math.min(run.count, context);
          for (let k = 0; k < n; k++) put(' ', a[run.at + k]);
          hunk.oldLines = oldLine + n - hunk.oldStart;
          hunk.newLines = newLine + n - hunk.newStart;
          hunks.push(hunk);
          hunk = null;
        }
      }
      oldLine += run.count;
      newLine += run.count;
      continue;
    }
    if (!hunk) {
      const prev = runs[r - 1];
      const lead = prev && prev.kind === 'equal' ? Math.min(context, prev.count) : 0;
      hunk = { oldStart: oldLine - lead, oldLines: 0, newStart: newLine - lead, newLines: 0, lines: [] };
      for (let k = prev ? prev.at + prev.count - lead : 0; lead > 0 && k < prev.at + prev.count; k++) put(' ', a[k]);
    }
    if (run.kind === 'removed') {
      for (let k = 0; k < run.count; k++) put('-', a[run.at + k]);
      oldLine += run.count;
    } else {
      for (let k = 0; k < run.count; k++) put('+', b[run.at + k]);
      newLine += run.count;
    }
  }
  if (hunk) {
    hunk.oldLines = oldLine - hunk.oldStart;
    hunk.newLines = newLine - hunk.newStart;
    hunks.push(hunk);
  }
  return hunks;
}
