/**
 * The process-wide state of the git-directory guard (src/policy/git-dirs.ts, docs/security.md "Execution-bearing
 * files and git directories"), in one object: the caches of directory facts, root listings, parsed configuration files
 * and whole-root repository searches, each keyed by identity and version so a change is seen, and the readable scope
 * of the check running now. `clearGitDirCache` drops all of it (tests).
 */
import { processSlot } from '../process-slots.js';
import type { UserHooks } from './git-hooks-config.js';
import type { PathStamps } from './path-stamps.js';

/** A directory or file changed less than this long ago (ms) is not cached. */
export const RACY_MS = 2000;
/** Most entries of each cache (the listing cache holds four times as many); a full cache is cleared. */
export const CACHE_MAX = 4096;

/** What one directory holds that matters here. */
export interface DirFacts {
  /** Which of REPOSITORY_ENTRY_NAMES are present (bit i: name i). */
  members: number;
  /** The `.git` entry: none, a directory (or link), or a file. */
  dotGit: 'none' | 'dir' | 'link' | 'file' | 'other';
}

/** DirFacts with the version (mtime, ctime in ms) they were read at. */
export interface CachedFacts extends DirFacts {
  mtimeMs: number;
  ctimeMs: number;
}

/** What the repository search keeps per directory: its subdirectory names and repository facts. */
export interface Listing extends CachedFacts {
  subdirs: string[];
}

/** A repository whose configuration may name a hooks directory. */
export interface Repository {
  /** The work tree top (where hooks run), or null for a bare repository. */
  workTree: string | null;
  /** Its git directory (real path where it resolved). */
  gitDir: string;
}

/** What the search of one root found (src/policy/git-repository-search.ts). */
export interface RepositorySearch {
  repositories: Repository[];
  /** Work trees whose `.git` file cannot be read. */
  undecidable: string[];
  /** True when the search stopped at a cap or at a directory it may not list (the caller fails closed). */
  capped: boolean;
}

/** The guard's process-wide state. */
export interface GitDirState {
  /** Directory facts by `dev:ino`, valid while mtime and ctime are unchanged. */
  readonly dirs: Map<string, CachedFacts>;
  /** Directory listings of the repository search by `dev:ino`, valid while mtime and ctime are unchanged. */
  readonly listings: Map<string, Listing>;
  /** Parsed configuration files by path, valid while `dev:ino:size:mtime:ctime` is unchanged (null: git refuses it). */
  readonly configs: Map<string, { sig: string; list: Map<string, string[]> | null }>;
  /** Each root's repository search by the root's `dev:ino`, reused until `until` (ms since the epoch). */
  readonly searches: Map<string, RepositorySearch & { until: number }>;
  /**
   * The user's and the system's configuration as `userHooks` last read it, reused while the files' list and
   * readability scope (`key`) are the same and every component of their paths lstats to its stamp (path-stamps.ts);
   * null when none is kept.
   */
  user: { key: string; stamps: PathStamps; hooks: UserHooks } | null;
  /**
   * The roots of the check running now (set by `inspect`, which is synchronous from start to end, so no other check
   * interleaves). A file outside them that the kernel wall does not let the server read (EACCES, EPERM: the system
   * configuration, a repository above the roots, the common dir of a work tree whose repository lies outside) is
   * taken as absent — the server cannot see it, and refusing every write under the wall would make the wall
   * unusable; docs/security.md says so. Inside the roots an unreadable file still fails closed.
   */
  readableScope: (p: string) => boolean;
}

/** The one state object of the guard (src/process-slots.ts). */
export const gitDirState = processSlot('policy/git-dirs-state', (): GitDirState => ({
  dirs: new Map(),
  listings: new Map(),
  configs: new Map(),
  searches: new Map(),
  user: null,
  readableScope: () => true,
}));

/** Drops every cached directory verdict (tests). */
export function clearGitDirCache(): void {
  gitDirState.dirs.clear();
  gitDirState.listings.clear();
  gitDirState.configs.clear();
  gitDirState.searches.clear();
  gitDirState.user = null;
}

/** Forgets every root's list of repositories (tests: a verdict that must see a repository created just before). */
export function clearRepositorySearchCache(): void {
  gitDirState.searches.clear();
}

/** True when a version (mtime, ctime in ms) is too recent to cache: a coarse timestamp could hide a change. */
export function isRacy(mtimeMs: number, ctimeMs: number): boolean {
  return Date.now() - Math.max(mtimeMs, ctimeMs) < RACY_MS;
}
