/**
 * The one flow every single-file content mutation follows (write_file, edit_file; apply_patch per file), so the
 * SPEC §3.3 order from step 8 on lives in one place:
 *   8 STALE_GIT (expected_status_hash) → [path lock] → read current bytes and hash → 9 HASH_REQUIRED / OCC_MISMATCH
 *   → 10 compute the new bytes (PATCH_FAILED, REWRITE_BLOCKED …) → dry run stops here → atomic write that re-checks
 *   the target's identity just before the rename → remember the new hash.
 * Handlers supply `compute`; they never touch the filesystem themselves.
 */
import { identityOf, makeDirectories, writeFileAtomic } from '../fs/atomic-write.js';
import { hashBytes } from '../fs/hash.js';
import { withPathLock } from '../fs/path-lock.js';
import { isDirectory, readCurrent, type CurrentFile } from '../fs/read-current.js';
import { ToolError } from '../errors/tool-error.js';
import type { AuthorizedWrite } from '../policy/authorize.js';
import { findContainingRoot } from '../policy/containment.js';
import { checkExpectedHash, type OccVerdict } from '../policy/occ.js';
import { parentOf, type AllowedPath } from '../policy/resolve-path.js';
import { assertStatusHash, currentStatusHash, existingDirOf } from '../policy/stale-git.js';
import type { ToolContext } from './define-tool.js';

/** Options of `mutateFile`. */
export interface MutateOptions {
  expectedHash: string | undefined;
  expectedStatusHash: string | undefined;
  dryRun: boolean;
  /** Load the current bytes (edits) or only hash them (whole-file replace). */
  wantBytes: boolean;
  /** Create missing parent directories (write_file create_dirs). */
  createDirs?: boolean;
  /** Name of the expected-hash parameter, for messages. */
  field?: string;
}

/** What `mutateFile` did. */
export interface MutateResult<T> {
  created: boolean;
  previousHash: string | null;
  contentHash: string;
  bytes: number;
  occ: OccVerdict;
  /** The compute step's own result. */
  detail: T;
  /** New status hash of the work tree, when expected_status_hash was given. */
  statusHash?: string;
}

/** The computed new content and the handler's own facts about it. */
export interface Computed<T> {
  bytes: Buffer;
  detail: T;
}

/** A containment predicate over the roots of this call. */
export function insideRoots(ctx: ToolContext): (p: string) => boolean {
  return (p) => findContainingRoot(ctx.policy.roots, p) !== undefined;
}

/**
 * Checks STALE_GIT for `target` when an expected status hash is given (SPEC §3.3 step 8).
 * @throws ToolError STALE_GIT, VALIDATION (not a work tree), NOT_ALLOWED (work tree outside the roots)
 */
export async function checkStaleGit(ctx: ToolContext, real: string, expected: string | undefined): Promise<void> {
  if (expected === undefined) return;
  await assertStatusHash(expected, real, await existingDirOf(real), ctx.policy.roots, ctx.config.limits.gitTimeoutMs);
}

/** The work tree's status hash after a mutation (reported when the caller passed expected_status_hash). */
export async function statusHashAfter(ctx: ToolContext, real: string, expected: string | undefined): Promise<string | undefined> {
  if (expected === undefined) return undefined;
  return (await currentStatusHash(real, await existingDirOf(real), ctx.policy.roots, ctx.config.limits.gitTimeoutMs)).statusHash;
}

/**
 * Runs the mutation flow for one authorized file.
 * @throws ToolError STALE_GIT, HASH_REQUIRED, OCC_MISMATCH, whatever `compute` throws, NOT_ALLOWED (swap detected),
 *   and Node errno errors from the write (mapped to IO_ERROR / FILE_POLICY_DENIED)
 */
export async function mutateFile<T>(ctx: ToolContext, target: AuthorizedWrite, options: MutateOptions,
  compute: (current: CurrentFile) => Promise<Computed<T>> | Computed<T>): Promise<MutateResult<T>> {
  // SPEC §3.3 step 7 (existence) before step 8 (STALE_GIT) and 9 (OCC): a new file needs its parent directory.
  if (!target.stats && !options.createDirs && !(await isDirectory(parentOf(target.real)))) {
    throw new ToolError('NOT_FOUND', `The parent directory of ${target.absolute} does not exist.`, {
      path: target.absolute, details: { reason: 'parent_missing' },
      suggestion: 'Pass create_dirs: true, or call create_directory first.',
    });
  }
  await checkStaleGit(ctx, target.real, options.expectedStatusHash);
  const isInside = insideRoots(ctx);
  const real: AllowedPath = target.real;
  const result = await withPathLock([real], ctx.config.stateDir, async () => {
    const current = await readCurrent(real, isInside, { wantBytes: options.wantBytes, maxBytes: ctx.config.limits.maxEditBytes });
    const occ = checkExpectedHash({
      absolute: target.absolute, real, current: { hash: current.hash, bytes: current.bytes ?? undefined },
      expected: options.expectedHash, autoOcc: ctx.config.autoOcc, memory: ctx.hashes, field: options.field,
    });
    const computed = await compute(current);
    const contentHash = hashBytes(computed.bytes);
    if (!options.dryRun) {
      if (!current.exists && options.createDirs) await makeDirectories(parentOf(real), isInside);
      await writeFileAtomic(real, computed.bytes, {
        isInside,
        expected: {
          identity: current.stats ? identityOf(current.stats) : null,
          // Someone else (not an fs-tools writer: they share the path lock) changed the file after we hashed it.
          // Different bytes: OCC_MISMATCH against what we read. Same bytes under a new identity (an identical save, a
          // touch): our computed bytes still apply, so the write proceeds — this is no failure, least of all INTERNAL.
          onChanged: async () => {
            try {
              const now = await readCurrent(real, isInside, { wantBytes: true, maxBytes: ctx.config.limits.maxEditBytes })
                .catch((error: unknown) => (error instanceof ToolError && error.details.reason === 'file_too_large'
                  ? readCurrent(real, isInside, { wantBytes: false, maxBytes: 0 }) : Promise.reject(error)));
              checkExpectedHash({
                absolute: target.absolute, real, current: { hash: now.hash, bytes: now.bytes ?? undefined },
                expected: current.hash ?? 'absent', autoOcc: 'block', memory: ctx.hashes, field: options.field,
              });
              return null;
            } catch (error) {
              return error as Error;
            }
          },
        },
      });
      ctx.hashes.remember(real, contentHash, computed.bytes);
    }
    return {
      created: !current.exists,
      previousHash: current.hash,
      contentHash,
      bytes: computed.bytes.length,
      occ,
      detail: computed.detail,
    };
  });
  if (!options.dryRun) {
    const statusHash = await statusHashAfter(ctx, real, options.expectedStatusHash);
    if (statusHash) return { ...result, statusHash };
  }
  return result;
}
