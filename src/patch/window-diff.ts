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
import { formatPatch, structuredPatch } from 'diff';
import { commonLineFrame, countNewlines } from './common-frame.js';

/**
 * A unified diff of `before` → `after` (the diff package's format and headers).
 * @param context lines of context around each change (the diff package's `context` option)
 */
export function unifiedDiff(oldName: string, newName: string, before: string, after: string, context: number): string {
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
  if (from === 0 && toBefore === before.length) {
    return formatPatch(structuredPatch(oldName, newName, before, after, undefined, undefined, { context }));
  }
  const skipped = countNewlines(before, 0, from);
  const patch = structuredPatch(
    oldName,
    newName,
    before.slice(from, toBefore),
    after.slice(from, toAfter),
    undefined,
    undefined,
    { context },
  );
  for (const hunk of patch.hunks) {
    hunk.oldStart += skipped;
    hunk.newStart += skipped;
  }
  return formatPatch(patch);
}
