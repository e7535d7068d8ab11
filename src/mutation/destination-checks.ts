/**
 * What a move or copy may replace at its destination, decided inside the lock (OCC on the replaced file or link).
 */
import type { Stats } from 'node:fs';
import type { CurrentFile } from '../fs/read-current.js';
import { identityOf } from '../fs/verified-dir.js';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import { authorizeRead } from '../policy/authorize.js';
import { linkTargetInside } from '../policy/link-target.js';
import { ABSENT, checkExpectedHash } from '../policy/occ.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import type { ToolContext } from './context.js';
import type { MutationScope } from './scope.js';

/**
 * The destination a move or copy may replace, decided inside the lock on what is there now (docs/errors.md "Optimistic concurrency": replacing a
 * file is a mutation under OCC): its current hash (a file; null for a directory, a link or nothing), checked against
 * `expectedHash` (or the session's memory under --auto-occ), and the identity the effect must still find there.
 * A link destination is the link itself (the file it points to is never touched; docs/tools.md "Links as
 * destinations"): `checkReplacedLink` decides it.
 * A link whose target lies outside the roots is not replaced: its undo could not recreate it (NOT_ALLOWED
 * link_target_outside).
 * @param dstNow the destination's lstat through its verified parent, taken in this scope (null: absent)
 * @throws ToolError HASH_REQUIRED, OCC_MISMATCH, NOT_ALLOWED link_target_outside
 */
export async function checkReplacedDestination(
  ctx: ToolContext,
  scope: MutationScope,
  destination: { absolute: string; real: AllowedPath },
  dstNow: Stats | null,
  expectedHash: string | undefined,
): Promise<{ file: CurrentFile | null; identity: ReturnType<typeof identityOf> | null }> {
  if (dstNow?.isSymbolicLink()) {
    // Its undo recreates the link (revert_changes), which no tool does for a target outside the roots: replacing such a
    // link could not be undone — for a move not even the moved file — so it is refused before anything changes.
    const held = scope.existingParent(destination.real, destination.absolute);
    if (!(await linkTargetInside(ctx.policy.roots, destination.real, held.dir.readlink(held.name)))) {
      throw new ToolError(
        'NOT_ALLOWED',
        `${destination.absolute} is a symbolic link that points outside the roots; replacing it could not be undone, ` +
          'so it is not replaced.',
        {
          path: destination.absolute,
          details: { reason: 'link_target_outside' },
          suggestion: 'Choose another destination, or delete the link first (delete_path) if it is to go.',
        },
      );
    }
    await checkReplacedLink(ctx, scope, destination, expectedHash);
    return { file: null, identity: identityOf(dstNow) };
  }
  const file = dstNow?.isFile()
    ? await scope.current(destination.real, { wantBytes: true, maxBytes: 256 * 1024, hashOnlyWhenLarge: true })
    : null;
  if (dstNow || expectedHash !== undefined) {
    checkExpectedHash({
      absolute: destination.absolute,
      real: destination.real,
      current: { hash: file?.hash ?? null, bytes: file?.bytes ?? undefined },
      expected: expectedHash,
      autoOcc: ctx.config.autoOcc,
      memory: ctx.hashes,
    });
  }
  return { file, identity: dstNow ? identityOf(file?.stats ?? dstNow) : null };
}

/**
 * OCC for a symbolic link a move or copy replaces (the link, never what it points to). A link holds no content of its
 * own: no expected hash is needed (as delete_path of a link), and the undo history records its target. An explicit
 * `expectedHash` must be what a read of the link's path gives now — the content hash of the file it leads to, when
 * that is a file inside the roots the policy lets the session read (read_file / stat of the link report that hash) —
 * else OCC_MISMATCH: `modified` with that hash, `deleted` when the link leads to no readable file (dangling, outside,
 * secret, hidden), `created` for "absent" (the link exists).
 * @throws ToolError OCC_MISMATCH
 */
async function checkReplacedLink(
  ctx: ToolContext,
  scope: MutationScope,
  destination: { absolute: string; real: AllowedPath },
  expectedHash: string | undefined,
): Promise<void> {
  if (expectedHash === undefined) return;
  let throughLink: string | null = null;
  try {
    const target = await authorizeRead(destination.real, ctx.policy, { kind: 'file' });
    throughLink = (await scope.current(target.real, { wantBytes: false, maxBytes: 0 })).hash;
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
  }
  if (expectedHash !== ABSENT && expectedHash === throughLink) return;
  const reason = expectedHash === ABSENT ? 'created' : throughLink === null ? 'deleted' : 'modified';
  throw new OccMismatchError(
    expectedHash === ABSENT
      ? `${destination.absolute} exists (a symbolic link), but expected_hash was "absent".`
      : `The symbolic link ${destination.absolute} no longer leads to the version expected.`,
    {
      path: destination.absolute,
      expectedHash,
      currentHash: throughLink,
      conflict: { reason },
      suggestion:
        "Read the link's path (read_file or stat) and pass the content_hash it reports, or omit expected_hash: " +
        'a link is replaced as the link itself.',
    },
  );
}
