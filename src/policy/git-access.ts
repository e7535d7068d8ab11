/**
 * The policy decisions the sanitized git view (src/vcs/git-view.ts) asks for while it verifies every git location:
 * whether a real path lies inside the roots in force (SPEC §4.1, §7) and which secret rule it matches (SPEC §4.2).
 * Policy decides; the view, a primitive, only calls these.
 */
import type { ViewAccess } from '../vcs/git-view.js';
import { findContainingRoot } from './containment.js';
import { secretRuleFor } from './secrets.js';

/** The ViewAccess for these roots. */
export function gitViewAccess(roots: readonly { real: string }[]): ViewAccess {
  return {
    isInside: (p) => findContainingRoot(roots, p) !== undefined,
    secretRule: (p) => secretRuleFor(p),
  };
}
