/**
 * The undo-history step of the mutation pipeline (src/fs/history.ts keeps the records).
 */
import { recordSkipped, stageChange, type StagedChange } from '../fs/history.js';
import type { ToolContext } from './context.js';
import type { MutationStep } from './pipeline.js';

/**
 * Records a change in the undo history (inside the path lock, so records of one file are in commit order). A failure
 * to record never fails the change that already happened: it is logged to stderr (no content, no path).
 */
export async function recordHistory(
  ctx: ToolContext,
  history: NonNullable<MutationStep<unknown>['history']>,
  skipped = false,
): Promise<void> {
  try {
    if (skipped) return await recordSkipped(ctx.config.stateDir);
    // Committed, not awaited further: the bounds are applied after the answer (src/fs/history-prune.ts).
    const staged = await stageChange(ctx.config.stateDir, limitsOf(ctx), {
      tool: history.tool,
      files: history.files,
      ...(history.reverts ? { reverts: history.reverts } : {}),
    });
    await staged.commit();
  } catch (error) {
    logFailure(history.tool, error);
  }
}

/**
 * Writes the record of a change whose record is complete before its effect (`history.complete`), while the effect
 * runs: the first half of `recordHistory` (src/fs/history.ts `stageChange`). Never throws: a failure is logged as
 * `recordHistory` logs it. @returns the staged record, or null when it could not be written
 */
export async function stageHistory(
  ctx: ToolContext,
  history: NonNullable<MutationStep<unknown>['history']>,
): Promise<StagedChange | null> {
  try {
    return await stageChange(ctx.config.stateDir, limitsOf(ctx), {
      tool: history.tool,
      files: history.files,
      ...(history.reverts ? { reverts: history.reverts } : {}),
    });
  } catch (error) {
    logFailure(history.tool, error);
    return null;
  }
}

/**
 * Publishes a record `stageHistory` wrote (src/fs/history.ts `StagedChange.publish`), right before the effect makes
 * its change visible: a process killed after the change landed leaves its record. Never throws, as `recordHistory`
 * (the change goes on without a record, which `commitHistory` then no longer tries to make).
 */
export async function publishHistory(
  history: NonNullable<MutationStep<unknown>['history']>,
  staged: StagedChange | null,
): Promise<boolean> {
  if (!staged) return false;
  try {
    await staged.publish();
    return true;
  } catch (error) {
    logFailure(history.tool, error);
    return false;
  }
}

/**
 * Commits a record `stageHistory` wrote, once the effect succeeded (inside the path lock, so records of one file are
 * in commit order). Never throws, as `recordHistory`.
 */
export async function commitHistory(
  history: NonNullable<MutationStep<unknown>['history']>,
  staged: StagedChange | null,
): Promise<void> {
  if (!staged) return;
  try {
    await staged.commit();
  } catch (error) {
    logFailure(history.tool, error);
  }
}

/** The history's bounds from the configuration (--history-max-changes, --history-max-bytes). */
function limitsOf(ctx: ToolContext): { maxChanges: number; maxBytes: number } {
  return { maxChanges: ctx.config.limits.historyMaxChanges, maxBytes: ctx.config.limits.historyMaxBytes };
}

/** The one stderr line of a change the history could not record (no content, no path). */
function logFailure(tool: string, error: unknown): void {
  process.stderr.write(
    `fs-tools: the undo history could not record a ${tool} change (${(error as NodeJS.ErrnoException).code ?? 'error'})\n`,
  );
}
