/**
 * OCC rules shared by the mutating tools: when a missing file is a deletion conflict, and one HASH_REQUIRED for
 * several files.
 */
import { ToolError } from '../errors/tool-error.js';
import { ABSENT } from '../policy/occ.js';
import type { ToolContext } from './context.js';

/**
 * One HASH_REQUIRED for every file of the patch that needs a hash: the first file's path and current_hash
 * stay top-level (compatibility), `details.files` lists each as {path, current_hash}, in the change's order.
 */
export function hashRequiredForAll(errors: readonly ToolError[]): ToolError {
  const first = errors[0];
  if (errors.length === 1) return first;
  const files = errors.map((e) => ({ path: e.path, current_hash: e.details.current_hash }));
  return new ToolError(
    'HASH_REQUIRED',
    `${errors.length} files of the change exist and this session has not read them; ` +
      'pass expected_hashes for each.',
    {
      path: first.path,
      details: { current_hash: first.details.current_hash, field: 'expected_hashes', files },
      suggestion:
        'Read the files first, or pass expected_hashes with each details.files[].current_hash if you know their content.',
    },
  );
}

/**
 * The `knownToSession` predicate of authorizeWrite for a mutation: a missing target is a deletion conflict
 * (OCC_MISMATCH `deleted`), not NOT_FOUND, when an explicit expected hash names content, or when this session read or
 * wrote the path under --auto-occ=block|warn.
 */
export function deletionIsConflict(ctx: ToolContext, expected: string | undefined): (real: string) => boolean {
  return (real) =>
    (expected !== undefined && expected !== ABSENT) ||
    (ctx.config.autoOcc !== 'off' && ctx.hashes.recall(real) !== undefined);
}
