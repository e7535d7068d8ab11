/**
 * The undo-history step of the mutation pipeline (src/fs/history.ts keeps the records).
 */
import { recordChange, recordSkipped } from '../fs/history.js';
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
    await recordChange(
      ctx.config.stateDir,
      {
        maxChanges: ctx.config.limits.historyMaxChanges,
        maxBytes: ctx.config.limits.historyMaxBytes,
      },
      { tool: history.tool, files: history.files, ...(history.reverts ? { reverts: history.reverts } : {}) },
    );
  } catch (error) {
    process.stderr.write(
      `fs-tools: the undo history could not record a ${history.tool} change (${(error as NodeJS.ErrnoException).code ?? 'error'})\n`,
    );
  }
}
