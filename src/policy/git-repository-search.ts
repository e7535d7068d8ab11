/**
 * The whole-root repository search of the git-directory guard (docs/security.md "core.hooksPath"): every repository
 * inside a root whose configuration could name a hooks directory, found through verified descriptors and reused for a
 * short while per root; and the repository whose work tree holds a root from above.
 */
import { fstatSync, lstatSync } from 'node:fs';
import path from 'node:path';
import type { VerifiedDir } from '../fs/verified-dir.js';
import {
  CACHE_MAX,
  gitDirState,
  isRacy,
  type DirFacts,
  type Listing,
  type Repository,
  type RepositorySearch,
} from './git-dirs-state.js';
import { bitCount, gitDirOf, isPermissionError, REPOSITORY_ENTRY_NAMES } from './git-repository-shape.js';

/** The repository whose work tree holds the directories above `root` (git's discovery upwards), if any. */
export function repositoryAbove(root: string): Repository | null {
  let dir = path.dirname(root);
  for (;;) {
    let kind: DirFacts['dotGit'] = 'none';
    try {
      const g = lstatSync(path.join(dir, '.git'), { throwIfNoEntry: false });
      if (g) kind = g.isDirectory() ? 'dir' : g.isSymbolicLink() ? 'link' : g.isFile() ? 'file' : 'other';
    } catch {
      kind = 'none';
    }
    if (kind !== 'none') {
      let gitDir: string | null;
      try {
        gitDir = gitDirOf(dir, kind);
      } catch {
        gitDir = null;
      }
      return gitDir ? { workTree: dir, gitDir } : null;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/**
 * How long one root's list of repositories (`repositoriesInRoot`) is reused, ms. The search opens every directory of
 * the root (up to MAX_REPOSITORY_SEARCH_DIRS: about 15 ms idle, several hundred under load), too much for every
 * mutation. The file tools cannot create a repository (`would_create_git_dir`, the `.git` rules), so only another
 * process can add one, and it is seen after at most this long (docs/security.md "core.hooksPath"). What the
 * repositories say — their configuration, included files, the links in their hooks directories — is read again on
 * every call, and the checks along the path's own ancestors are never reused.
 */
export const REPOSITORY_SEARCH_REUSE_MS = 2000;

/** `repositoriesInRoot`, reused for REPOSITORY_SEARCH_REUSE_MS per root identity. */
export function cachedRepositoriesInRoot(root: VerifiedDir): RepositorySearch {
  const st = fstatSync(root.fd);
  const key = `${st.dev}:${st.ino}`;
  const now = Date.now();
  const hit = gitDirState.searches.get(key);
  if (hit && hit.until > now) return hit;
  const found = repositoriesInRoot(root);
  if (gitDirState.searches.size >= CACHE_MAX) gitDirState.searches.clear();
  gitDirState.searches.set(key, { ...found, until: now + REPOSITORY_SEARCH_REUSE_MS });
  return found;
}

/** Most directories of one root the repository search looks at; beyond it the search is capped (fails closed). */
export const MAX_REPOSITORY_SEARCH_DIRS = 5_000;

/** Deepest directory (levels below the root) the repository search descends to; deeper, the search is capped. */
export const MAX_REPOSITORY_SEARCH_DEPTH = 128;

/** The listing of an open verified directory, cached by identity and version (dev, ino, mtime, ctime). */
function listingOf(dir: VerifiedDir): Listing {
  const st = fstatSync(dir.fd);
  const key = `${st.dev}:${st.ino}`;
  const hit = gitDirState.listings.get(key);
  if (hit && hit.mtimeMs === st.mtimeMs && hit.ctimeMs === st.ctimeMs) return hit;
  let members = 0;
  let dotGit: DirFacts['dotGit'] = 'none';
  const subdirs: string[] = [];
  for (const entry of dir.readdirSync()) {
    const lower = entry.name.toLowerCase();
    const i = REPOSITORY_ENTRY_NAMES.findIndex((n) => n.toLowerCase() === lower);
    if (i >= 0) members |= 1 << i;
    if (lower === '.git') {
      dotGit = entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'link' : entry.isFile() ? 'file' : 'other';
    } else if (entry.isDirectory()) subdirs.push(entry.name);
  }
  const listing: Listing = { members, dotGit, subdirs, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
  if (!isRacy(st.mtimeMs, st.ctimeMs)) {
    if (gitDirState.listings.size >= CACHE_MAX * 4) gitDirState.listings.clear();
    gitDirState.listings.set(key, listing);
  }
  return listing;
}

/**
 * Every repository inside a root whose configuration could name a hooks directory: each directory holding a `.git`
 * entry (a work tree, nested ones and submodules included) and each git directory (a bare `repo.git`, a
 * `--separate-git-dir` target, a common dir; not descended into). The whole tree is walked through verified
 * descriptors (O_NOFOLLOW: a link is never followed), holding one descriptor per level; each directory's listing is
 * cached by identity and version, so an unchanged tree costs one open and fstat per directory, and a changed
 * directory is listed again. At most MAX_REPOSITORY_SEARCH_DIRS directories and MAX_REPOSITORY_SEARCH_DEPTH levels
 * are looked at; beyond either, or at a directory the OS or the kernel wall does not let the server list, `capped` is
 * true and the caller fails closed. A work tree whose `.git` file cannot be read is returned in `undecidable`.
 */
function repositoriesInRoot(root: VerifiedDir): RepositorySearch {
  const repositories: Repository[] = [];
  const undecidable: string[] = [];
  let visited = 0;
  let capped = false;
  const visit = (dir: VerifiedDir, depth: number): void => {
    if (++visited > MAX_REPOSITORY_SEARCH_DIRS || depth > MAX_REPOSITORY_SEARCH_DEPTH) {
      capped = true;
      return;
    }
    let listing: Listing;
    try {
      listing = listingOf(dir);
    } catch (error) {
      if (!isPermissionError(error)) throw error;
      capped = true; // a directory the server may not list could hold a repository: searched no further, closed
      return;
    }
    if (bitCount(listing.members) >= 2) {
      repositories.push({ workTree: null, gitDir: dir.path });
      return; // a git directory: the file tools write nothing in it, and what it holds is git's own
    }
    if (listing.dotGit !== 'none') {
      try {
        const gitDir = gitDirOf(dir.path, listing.dotGit);
        if (gitDir) repositories.push({ workTree: dir.path, gitDir });
      } catch {
        undecidable.push(dir.path);
      }
    }
    for (const name of listing.subdirs) {
      let child: VerifiedDir;
      try {
        child = dir.openDir(name);
      } catch (error) {
        if (!isPermissionError(error)) continue; // gone, or replaced by a link or a file since the listing
        capped = true; // one the server may not open could hold a repository: closed, as for the caps
        return;
      }
      try {
        visit(child, depth + 1);
      } finally {
        child.close();
      }
      if (capped) return;
    }
  };
  visit(root, 0);
  return { repositories, undecidable, capped };
}
