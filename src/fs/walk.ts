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
import { sharedGitignoreRules } from './glob/gitignore.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { readWholeSync } from './open-file.js';
import { isWithin, MAX_PATH_COMPONENTS, pathComponentCount } from './path-within.js';
import { VerifiedDir } from './verified-dir.js';
import { FunctionVisitor, ignoreDirsOf, WalkSettings, WalkTrace, withLevel } from './walk-shapes.js';
import {
  compareNames,
  descends,
  direntType,
  DirFrame,
  DirScan,
  handOver,
  IgnoreLevel,
  plainItem,
  SCAN_DESCEND,
  SCAN_DUE,
  SCAN_EMIT,
  SCAN_END,
  SCAN_PENDING,
  scanEntries,
  WalkRun,
} from './walk-scan.js';
import {
  keyOf,
  listingIdentity,
  sharedListing,
  SMALL_DIRECTORY_BYTES,
  smallListing,
  SYNC_READDIR_MAX_BYTES,
} from './listing-cache.js';

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
  /** When given, the walk notes in it what its outcome depended on (WalkTrace, src/fs/walk-shapes.ts). */
  trace?: WalkTrace;
  /**
   * When given, each entry is handed to `sink` in walk order (right after `filter` was asked about it, exactly where
   * it would be yielded), with its last path component `name` and its directory's absolute path `parent` (one string
   * for every entry of a directory), and the walk yields nothing; `false` (or a promise of it) stops the walk. One async-iteration step per entry (two generator levels) cost a names-and-types
   * listing a sixth of its time.
   */
  sink?: (item: WalkItem | WalkEntry, name: string, parent: string) => boolean | Promise<boolean>;
}

/** WalkOptions without the filter and sink functions (walkWith takes them as a WalkVisitor's methods). */
export type WalkBaseOptions = Omit<WalkOptions, 'filter' | 'sink'>;

/**
 * WalkOptions.filter and .sink as one object's methods (walkWith). A tool that walks with per-call state passes an
 * instance of its own class: the walk's call sites then meet the same two functions call after call, where closures
 * made per call are new functions to V8 each time (Node 20 deoptimized the walk's loop in a fresh server's second
 * call for it: "wrong call target").
 */
export interface WalkVisitor {
  filter(absolute: string, rootRelative: string, name: string): 'ok' | 'omit';
  sink(item: WalkItem | WalkEntry, name: string, parent: string): boolean | Promise<boolean>;
}

/** Synchronous lstats between two yields to the event loop. */
const STAT_YIELD_EVERY = 256;

/** Largest .gitignore read, bytes (a bigger one is treated as absent). */
const MAX_IGNORE_BYTES = 1024 * 1024;

/**
 * Walks `base`, yielding entries in deterministic order. The consumer may stop early (break). With `stats: false`
 * the entries carry their type only (WalkItem); otherwise each has its lstat (WalkEntry), and an entry that vanished
 * before its lstat is left out.
 */
export function walkTree(options: WalkOptions & { stats: false }): AsyncGenerator<WalkItem>;
export function walkTree(options: WalkOptions & { stats: boolean }): AsyncGenerator<WalkItem | WalkEntry>;
export function walkTree(options: WalkOptions): AsyncGenerator<WalkEntry>;
export async function* walkTree(given: WalkOptions): AsyncGenerator<WalkItem | WalkEntry> {
  yield* walkSettings(new WalkSettings(given, new FunctionVisitor(given.filter, given.sink), given.sink !== undefined));
}

