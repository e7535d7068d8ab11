/**
 * The directory walker shared by list_directory and search_files (SPEC §6.1). Depth-first, pre-order, names sorted
 * by code unit, so the order is deterministic and a cursor (the last path emitted) resumes exactly after it without
 * re-walking what came before. Symlinks are reported, never descended into, so every entry the walk yields lies
 * inside the directory it started from (containment is proven by construction; no per-entry realpath). `.gitignore`
 * files are honoured from the root down (whether or not the tree is a git work tree), `.git` is never descended
 * into, and an unreadable directory is skipped and reported, not fatal.
 */
import { constants, type Dirent, type Stats } from 'node:fs';
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import ignore, { type Ignore } from 'ignore';
import micromatch from 'micromatch';
import { childOf, type AllowedPath } from '../policy/resolve-path.js';

/** One entry found by the walk. */
export interface WalkEntry {
  /** Path relative to the walk's base, `/`-separated. */
  relative: string;
  /** Absolute path (inside the base by construction: reached without following a link). */
  absolute: AllowedPath;
  /** Path relative to the sandbox root, `/`-separated (for policy globs). */
  rootRelative: string;
  /** lstat of the entry (a symlink is reported as a link). */
  stats: Stats;
  /** 1 for the base's direct children. */
  depth: number;
}

/** Why the walk skipped something. */
export type WalkSkip = 'unreadable' | 'policy';

/** Options of `walkTree`. */
export interface WalkOptions {
  /** Directory to walk (authorized by policy). */
  base: AllowedPath;
  /** The sandbox root containing `base` (real path); .gitignore files are read from here down. */
  rootReal: string;
  /** 1 = direct children only. */
  maxDepth: number;
  respectGitignore: boolean;
  /** micromatch globs relative to base: an entry must match one (directories are always descended). */
  include?: readonly string[];
  /** micromatch globs relative to base: matching entries are skipped (directories not descended). */
  exclude?: readonly string[];
  /** Resume point: the relative path (components) of a previously emitted entry. */
  resume?: { components: readonly string[]; inclusive: boolean } | null;
  /** Policy verdict for an entry: 'omit' (hidden/denied: neither yielded nor descended) or 'ok'. */
  filter: (absolute: string, rootRelative: string) => 'ok' | 'omit';
  /** Called for each skipped directory or entry. */
  onSkip?: (reason: WalkSkip, relative: string) => void;
  signal?: AbortSignal;
  /** Case-insensitive globs (Windows, macOS). */
  nocase?: boolean;
}

/** How many lstat calls a directory walk keeps in flight ahead of the entry being yielded. */
const LSTAT_AHEAD = 32;

/** Largest .gitignore read, bytes (a bigger one is treated as absent). */
const MAX_IGNORE_BYTES = 1024 * 1024;

interface IgnoreLevel {
  /** Directory of the .gitignore, relative to rootReal, `/`-separated ('' for the root). */
  dir: string;
  matcher: Ignore;
}

/** Compares names the way the walk orders them (code units), so cursors and order agree. */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Walks `base`, yielding entries in deterministic order. The consumer may stop early (break).
 */
export async function* walkTree(options: WalkOptions): AsyncGenerator<WalkEntry> {
  const baseRootRel = toPosix(path.relative(options.rootReal, options.base));
  const levels: IgnoreLevel[] = options.respectGitignore ? await ancestorIgnores(options.rootReal, baseRootRel) : [];
  const include = globMatcher(options.include, options.nocase ?? false);
  const exclude = globMatcher(options.exclude, options.nocase ?? false);
  yield* walkDir(options, options.base, '', baseRootRel, 1, levels, options.resume ?? null, include, exclude);
}

/**
 * A predicate over `/`-separated relative paths for micromatch globs, or null for none. A glob without a `/` matches
 * the basename at any depth (`*.ts` finds `src/a.ts`), as in .gitignore and ripgrep's --glob.
 */
export function globMatcher(globs: readonly string[] | undefined, nocase: boolean): ((s: string) => boolean) | null {
  if (!globs || globs.length === 0) return null;
  const matchers = globs.map((g) => micromatch.matcher(g, { dot: true, nocase, basename: !g.includes('/') }));
  return (s) => matchers.some((m) => m(s));
}

