/**
 * Git directories recognised by what they are, and the hooks directories repositories name (docs/security.md
 * "Execution-bearing files and git directories"). A written hook, a written `core.fsmonitor` or filter in a
 * repository's config is code the user's own git runs later; so nothing inside a git directory is written by the file
 * tools, whatever the directory is called.
 *
 * What git accepts as a repository (setup.c `is_git_directory`): a directory with `HEAD` and `objects` and `refs` —
 * the last two possibly in the common directory its `commondir` file names. Every directory git accepts as a git
 * directory or as a common directory therefore holds at least two of the entries `HEAD`, `objects`, `refs`,
 * `commondir` (a bare `repo.git`, a `--separate-git-dir` target, `worktrees/NAME` with HEAD + commondir, a common dir
 * with objects + refs). The guard uses exactly that, failing closed on partial shapes:
 *   - a directory holding two or more of those entries (any kind: git only asks `access()`), looked up by name
 *     through the directory's verified descriptor — so a case-insensitive filesystem folds the names as git's own
 *     lookup would — is a git directory, and nothing at it or below it may be created, written, moved or deleted;
 *   - creating one of those names in a directory that already holds another (write `x/HEAD` when `x/objects`
 *     exists) would make one, and is refused the same way: a repository cannot be built entry by entry;
 *   - the hooks directory named by `core.hooksPath` in the configuration of any repository whose work tree holds the
 *     path (its `.git` directory or file at any ancestor within the roots, or above the roots), of any repository
 *     anywhere inside the root (a shared `../tools/githooks`, an absolute path elsewhere in the root: the whole root is
 *     searched, `repositoriesInRoot`, for every path: an included file or a helper a hook runs has any name), or in the user's global and system configuration, is guarded the same way
 *     (rule `hooks_dir`). When that search is capped (a root with more directories, or deeper, than it looks at),
 *     an entry named as a git hook is not created or written in that root (reason `search_capped`).
 * Every directory from the root down is opened component by component through src/fs/verified-dir.ts (a link on the
 * way is refused), and the entries are looked up relative to those descriptors. Results per directory are cached by
 * identity and version (dev, ino, mtime, ctime); a directory changed within the last two seconds is never cached
 * (a coarse timestamp could hide a change made in the same tick: git's "racily clean" rule).
 *
 * One concern per file: git-repository-shape.ts (recognising git directories), git-repository-search.ts (the
 * whole-root search), git-hooks-config.ts (hooks directories and configuration files), git-dir-refusal.ts (the
 * envelopes), git-dirs-state.ts (the caches); this file is the guard that walks a path and decides.
 */
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { VerifiedDir } from '../fs/verified-dir.js';
import { findContainingRoot, isInsideRoots, isWithin } from './containment.js';
import { refusal } from './git-dir-refusal.js';
import { gitDirState, type Repository } from './git-dirs-state.js';
import { isHookName, repositoryHooks, rootHooks, userHooks, type Guarded } from './git-hooks-config.js';
import {
  bitCount,
  factsOf,
  gitDirOf,
  isPermissionError,
  REPOSITORY_ENTRY_NAMES,
  REPOSITORY_NAMES_LOWER,
} from './git-repository-shape.js';
import { repositoryAbove } from './git-repository-search.js';

/** What the caller knows about the roots. */
export interface GitGuardRoots {
  roots: readonly { real: string }[];
}

/**
 * The built-in git-directory guard for one path about to be created, written, moved (either end), copied (either end)
 * or deleted: refused when the path is, or lies inside, a git directory (recognised by what it is, see the module
 * comment), when creating it would make its directory one, or when it is or lies inside the hooks directory a
 * repository's `core.hooksPath` names (a directory that holds one is refused entry by entry by the tree walks). `real` is the authorized real path (it may not exist yet); `requested` is
 * the spelling named in the refusal.
 * @throws ToolError FILE_POLICY_DENIED (source builtin, rule git_dir | hooks_dir, details.reason); NOT_ALLOWED when
 *   a directory on the way changed while it was being checked (verified-dir); errno errors other than absence
 */
