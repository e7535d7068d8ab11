/**
 * The one mutation pipeline: every mutating tool (write_file, edit_file, apply_patch, replace_in_files,
 * create_directory, copy_path, move_path, delete_path, revert_changes) runs through `runMutation`, and this file is
 * where the order of checks of a mutation reads top to bottom (docs/errors.md "Order of checks"):
 *
 *   1–3  tool lookup, arguments (schema, the tool's `validate`), READONLY, BUDGET_EXCEEDED — src/server/call-tool.ts,
 *        before the tool runs;
 *   4–7  the tool's PLAN, before the lock: every path through src/policy/authorize.ts (ROOTS_EMPTY, NOT_ALLOWED for
 *        every path first, SECRET_DENIED, FILE_POLICY_DENIED, existence and kind as authorization saw them), giving
 *        the `MutationPlan` (paths to lock, work trees, dry run);
 *   8    STALE_GIT: git runs here, before the lock, and every other work tree whose status hash the call reports is
 *        proven to be one; a failure is held and thrown at its place in the order, after step 7 — a refused call
 *        takes no lock (`refuseAtStep8`: steps 6 and 7 read-only on the state now, then the verdict);
 *   →    [path lock over every path the call touches, and the repository-shape locks]
 *   6    the git-directory guard again, on the state now;
 *   7    INSPECT (`plan.inspect`): the current state of what the call touches — existence, kind, bytes, hash — read
 *        ONCE through verified directory descriptors opened inside the lock (MutationScope); NOT_FOUND, VALIDATION;
 *   9–10 DECIDE (`plan.decide`, on the inspected state): HASH_REQUIRED / OCC_MISMATCH (or the merge), then the
 *        tool's own checks (PATCH_FAILED, REWRITE_BLOCKED …); it returns the result and the EFFECT. Nothing decided
 *        before the lock is trusted, and every check that can fail runs before the first effect;
 *   →    a dry run stops here;
 *   10   EFFECT (the only step that changes anything: src/fs/atomic-write.ts, src/patch/transaction.ts, src/fs/tree-ops.ts)
 *        → hash memory (`remember`) → RECORD (the undo history, src/fs/history.ts)
 *   →    [lock released] → the new status hash (when expected_status_hash was given).
 *
 * A failure after the effect started (only I/O, or git for the new status hash) is reported with what was done and
 * `details.mutation_applied`, and the call is charged to --mutation-budget (src/server/call-tool.ts): a mutation that
 * happened is always charged. Tools supply only the plan and its `inspect`/`decide` steps (their step code lives in
 * src/mutation/<what it holds>.ts); they never touch the filesystem themselves.
 */
import { withPathLock } from '../fs/path-lock.js';
import { afterEffect } from '../fs/tree-ops.js';
import type { HistoryFile, StagedChange } from '../fs/history.js';
import { assertNotInGitDirectory, repositoryShapeLockPath } from '../policy/git-dirs.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { assertStatusHash, currentStatusHash, existingDirOf } from '../policy/stale-git.js';
import type { ToolContext } from './context.js';
import { commitHistory, publishHistory, recordHistory, stageHistory } from './record.js';
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
  /**
   * The only code that changes anything; not run for a dry run. Absent: nothing to change. `beforeVisible`, when
   * given, is awaited right before the change becomes visible (a file's rename over its target), after every check
   * that can still refuse it: the undo record is published there (`applyEffect`).
   */
  effect?: (beforeVisible?: () => Promise<void>) => Promise<void>;
  /** Hash-memory updates once the effect succeeded. */
  remember?: () => void;
  /** What the effect did, in a few words (reported if the new status hash fails afterwards). */
  done: string;
  /**
   * The undo record of this change (src/fs/history.ts), written once the effect succeeded (the effect may still add
   * to `files`: a tree copy records what it wrote). `tooLarge`: not recorded, counted as skipped for the listing.
   */
  history?: {
    tool: string;
    files: HistoryFile[];
    reverts?: string[];
    tooLarge?: boolean;
    /**
     * The record is complete before the effect (nothing the effect does adds to it): it is written while the effect
     * runs, so the two writes and their fsyncs overlap, published right before the change becomes visible (the
     * effect's `beforeVisible`) and committed once the effect succeeded (removed if it failed). Absent: written after
     * the effect.
     */
    complete?: boolean;
  };
}

/**
 * One mutation call as the pipeline runs it: the plan (made before the lock) and the steps run inside it.
 * `S` is what `inspect` found (undefined when the tool has no separate inspect step).
 */
export interface MutationPlan<T, S = undefined> {
  /** Every path the call touches (sources, destinations, files of a patch): the path lock is taken on all. */
  lockPaths: readonly AllowedPath[];
  expectedStatusHash: string | undefined;
  /**
   * The paths whose git work tree matters: STALE_GIT is checked on the first; the status hash reported afterwards is
   * the last one's. All must lie in a work tree before any effect.
   */
  statusPaths: readonly AllowedPath[];
  dryRun: boolean;
  /**
   * Inside the lock, step 7: read the current state through `scope`, once, and throw NOT_FOUND / VALIDATION (kind).
   * Absent: `decide` reads the state itself (steps 7, 9 and 10 in one).
   */
  inspect?: (scope: MutationScope) => S | Promise<S>;
  /** Inside the lock, steps 9–10 on what `inspect` found: decide, and return the effect. */
  decide: (scope: MutationScope, state: S) => MutationStep<T> | Promise<MutationStep<T>>;
}

