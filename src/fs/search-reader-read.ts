/**
 * How a content-search reader thread reaches and reads its candidates (docs/security.md "Roots", "Native reads for
 * content search"): each directory through the verified-access module (src/fs/verified-dir.ts) — opened from its
 * root component by component, O_NOFOLLOW, and proven to be exactly the directory the walk listed, inside the roots —
 * and each file opened relative to that descriptor, O_NOFOLLOW|O_NONBLOCK, regular files only, read up to the size
 * fstat reported. With the native addon a directory's run of files is read by one native call on the same verified
 * descriptor (src/fs/native-reader.ts). The verdict on the bytes is src/fs/search-reader-match.ts's.
 */
import { closeSync, constants, fstatSync, readSync, type Stats } from 'node:fs';
import path from 'node:path';
import {
  NATIVE_CODES,
  nativeBuffers,
  nativeReadRun,
  packByteSet,
  type NativeAddon,
  type NativeBuffers,
} from './native-reader.js';
import { openForReadSync } from './open-file.js';
import { isWithin } from './path-within.js';
import { classify, CompiledRegexes, matched, type ContainsBytes } from './search-reader-match.js';
import type { BatchRun, ReaderOptions, ReadOutcome } from './search-reader-protocol.js';
import { VerifiedDir } from './verified-dir.js';

/**
 * The verified directories a reader thread holds (Linux): the chain from the root of the directory it reads in now
 * down to it (`stack`, outermost first; a later directory below any of them is opened from there, one O_NOFOLLOW step
 * per component), and that directory (`current`: null when it could not be opened or proven). The chain is kept from
 * one batch of a search to the next (`keepDir`; a batch of another search, whose roots may differ, drops it first) and
 * closed when the thread goes idle (`closeDir`). What a kept chain saves is only the steps down to a directory: each
 * batch proves its first directory afresh, every directory is proven when it is reached (its /proc/self/fd location
 * is exactly the path the walk listed, inside the roots), and a proof that fails through a kept chain is tried once
 * more from the root, so a batch reads exactly what one that opened everything afresh would.
 */
export interface DirCursor {
  stack: VerifiedDir[];
  current: { path: string; dir: VerifiedDir | null } | null;
  /** The search options the stack was opened under (null: none yet). */
  owner: ReaderOptions | null;
  /** The stack's outermost directory was opened by an earlier batch. */
  kept: boolean;
}

/** A cursor holding nothing. */
export function dirCursor(): DirCursor {
  return { stack: [], current: null, owner: null, kept: false };
}

/** Closes every directory a cursor holds (the thread is idle, or the search changed). */
export function closeDir(cursor: DirCursor): void {
  for (const d of cursor.stack) d.close();
  cursor.stack = [];
  cursor.current = null;
  cursor.kept = false;
}

/**
 * End of a batch: the chain stays open for the next batch of the same search, but no directory counts as proven any
 * more (the next batch proves its first directory again).
 */
export function keepDir(cursor: DirCursor): void {
  cursor.current = null;
  cursor.kept = cursor.stack.length > 0;
}

/** True when `dir` is `p` or an ancestor of it. */
function holds(dir: string, p: string): boolean {
  return p === dir || (p.startsWith(dir) && (dir.endsWith('/') || p[dir.length] === '/'));
}

/**
 * The verified directory `parent` (absolute, real), from the cursor or opened now below the deepest directory the
 * cursor holds above it (the root containing it, opened by `VerifiedDir.open`, when none): every step O_NOFOLLOW
 * relative to its verified parent, then the one proof of the verified-access module (`assertStill`: its
 * /proc/self/fd location is exactly `parent`) and `parent` inside the roots. When that fails through a chain kept from
 * an earlier batch (a directory above may have been moved or replaced since), once more from the root. Null when it
 * fails (every file in it is then unreadable).
 */
function verifiedParent(parent: string, options: ReaderOptions, cursor: DirCursor): VerifiedDir | null {
  if (cursor.current?.path === parent) return cursor.current.dir;
  if (cursor.owner !== options) {
    closeDir(cursor);
    cursor.owner = options;
  }
  const isInside = (p: string) => options.roots.some((r) => isWithin(r.real, p));
  let dir = provenParent(parent, options, cursor, isInside);
  if (dir === null && cursor.kept) {
    closeDir(cursor);
    dir = provenParent(parent, options, cursor, isInside);
  }
  cursor.current = { path: parent, dir };
  return dir;
}

/** `verifiedParent`'s steps and proof, through the chain the cursor holds. Null when any of it fails. */
function provenParent(
  parent: string,
  options: ReaderOptions,
  cursor: DirCursor,
  isInside: (p: string) => boolean,
): VerifiedDir | null {
  try {
    const stack = cursor.stack;
    while (stack.length > 0 && !holds(stack[stack.length - 1].path, parent)) stack.pop()!.close();
    if (stack.length === 0) {
      cursor.kept = false;
      const root = options.roots.filter((r) => holds(r.real, parent)).sort((a, b) => b.real.length - a.real.length)[0];
      if (!root) throw new Error('outside the roots');
      stack.push(VerifiedDir.open(root.real, isInside));
    }
    const top = stack[stack.length - 1];
    const below = parent.slice(top.path.length).split('/').filter(Boolean);
    for (const name of below) stack.push(stack[stack.length - 1].openDir(name));
    const dir = stack[stack.length - 1];
    dir.assertStill();
    if (!isInside(parent)) throw new Error('outside the roots');
    return dir;
  } catch {
    return null;
  }
}