/** The walk (walkTree, walkInto, walkWith), on options of one object shape (WalkSettings). */
async function* walkSettings(options: WalkSettings): AsyncGenerator<WalkItem | WalkEntry> {
  const baseRootRel = toPosix(path.relative(options.rootReal, options.base));
  // Globs first: a pattern over the limits is refused before any IO.
  const budget = patternBudget();
  const include = globMatcher(options.include, options.nocase ?? false, 'include', budget);
  const exclude = globMatcher(options.exclude, options.nocase ?? false, 'exclude', budget);
  const signal = options.signal;
  const run = new WalkRun(
    signal?.aborted ?? false,
    options.stats !== false,
    include,
    exclude,
    MAX_PATH_COMPONENTS - pathComponentCount(options.base),
  );
  const levels: IgnoreLevel[] = [];
  const dir = openBase(options, baseRootRel, levels);
  const onAbort = () => {
    run.aborted = true;
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (run.deepestFrame < 1) {
      // The base's own entries would be deeper than any tool resolves.
      options.onSkip?.('too_deep', '');
      return;
    }
    // An AllowedPath is normalized (policy's real path), so every childOf below may join by concatenation.
    yield* walkDir(options, run, new DirFrame(dir, options.base, '', baseRootRel, 1, levels, options.resume ?? null));
  } finally {
    signal?.removeEventListener('abort', onAbort);
    dir.close();
  }
}

/**
 * The walk's base directory, opened from the root down one verified component at a time, with the .gitignore of each
 * ancestor pushed onto `levels` (when the walk respects them). The caller closes it.
 * @throws what VerifiedDir's opens throw (nothing stays open then)
 */
function openBase(
  o: Pick<WalkSettings, 'rootReal' | 'respectGitignore' | 'onSkip' | 'trace'>,
  baseRootRel: string,
  levels: IgnoreLevel[],
): VerifiedDir {
  let dir = VerifiedDir.open(o.rootReal, (p) => isWithin(o.rootReal, p));
  try {
    const parts = baseRootRel === '' ? [] : baseRootRel.split('/');
    for (let i = 0; i < parts.length; i++) {
      if (o.respectGitignore) {
        const dirRel = parts.slice(0, i).join('/');
        // Above the base: reported by its path relative to the root.
        const level = loadIgnore(o, dir, dirRel, dirRel ? `/${dirRel}/.gitignore` : '/.gitignore', chainBudget(levels));
        if (level) levels.push(level);
      }
      const next = dir.openDir(parts[i]);
      dir.close();
      dir = next;
    }
    return dir;
  } catch (error) {
    dir.close();
    throw error;
  }
}

/**
 * What a walk with these options would depend on now (WalkTrace), without walking: the `.gitignore` files from the
 * root down to the base read as the walk reads them (and the base's own when `baseIgnoreTried`: a caller compares
 * with a trace whose base identity equals this one's, so the base's listing, and with it whether the walk looks for
 * that file, is the same), and the base directory's identity from its verified descriptor's fstat (null when racy).
 * Null when any step fails (the walk itself then meets and reports the failure). Synchronous: a few syscalls per path
 * component.
 */
export function probeWalk(
  options: Pick<WalkOptions, 'base' | 'rootReal' | 'respectGitignore'>,
  baseIgnoreTried: boolean,
): WalkTrace | null {
  const trace = new WalkTrace();
  const o = { rootReal: options.rootReal, respectGitignore: options.respectGitignore, onSkip: undefined, trace };
  let dir: VerifiedDir;
  try {
    dir = openBase(o, toPosix(path.relative(options.rootReal, options.base)), []);
  } catch {
    return null;
  }
  try {
    trace.baseKey = listingIdentity(fstatSync(dir.fd, { bigint: true }), Date.now());
    if (baseIgnoreTried) {
      trace.baseIgnoreTried = true;
      trace.ignoreTexts.push(readIgnoreText(dir));
    }
    return trace;
  } catch {
    return null;
  } finally {
    dir.close();
  }
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
  await drive(new WalkSettings(options, new FunctionVisitor(options.filter, sink), true));
}

/** walkInto with the filter and the sink as `visitor`'s methods (WalkVisitor). */
export async function walkWith(options: WalkBaseOptions, visitor: WalkVisitor): Promise<void> {
  await drive(new WalkSettings(options, visitor, true));
}

