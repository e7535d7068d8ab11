/**
 * The per-entry loop of the directory walker (src/fs/walk.ts): one directory's sorted entries judged in order — the
 * resume cursor, the policy filter, `.gitignore`, exclude and include — and handed to the walk's sink, in a plain
 * synchronous function that returns to the walk's async generator only for what needs an await (a yield to the event
 * loop, an lstat, the sink's promise, an item to yield, a subdirectory to descend into).
 *
 * Why a function of its own: the same loop inside the async generator was compiled by V8 (Node 20) as part of the
 * generator — a graph of 15–18 KB of machine code that took 20–75 ms per TurboFan compile on this machine's cores
 * and was compiled four or five times in a fresh server's first calls (deoptimized in between), so a 10,000-entry
 * listing ran its loop unoptimized for its first three to six calls. This function is small, runs its loop without
 * a suspension point, is replaced on the stack mid-loop (OSR) in the first call, and is entered optimized from the
 * next (docs/benchmarks.md, "names-only listing (session 17)"). This file changes when what the walk decides per
 * entry changes.
 */
import type { Dirent } from 'node:fs';
import type { AllowedPath } from '../policy/resolve-path.js';
import type { GitignoreRules } from './glob/gitignore.js';
import type { VerifiedDir } from './verified-dir.js';
import { PlainItem, type WalkSettings } from './walk-shapes.js';
import type { SpecialType, WalkEntry, WalkItem, WalkType } from './walk.js';

/**
 * The longest the walk runs on the event loop between two yields, ms. Checked every SLICE_CHECK_EVERY entries; one
 * entry's pattern work is bounded (src/fs/glob LIMITS: path length × the call's glob budget of 16,384 automaton states
 * and × the .gitignore budget of 32,768 per path, in the worst case), so the loop is held at most this slice plus
 * SLICE_CHECK_EVERY entries' work.
 */
export const WALK_SLICE_MS = 10;
const SLICE_CHECK_EVERY = 8;

/**
 * Per-walk bookkeeping shared by the recursion. The walk's objects that its per-entry code reads (this, DirFrame,
 * IgnoreLevel, DirScan) are class instances, not object literals: V8 (Node 20) gives a literal's field holding an
 * object the type of that object's class at its first creation and widens it at its second — in a fresh server's
 * second listing — deoptimizing the code compiled in the first.
 */
export class WalkRun {
  /** Set when the sink (WalkOptions.sink) asked to stop: every level returns. */
  stopped = false;
  statsSinceYield = 0;
  entriesSinceCheck = 0;
  sliceStart = performance.now();

  constructor(
    /**
     * WalkOptions.signal's `aborted`, kept by its abort listener: read per entry, where reading the signal itself was
     * a V8 map check that failed on every call (each AbortSignal of Node 20 has a map of its own), so the walk's loop
     * was deoptimized and compiled again.
     */
    public aborted: boolean,
    readonly wantStats: boolean,
    /** The include and exclude globs, compiled once (null: none). */
    readonly include: ((s: string) => boolean) | null,
    readonly exclude: ((s: string) => boolean) | null,
    /** The deepest frame whose entries stay within MAX_PATH_COMPONENTS (deeper: `too_deep`, docs/security.md). */
    readonly deepestFrame: number,
  ) {}
}

/** One .gitignore in force: its directory and its compiled rules. */
export class IgnoreLevel {
  constructor(
    /** Directory of the .gitignore, relative to rootReal, `/`-separated ('' for the root). */
    readonly dir: string,
    readonly matcher: GitignoreRules,
  ) {}
}

/** Where the walk resumes (WalkOptions.resume). */
export type Resume = { components: readonly string[]; inclusive: boolean };

