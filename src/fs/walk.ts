/**
 * The directory walker shared by list_directory and search_files (SPEC §6.1). Depth-first, pre-order, names sorted
 * by code unit, so the order is deterministic and a cursor (the last path emitted) resumes exactly after it without
 * re-walking what came before. Symlinks are reported, never descended into, so every entry the walk yields lies
 * inside the directory it started from (containment is proven by construction; no per-entry realpath). `.gitignore`
 * files are honoured from the root down (whether or not the tree is a git work tree), `.git` is never descended
 * into, and an unreadable directory is skipped and reported, not fatal.
 *
 * Every directory is read through a verified descriptor (src/fs/verified-dir.ts): the walk opens the root, descends
 * to the base one O_NOFOLLOW component at a time (loading the .gitignore files on the way), and from there opens each
 * subdirectory relative to its parent's descriptor; names come from reading that descriptor and sizes and times from
 * lstat relative to it. A directory swapped for a link to elsewhere mid-walk is skipped as unreadable, and nothing
 * outside it is ever listed or stat'ed.
 *
 * Types come from the directory listing itself (d_type; Node lstats only where a file system does not report it), so a
 * walk that needs no sizes or times (search) makes no per-entry syscall at all. A walk that reports them (listing)
 * lstats only the entries it yields, synchronously: on this class of machine a synchronous lstat costs a few µs, a
 * promise-based one several times that in thread-pool round trips, and a 10,000-entry directory is 10,000 of them.
 * Every STAT_YIELD_EVERY synchronous lstats the walk yields to the event loop, so other calls are not held up.
 */
import { constants, type Dirent, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { compileToolGlob, patternBudget, type PatternBudget } from './glob/glob.js';
import { LIMITS } from './glob/engine.js';
import { GitignoreRules } from './glob/gitignore.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { isWithin } from './path-within.js';
import { VerifiedDir } from './verified-dir.js';
import { sharedListing } from './listing-cache.js';

/** An entry's type as the directory listing reports it (a symlink is a link, never its target). */
export type WalkType = 'file' | 'directory' | 'symlink' | 'other';

/** One entry found by a walk that does not stat (`stats: false`). */
export interface WalkItem {
  /** Path relative to the walk's base, `/`-separated. */
  relative: string;
  /** Absolute path (inside the base by construction: reached without following a link). */
  absolute: AllowedPath;
  /** Path relative to the sandbox root, `/`-separated (for policy globs). */
  rootRelative: string;
  /** From the directory listing (d_type). */
  type: WalkType;
  /** 1 for the base's direct children. */
  depth: number;
}

/** One entry found by the walk, with its lstat. */
export interface WalkEntry extends WalkItem {
  /** lstat of the entry (a symlink is reported as a link), taken as the entry is yielded. */
  stats: Stats;
}

/** Why the walk skipped something. */
export type WalkSkip = 'unreadable' | 'policy' | 'too_deep' | 'name_too_long' | 'ignore_rule';

/**
 * Why a directory could not be read (issue #14: no silent gaps): ENAMETOOLONG (the path is longer than the OS
 * accepts, PATH_MAX) is `name_too_long`; anything else (EACCES, ELOOP, vanished, …) is `unreadable`.
 */
export function skipReasonOf(error: unknown): WalkSkip {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENAMETOOLONG' ? 'name_too_long' : 'unreadable';
}

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
  /** lstat each yielded entry (default true); false yields WalkItems (type only, no per-entry syscall). */
  stats?: boolean;
  /**
   * True when maxDepth is a server limit rather than the caller's request: each directory not descended because of
   * it is reported to onSkip as `too_deep`.
   */
  depthIsLimit?: boolean;
}

/** Synchronous lstats between two yields to the event loop. */
const STAT_YIELD_EVERY = 256;

/**
 * The longest the walk runs on the event loop between two yields, ms. Checked every SLICE_CHECK_EVERY entries; one
 * entry's pattern work is bounded (src/fs/glob LIMITS: path length × the call's glob budget of 16,384 automaton states
 * and × the .gitignore budget of 32,768 per path, in the worst case), so the loop is held at most this slice plus
 * SLICE_CHECK_EVERY entries' work.
 */
export const WALK_SLICE_MS = 10;
const SLICE_CHECK_EVERY = 8;