export function assertNotInGitDirectory(ctx: GitGuardRoots, requested: string, real: string): void {
  // The whole-root repository search runs for every name: a configuration file a repository includes, and a file a
  // hook in a shared hooks directory runs, can have any name and lie outside every work tree holding it; only the
  // search finds the repository that names them (docs/security.md, "Execution-bearing files and git directories").
  const { hooks, capped } = inspect(ctx, requested, real);
  for (const h of hooks) {
    if (h.kind === 'hooks' && isWithin(h.path, real))
      throw refusal(requested, { rule: 'hooks_dir', reason: 'core_hookspath', hooksDir: h.path });
    // An included file is changed by changing it or any directory holding it (a move or delete of the directory).
    if ((h.kind === 'include' || h.kind === 'user_config') && isWithin(real, h.path))
      throw refusal(requested, {
        rule: 'git_dir',
        reason: h.kind === 'include' ? 'included_config' : 'user_config',
        config: h.path,
      });
  }
  if (capped && isHookName(path.basename(real)))
    throw refusal(requested, { rule: 'hooks_dir', reason: 'search_capped' });
}

/**
 * The walk of `assertNotInGitDirectory` (the git-directory rules, throwing), returning the hooks directories that
 * apply at `real`: the user's, the repositories' below the root and those of the work trees holding it.
 */
function inspect(ctx: GitGuardRoots, requested: string, real: string): { hooks: Guarded[]; capped: boolean } {
  const root = findContainingRoot(ctx.roots, real);
  if (!root) return { hooks: [], capped: false }; // containment is decided (and refused) elsewhere; nothing to look at outside the roots
  const isInside = (p: string) => isInsideRoots(ctx.roots, p);
  gitDirState.readableScope = isInside;
  const rel = path.relative(root.real, real);
  const parts = rel === '' ? [] : rel.split(path.sep);
  const home = os.homedir();
  const user = userHooks(requested, home);
  const hooks: Guarded[] = [...user.dirs];
  const repos: Repository[] = [];
  const above = repositoryAbove(root.real);
  if (above) repos.push(above);

  let dir: VerifiedDir;
  try {
    dir = VerifiedDir.open(root.real, isInside);
  } catch (error) {
    // A root that is gone holds no repository (the operation itself fails on it); anything else fails closed.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { hooks, capped: false };
    throw error;
  }
  let capped: boolean;
  try {
    const found = rootHooks(dir, user, home);
    hooks.push(...found.hooks);
    capped = found.capped;
    for (const where of found.undecidable) {
      if (isWithin(where, real))
        throw refusal(requested, { rule: 'hooks_dir', reason: 'config_undecidable', repository: where });
    }
    walkToPath(dir, parts, requested, repos);
  } finally {
    dir.close();
  }

  for (const repo of repos) {
    try {
      hooks.push(...repositoryHooks(repo, user, home));
    } catch (error) {
      if (isPermissionError(error)) throw error;
      // Where its hooks are cannot be told: nothing in its work tree (which holds the path) is written.
      throw refusal(requested, {
        rule: 'hooks_dir',
        reason: 'config_undecidable',
        repository: repo.workTree ?? repo.gitDir,
      });
    }
  }
  return { hooks, capped };
}

/**
 * The git-directory rules along the path (`parts`, below the root `root` opened through verified descriptors): every
 * existing directory from the root down to the path itself is checked for a git directory's shape, the `.git` of each
 * work tree holding the path adds its repository to `repos`, and creating the next component must not complete a
 * repository's shape. Closes every directory it opens below `root` (the caller closes `root`).
 * @throws ToolError FILE_POLICY_DENIED git_dir (inside_git_dir, is_git_dir, would_create_git_dir) or hooks_dir
 *   config_undecidable; NOT_ALLOWED when a directory on the way changed; errno errors other than absence
 */