/** One directory of the walk: its verified descriptor, its paths, its depth and what applies in it. */
export class DirFrame {
  constructor(
    readonly dir: VerifiedDir,
    /** Absolute path (an entry of an allowed directory, minted by policy). */
    readonly abs: AllowedPath,
    /** Relative to the walk's base ('' for the base). */
    readonly rel: string,
    /** Relative to the root. */
    readonly rootRel: string,
    /** Depth of this directory's entries (1 for the base's). */
    readonly depth: number,
    /** The .gitignore levels above this directory. */
    readonly levels: IgnoreLevel[],
    readonly resume: Resume | null,
  ) {}
}

/** Compares names the way the walk orders them (code units), so cursors and order agree. */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Where an entry stands against the resume cursor: skipped (null), or whether it is emitted and resumes below. */
type Place = { emit: boolean; childResume: Resume | null };
const AFTER_CURSOR: Place = { emit: true, childResume: null };
function againstCursor(resume: Resume, dirDepth: number, name: string): Place | null {
  const cmp = compareNames(name, resume.components[dirDepth]);
  if (cmp < 0) return null;
  if (cmp > 0) return AFTER_CURSOR; // everything from here on comes after the cursor
  if (dirDepth === resume.components.length - 1) return { emit: resume.inclusive, childResume: null };
  return { emit: false, childResume: resume };
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

/** The type a directory entry reports (Node resolves an unknown d_type with lstat). */
export function direntType(d: Dirent): WalkType {
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

/** The item for an entry without stats (type and, for `other`, the special type from the listing). */
export function plainItem(
  f: DirFrame,
  d: Dirent,
  relative: string,
  absolute: AllowedPath,
  rootRelative: string,
): WalkItem {
  const type = direntType(d);
  return new PlainItem(relative, absolute, rootRelative, type, type === 'other' ? specialType(d) : undefined, f.depth);
}

/**
 * Hands `item` to the sink: true, the walk goes on; false, it stops. Synchronous when the sink answers synchronously
 * (one call per entry of every walk: an async function here costs a promise and a microtask per entry on the main
 * thread's critical path).
 */
export function handOver(
  o: WalkSettings,
  run: WalkRun,
  item: WalkItem | WalkEntry,
  name: string,
  parent: AllowedPath,
): boolean | Promise<boolean> {
  const go = o.visitor.sink(item, name, parent);
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

/**
 * What `scanEntries` stopped for (ScanStep; the walk's generator does it, then goes on with the next entry). Plain
 * constants, not an object's properties: reading a property needs V8 feedback, and the loop's exit (`SCAN_END` after
 * the last entry) first runs after the loop was compiled, so a property read there deoptimized it in a fresh
 * server's first listing.
 */
/** The directory is done, the walk was aborted, or the sink said stop (`run.stopped`). */
export const SCAN_END = 0;
/** Await `scan.due` (a yield to the event loop), then scan again from the same entry. */
export const SCAN_DUE = 1;
/** The entry must be emitted by the generator: with its lstat (`run.wantStats`), or yielded (no sink). */
export const SCAN_EMIT = 2;
/** The sink answered with `scan.pending`: false stops the walk; then `descends`. */
export const SCAN_PENDING = 3;
/** The entry is a directory to walk into now (`scan.place.childResume` for its frame). */
export const SCAN_DESCEND = 4;
/** One of the SCAN_* steps. */
export type ScanStep = 0 | 1 | 2 | 3 | 4;

/**
 * One directory's scan: its sorted listing, what applies in it, and the entry the scan stopped at (`i`) with the
 * paths the scan made for it. One object per directory, one V8 map.
 */
export class DirScan {
  /** The entry the scan is at (the one a returned step is about). */
  i: number;
  /** After a Due step: the entry at `i` already took its turn at the yield check. */
  afterDue = false;
  name = '';
  relative = '';
  absolute: AllowedPath;
  rootRelative = '';
  isDir = false;
  place: Place = AFTER_CURSOR;
  due: Promise<void> | null = null;
  pending: Promise<boolean> | null = null;

  constructor(
    readonly frame: DirFrame,
    readonly dirents: readonly Dirent[],
    readonly names: readonly string[],
    /** The .gitignore levels in force here (the frame's, and this directory's own). */
    readonly levels: IgnoreLevel[],
    /** This directory as each level sees it (ignoreDirsOf). */
    readonly ignoreDirs: string[],
    /** Components of `frame.rel` (the index of this directory's names in a resume cursor). */
    readonly dirDepth: number,
    first: number,
  ) {
    this.i = first;
    this.absolute = frame.abs;
  }
}

/**
 * Goes through `scan`'s entries from `scan.i` on, in order: skips what sorts before the resume cursor, what policy
 * omits (reported as `policy`), what a `.gitignore` ignores and what exclude matches; hands what remains (and include
 * allows) to the sink; reports `too_deep` where the walk may not descend. Returns at the first thing it cannot do
 * without an await, with `scan` at that entry (a ScanStep), or SCAN_END after the last entry.
 */
export function scanEntries(o: WalkSettings, run: WalkRun, scan: DirScan): ScanStep {
  const f = scan.frame;
  const { names, dirents, levels, ignoreDirs } = scan;
  const count = names.length;
  let afterDue = scan.afterDue;
  scan.afterDue = false;
  for (; scan.i < count; scan.i++) {
    const i = scan.i;
    if (!afterDue) {
      const due = yieldIfDue(run);
      if (due !== null) {
        scan.due = due;
        return SCAN_DUE;
      }
    }
    afterDue = false;
    if (run.aborted) return SCAN_END;
    const name = names[i];
    const place = f.resume ? againstCursor(f.resume, scan.dirDepth, name) : AFTER_CURSOR;
    if (place === null) continue;
    const relative = f.rel ? `${f.rel}/${name}` : name;
    const absolute = o.childOf(f.abs, name);
    const rootRelative = f.rootRel ? `${f.rootRel}/${name}` : name;
    const isDir = dirents[i].isDirectory();
    if (o.visitor.filter(absolute, rootRelative, name) === 'omit') {
      o.onSkip?.('policy', relative);
      continue;
    }
    if (levels.length !== 0 && isIgnored(levels, ignoreDirs, name, isDir)) continue;
    if (run.exclude !== null && run.exclude(relative)) continue;
    const emit = place.emit && (run.include === null || run.include(relative));
    if (emit || isDir) {
      scan.name = name;
      scan.relative = relative;
      scan.absolute = absolute;
      scan.rootRelative = rootRelative;
      scan.isDir = isDir;
      scan.place = place;
    }
    if (emit) {
      if (run.wantStats || !o.hasSink) return SCAN_EMIT;
      const go = handOver(o, run, plainItem(f, dirents[i], relative, absolute, rootRelative), name, f.abs);
      if (go === false) return SCAN_END;
      if (go !== true) {
        scan.pending = go;
        return SCAN_PENDING;
      }
    }
    if (isDir && descends(o, run, scan)) return SCAN_DESCEND;
  }
  return SCAN_END;
}

/**
 * Whether the walk descends into the entry `scan` is at, a directory it did not leave out: never into `.git`; not
 * past MAX_PATH_COMPONENTS (always reported as `too_deep`: a bound of the server, whatever depth the caller asked
 * for) or `maxDepth` (reported when that depth is a server limit, WalkOptions.depthIsLimit).
 */
export function descends(o: WalkSettings, run: WalkRun, scan: DirScan): boolean {
  if (!scan.isDir || scan.name === '.git') return false;
  const depth = scan.frame.depth;
  const place = scan.place;
  if (depth >= run.deepestFrame) {
    if (place.emit || place.childResume) o.onSkip?.('too_deep', scan.relative);
    return false;
  }
  if (depth < o.maxDepth) return true;
  if (o.depthIsLimit && (place.emit || place.childResume)) o.onSkip?.('too_deep', scan.relative);
  return false;
}
