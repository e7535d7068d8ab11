/**
 * create_directory's steps inside the lock (the order is the pipeline's, src/mutation/pipeline.ts): inspect what is
 * at the path now (step 7: a non-directory is VALIDATION), decide (step 9: an existing directory under
 * expected_hash "absent" is OCC_MISMATCH `created`), and the effect — mkdir -p through verified descriptors, every
 * created level re-checked (src/fs/verified-dir.ts `openDirCreating`) and recorded for undo.
 */
import type { Stats } from 'node:fs';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import { historyEntryOf, type HistoryFile } from '../fs/history.js';
import { openDirCreating } from '../fs/verified-dir.js';
import type { AuthorizedWrite } from '../policy/authorize.js';
import type { MutationStep } from './pipeline.js';
import type { MutationScope } from './scope.js';

/**
 * Step 7: what is at the path now (null: nothing; its parent may be missing too: created like mkdir -p). A root
 * (authorized as a directory) is there by definition; its parent lies outside and is never opened.
 * @throws ToolError VALIDATION not_a_directory, and as MutationScope.parent
 */
export function inspectDirectory(scope: MutationScope, target: AuthorizedWrite): Stats | null {
  const where = target.relative === '' ? null : scope.parent(target.real);
  const now = target.relative === '' ? (target.stats ?? null) : where ? where.dir.lstat(where.name) : null;
  if (now && !now.isDirectory()) {
    throw new ToolError('VALIDATION', `${target.absolute} exists and is not a directory.`, {
      path: target.absolute,
      details: { reason: 'not_a_directory' },
    });
  }
  return now;
}

/**
 * Steps 9–10: the existing directory is the result (idempotent) unless expected_hash was "absent"; otherwise the
 * effect creates it and every missing parent, each recorded in the undo history once the effect knows which.
 * @throws OccMismatchError created
 */
export function decideDirectory(
  scope: MutationScope,
  target: AuthorizedWrite,
  now: Stats | null,
  expectedHash: 'absent' | undefined,
): MutationStep<{ created: boolean }> {
  if (now && expectedHash === 'absent') {
    throw new OccMismatchError(`${target.absolute} already exists, but expected_hash was "absent".`, {
      path: target.absolute,
      expectedHash: 'absent',
      currentHash: null,
      conflict: { reason: 'created' },
    });
  }
  const result = { created: !now };
  if (now) return { result, done: 'nothing' };
  const history = { tool: 'create_directory', files: [] as HistoryFile[] };
  return {
    result,
    done: `created ${target.real}`,
    effect: () =>
      Promise.resolve().then(() => {
        const made = openDirCreating(target.real, scope.isInside);
        made.dir.close();
        result.created = made.created.length > 0;
        for (const d of made.created) {
          history.files.push(historyEntryOf(d, { kind: 'absent' }, { kind: 'directory' }));
        }
      }),
    history,
  };
}
