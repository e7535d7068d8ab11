/**
 * The policy decisions the sanitized git view (src/vcs/git-view.ts) asks for while it verifies every git location:
 * whether a real path lies inside the roots in force, which secret rule it matches, and whether the file policy
 * withholds it (docs/security.md "What git may read").
 * Policy decides; the view, a primitive, only calls these.
 */
import path from 'node:path';
import type { HidesPath } from '../vcs/git.js';
import type { ViewAccess } from '../vcs/git-view.js';
import { classifyEntry, type PolicyContext } from './authorize.js';
import { findContainingRoot, isInsideRoots, toPosixRelative } from './containment.js';
import { secretRuleFor } from './secrets.js';

/**
 * The ViewAccess for this policy: the roots in force, the secret rules, and what the file policy hides or denies (a
 * `hidden` or `deny` rule, or a built-in guarded path): git reads no location there, as the file tools read nothing
 * there (docs/security.md "What git may read").
 */
export function gitViewAccess(ctx: PolicyContext): ViewAccess {
  return {
    isInside: (p) => isInsideRoots(ctx.roots, p),
    secretRule: (p) => secretRuleFor(p),
    isWithheld: (p) => {
      const root = findContainingRoot(ctx.roots, p);
      if (root === undefined) return false;
      const verdict = classifyEntry(ctx, p, toPosixRelative(root.real, p));
      return verdict.hidden || verdict.denied;
    },
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
