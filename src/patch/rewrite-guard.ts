/**
 * REWRITE_BLOCKED (SPEC §6.2): an edit or patch that replaces nearly all of a non-trivial file is refused unless
 * `allow_rewrite: true` (write_file is the tool for full rewrites). The threshold, documented in the README:
 *   - non-trivial: the original has at least REWRITE_MIN_LINES (10) lines;
 *   - nearly all: at least REWRITE_RATIO (90 %) of the original lines are gone from the result (counted as a
 *     multiset, so moved lines are not "changed"; linear time).
 */
import { ToolError } from '../errors/tool-error.js';

export const REWRITE_MIN_LINES = 10;
export const REWRITE_RATIO = 0.9;

/** Fraction of `before`'s lines (LF view) that do not survive into `after`, and the line count of `before`. */
export function changedRatio(before: string, after: string): { ratio: number; lines: number } {
  const a = splitLines(before);
  if (a.length === 0) return { ratio: 0, lines: 0 };
  const pool = new Map<string, number>();
  for (const l of splitLines(after)) pool.set(l, (pool.get(l) ?? 0) + 1);
  let removed = 0;
  for (const l of a) {
    const n = pool.get(l) ?? 0;
    if (n > 0) pool.set(l, n - 1);
    else removed++;
  }
  return { ratio: removed / a.length, lines: a.length };
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
  if (lines >= REWRITE_MIN_LINES && ratio >= REWRITE_RATIO) {
    throw new ToolError('REWRITE_BLOCKED',
      `This change would replace ${Math.round(ratio * 100)}% of the ${lines} lines of ${absolute}.`, {
        path: absolute,
        details: { changed_ratio: Math.round(ratio * 1000) / 1000, threshold: REWRITE_RATIO, lines, min_lines: REWRITE_MIN_LINES },
        suggestion: 'Use write_file for a full rewrite, or pass allow_rewrite: true if replacing nearly everything is intended.',
      });
  }
}