async function* walkDir(
  o: WalkOptions, dirAbs: AllowedPath, dirRel: string, dirRootRel: string, depth: number, levels: IgnoreLevel[],
  resume: { components: readonly string[]; inclusive: boolean } | null,
  include: ((s: string) => boolean) | null, exclude: ((s: string) => boolean) | null,
): AsyncGenerator<WalkEntry> {
  if (o.signal?.aborted) return;
  let dirents: Dirent[];
  try {
    dirents = await readdir(dirAbs, { withFileTypes: true });
  } catch {
    o.onSkip?.('unreadable', dirRel || '.');
    return;
  }
  let myLevels = levels;
  if (o.respectGitignore && dirents.some((d) => d.name === '.gitignore' && d.isFile())) {
    const level = await loadIgnore(path.join(dirAbs, '.gitignore'), dirRootRel);
    if (level) myLevels = [...levels, level];
  }
  const names = dirents.map((d) => d.name).sort(compareNames);
  const dirDepth = dirRel === '' ? 0 : dirRel.split('/').length;
  // Resume: what sorts before the cursor at this level is a prefix of `names`; it is skipped without any IO.
  let first = 0;
  if (resume) {
    const wanted = resume.components[dirDepth];
    while (first < names.length && compareNames(names[first], wanted) < 0) first++;
  }
  // lstat runs ahead of the consumer, LSTAT_AHEAD entries at a time: one awaited lstat after another left the thread
  // pool idle most of the time (a 50,000-entry walk took seconds). Entries are still yielded one by one, in order.
  const pending: Array<Promise<Stats | null> | undefined> = [];
  for (let i = first; i < names.length; i++) {
    for (let j = i; j < names.length && j < i + LSTAT_AHEAD; j++) {
      pending[j] ??= lstat(childOf(dirAbs, names[j])).catch(() => null);
    }
    const name = names[i];
    if (o.signal?.aborted) return;
    // Resume: skip what sorts before the cursor at this level.
    let childResume: typeof resume = null;
    let emit = true;
    if (resume) {
      const wanted = resume.components[dirDepth];
      const cmp = compareNames(name, wanted);
      if (cmp < 0) continue;
      if (cmp === 0) {
        const isCursorItself = dirDepth === resume.components.length - 1;
        if (isCursorItself) emit = resume.inclusive;
        else { emit = false; childResume = resume; }
      }
      // cmp > 0: everything from here on comes after the cursor.
    }
    const relative = dirRel ? `${dirRel}/${name}` : name;
    const absolute = childOf(dirAbs, name);
    const rootRelative = dirRootRel ? `${dirRootRel}/${name}` : name;
    const stats = await pending[i];
    pending[i] = undefined;
    if (!stats) continue; // vanished between readdir and lstat
    const isDir = stats.isDirectory();
    if (o.filter(absolute, rootRelative) === 'omit') {
      o.onSkip?.('policy', relative);
      continue;
    }
    if (myLevels.length && isIgnored(myLevels, rootRelative, isDir)) continue;
    if (exclude && exclude(relative)) continue;
    const matchesInclude = !include || include(relative);
    if (emit && matchesInclude) {
      yield { relative, absolute, rootRelative, stats, depth };
    }
    if (isDir && depth < o.maxDepth && name !== '.git') {
      yield* walkDir(o, absolute, relative, rootRelative, depth + 1, myLevels, childResume, include, exclude);
    }
  }
}

/** Loads .gitignore files of the directories from the root down to (not including) the base's own directory. */
async function ancestorIgnores(rootReal: string, baseRootRel: string): Promise<IgnoreLevel[]> {
  const levels: IgnoreLevel[] = [];
  const parts = baseRootRel === '' ? [] : baseRootRel.split('/');
  // The base's own .gitignore is loaded by walkDir; its ancestors' (root .. parent) here.
  for (let i = 0; i < parts.length; i++) {
    const dirRel = parts.slice(0, i).join('/');
    const level = await loadIgnore(path.join(rootReal, ...parts.slice(0, i), '.gitignore'), dirRel);
    if (level) levels.push(level);
  }
  return levels;
}

/**
 * Reads one .gitignore. Only a regular file counts: it is opened without following a symlink (git, too, ignores a
 * symlinked .gitignore; following one could read outside the roots) and non-blocking (a FIFO named .gitignore would
 * otherwise hang the open forever), and a file over MAX_IGNORE_BYTES is skipped.
 */
async function loadIgnore(file: string, dirRootRel: string): Promise<IgnoreLevel | null> {
  let handle: FileHandle | null = null;
  try {
    handle = await open(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > MAX_IGNORE_BYTES) return null;
    const text = await handle.readFile('utf8');
    return { dir: dirRootRel, matcher: ignore().add(text) };
  } catch {
    return null;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Deepest .gitignore with a verdict wins (a deeper `!pattern` re-includes), as git decides. */
function isIgnored(levels: readonly IgnoreLevel[], rootRelative: string, isDir: boolean): boolean {
  for (let i = levels.length - 1; i >= 0; i--) {
    const level = levels[i];
    const rel = level.dir === '' ? rootRelative : rootRelative.slice(level.dir.length + 1);
    if (!rel) continue;
    const result = level.matcher.test(isDir ? `${rel}/` : rel);
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

function toPosix(p: string): string {
  return path.sep === '\\' ? p.split('\\').join('/') : p;
}