/** Per-walk bookkeeping shared by the recursion. */
interface WalkRun {
  wantStats: boolean;
  statsSinceYield: number;
  entriesSinceCheck: number;
  sliceStart: number;
}

/** Largest .gitignore read, bytes (a bigger one is treated as absent). */
const MAX_IGNORE_BYTES = 1024 * 1024;

interface IgnoreLevel {
  /** Directory of the .gitignore, relative to rootReal, `/`-separated ('' for the root). */
  dir: string;
  matcher: GitignoreRules;
}

/** Compares names the way the walk orders them (code units), so cursors and order agree. */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Walks `base`, yielding entries in deterministic order. The consumer may stop early (break). With `stats: false`
 * the entries carry their type only (WalkItem); otherwise each has its lstat (WalkEntry), and an entry that vanished
 * before its lstat is left out.
 */
export function walkTree(options: WalkOptions & { stats: false }): AsyncGenerator<WalkItem>;
export function walkTree(options: WalkOptions): AsyncGenerator<WalkEntry>;
export async function* walkTree(options: WalkOptions): AsyncGenerator<WalkItem | WalkEntry> {
  const baseRootRel = toPosix(path.relative(options.rootReal, options.base));
  // Globs first: a pattern over the limits is refused before any IO.
  const budget = patternBudget();
  const include = globMatcher(options.include, options.nocase ?? false, 'include', budget);
  const exclude = globMatcher(options.exclude, options.nocase ?? false, 'exclude', budget);
  const run: WalkRun = {
    wantStats: options.stats !== false,
    statsSinceYield: 0,
    entriesSinceCheck: 0,
    sliceStart: performance.now(),
  };
  // From the root down to the base, one verified component at a time, with the .gitignore of each ancestor.
  const levels: IgnoreLevel[] = [];
  let dir = VerifiedDir.open(options.rootReal, (p) => isWithin(options.rootReal, p));
  try {
    const parts = baseRootRel === '' ? [] : baseRootRel.split('/');
    for (let i = 0; i < parts.length; i++) {
      if (options.respectGitignore) {
        const dirRel = parts.slice(0, i).join('/');
        // Above the base: reported by its path relative to the root.
        const level = await loadIgnore(
          options,
          dir,
          dirRel,
          dirRel ? `/${dirRel}/.gitignore` : '/.gitignore',
          chainBudget(levels),
        );
        if (level) levels.push(level);
      }
      const next = dir.openDir(parts[i]);
      dir.close();
      dir = next;
    }
    yield* walkDir(
      options,
      run,
      dir,
      options.base,
      '',
      baseRootRel,
      1,
      levels,
      options.resume ?? null,
      include,
      exclude,
    );
  } finally {
    dir.close();
  }
}

/** The type a directory entry reports (Node resolves an unknown d_type with lstat). */
function direntType(d: Dirent): WalkType {
  if (d.isFile()) return 'file';
  if (d.isDirectory()) return 'directory';
  if (d.isSymbolicLink()) return 'symlink';
  return 'other';
}

/**
 * lstat (relative to the verified directory) without the thread pool; null when the entry is gone, else the skip
 * reason when it cannot be stat'ed (issue #14: ENAMETOOLONG and the like are reported, not dropped). Yields to the
 * loop now and then.
 */
