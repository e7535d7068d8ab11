/**
 * The directory walker shared by list_directory and search_files (docs/tools.md). Depth-first, pre-order, names sorted
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
 * walk that needs no sizes or times (search, a listing without `long`) makes no per-entry syscall at all (Node
 * resolves an unknown d_type, DT_UNKNOWN, with an lstat relative to the same verified descriptor). A walk that
 * reports them (a `long` listing) lstats only the entries it yields, synchronously: on this class of machine a
 * synchronous lstat costs a few µs, a promise-based one several times that in thread-pool round trips, and a
 * 10,000-entry directory is 10,000 of them.
 * Every STAT_YIELD_EVERY synchronous lstats the walk yields to the event loop, so other calls are not held up. For the
 * same reason a small directory is read synchronously too (SYNC_READDIR_MAX_BYTES), a large one in the thread pool.
 */
import { closeSync, constants, fstatSync, type Dirent, type Stats } from 'node:fs';
import path from 'node:path';
import { compileToolGlob, patternBudget, type PatternBudget } from './glob/glob.js';
import { LIMITS } from './glob/engine.js';
import { sharedGitignoreRules, type GitignoreRules } from './glob/gitignore.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { readWholeSync } from './open-file.js';
import { isWithin, MAX_PATH_COMPONENTS, pathComponentCount } from './path-within.js';
import { VerifiedDir } from './verified-dir.js';
import { ignoreDirsOf, PlainItem, WalkSettings, withLevel } from './walk-shapes.js';
import { sharedListing, SMALL_DIRECTORY_BYTES, smallListing, SYNC_READDIR_MAX_BYTES } from './listing-cache.js';

/** An entry's type as the directory listing reports it (a symlink is a link, never its target). */
export type WalkType = 'file' | 'directory' | 'symlink' | 'other';

/** The special file types a directory listing distinguishes within `other`. */
export type SpecialType = 'fifo' | 'socket' | 'block_device' | 'char_device';

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
  /**
   * Which special file an `other` entry is, from the same d_type (no syscall); absent for the four common types and
   * when the listing does not say.
   */
  special?: SpecialType;
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
 * Why a directory could not be read (no silent gaps): ENAMETOOLONG (the path is longer than the OS
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
  /**
   * Policy verdict for an entry: 'omit' (hidden/denied: neither yielded nor descended) or 'ok'. `name` is its last
   * component (already a flat string: reading it costs nothing, where reading a new path string copies it).
   */
  filter: (absolute: string, rootRelative: string, name: string) => 'ok' | 'omit';
  /**
   * The policy's minting of an entry's path (src/policy/resolve-path.ts `childOf`): a directory entry of an allowed
   * directory, reached without following a link, is allowed. Only policy mints `AllowedPath`.
   */
  childOf: (directory: AllowedPath, name: string) => AllowedPath;
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
  /**
   * When given, each entry is handed to `sink` in walk order (right after `filter` was asked about it, exactly where
   * it would be yielded), with its last path component `name` and its directory's absolute path `parent` (one string
   * for every entry of a directory), and the walk yields nothing; `false` (or a promise of
   * it) stops the walk. One async-iteration step per entry (two generator levels) cost a names-and-types
   * listing a sixth of its time.
   */
  sink?: (item: WalkItem | WalkEntry, name: string, parent: string) => boolean | Promise<boolean>;
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
  /** Set when the sink (WalkOptions.sink) asked to stop: every level returns. */
  stopped: boolean;
  /**
   * WalkOptions.signal's `aborted`, kept by its abort listener: read per entry, where reading the signal itself was
   * a V8 map check that failed on every call (each AbortSignal of Node 20 has a map of its own), so the walk's loop was
   * deoptimized and compiled again.
   */
  aborted: boolean;
  wantStats: boolean;
  statsSinceYield: number;
  entriesSinceCheck: number;
  sliceStart: number;
  /** The include and exclude globs, compiled once (null: none). */
  include: ((s: string) => boolean) | null;
  exclude: ((s: string) => boolean) | null;
  /** The deepest frame whose entries stay within MAX_PATH_COMPONENTS (deeper: `too_deep`, docs/security.md). */
  deepestFrame: number;
}

/** Largest .gitignore read, bytes (a bigger one is treated as absent). */
const MAX_IGNORE_BYTES = 1024 * 1024;