/**
 * Opens a candidate file for reading (regular files only; inside the roots): on Linux relative to its verified
 * directory (`verifiedParent`), elsewhere with the checks of `openForReadSync`.
 * @throws when the file cannot be opened, is not a regular file, or is not inside the roots
 */
function openCandidate(file: string, options: ReaderOptions, cursor: DirCursor): { fd: number; stats: Stats } {
  if (process.platform !== 'linux') {
    return openForReadSync(file, (p) => options.roots.some((r) => isWithin(r.real, p)));
  }
  const parent = path.dirname(file);
  const dir = verifiedParent(parent, options, cursor);
  if (dir === null) throw new Error(`${parent} is not a readable directory inside the roots`);
  const fd = dir.openFileSync(path.basename(file), { flags: constants.O_RDONLY });
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new Error('not a regular file');
    return { fd, stats };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** A reader thread's reusable read buffer (grown as needed) and compiled expressions. */
export interface ReaderScratch {
  buf: Buffer;
  /** Absent: compiled afresh for each file. */
  regexes?: CompiledRegexes;
}

/** Reads `size` bytes of `fd` from offset 0 into `scratch` (fewer when the file shrank). @throws errno errors */
function readInto(fd: number, size: number, scratch: ReaderScratch): Buffer {
  if (scratch.buf.length < size) scratch.buf = Buffer.allocUnsafe(Math.max(size, 64 * 1024));
  let filled = 0;
  while (filled < size) {
    const n = readSync(fd, scratch.buf, filled, size - filled, filled);
    if (n === 0) break;
    filled += n;
  }
  return scratch.buf.subarray(0, filled);
}

/**
 * Reads (and with `options.match`, matches) one file as content search sees it: the work a worker does per file,
 * exported for tests. Never throws.
 * @param scratch a reusable read buffer, grown as needed
 * @param cursor the worker's verified directories (kept across the files of a batch); absent: opened and closed for
 *   this file alone
 */
export function readCandidate(
  file: string,
  options: ReaderOptions,
  scratch: ReaderScratch,
  cursor?: DirCursor,
): ReadOutcome {
  if (!cursor) {
    const own = dirCursor();
    try {
      return readCandidate(file, options, scratch, own);
    } finally {
      closeDir(own);
    }
  }
  let opened: { fd: number; stats: { size: number } };
  try {
    opened = openCandidate(file, options, cursor);
  } catch {
    return { kind: 'unreadable' };
  }
  const { fd } = opened;
  let bytes: Buffer;
  try {
    const size = opened.stats.size;
    if (size > options.maxFileBytes) return { kind: 'too_large' };
    // The size fstat reported, as the main thread's path reads it (a file that grows meanwhile is read as it was).
    bytes = readInto(fd, size, scratch);
  } catch {
    return { kind: 'unreadable' };
  } finally {
    try {
      closeSync(fd);
    } catch {
      /* already closed */
    }
  }
  return classify(bytes, options, scratch.regexes ?? new CompiledRegexes());
}

/** The outcome of each native code other than a candidate's. */
const NATIVE_KIND: Record<1 | 2 | 3 | 4, ReadOutcome> = {
  [NATIVE_CODES.unreadable]: { kind: 'unreadable' },
  [NATIVE_CODES.too_large]: { kind: 'too_large' },
  [NATIVE_CODES.binary]: { kind: 'binary' },
  [NATIVE_CODES.no_match]: { kind: 'no_match' },
};

/** A reader thread's reusable state: the JavaScript path's read buffer, its directories, the addon's buffers. */
export interface ReaderState {
  scratch: ReaderScratch & { regexes: CompiledRegexes };
  dir: DirCursor;
  /** The native addon (null: the JavaScript path). */
  addon: NativeAddon | null;
  buffers: NativeBuffers;
  /** The required set's byte test: the addon's `contains` (Buffer#indexOf's verdict, test/fs/native-reader.test.ts). */
  contains: ContainsBytes | undefined;
  /** The last search's required set (`ReaderOptions.anyOf`, by identity) packed for the addon (`packByteSet`). */
  packed: { of: readonly Uint8Array[]; bytes: Uint8Array } | null;
}

/** A fresh ReaderState (`addon` null: the JavaScript path only). */
export function readerState(addon: NativeAddon | null): ReaderState {
  return {
    scratch: { buf: Buffer.allocUnsafe(256 * 1024), regexes: new CompiledRegexes() },
    dir: dirCursor(),
    addon,
    buffers: nativeBuffers(),
    contains: addon ? (haystack, needle) => addon.contains(haystack, needle) : undefined,
    packed: null,
  };
}

/** `anyOf` packed for the addon, once per search (the options of a search, and so its set, are one object). */
function packedSet(state: ReaderState, anyOf: readonly Uint8Array[]): Uint8Array {
  if (state.packed?.of !== anyOf) state.packed = { of: anyOf, bytes: packByteSet(anyOf) };
  return state.packed.bytes;
}

/** Calls around the JavaScript work on each file: the watchdog's progress record. */
export interface BatchHooks {
  before(index: number): void;
  after(): void;
}

const NO_HOOKS: BatchHooks = { before: () => {}, after: () => {} };

/**
 * Reads (and matches) the files of one batch in order, calling `each(index, outcome)` for each — the work a reader
 * thread does per batch, exported for tests. `files` are absolute paths; `readRuns` reads the same as runs of one
 * directory each.
 */
export function readBatch(
  files: readonly string[],
  options: ReaderOptions,
  state: ReaderState,
  each: (index: number, outcome: ReadOutcome) => void,
  hooks: BatchHooks = NO_HOOKS,
): void {
  const runs: BatchRun[] = [];
  for (let first = 0; first < files.length;) {
    // The files of one directory are a run: one lastIndexOf per file (the paths are absolute and canonical, so the
    // parent is everything before the last `/`, as path.dirname has it).
    const cut = files[first].lastIndexOf('/');
    const parent = cut > 0 ? files[first].slice(0, cut) : cut === 0 ? '/' : '.';
    const names = [files[first].slice(cut + 1)];
    let end = first + 1;
    for (; cut >= 0 && end < files.length; end++) {
      const f = files[end];
      if (f.lastIndexOf('/') !== cut || !f.startsWith(parent)) break;
      names.push(f.slice(cut + 1));
    }
    runs.push({ parent, names, first });
    first = end;
  }
  readRuns(runs, options, state, each, hooks);
}

/**
 * Reads (and matches) the files of runs of one directory each (the batch a reader thread is sent,
 * src/fs/search-reader-protocol.ts `batchRuns`), in order, calling `each(index, outcome)` for each. With the addon
 * (Linux), each run is read by one native call through the directory's verified descriptor (`verifiedParent`, as the
 * JavaScript path opens it); else, and for a run the addon refuses, file by file with `readCandidate`.
 * `hooks.before(index)` is called before the JavaScript work on a file (the watchdog's progress record),
 * `hooks.after()` when it ends. Never throws.
 */
export function readRuns(
  runs: readonly BatchRun[],
  options: ReaderOptions,
  state: ReaderState,
  each: (index: number, outcome: ReadOutcome) => void,
  hooks: BatchHooks = NO_HOOKS,
): void {
  const native = state.addon !== null && process.platform === 'linux';
  for (const run of runs) {
    if (native) readRun(run, 0, options, state, each, hooks);
    else readRunInJs(run, 0, options, state, each, hooks);
  }
}

/** The files of `run` from its `from`-th name on, one by one on the JavaScript path (`readCandidate`). */
function readRunInJs(
  run: BatchRun,
  from: number,
  options: ReaderOptions,
  state: ReaderState,
  each: (index: number, outcome: ReadOutcome) => void,
  hooks: BatchHooks,
): void {
  for (let k = from; k < run.names.length; k++) {
    hooks.before(run.first + k);
    each(run.first + k, readCandidate(path.join(run.parent, run.names[k]), options, state.scratch, state.dir));
  }
  hooks.after();
}

/** `readRuns` for one run (the files of the directory `run.parent`), through the addon. */
function readRun(
  run: BatchRun,
  from: number,
  options: ReaderOptions,
  state: ReaderState,
  each: (index: number, outcome: ReadOutcome) => void,
  hooks: BatchHooks,
): void {
  const { first, names } = run;
  const dir = verifiedParent(run.parent, options, state.dir);
  if (dir === null) {
    for (let k = from; k < names.length; k++) each(first + k, NATIVE_KIND[NATIVE_CODES.unreadable]);
    return;
  }
  // The required set is tested in C too (a file holding none of it is no_match there, as `matched` would find it), so
  // only files holding one come back to JavaScript; `matched` tests a candidate again.
  const anyOf = options.anyOf ? packedSet(state, options.anyOf) : null;
  let answered = 0;
  try {
    const { maxFileBytes, needle } = options;
    nativeReadRun(
      state.addon!,
      dir.fd,
      names,
      maxFileBytes,
      needle,
      state.buffers,
      (k, r) => {
        if (r.code !== NATIVE_CODES.candidate) {
          each(first + k, NATIVE_KIND[r.code]);
        } else {
          hooks.before(first + k);
          each(first + k, matched(r.bytes, options, state.scratch.regexes, state.contains));
          hooks.after();
        }
        answered = k + 1;
      },
      anyOf,
      options.search ?? 0,
    );
  } catch {
    // A name the addon refuses (it opened nothing): the JavaScript path, with its own checks, for the rest.
    readRunInJs(run, answered, options, state, each, hooks);
  }
}