async function statNow(run: WalkRun, dir: VerifiedDir, name: string): Promise<Stats | null | WalkSkip> {
  if (++run.statsSinceYield >= STAT_YIELD_EVERY) {
    run.statsSinceYield = 0;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  try {
    return dir.lstat(name);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? null : skipReasonOf(error);
  }
}

/**
 * A predicate over `/`-separated relative paths for globs (micromatch dialect, linear-time: src/fs/glob), or null for
 * none. A glob without a `/` matches the basename at any depth (`*.ts` finds `src/a.ts`), as in .gitignore and
 * ripgrep's --glob. Each glob is compiled once, here.
 * @param field the argument the globs came from, for the error (`glob`, `include`, `exclude`)
 * @param budget the call's pattern budget (LIMITS.callStates), shared by all its globs
 * @throws ToolError VALIDATION reason pattern_too_complex for a glob over the limits
 */
export function globMatcher(
  globs: readonly string[] | undefined,
  nocase: boolean,
  field = 'glob',
  budget?: PatternBudget,
): ((s: string) => boolean) | null {
  if (!globs || globs.length === 0) return null;
  const matchers = globs.map((g) => compileToolGlob(g, { nocase, basename: true }, field, budget));
  if (matchers.length === 1) return matchers[0];
  return (s) => matchers.some((m) => m(s));
}

/**
 * A promise to await when the walk has held the event loop for WALK_SLICE_MS (checked every SLICE_CHECK_EVERY
 * entries), else null (no await, no microtask, on the hot path). Awaiting it lets other calls be answered while a long
 * walk, or one with expensive patterns, runs.
 */
function yieldIfDue(run: WalkRun): Promise<void> | null {
  if (++run.entriesSinceCheck < SLICE_CHECK_EVERY) return null;
  run.entriesSinceCheck = 0;
  if (performance.now() - run.sliceStart < WALK_SLICE_MS) return null;
  return new Promise<void>((resolve) =>
    setImmediate(() => {
      run.sliceStart = performance.now();
      resolve();
    }),
  );
}

async function* walkDir(
  o: WalkOptions,
  run: WalkRun,
  dir: VerifiedDir,
  dirAbs: AllowedPath,
  dirRel: string,
  dirRootRel: string,
  depth: number,
  levels: IgnoreLevel[],
  resume: { components: readonly string[]; inclusive: boolean } | null,
  include: ((s: string) => boolean) | null,
  exclude: ((s: string) => boolean) | null,
): AsyncGenerator<WalkItem | WalkEntry> {
  if (o.signal?.aborted) return;
  let dirents: readonly Dirent[];
  let names: readonly string[];
  try {
    // Issue #14: one sorted listing per directory state, shared by pages and concurrent calls (src/fs/listing-cache.ts),
    // read and identified through the verified descriptor.
    // A walk without stats (search) reads synchronously: its directories are mostly small, and a thread-pool round
    // trip per directory left the search's reader threads waiting (issue #19). The slice check below still bounds
    // how long the loop is held between yields.
    ({ dirents, names } = await sharedListing(
      dir.path,
      run.wantStats ? () => dir.readdir() : () => new Promise<Dirent[]>((resolve) => resolve(dir.readdirNow())),
      dir.fd,
    ));
  } catch (error) {
    o.onSkip?.(skipReasonOf(error), dirRel || '.');
    return;
  }
  let myLevels = levels;
  const ignoreAt = o.respectGitignore ? sortedIndexOf(names, '.gitignore') : -1;
  if (ignoreAt >= 0 && dirents[ignoreAt].isFile()) {
    const level = await loadIgnore(
      o,
      dir,
      dirRootRel,
      dirRel ? `${dirRel}/.gitignore` : '.gitignore',
      chainBudget(levels),
    );
    if (level) myLevels = [...levels, level];
  }
  // (a readdir is a yield: the slice starts again after it)
  run.sliceStart = performance.now();
  const dirDepth = dirRel === '' ? 0 : dirRel.split('/').length;
  // Resume: what sorts before the cursor at this level is a prefix of `names`; it is skipped without any IO.
  let first = 0;
  if (resume) {
    // Binary search (the names are sorted): a late page of a huge directory does not compare its way there.
    const wanted = resume.components[dirDepth];
    let hi = names.length;
    while (first < hi) {
      const mid = (first + hi) >>> 1;
      if (compareNames(names[mid], wanted) < 0) first = mid + 1;
      else hi = mid;
    }
  }
  for (let i = first; i < names.length; i++) {
    const name = names[i];
    const due = yieldIfDue(run);
    if (due) await due;
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
        else {
          emit = false;
          childResume = resume;
        }
      }
      // cmp > 0: everything from here on comes after the cursor.
    }
    const relative = dirRel ? `${dirRel}/${name}` : name;
    const absolute = childOf(dirAbs, name);
    const rootRelative = dirRootRel ? `${dirRootRel}/${name}` : name;
    const type = direntType(dirents[i]);
    const isDir = type === 'directory';
    if (o.filter(absolute, rootRelative) === 'omit') {
      o.onSkip?.('policy', relative);
      continue;
    }
    if (myLevels.length && isIgnored(myLevels, rootRelative, isDir)) continue;
    if (exclude && exclude(relative)) continue;
    const matchesInclude = !include || include(relative);
    if (emit && matchesInclude) {
      if (run.wantStats) {
        const stats = await statNow(run, dir, name);
        if (!stats) continue; // vanished between readdir and lstat
        if (typeof stats === 'string') {
          o.onSkip?.(stats, relative);
          continue;
        }
        yield { relative, absolute, rootRelative, type, stats, depth };
      } else {
        yield { relative, absolute, rootRelative, type, depth };
      }
    }
    if (isDir && depth < o.maxDepth && name !== '.git') {
      let child: VerifiedDir;
      try {
        child = dir.openDir(name);
      } catch {
        // Gone, or swapped for a link since the listing: never followed.
        o.onSkip?.('unreadable', relative);
        continue;
      }
      try {
        yield* walkDir(
          o,
          run,
          child,
          absolute,
          relative,
          rootRelative,
          depth + 1,
          myLevels,
          childResume,
          include,
          exclude,
        );
      } finally {
        child.close();
      }
    } else if (isDir && o.depthIsLimit && name !== '.git' && (emit || childResume)) {
      o.onSkip?.('too_deep', relative);
    }
  }
}

