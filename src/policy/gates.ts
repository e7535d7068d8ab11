/**
 * Process gates for mutating calls (docs/errors.md "Order of checks" step 3): READONLY, then BUDGET_EXCEEDED. They run after argument
 * validation and before any path is resolved. The budget counts successful, non-dry-run mutating calls; dry runs and
 * failures are free.
 */
import { ToolError } from '../errors/tool-error.js';

/** One unit of budget held by a mutating call in progress: `spend()` it on success, `release()` it otherwise. */
export interface BudgetTicket {
  spend(): void;
  /** No-op after spend(). */
  release(): void;
}

/** The --mutation-budget counter. `limit` 0 means unlimited. */
export class MutationBudget {
  private usedCount = 0;
  /** Units held by calls in progress (reserve() and not yet settled). */
  private inFlight = 0;
  private waiters: Array<() => void> = [];

  constructor(readonly limit: number) {}

  /**
   * Holds one unit for a mutating call about to run (docs/security.md: the check runs before the call). Calls in progress
   * hold their unit, so concurrent calls can never succeed more than `limit` times in total (checking before and
   * counting after let every call in flight pass the check). A call that finds the remaining units held by calls in
   * progress waits until one settles: spent, it is refused; released (that call failed), it proceeds.
   * @throws ToolError BUDGET_EXCEEDED when `limit` successful mutations already happened
   */
  async reserve(): Promise<BudgetTicket> {
    while (this.limit > 0 && this.usedCount + this.inFlight >= this.limit) {
      this.assertAvailable();
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    this.inFlight++;
    let settled = false;
    const settle = (spent: boolean): void => {
      if (settled) return;
      settled = true;
      this.inFlight--;
      if (spent) this.usedCount++;
      for (const wake of this.waiters.splice(0)) wake();
    };
    return { spend: () => settle(true), release: () => settle(false) };
  }

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
}

/**
 * @throws ToolError READONLY when the process is read-only
 */
export function assertWritable(readonly: boolean, tool: string, action?: string): void {
  if (readonly) {
    throw new ToolError(
      'READONLY',
      `fs-tools runs with --readonly; ${action ? `${tool} ${action}` : tool} would mutate.`,
      {
        details: { tool, ...(action ? { action } : {}) },
      },
    );
  }
}