/**
 * Runs one mutation: the order of checks of the module comment, top to bottom.
 * @returns the step's result and, when expected_status_hash was given (not a dry run), the new status hash
 * @throws ToolError what `inspect` throws (7), STALE_GIT, VALIDATION / NOT_ALLOWED (work trees; 8), whatever
 *   `decide` throws (9, 10; nothing was changed), the effect's errors (with details.mutation_applied when part of it
 *   happened), a status-hash failure after the effect (details.mutation_applied)
 */
export async function runMutation<T, S = undefined>(
  ctx: ToolContext,
  plan: MutationPlan<T, S>,
): Promise<{ result: T; statusHash?: string }> {
  const staleGit = await workTreeVerdict(ctx, plan); // 8, held until after 7
  if (staleGit) await refuseAtStep8(ctx, plan, staleGit); // refused: no lock taken
  const scope = new MutationScope(insideRoots(ctx));
  const step = await withPathLock(lockPathsOf(plan), ctx.config.stateDir, async () => {
    try {
      const state = await inspectNow(ctx, plan, scope); // 6, 7
      const decided = await plan.decide(scope, state); // 9, 10
      if (!plan.dryRun && decided.effect) await applyEffect(ctx, decided); // effect, remember, record
      return decided;
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

/**
 * Step 8 before the lock (git runs outside it): STALE_GIT on the first status path, and every other one proven to
 * lie in a work tree (the status hash reported afterwards must be computable: VALIDATION now, not after the effect).
 * @returns the error to throw at step 8, or null
 */
async function workTreeVerdict(
  ctx: ToolContext,
  plan: Pick<MutationPlan<unknown>, 'expectedStatusHash' | 'statusPaths'>,
): Promise<Error | null> {
  if (plan.expectedStatusHash === undefined || plan.statusPaths.length === 0) return null;
  try {
    await checkStaleGit(ctx, plan.statusPaths[0], plan.expectedStatusHash);
    for (const p of plan.statusPaths.slice(1)) await statusHashAfter(ctx, p, plan.expectedStatusHash);
    return null;
  } catch (error) {
    return error as Error;
  }
}

/**
 * A call refused at step 8 takes no path lock (it changes nothing, so it waits for no other writer and a lock it cannot
 * take never turns its refusal into IO_ERROR `locked`): steps 6 and 7 on the state now, read-only through verified
 * descriptors, then the held verdict.
 * @throws ToolError what the git-directory guard or `inspect` throws (6, 7), else `verdict`
 */
async function refuseAtStep8<T, S>(ctx: ToolContext, plan: MutationPlan<T, S>, verdict: Error): Promise<never> {
  const scope = new MutationScope(insideRoots(ctx));
  try {
    await inspectNow(ctx, plan, scope); // 6, 7
  } finally {
    scope.close();
  }
  throw verdict; // 8
}

/**
 * Steps 6 and 7 on the state now, through `scope`: the git-directory guard again (authorization ran before), then the
 * tool's `inspect`. @returns what `inspect` found (undefined without one) @throws ToolError as they throw
 */
async function inspectNow<T, S>(ctx: ToolContext, plan: MutationPlan<T, S>, scope: MutationScope): Promise<S> {
  for (const p of plan.lockPaths) assertNotInGitDirectory(ctx.policy, p, p);
  return plan.inspect ? await plan.inspect(scope) : (undefined as S);
}

/**
 * The paths the lock is taken on: every path of the call, and one repository-shape lock per directory where the
 * call could create a repository entry (HEAD, objects, refs, commondir), so two calls cannot each add one half of a
 * repository's shape past the git-directory guard (src/policy/git-dirs.ts).
 */
function lockPathsOf(plan: Pick<MutationPlan<unknown>, 'lockPaths'>): string[] {
  const shapeLocks = plan.lockPaths.map(repositoryShapeLockPath).filter((p): p is string => p !== null);
  return [...plan.lockPaths, ...shapeLocks];
}

/**
 * The effect, then the hash memory, then the undo record (inside the lock, so records of one file are in order). A
 * record complete before the effect is written while the effect runs (`stageHistory`), published right before the
 * change becomes visible (a SIGKILL after the change landed still leaves its record: the record is durable first),
 * and committed after it, or dropped when the effect failed.
 */
async function applyEffect(ctx: ToolContext, decided: MutationStep<unknown>): Promise<void> {
  const history = decided.history;
  if (history?.complete && !history.tooLarge && history.files.length > 0) {
    // The effect first: its temporary's write is under way in the I/O pool while the record is serialized here. Its
    // `beforeVisible` runs only after its own awaits, so `staged` is set by then.
    const stagedRef: { staged?: Promise<StagedChange | null> } = {};
    const effect = decided.effect!(async () => {
      await publishHistory(history, await stagedRef.staged!); // never rejects
    });
    const staged = (stagedRef.staged = stageHistory(ctx, history)); // never rejects
    try {
      await effect;
    } catch (error) {
      (await staged)?.discard();
      throw error;
    }
    decided.remember?.();
    await commitHistory(history, await staged);
    return;
  }
  await decided.effect!();
  decided.remember?.();
  if (history?.tooLarge) await recordHistory(ctx, history, true);
  else if (history && history.files.length > 0) await recordHistory(ctx, history);
}