/** One .gitignore in force: its directory and its compiled rules. */
export interface IgnoreLevel {
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
export function walkTree(options: WalkOptions & { stats: boolean }): AsyncGenerator<WalkItem | WalkEntry>;
export function walkTree(options: WalkOptions): AsyncGenerator<WalkEntry>;
export async function* walkTree(given: WalkOptions): AsyncGenerator<WalkItem | WalkEntry> {
  // One object shape for every caller (see WalkSettings): the walk reads these options per entry.
  const options = given instanceof WalkSettings ? given : new WalkSettings(given, given.sink);
  const baseRootRel = toPosix(path.relative(options.rootReal, options.base));
  // Globs first: a pattern over the limits is refused before any IO.
  const budget = patternBudget();
  const include = globMatcher(options.include, options.nocase ?? false, 'include', budget);
  const exclude = globMatcher(options.exclude, options.nocase ?? false, 'exclude', budget);
  const signal = options.signal;
  const run: WalkRun = {
    stopped: false,
    aborted: signal?.aborted ?? false,
    wantStats: options.stats !== false,
    statsSinceYield: 0,
    entriesSinceCheck: 0,
    sliceStart: performance.now(),
    include,
    exclude,
    deepestFrame: MAX_PATH_COMPONENTS - pathComponentCount(options.base),
  };
  // From the root down to the base, one verified component at a time, with the .gitignore of each ancestor.
  const levels: IgnoreLevel[] = [];
  let dir = VerifiedDir.open(options.rootReal, (p) => isWithin(options.rootReal, p));
  const onAbort = () => {
    run.aborted = true;
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const parts = baseRootRel === '' ? [] : baseRootRel.split('/');
    for (let i = 0; i < parts.length; i++) {
      if (options.respectGitignore) {
        const dirRel = parts.slice(0, i).join('/');
        // Above the base: reported by its path relative to the root.
        const level = loadIgnore(
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
    if (run.deepestFrame < 1) {
      // The base's own entries would be deeper than any tool resolves.
      options.onSkip?.('too_deep', '');
      return;
    }
    // An AllowedPath is normalized (policy's real path), so every childOf below may join by concatenation.
    yield* walkDir(options, run, {
      dir,
      abs: options.base,
      rel: '',
      rootRel: baseRootRel,
      depth: 1,
      levels,
      resume: options.resume ?? null,
    });
  } finally {
    signal?.removeEventListener('abort', onAbort);
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

/** The special type of an `other` entry (d_type), or undefined when the listing does not say. */
function specialType(d: Dirent): SpecialType | undefined {
  if (d.isFIFO()) return 'fifo';
  if (d.isSocket()) return 'socket';
  if (d.isBlockDevice()) return 'block_device';
  if (d.isCharacterDevice()) return 'char_device';
  return undefined;
}

/**
 * lstat (relative to the verified directory) without the thread pool; null when the entry is gone, else the skip
 * reason when it cannot be stat'ed (ENAMETOOLONG and the like are reported, not dropped). Yields to the
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
 * Runs a walk with a sink (WalkOptions.sink): each entry goes to `sink` in walk order; resolves when the walk is
 * done or the sink returned false.
 */
export async function walkInto(
  options: Omit<WalkOptions, 'sink'>,
  sink: NonNullable<WalkOptions['sink']>,
): Promise<void> {
  // With a sink the walk yields nothing: this only drives it. The options are copied into a WalkSettings, not spread
  // with `sink` after them: V8 (Node 20) gave every `{ ...options, sink }` a map of its own, so each call deoptimized
  // the walk's loop (it reads these options per entry) and it was compiled again, call after call.
  for await (const _ of walkTree(new WalkSettings(options, sink))) {
    /* nothing is yielded */
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

/** Where the walk resumes (WalkOptions.resume). */
type Resume = { components: readonly string[]; inclusive: boolean };

/** One directory of the walk: its verified descriptor, its paths, its depth and what applies in it. */
interface DirFrame {
  dir: VerifiedDir;
  /** Absolute path (an entry of an allowed directory, minted by policy). */
  abs: AllowedPath;
  /** Relative to the walk's base ('' for the base). */
  rel: string;
  /** Relative to the root. */
  rootRel: string;
  /** Depth of this directory's entries (1 for the base's). */
  depth: number;
  /** The .gitignore levels above this directory. */
  levels: IgnoreLevel[];
  resume: Resume | null;
}

/**
 * The sorted listing of a frame's directory, or null when it cannot be read (reported to onSkip).
 * One sorted listing per directory state, shared by pages and concurrent calls (src/fs/listing-cache.ts),
 * read and identified through the verified descriptor (one fstat, which also gives the size). A small directory
 * (SMALL_DIRECTORY_BYTES) is read on this thread with no await, through the cache of small listings; a larger one
 * through the shared cache, read on this thread up to SYNC_READDIR_MAX_BYTES and in the pool above.
 */
async function listingOf(
  o: WalkOptions,
  f: DirFrame,
): Promise<{ dirents: readonly Dirent[]; names: readonly string[] } | null> {
  const dir = f.dir;
  try {
    const st = fstatSync(dir.fd, { bigint: true });
    const size = Number(st.size);
    return size <= SMALL_DIRECTORY_BYTES
      ? smallListing(dir.path, dir.fd, st, () => dir.readdirSync())
      : await sharedListing(
          dir.path,
          () => (size <= SYNC_READDIR_MAX_BYTES ? Promise.resolve(dir.readdirSync()) : dir.readdir()),
          dir.fd,
        );
  } catch (error) {
    o.onSkip?.(skipReasonOf(error), f.rel || '.');
    return null;
  }
}

/** The first index of the sorted `names` that does not sort before `wanted` (binary search). */
function firstNotBefore(names: readonly string[], wanted: string): number {
  let first = 0;
  let hi = names.length;
  while (first < hi) {
    const mid = (first + hi) >>> 1;
    if (compareNames(names[mid], wanted) < 0) first = mid + 1;
    else hi = mid;
  }
  return first;
}

/** Where an entry stands against the resume cursor: skipped (null), or whether it is emitted and resumes below. */
const AFTER_CURSOR = { emit: true, childResume: null } as const;
function againstCursor(
  resume: Resume,
  dirDepth: number,
  name: string,
): { emit: boolean; childResume: Resume | null } | null {
  const cmp = compareNames(name, resume.components[dirDepth]);
  if (cmp < 0) return null;
  if (cmp > 0) return AFTER_CURSOR; // everything from here on comes after the cursor
  if (dirDepth === resume.components.length - 1) return { emit: resume.inclusive, childResume: null };
  return { emit: false, childResume: resume };
}

/** The item for an entry without stats (type and, for `other`, the special type from the listing). */
function plainItem(f: DirFrame, d: Dirent, relative: string, absolute: AllowedPath, rootRelative: string): WalkItem {
  const type = direntType(d);
  return new PlainItem(relative, absolute, rootRelative, type, type === 'other' ? specialType(d) : undefined, f.depth);
}

/**
 * Hands `item` to the sink: true, the walk goes on; false, it stops. Synchronous when the sink answers synchronously
 * (one call per entry of every walk: an async function here costs a promise and a microtask per entry on the main
 * thread's critical path).
 */
function handOver(
  o: WalkOptions,
  run: WalkRun,
  item: WalkItem | WalkEntry,
  name: string,
  parent: AllowedPath,
): boolean | Promise<boolean> {
  const go = o.sink!(item, name, parent);
  if (go === true) return true;
  if (go === false) {
    run.stopped = true;
    return false;
  }
  return go.then((v) => {
    if (!v) run.stopped = true;
    return v;
  });
}

async function* walkDir(o: WalkOptions, run: WalkRun, f: DirFrame): AsyncGenerator<WalkItem | WalkEntry> {
  if (run.aborted) return;
  const listing = await listingOf(o, f);
  if (!listing) return;
  const { dirents, names } = listing;
  let levels = f.levels;
  const ignoreAt = o.respectGitignore ? sortedIndexOf(names, '.gitignore') : -1;
  if (ignoreAt >= 0 && dirents[ignoreAt].isFile()) {
    const shown = f.rel ? `${f.rel}/.gitignore` : '.gitignore';
    const level = loadIgnore(o, f.dir, f.rootRel, shown, chainBudget(f.levels));
    if (level) levels = withLevel(f.levels, level);
  }
  const ignoreDirs = ignoreDirsOf(levels, f.rootRel);
  // (a readdir is a yield: the slice starts again after it)
  run.sliceStart = performance.now();
  const dirDepth = f.rel === '' ? 0 : f.rel.split('/').length;
  // Resume: what sorts before the cursor at this level is a prefix of `names`; it is skipped without any IO (binary
  // search: a late page of a huge directory does not compare its way there).
  const first = f.resume ? firstNotBefore(names, f.resume.components[dirDepth]) : 0;
  for (let i = first; i < names.length; i++) {
    const name = names[i];
    const due = yieldIfDue(run);
    if (due) await due;
    if (run.aborted) return;
    const place = f.resume ? againstCursor(f.resume, dirDepth, name) : AFTER_CURSOR;
    if (place === null) continue;
    const relative = f.rel ? `${f.rel}/${name}` : name;
    const absolute = o.childOf(f.abs, name);
    const rootRelative = f.rootRel ? `${f.rootRel}/${name}` : name;
    const isDir = dirents[i].isDirectory();
    if (o.filter(absolute, rootRelative, name) === 'omit') {
      o.onSkip?.('policy', relative);
      continue;
    }
    if (levels.length && isIgnored(levels, ignoreDirs, name, isDir)) continue;
    if (run.exclude && run.exclude(relative)) continue;
    if (place.emit && (!run.include || run.include(relative))) {
      let item: WalkItem | WalkEntry;
      if (run.wantStats) {
        const stats = await statNow(run, f.dir, name);
        if (!stats) continue; // vanished between readdir and lstat
        if (typeof stats === 'string') {
          o.onSkip?.(stats, relative);
          continue;
        }
        item = { relative, absolute, rootRelative, type: direntType(dirents[i]), stats, depth: f.depth };
      } else item = plainItem(f, dirents[i], relative, absolute, rootRelative);
      if (!o.sink) yield item;
      else {
        const go = handOver(o, run, item, name, f.abs);
        if (go === false || (go !== true && !(await go))) return;
      }
    }
    if (!isDir || name === '.git') continue;
    if (f.depth >= run.deepestFrame) {
      // Always reported: a bound of the server, whatever depth the caller asked for.
      if (place.emit || place.childResume) o.onSkip?.('too_deep', relative);
    } else if (f.depth < o.maxDepth) {
      const frame = { abs: absolute, rel: relative, rootRel: rootRelative, levels, resume: place.childResume };
      yield* descend(o, run, f, name, frame);
      if (run.stopped) return;
    } else if (o.depthIsLimit && (place.emit || place.childResume)) o.onSkip?.('too_deep', relative);
  }
}

/** Walks the subdirectory `name` of `f` (opened O_NOFOLLOW relative to it; one that cannot be opened is skipped). */
async function* descend(
  o: WalkOptions,
  run: WalkRun,
  f: DirFrame,
  name: string,
  frame: Omit<DirFrame, 'dir' | 'depth'>,
): AsyncGenerator<WalkItem | WalkEntry> {
  let child: VerifiedDir;
  try {
    child = f.dir.openDir(name);
  } catch {
    // Gone, or swapped for a link since the listing: never followed.
    o.onSkip?.('unreadable', frame.rel);
    return;
  }
  try {
    // Field by field, not `{ ...frame, dir, depth }`: V8 (Node 20) gives such a spread a map of its own each time, and
    // walkDir reads the frame per entry (see walkInto).
    const { abs, rel, rootRel, levels, resume } = frame;
    yield* walkDir(o, run, { dir: child, abs, rel, rootRel, depth: f.depth + 1, levels, resume });
  } finally {
    child.close();
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
function loadIgnore(
  o: WalkOptions,
  dir: VerifiedDir,
  dirRootRel: string,
  shown: string,
  budget: number,
): IgnoreLevel | null {
  // Synchronous: a few µs of syscalls, where four thread-pool round trips cost every page of a listing
  // far more (a .gitignore is at most MAX_IGNORE_BYTES).
  let fd: number | null = null;
  try {
    // Most directories have none: an lstat that finds nothing costs no exception, where the open's ENOENT did (a
    // listing asks every directory from the root down, every page). A .gitignore that is not a regular file does not
    // count (as below); one swapped in or out after the lstat is as one changed right after this read.
    if (dir.lstat('.gitignore')?.isFile() !== true) return null;
    fd = dir.openFileSync('.gitignore', { flags: constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) });
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.size > MAX_IGNORE_BYTES) return null;
    // Never to EOF (a .gitignore that reports 0 bytes may be endless): one byte past the cap says it is over.
    const bytes = readWholeSync(fd, MAX_IGNORE_BYTES);
    if (bytes.length > MAX_IGNORE_BYTES) return null;
    const text = bytes.toString('utf8');
    const matcher = sharedGitignoreRules(text, budget);
    for (let k = 0; k < matcher.skipped; k++) o.onSkip?.('ignore_rule', shown);
    return matcher.size > 0 ? { dir: dirRootRel, matcher } : null;
  } catch {
    return null;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** Automaton states the next .gitignore down may use: what the ones above it left of LIMITS.gitignoreChainStates. */
function chainBudget(levels: readonly IgnoreLevel[]): number {
  let used = 0;
  for (const level of levels) used += level.matcher.states;
  return Math.max(0, LIMITS.gitignoreChainStates - used);
}

/**
 * Deepest .gitignore with a verdict wins (a deeper `!pattern` re-includes), as git decides. `dirs[i]` is the entry's
 * directory relative to `levels[i]` ('' for the level's own directory).
 */
function isIgnored(levels: readonly IgnoreLevel[], dirs: readonly string[], name: string, isDir: boolean): boolean {
  for (let i = levels.length - 1; i >= 0; i--) {
    const result = levels[i].matcher.testEntry(dirs[i], name, isDir);
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

function toPosix(p: string): string {
  return path.sep === '\\' ? p.split('\\').join('/') : p;
}