/** Index of `name` in the sorted `names` (binary search), or -1. */
function sortedIndexOf(names: readonly string[], name: string): number {
  let lo = 0;
  let hi = names.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareNames(names[mid], name) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < names.length && names[lo] === name ? lo : -1;
}

/**
 * Reads one .gitignore. Only a regular file counts: it is opened without following a symlink (git, too, ignores a
 * symlinked .gitignore; following one could read outside the roots) and non-blocking (a FIFO named .gitignore would
 * otherwise hang the open forever), and a file over MAX_IGNORE_BYTES is skipped. A line over the pattern limits is
 * not applied (it matches nothing) and reported through onSkip('ignore_rule', shown).
 */
async function loadIgnore(
  o: WalkOptions,
  dir: VerifiedDir,
  dirRootRel: string,
  shown: string,
  budget: number,
): Promise<IgnoreLevel | null> {
  let handle: FileHandle | null = null;
  try {
    handle = await dir.openFile('.gitignore', { flags: constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) });
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > MAX_IGNORE_BYTES) return null;
    const text = await handle.readFile('utf8');
    const matcher = new GitignoreRules(text, budget);
    for (let k = 0; k < matcher.skipped; k++) o.onSkip?.('ignore_rule', shown);
    return matcher.size > 0 ? { dir: dirRootRel, matcher } : null;
  } catch {
    return null;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Automaton states the next .gitignore down may use: what the ones above it left of LIMITS.gitignoreChainStates. */
function chainBudget(levels: readonly IgnoreLevel[]): number {
  let used = 0;
  for (const level of levels) used += level.matcher.states;
  return Math.max(0, LIMITS.gitignoreChainStates - used);
}

/** Deepest .gitignore with a verdict wins (a deeper `!pattern` re-includes), as git decides. */
function isIgnored(levels: readonly IgnoreLevel[], rootRelative: string, isDir: boolean): boolean {
  for (let i = levels.length - 1; i >= 0; i--) {
    const level = levels[i];
    const rel = level.dir === '' ? rootRelative : rootRelative.slice(level.dir.length + 1);
    if (!rel) continue;
    const result = level.matcher.test(rel, isDir);
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

function toPosix(p: string): string {
  return path.sep === '\\' ? p.split('\\').join('/') : p;
}

/**
 * A directory entry of an allowed directory, reached by name without following any link. Containment holds by
 * construction (the walker never descends into symlinks). `name` must be a single component from readdir.
 */
export function childOf(directory: AllowedPath, name: string): AllowedPath {
  if (
    name === '' ||
    name === '.' ||
    name === '..' ||
    name.includes('/') ||
    name.includes(path.sep) ||
    name.includes('\0')
  ) {
    throw new Error(`childOf: not a directory entry name: ${JSON.stringify(name)}`);
  }
  // An allowed directory is a real path (no `.`, `..` or doubled separators), so on POSIX joining is concatenation;
  // path.join's normalisation was a per-entry cost of every walk (issue #19).
  if (path.sep === '/' && directory.length > 1 && !directory.endsWith('/'))
    return `${directory}/${name}` as AllowedPath;
  return path.join(directory, name) as AllowedPath;
}
