/**
 * One PATCH_FAILED envelope for all the hunks (apply_patch) or edits (edit_file) of one file that failed
 * (docs/errors.md PATCH_FAILED `failures`): every known problem in one answer, so an agent fixes them in one round.
 */
import { PatchFailedError, type PatchFailedDetails } from '../errors/tool-error.js';

/** Most failures listed in `details.failures` (each carries up to 50 expected lines and a nearest region). */
export const MAX_LISTED_FAILURES = 20;

/**
 * One PATCH_FAILED for every failing hunk or edit (all known problems in one envelope): the first failure
 * (lowest index) keeps its message, suggestion and top-level details for compatibility; when two or more failed,
 * `details.failures` lists each failure's own details in order (without the file-wide `hunks` total), at most
 * MAX_LISTED_FAILURES, and `details.failed_count` says how many failed in all. With one failure the envelope is
 * exactly that failure's (no list: the top-level fields are the whole story).
 * @param failed the failures, any order; at least one
 * @param unit 'hunk' (apply_patch) or 'edit' (edit_file), for the message
 */
export function allFailures(
  failed: ReadonlyArray<{ index: number; error: PatchFailedError }>,
  unit: 'hunk' | 'edit',
): PatchFailedError {
  const sorted = [...failed].sort((a, b) => a.index - b.index);
  const first = sorted[0].error;
  if (sorted.length === 1) return first;
  const failures = sorted.slice(0, MAX_LISTED_FAILURES).map(({ error }) => {
    const { hunks: _total, ...own } = error.details;
    return own;
  });
  const more =
    sorted.length > 1
      ? ` ${sorted.length} ${unit}s failed in all (${unit === 'hunk' ? 'hunks' : 'edits'} ${sorted.map((f) => (unit === 'hunk' ? f.index + 1 : f.index)).join(', ')}); each is in details.failures.`
      : '';
  return new PatchFailedError(`${first.message}${more}`, {
    path: first.path,
    details: { ...(first.details as PatchFailedDetails), failures, failed_count: sorted.length },
    suggestion: first.suggestion,
  });
}