function walkToPath(root: VerifiedDir, parts: readonly string[], requested: string, repos: Repository[]): void {
  let dir = root;
  try {
    let depth = 0;
    let facts = factsOf(dir);
    for (;;) {
      if (bitCount(facts.members) >= 2)
        throw refusal(requested, {
          rule: 'git_dir',
          reason: depth === parts.length ? 'is_git_dir' : 'inside_git_dir',
          gitDir: dir.path,
        });
      if (facts.dotGit !== 'none' && depth < parts.length) {
        let gitDir: string | null;
        try {
          gitDir = gitDirOf(dir.path, facts.dotGit);
        } catch (error) {
          if (isPermissionError(error)) throw error;
          throw refusal(requested, { rule: 'hooks_dir', reason: 'config_undecidable', repository: dir.path });
        }
        if (gitDir) repos.push({ workTree: dir.path, gitDir });
      }
      if (depth >= parts.length) break;
      const name = parts[depth];
      // Creating (or replacing) `name` here: would it complete a repository's shape?
      const index = REPOSITORY_ENTRY_NAMES.findIndex((n) => n.toLowerCase() === name.toLowerCase());
      if (index >= 0 && bitCount(facts.members | (1 << index)) >= 2)
        throw refusal(requested, { rule: 'git_dir', reason: 'would_create_git_dir', gitDir: dir.path });
      let next: VerifiedDir;
      try {
        next = dir.openDir(name);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') break; // nothing below exists: no repository there yet
        if (error instanceof ToolError && depth === parts.length - 1 && error.details.reason === 'symlink_swapped') {
          break; // the path itself is a link (moved or deleted as a link, never followed)
        }
        throw error;
      }
      dir.close();
      dir = next;
      depth++;
      facts = factsOf(dir);
    }
  } finally {
    if (dir !== root) dir.close();
  }
}

/** What `treeGitGuard` finds wrong with one entry of a tree. */
export interface TreeGitOffence {
  rule: 'git_dir' | 'hooks_dir';
  /** The index in `tops` of the place that is refused (a git directory carried: the old place, 0). */
  top: number;
}

/**
 * The git-directory guard for the entries of a tree being moved, copied or deleted (src/policy/tree-authorize.ts),
 * whose top directories (`tops`: the old place, and the new place of a move or copy) each passed
 * `assertNotInGitDirectory`. Per entry, with no IO (the caller's walk lists the tree through verified descriptors, in
 * pre-order): an entry whose directory holds two of HEAD, objects, refs, commondir among the entries seen so far is
 * in a git directory carried by the tree (the shape is the same at the old and the new place), and an entry at a
 * place inside a hooks directory that applies at its top is refused. The returned function takes the entry's path
 * relative to the top (`/`-separated) and its absolute path at each top, in `tops` order.
 * @throws as assertNotInGitDirectory, for the tops (a change since their own check)
 */
export function treeGitGuard(
  ctx: GitGuardRoots,
  tops: readonly { absolute: string; real: string }[],
): (relative: string, places: readonly string[]) => TreeGitOffence | null {
  const found = tops.map((t) => inspect(ctx, t.absolute, t.real));
  const hooks = found.map((f) => f.hooks);
  const seen = new Map<string, number>();
  return (relative, places) => {
    const slash = relative.lastIndexOf('/');
    const parent = slash < 0 ? '' : relative.slice(0, slash);
    const index = REPOSITORY_ENTRY_NAMES.findIndex((n) => n.toLowerCase() === relative.slice(slash + 1).toLowerCase());
    if (index >= 0) {
      const mask = (seen.get(parent) ?? 0) | (1 << index);
      seen.set(parent, mask);
      if (bitCount(mask) >= 2) return { rule: 'git_dir', top: 0 };
    }
    for (let i = 0; i < places.length; i++) {
      if (hooks[i]?.some((h) => h.kind === 'hooks' && isWithin(h.path, places[i])))
        return { rule: 'hooks_dir', top: i };
      if (hooks[i]?.some((h) => (h.kind === 'include' || h.kind === 'user_config') && h.path === places[i]))
        return { rule: 'git_dir', top: i };
      // A new place (i > 0) in a root whose repository search was capped: no entry named as a git hook arrives.
      if (i > 0 && found[i]?.capped && isHookName(path.basename(places[i]))) return { rule: 'hooks_dir', top: i };
    }
    return null;
  };
}

/** Extra lock paths for a mutation touching `real`: one per directory in which a repository entry is created. */
export function repositoryShapeLockPath(real: string): string | null {
  return REPOSITORY_NAMES_LOWER.has(path.basename(real).toLowerCase()) ? path.join(path.dirname(real), 'HEAD') : null;
}
