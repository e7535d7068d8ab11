/**
 * The policy decisions the sanitized git view (src/vcs/git-view.ts) asks for while it verifies every git location:
 * whether a real path lies inside the roots in force (SPEC §4.1, §7) and which secret rule it matches (SPEC §4.2).
 * Policy decides; the view, a primitive, only calls these.
 */
import path from 'node:path';
import type { HidesPath } from '../vcs/git.js';
import type { ViewAccess } from '../vcs/git-view.js';
import { classifyEntry, type PolicyContext } from './authorize.js';
import { findContainingRoot, toPosixRelative } from './containment.js';
import { secretRuleFor } from './secrets.js';

/** The ViewAccess for these roots. */
export function gitViewAccess(roots: readonly { real: string }[]): ViewAccess {
  return {
    isInside: (p) => findContainingRoot(roots, p) !== undefined,
    secretRule: (p) => secretRuleFor(p),
  };
}

/**
 * Whether a path git reports, relative to the work-tree top `workTree` (a real path inside the roots), is
 * policy-hidden (file policy `hidden`, or a built-in guarded path): such a path behaves as absent, so git_status
 * names neither side of its entry and the status hash leaves its line out (docs/security.md "Finding the repository
 * and continuation cursors").
 */
export function hiddenInWorkTree(ctx: PolicyContext, workTree: string): HidesPath {
  return (relative) => {
    const abs = path.join(workTree, relative);
    const inRoot = findContainingRoot(ctx.roots, abs);
    return inRoot !== undefined && classifyEntry(ctx, abs, toPosixRelative(inRoot.real, abs)).hidden;
  };
}
