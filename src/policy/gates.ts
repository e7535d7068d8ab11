/**
 * Process gates for mutating calls (SPEC §3.3 step 3, §4.4): READONLY, then BUDGET_EXCEEDED. They run after argument
 * validation and before any path is resolved. The budget counts successful, non-dry-run mutating calls; dry runs and
 * failures are free.
 */
import { ToolError } from '../errors/tool-error.js';

/** The --mutation-budget counter. `limit` 0 means unlimited. */
export class MutationBudget {
  private usedCount = 0;

  constructor(readonly limit: number) {}

  get used(): number {
    return this.usedCount;
  }

  /**
   * @throws ToolError BUDGET_EXCEEDED when `limit` successful mutations already happened
   */
  assertAvailable(): void {
    if (this.limit > 0 && this.usedCount >= this.limit) {
      throw new ToolError('BUDGET_EXCEEDED', `The mutation budget of ${this.limit} call(s) is used up.`, {
        details: { used: this.usedCount, limit: this.limit },
      });
    }
  }

  /** Counts one successful mutation. */
  spend(): void {
    this.usedCount++;
  }
}

/**
 * @throws ToolError READONLY when the process is read-only
 */
export function assertWritable(readonly: boolean, tool: string, action?: string): void {
  if (readonly) {
    throw new ToolError('READONLY', `fs-tools runs with --readonly; ${action ? `${tool} ${action}` : tool} would mutate.`, {
      details: { tool, ...(action ? { action } : {}) },
    });
  }
}