/**
 * Runs a walk whose entries go to its sink: the walk yields nothing, this only drives it. The options are copied into
 * a WalkSettings, not spread with the sink after them: V8 (Node 20) gave every `{ ...options, sink }` a map of its
 * own, so each call deoptimized the walk's loop (it reads these options per entry) and it was compiled again, call
 * after call.
 */
async function drive(settings: WalkSettings): Promise<void> {
  for await (const _ of walkSettings(settings)) {
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
 * The sorted listing of a frame's directory, or null when it cannot be read (reported to onSkip).
 * One sorted listing per directory state, shared by pages and concurrent calls (src/fs/listing-cache.ts),
 * read and identified through the verified descriptor (one fstat, which also gives the size: the one taken when it
 * was opened). A small directory
 * (SMALL_DIRECTORY_BYTES) is read on this thread with no await, through the cache of small listings; a larger one
 * through the shared cache, read on this thread up to SYNC_READDIR_MAX_BYTES and in the pool above.
 */
async function listingOf(
  o: WalkSettings,
  f: DirFrame,
): Promise<{ dirents: readonly Dirent[]; names: readonly string[] } | null> {
  const dir = f.dir;
  try {
    // The descriptor's fstat from its open (just now: the walk reads a directory right after opening it), else one.
    const st = dir.takeOpenStat() ?? fstatSync(dir.fd, { bigint: true });
    const size = Number(st.size);
    const traced = o.trace !== null && f.rel === '' ? o.trace : null;
    const key = traced !== null ? listingIdentity(st, Date.now()) : null;
    const listing =
      size <= SMALL_DIRECTORY_BYTES
        ? smallListing(dir.path, dir.fd, st, () => dir.readdirSync())
        : await sharedListing(
            dir.path,
            () => (size <= SYNC_READDIR_MAX_BYTES ? Promise.resolve(dir.readdirSync()) : dir.readdir()),
            dir.fd,
          );
    // The base's listing is its entries under `key` when the directory was not racy and is still that identity after
    // the listing was taken (whether it was read now or kept from a read under the same identity).
    if (traced !== null && key !== null && keyOf(fstatSync(dir.fd, { bigint: true })) === key) {
      traced.baseKey = key;
    }
    return listing;
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

/**
 * Walks one directory: its listing and `.gitignore`, then its entries in order — judged and handed to the sink by
 * `scanEntries` (src/fs/walk-scan.ts), synchronously, with this generator doing only what needs an await: a yield to
 * the event loop, an lstat, the sink's promise, yielding an item (no sink), a subdirectory.
 */
async function* walkDir(o: WalkSettings, run: WalkRun, f: DirFrame): AsyncGenerator<WalkItem | WalkEntry> {
  if (run.aborted) return;
  const listing = await listingOf(o, f);
  if (!listing) return;
  const { dirents, names } = listing;
  let levels = f.levels;
  const ignoreAt = o.respectGitignore ? sortedIndexOf(names, '.gitignore') : -1;
  if (ignoreAt >= 0 && dirents[ignoreAt].isFile()) {
    if (o.trace !== null && f.rel === '') o.trace.baseIgnoreTried = true;
    const shown = f.rel ? `${f.rel}/.gitignore` : '.gitignore';
    const level = loadIgnore(o, f.dir, f.rootRel, shown, chainBudget(f.levels));
    if (level) levels = withLevel(f.levels, level);
  }
  // (a readdir is a yield: the slice starts again after it)
  run.sliceStart = performance.now();
  const dirDepth = f.rel === '' ? 0 : f.rel.split('/').length;
  // Resume: what sorts before the cursor at this level is a prefix of `names`; it is skipped without any IO (binary
  // search: a late page of a huge directory does not compare its way there).
  const first = f.resume ? firstNotBefore(names, f.resume.components[dirDepth]) : 0;
  const scan = new DirScan(f, dirents, names, levels, ignoreDirsOf(levels, f.rootRel), dirDepth, first);
  for (;;) {
    const step = scanEntries(o, run, scan);
    if (step === SCAN_END) return;
    if (step === SCAN_DUE) {
      await scan.due;
      scan.due = null;
      scan.afterDue = true;
      continue;
    }
    if (step === SCAN_PENDING) {
      const go = await scan.pending;
      scan.pending = null;
      if (!go) return;
    } else if (step === SCAN_EMIT) {
      const item = await emitted(o, run, scan);
      if (item === null) {
        scan.i++;
        continue; // vanished between readdir and lstat, or reported: not descended either
      }
      if (!o.hasSink) yield item;
      else {
        const go = handOver(o, run, item, scan.name, f.abs);
        if (go === false || (go !== true && !(await go))) return;
      }
    }
    if (step === SCAN_DESCEND || descends(o, run, scan)) {
      yield* descend(o, run, scan);
      if (run.stopped) return;
    }
    scan.i++;
  }
}

/**
 * The item of the entry `scan` stopped at for SCAN_EMIT: with its lstat when the walk wants stats (null when the
 * entry vanished since the listing, or could not be stat'ed: reported to onSkip), else from the listing.
 */
async function emitted(o: WalkSettings, run: WalkRun, scan: DirScan): Promise<WalkItem | WalkEntry | null> {
  const f = scan.frame;
  const d = scan.dirents[scan.i];
  const { relative, absolute, rootRelative } = scan;
  if (!run.wantStats) return plainItem(f, d, relative, absolute, rootRelative);
  const stats = await statNow(run, f.dir, scan.name);
  if (!stats) return null;
  if (typeof stats === 'string') {
    o.onSkip?.(stats, relative);
    return null;
  }
  return { relative, absolute, rootRelative, type: direntType(d), stats, depth: f.depth };
}

/**
 * Walks the subdirectory `scan` is at (opened O_NOFOLLOW relative to its directory; one that cannot be opened is
 * skipped), with the .gitignore levels in force in `scan`'s directory.
 */
async function* descend(o: WalkSettings, run: WalkRun, scan: DirScan): AsyncGenerator<WalkItem | WalkEntry> {
  const f = scan.frame;
  if (o.trace !== null) o.trace.descents++;
  let child: VerifiedDir;
  try {
    child = f.dir.openDir(scan.name);
  } catch {
    // Gone, or swapped for a link since the listing: never followed.
    o.onSkip?.('unreadable', scan.relative);
    return;
  }
  try {
    const { absolute, relative, rootRelative, levels, place } = scan;
    yield* walkDir(
      o,
      run,
      new DirFrame(child, absolute, relative, rootRelative, f.depth + 1, levels, place.childResume),
    );
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
  o: Pick<WalkSettings, 'onSkip' | 'trace'>,
  dir: VerifiedDir,
  dirRootRel: string,
  shown: string,
  budget: number,
): IgnoreLevel | null {
  const text = readIgnoreText(dir);
  o.trace?.ignoreTexts.push(text);
  if (text === null) return null;
  try {
    const matcher = sharedGitignoreRules(text, budget);
    for (let k = 0; k < matcher.skipped; k++) o.onSkip?.('ignore_rule', shown);
    return matcher.size > 0 ? new IgnoreLevel(dirRootRel, matcher) : null;
  } catch {
    return null;
  }
}

/**
 * The text of `dir`'s .gitignore as the walk applies it (loadIgnore), or null when there is none to apply: absent,
 * not a regular file, over MAX_IGNORE_BYTES, unreadable.
 */
function readIgnoreText(dir: VerifiedDir): string | null {
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
    return bytes.toString('utf8');
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

function toPosix(p: string): string {
  return path.sep === '\\' ? p.split('\\').join('/') : p;
}
