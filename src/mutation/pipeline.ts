/**
 * The one mutation pipeline (docs/errors.md "Order of checks" steps 8–10), used by write_file, edit_file, apply_patch, move_path,
 * delete_path and create_directory (and exported for journal recovery):
 *
 *   8 STALE_GIT (expected_status_hash) — and every other work tree whose status hash the call will report is proven
 *     to be one now, so that cannot fail after the effect
 *   → [path lock over every path the call touches]
 *   → `decide`: the tool reads the CURRENT state of every path it touches (existence, kind, bytes, hash —
 *     destinations included) through verified directory descriptors opened inside the lock (MutationScope), runs
 *     9 HASH_REQUIRED / OCC_MISMATCH and 10 its own checks (PATCH_FAILED, REWRITE_BLOCKED …), and returns its effect;
 *     nothing decided before the lock is trusted, and every check that can fail runs here, before the first effect
 *   → dry run stops here → the effect (the only step that changes anything) → hash memory
 *   → the new status hash.
 *
 * A failure after the effect started (only I/O, or git for the new status hash) is reported with what was done and
 * `details.mutation_applied`, and the call is charged to --mutation-budget (src/server/call-tool.ts): a mutation that
 * happened is always charged. Tools supply only `decide`; they never touch the filesystem themselves.
 */
import { withPathLock } from '../fs/path-lock.js';
import { afterEffect } from '../fs/tree-ops.js';
import type { HistoryFile } from '../fs/history.js';
import { assertNotInGitDirectory, repositoryShapeLockPath } from '../policy/git-dirs.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { assertStatusHash, currentStatusHash, existingDirOf } from '../policy/stale-git.js';
import type { ToolContext } from './context.js';
import { recordHistory } from './record.js';
import { insideRoots, MutationScope } from './scope.js';

/**
 * Checks STALE_GIT for `target` when an expected status hash is given (docs/errors.md "Order of checks" step 8).
 * @throws ToolError STALE_GIT, VALIDATION (not a work tree), NOT_ALLOWED (work tree outside the roots)
 */
export async function checkStaleGit(ctx: ToolContext, real: string, expected: string | undefined): Promise<void> {
  if (expected === undefined) return;
  await assertStatusHash(expected, real, await existingDirOf(real), ctx.policy, ctx.config.limits.gitTimeoutMs);
}

/** The work tree's status hash after a mutation (reported when the caller passed expected_status_hash). */
export async function statusHashAfter(
  ctx: ToolContext,
  real: string,
  expected: string | undefined,
): Promise<string | undefined> {
  if (expected === undefined) return undefined;
  return (await currentStatusHash(real, await existingDirOf(real), ctx.policy, ctx.config.limits.gitTimeoutMs))
    .statusHash;
}

/** What a tool's `decide` returns: its result and the effect that makes it so. */
export interface MutationStep<T> {
  result: T;
  /** The only code that changes anything; not run for a dry run. Absent: nothing to change. */
  effect?: () => Promise<void>;
  /** Hash-memory updates once the effect succeeded. */
  remember?: () => void;
  /** What the effect did, in a few words (reported if the new status hash fails afterwards). */
  done: string;
  /**
   * The undo record of this change (src/fs/history.ts), written once the effect succeeded (the effect may still add
   * to `files`: a tree copy records what it wrote). `tooLarge`: not recorded, counted as skipped for the listing.
   */
  history?: { tool: string; files: HistoryFile[]; reverts?: string[]; tooLarge?: boolean };
}

/** One mutation call as the pipeline runs it. */
export interface MutationPlan<T> {
  /** Every path the call touches (sources, destinations, files of a patch): the path lock is taken on all. */
  lockPaths: readonly AllowedPath[];
  expectedStatusHash: string | undefined;
  /**
   * The paths whose git work tree matters: STALE_GIT is checked on the first; the status hash reported afterwards is
   * the last one's. All must lie in a work tree before any effect.
   */
  statusPaths: readonly AllowedPath[];
  dryRun: boolean;
  /** Inside the lock: read the current state through `scope`, decide, and return the effect. */
  decide: (scope: MutationScope) => MutationStep<T> | Promise<MutationStep<T>>;
}

/**
 * Runs one mutation (see the module comment).
 * @returns the step's result and, when expected_status_hash was given (not a dry run), the new status hash
 * @throws ToolError STALE_GIT, VALIDATION / NOT_ALLOWED (work trees), whatever `decide` throws (nothing was changed),
 *   the effect's errors (with details.mutation_applied when part of it happened), a status-hash failure after the
 *   effect (details.mutation_applied)
 */
export async function runMutation<T>(
  ctx: ToolContext,
  plan: MutationPlan<T>,
): Promise<{ result: T; statusHash?: string }> {
  if (plan.expectedStatusHash !== undefined && plan.statusPaths.length > 0) {
    await checkStaleGit(ctx, plan.statusPaths[0], plan.expectedStatusHash);
    // The status hash reported afterwards must be computable: a path outside any work tree is VALIDATION now, not
    // after the effect.
    for (const p of plan.statusPaths.slice(1)) await statusHashAfter(ctx, p, plan.expectedStatusHash);
  }
  const scope = new MutationScope(insideRoots(ctx));
  // Creating a repository entry (HEAD, objects, refs, commondir) takes one lock per directory, so two calls cannot
  // each add one half of a repository's shape past the git-directory guard (src/policy/git-dirs.ts).
  const shapeLocks = plan.lockPaths.map(repositoryShapeLockPath).filter((p): p is string => p !== null);
  const step = await withPathLock([...plan.lockPaths, ...shapeLocks], ctx.config.stateDir, async () => {
    try {
      // The git-directory guard again, inside the lock, on the state now (authorization ran before the lock).
      for (const p of plan.lockPaths) assertNotInGitDirectory(ctx.policy, p, p);
      const s = await plan.decide(scope);
      if (!plan.dryRun && s.effect) {
        await s.effect();
        s.remember?.();
        if (s.history?.tooLarge) await recordHistory(ctx, s.history, true);
        else if (s.history && s.history.files.length > 0) await recordHistory(ctx, s.history);
      }
      return s;
    } finally {
      scope.close();
    }
  });
  if (plan.dryRun || plan.expectedStatusHash === undefined) return { result: step.result };
  try {
    const statusHash = await statusHashAfter(
      ctx,
      plan.statusPaths[plan.statusPaths.length - 1],
      plan.expectedStatusHash,
    );
    return { result: step.result, statusHash };
  } catch (error) {
    throw step.effect ? afterEffect(error, step.done) : error;
  }
}
