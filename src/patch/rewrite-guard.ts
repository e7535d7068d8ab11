/**
 * REWRITE_BLOCKED (docs/tools.md): an edit or patch that replaces nearly all of a non-trivial file is refused unless
 * `allow_rewrite: true` (write_file is the tool for full rewrites). The threshold, documented in the README:
 *   - non-trivial: the original has at least REWRITE_MIN_LINES (10) lines;
 *   - nearly all: at least REWRITE_RATIO (90 %) of the original lines are gone from the result (counted as a
 *     multiset, so moved lines are not "changed"; linear time).
 */
import { ToolError } from '../errors/tool-error.js';
import { commonLineFrame } from './common-frame.js';
import { runSteps, runStepsSliced, STEP_LINES, type Steps } from './steps.js';

export const REWRITE_MIN_LINES = 10;
export const REWRITE_RATIO = 0.9;

/**
 * Fraction of `before`'s lines (LF view) that do not survive into `after`, and the line count of `before`.
 * Only the lines between the longest common run of whole lines at the start and at the end are compared: with
 * before = P + A + S and after = P + B + S, the multiset intersection is |P| + |S| + |A ∩ B|, so the result is the
 * same as comparing everything, and a one-line edit of a large file hashes a few lines instead of every line twice.
 */
export function changedRatio(before: string, after: string): { ratio: number; lines: number } {
  return runSteps(changedRatioSteps(before, after));
}

/** `changedRatio` as steps (src/patch/steps.ts): yields every STEP_LINES lines. */
function* changedRatioSteps(before: string, after: string): Steps<{ ratio: number; lines: number }> {
  const total = countLines(before);
  if (total === 0) return { ratio: 0, lines: 0 };
  const { start, endBefore, endAfter } = commonLineFrame(before, after);
  const a = splitLines(before.slice(start, endBefore));
  yield;
  const b = splitLines(after.slice(start, endAfter));
  yield;
  const pool = new Map<string, number>();
  for (let i = 0; i < b.length; i++) {
    if (i % STEP_LINES === 0) yield;
    const l = b[i];
    pool.set(l, (pool.get(l) ?? 0) + 1);
  }
  let removed = 0;
  for (let i = 0; i < a.length; i++) {
    if (i % STEP_LINES === 0) yield;
    const l = a[i];
    const n = pool.get(l) ?? 0;
    if (n > 0) pool.set(l, n - 1);
    else removed++;
  }
  return { ratio: removed / total, lines: total };
}

/** Lines as splitLines counts them, without building them. */
function countLines(text: string): number {
  if (text === '') return 0;
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n : n + 1;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * @throws ToolError REWRITE_BLOCKED with details { changed_ratio, threshold, lines, min_lines }
 */
export function assertNotRewrite(before: string, after: string, allowRewrite: boolean, absolute: string): void {
  if (allowRewrite) return;
  const { ratio, lines } = changedRatio(before, after);
  throwIfRewrite(ratio, lines, absolute);
}

/**
 * `assertNotRewrite` in slices of event-loop time (src/patch/steps.ts): the same decision, for large files in a
 * server that must keep answering (docs/security.md "Bounded work").
 * @throws ToolError REWRITE_BLOCKED with details { changed_ratio, threshold, lines, min_lines }
 */
export async function assertNotRewriteSliced(
  before: string,
  after: string,
  allowRewrite: boolean,
  absolute: string,
): Promise<void> {
  if (allowRewrite) return;
  const { ratio, lines } = await runStepsSliced(changedRatioSteps(before, after));
  throwIfRewrite(ratio, lines, absolute);
}

function throwIfRewrite(ratio: number, lines: number, absolute: string): void {
  if (lines >= REWRITE_MIN_LINES && ratio >= REWRITE_RATIO) {
    throw new ToolError(
      'REWRITE_BLOCKED',
      `This change would replace ${Math.round(ratio * 100)}% of the ${lines} lines of ${absolute}.`,
      {
        path: absolute,
        details: {
          changed_ratio: Math.round(ratio * 1000) / 1000,
          threshold: REWRITE_RATIO,
          lines,
          min_lines: REWRITE_MIN_LINES,
        },
        suggestion:
          'Use write_file for a full rewrite, or pass allow_rewrite: true if replacing nearly everything is intended.',
      },
    );
  }
}
