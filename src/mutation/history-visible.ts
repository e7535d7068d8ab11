/**
 * Which recorded changes a call may see (list_changes, revert_changes) and which entries a tree operation may record:
 * a path is visible when it lies inside a root and, under the current policy, is neither hidden, denied, guarded nor
 * a secret (docs/tools.md "Undo").
 */
import type { HistoryChange } from '../fs/history.js';
import { classifyEntry } from '../policy/authorize.js';
import { findContainingRoot, toPosixRelative } from '../policy/containment.js';
import type { ToolContext } from './context.js';

/**
 * Whether a real path may appear in the history listing under the current roots and policy: inside a root, neither
 * hidden, denied, guarded nor a secret. A tree operation holding such an entry is not recorded (src/fs/tree-ops.ts
 * `snapshotTree`): its record could never be listed or reverted, and a secret's bytes are never copied into it.
 */
export function historyVisible(ctx: ToolContext, real: string): boolean {
  const root = findContainingRoot(ctx.policy.roots, real);
  if (!root) return false;
  const v = classifyEntry(ctx.policy, real, toPosixRelative(root.real, real));
  return !v.hidden && !v.denied && !v.secret;
}

/**
 * The changes this call may see: every path inside the current roots and, under the current policy, neither hidden,
 * denied, guarded nor a secret (a change recorded under other roots, --allow-secrets or another policy is not shown,
 * not even its path or hashes, and cannot be selected by `last` / `since`).
 * @returns the visible changes (in the history's order) and how many were left out
 */
export function visibleChanges(
  ctx: ToolContext,
  changes: readonly HistoryChange[],
): { shown: HistoryChange[]; hidden: number } {
  const shown = changes.filter((c) => c.files.every((f) => historyVisible(ctx, f.path)));
  return { shown, hidden: changes.length - shown.length };
}
