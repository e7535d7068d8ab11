/**
 * Where a symlink the server places would point (policy): revert_changes recreating a recorded link, copy_path
 * copying a link and move_path moving one (a relative target that stays inside at its old place can climb out from a shallower new one:
 * `a/b/l -> ../../x` copied to `l`). Source: the undo security review and its copy_path follow-up.
 */
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { climbsAfterName } from '../fs/path-within.js';
import { findContainingRoot } from './containment.js';
import { resolveInRoots } from './resolve-path.js';
import type { EffectiveRoot } from './roots.js';

/**
 * Whether a symlink at `linkPath` (absolute) holding `target` points inside the roots: the target spelled from the
 * link's directory must (1) not name `..` after a name (links created by the same operation do not exist yet to be
 * walked; `dot/..` follows `dot` first: src/fs/path-within.ts `climbsAfterName`), (2) be lexically inside a root, and
 * (3) stay inside when walked physically as the kernel would, existing links followed (src/policy/resolve-path.ts
 * `resolveInRoots`; a loop that stays inside points nowhere and is harmless).
 * @throws ToolError other than NOT_ALLOWED / symlink_loop from resolveInRoots (e.g. ROOTS_EMPTY)
 */
export async function linkTargetInside(
  roots: readonly EffectiveRoot[],
  linkPath: string,
  target: string,
): Promise<boolean> {
  if (climbsAfterName(target)) return false;
  const spelled = path.isAbsolute(target) ? target : `${path.dirname(linkPath)}${path.sep}${target}`;
  if (!findContainingRoot(roots, path.resolve(spelled))) return false;
  try {
    await resolveInRoots(spelled, roots, { followFinal: true });
    return true;
  } catch (error) {
    if (error instanceof ToolError && error.code === 'NOT_ALLOWED') return false;
    if (error instanceof ToolError && error.details.reason === 'symlink_loop') return true;
    throw error;
  }
}

/**
 * Whether a link holding `target` may be placed at `linkPath` by a move (the same link under a new name): a relative
 * target means something else at the new place (`a/b/l -> ../../x` moved to `l` climbs out of the root), so it must
 * point inside there (`linkTargetInside`); an absolute target means the same everywhere and is carried as it is (the
 * link existed before; a move creates no new link pointing outside). A copy creates a new link: it must pass
 * `linkTargetInside` whatever its target (docs/security.md, "Whole-tree operations").
 */
export function movedLinkAllowed(roots: readonly EffectiveRoot[], linkPath: string, target: string): Promise<boolean> {
  return path.isAbsolute(target) ? Promise.resolve(true) : linkTargetInside(roots, linkPath, target);
}
