/**
 * Reading and matching content-search candidates off the main thread (docs/tools.md: search "stays responsive on huge
 * trees"; a user regular expression "can never stall the server").
 *
 * Opening, checking and reading tens of thousands of small files costs five syscalls each (open, fstat, the
 * /proc/self/fd containment re-check, read, close); as promise-based calls on the main thread each is a thread-pool
 * round trip, and a 23,000-file search spent seconds in that overhead alone. Here a small pool of worker threads does
 * the same checks synchronously (`openForReadSync`, the twin of the main thread's `openForRead`), tells text from
 * binary, applies the query's required bytes (`LineMatcher.needle`: a file without them is "no match" without being
 * decoded), and matches the lines itself. Only files with matches come back, with their bytes (transferred, not
 * copied) and hits; a matching file over `keepMaxBytes` comes back "deferred" (the caller reads it when it gets
 * there), so the memory held by read-ahead stays bounded.
 *
 * A user regular expression is bounded as on the main thread's path (src/fs/line-matcher.ts): each worker publishes
 * which file it is on and since when in shared memory; a watchdog terminates a worker stuck on one file for longer
 * than REGEX_FILE_TIMEOUT_MS, answers that file `regex_timeout`, answers the other files it held `fallback`, and
 * starts a fresh worker.
 *
 * Requests are batched (BATCH_FILES per message; a partial batch goes out as soon as the main thread is idle); each
 * file has a ticket (`submit`) whose outcome is there, synchronously, once its batch is answered, so callers consume
 * results in any order (search consumes them in walk order) without a promise per file. With a needle (a string every
 * matching line contains) only the lines holding it are matched. If a worker cannot start or dies, its files resolve
 * as `fallback` and the caller reads them on the main thread as before.
 */
import { availableParallelism } from 'node:os';
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { isWithin } from './path-within.js';
import { matchLines, REGEX_FILE_TIMEOUT_MS, type LineHit } from './line-matcher.js';
import { openForReadSync } from './open-file.js';
import { looksBinary } from './text.js';
import { assertDescriptorAt } from './verified-dir.js';
import { NATIVE_CODES, nativeBuffers, nativeReadRun, type NativeAddon, type NativeBuffers } from './native-reader.js';
import { embeddedWorkerCode, startWorkerFromCode } from './worker-code.js';

/**
 * What reading one candidate found. `text`: a text file passed to the caller to match (no `match` in the options);
 * `hits`: a file with matching lines (with `match`); `deferred`: a candidate over keepMaxBytes, for the caller to read;
 * `fallback`: not read here (no worker), for the caller to read; `regex_timeout`: the expression ran out of time.
 */
export type ReadOutcome =
  | { kind: 'too_large' | 'unreadable' | 'binary' | 'no_match' | 'deferred' | 'fallback' | 'regex_timeout' }
  | { kind: 'text'; bytes: Uint8Array }
  | { kind: 'hits'; bytes: Uint8Array; hits: LineHit[] };

/** The per-search settings a worker needs (structured-clonable). */
export interface ReaderOptions {
  /** Real paths of the sandbox roots: the opened file must lie in one (the /proc/self/fd re-check). */
  roots: ReadonlyArray<{ real: string }>;
  /** Larger files are `too_large` (--max-search-file-bytes). */
  maxFileBytes: number;
  /** Larger candidates are `deferred` instead of returned. */
  keepMaxBytes: number;
  /** Bytes every matching line contains (null: every text file is a candidate). */
  needle: Uint8Array | null;
  /** Match lines here (`hits`), with this expression; `bounded`: a user regex under the per-file time limit. */
  match: { source: string; flags: string; bounded: boolean } | null;
}

/** Files per message to a worker. */
const BATCH_FILES = 256;
/** How often the watchdog looks at workers running a user regular expression, ms. */
const WATCHDOG_INTERVAL_MS = 100;

/** Slots of a worker's progress record (Int32Array over shared memory). */
const P_BATCH = 0;
const P_INDEX = 1;
/** ms since the pool's epoch when the current file started (0: idle). */
const P_STARTED = 2;
const PROGRESS_SLOTS = 3;

/** The last session needle (bytes) of this thread, decoded. */
const needleText: { bytes: Uint8Array | null; text: string } = { bytes: null, text: '' };

/** Compiled expressions of a thread, by flags and source. */
const compiled = new Map<string, RegExp>();

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;

/**
 * The directory a worker last opened files in, opened and verified once (Linux): files are then opened as
 * `/proc/self/fd/<dir fd>/<name>`, which the kernel resolves from the directory the descriptor holds — openat(2) by
 * another name — so no path component above the file can be swapped for a link after the check, and the per-file
 * /proc/self/fd re-check of `openForReadSync` is not needed (it was a fifth of a worker's time). The name itself is
 * opened with O_NOFOLLOW, as always.
 */
export interface DirHandle {
  path: string;
  /** The verified directory's descriptor, or null when it could not be opened or lies outside the roots. */
  fd: number | null;
}

/** Closes a worker's current directory (end of a batch). */
export function closeDir(dir: { current: DirHandle | null }): void {
  if (dir.current?.fd != null) {
    try {
      closeSync(dir.current.fd);
    } catch {
      /* already closed */
    }
  }
  dir.current = null;
}

/**
 * The verified descriptor of `parent`, opened once per directory run and kept in `dir` (Linux): opened O_NOFOLLOW, its
 * /proc/self/fd location proven equal to `parent` (`assertDescriptorAt`), and `parent` inside the roots. Null when any
 * of that fails (every file in it is then unreadable).
 */
function verifiedParent(
  parent: string,
  isInside: (p: string) => boolean,
  dir: { current: DirHandle | null },
): number | null {
  if (dir.current?.path !== parent) {
    closeDir(dir);
    let fd: number | null = null;
    try {
      fd = openSync(parent, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);
      // The one proof of src/fs/verified-dir.ts: the descriptor is the directory the walk listed, exactly there.
      assertDescriptorAt(fd, fstatSync(fd), parent);
      if (!isInside(parent)) throw new Error('outside the roots');
    } catch {
      if (fd !== null) closeSync(fd);
      fd = null;
    }
    dir.current = { path: parent, fd };
  }
  return dir.current.fd;
}

/**
 * Opens a candidate file for reading, with the checks of `openForReadSync` (regular files only; inside the roots),
 * through the verified directory descriptor on Linux.
 * @throws when the file cannot be opened, is not a regular file, or is not inside the roots
 */
function openCandidate(
  file: string,
  isInside: (p: string) => boolean,
  dir: { current: DirHandle | null },
): { fd: number; stats: Stats } {
  if (process.platform !== 'linux') return openForReadSync(file, isInside);
  const parent = path.dirname(file);
  const dirFd = verifiedParent(parent, isInside, dir);
  if (dirFd === null) throw new Error(`${parent} is not a readable directory inside the roots`);
  const fd = openSync(`/proc/self/fd/${dirFd}/${path.basename(file)}`, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new Error('not a regular file');
    return { fd, stats };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * Reads (and with `options.match`, matches) one file as content search sees it: the work a worker does per file,
 * exported for tests. Never throws.
 * @param scratch a reusable read buffer, grown as needed
 * @param dir the worker's current verified directory (kept across the files of a batch); absent: opened and closed
 *   for this file alone
 */
export function readCandidate(
  file: string,
  options: ReaderOptions,
  scratch: { buf: Buffer },
  dir?: { current: DirHandle | null },
): ReadOutcome {
  if (!dir) {
    const own = { current: null };
    try {
      return readCandidate(file, options, scratch, own);
    } finally {
      closeDir(own);
    }
  }
  let opened: { fd: number; stats: { size: number } };
  try {
    opened = openCandidate(file, (p) => options.roots.some((r) => isWithin(r.real, p)), dir);
  } catch {
    return { kind: 'unreadable' };
  }
  const { fd } = opened;
  let bytes: Buffer;
  try {
    const size = opened.stats.size;
    if (size > options.maxFileBytes) return { kind: 'too_large' };
    if (scratch.buf.length < size) scratch.buf = Buffer.allocUnsafe(Math.max(size, 64 * 1024));
    // The size fstat reported, as the main thread's path reads it (a file that grows meanwhile is read as it was).
    let filled = 0;
    while (filled < size) {
      const n = readSync(fd, scratch.buf, filled, size - filled, filled);
      if (n === 0) break;
      filled += n;
    }
    bytes = scratch.buf.subarray(0, filled);
  } catch {
    return { kind: 'unreadable' };
  } finally {
    try {
      closeSync(fd);
    } catch {
      /* already closed */
    }
  }
  return classify(bytes, options);
}

/**
 * Content search's verdict on a file's bytes, after the JavaScript read: binary, then the required bytes, then
 * `matched` (the native path applies the first two in C, byte for byte the same).
 */
function classify(bytes: Buffer, options: ReaderOptions): ReadOutcome {
  // The whole file (a first look at its first 8 KiB scanned those twice; any prefix that looks binary makes
  // the whole file look binary, so the verdict is the same).
  if (looksBinary(bytes, true)) return { kind: 'binary' };
  if (options.needle && bytes.indexOf(options.needle) === -1) return { kind: 'no_match' };
  return matched(bytes, options);
}

/**
 * What a text file holding the required bytes is: `text` (a copy) without `options.match`, else `hits` or `no_match`;
 * `deferred` when over keepMaxBytes. `bytes` may be a view of a reused buffer: what is returned is a copy.
 */
function matched(bytes: Buffer, options: ReaderOptions): ReadOutcome {
  if (!options.match) {
    return bytes.length > options.keepMaxBytes ? { kind: 'deferred' } : { kind: 'text', bytes: new Uint8Array(bytes) };
  }
  const key = `${options.match.flags}/${options.match.source}`;
  let re = compiled.get(key);
  if (!re) {
    if (compiled.size > 16) compiled.clear();
    re = new RegExp(options.match.source, options.match.flags);
    compiled.set(key, re);
  }
  // The needle is a string every matching line contains (LineMatcher.needle): only lines holding it are tested.
  if (options.needle && options.needle !== needleText.bytes) {
    needleText.bytes = options.needle;
    needleText.text = Buffer.from(options.needle).toString('utf8');
  }
  const hits = matchLines(re, bytes.toString('utf8'), options.needle ? needleText.text : null);
  if (hits.length === 0) return { kind: 'no_match' };
  if (bytes.length > options.keepMaxBytes) return { kind: 'deferred' };
  return { kind: 'hits', bytes: new Uint8Array(bytes), hits }; // a copy with its own ArrayBuffer (transferable)
}

/** The outcome of each native code other than a candidate's. */
const NATIVE_KIND: Record<1 | 2 | 3 | 4, ReadOutcome> = {
  [NATIVE_CODES.unreadable]: { kind: 'unreadable' },
  [NATIVE_CODES.too_large]: { kind: 'too_large' },
  [NATIVE_CODES.binary]: { kind: 'binary' },
  [NATIVE_CODES.no_match]: { kind: 'no_match' },
};

/** A reader thread's reusable state: the JavaScript path's read buffer, the current directory, the addon's buffers. */
export interface ReaderState {
  scratch: { buf: Buffer };
  dir: { current: DirHandle | null };
  /** The native addon (null: the JavaScript path). */
  addon: NativeAddon | null;
  buffers: NativeBuffers;
}

/** A fresh ReaderState (`addon` null: the JavaScript path only). */
export function readerState(addon: NativeAddon | null): ReaderState {
  return { scratch: { buf: Buffer.allocUnsafe(256 * 1024) }, dir: { current: null }, addon, buffers: nativeBuffers() };
}

/**
 * Reads (and matches) the files of one batch in order, calling `each(index, outcome)` for each — the work a reader
 * thread does per batch, exported for tests. With the addon (Linux), each run of files in one directory is read by one
 * native call through the directory's verified descriptor (`verifiedParent`, as the JavaScript path opens it); else,
 * and for a run the addon refuses, file by file with `readCandidate`. `before(index)` is called before the
 * JavaScript work on a file (the watchdog's progress record), `after()` when it ends. Never throws.
 */
export function readBatch(
  files: readonly string[],
  options: ReaderOptions,
  state: ReaderState,
  each: (index: number, outcome: ReadOutcome) => void,
  before: (index: number) => void = () => {},
  after: () => void = () => {},
): void {
  const { addon } = state;
  if (!addon || process.platform !== 'linux') {
    files.forEach((file, i) => {
      before(i);
      each(i, readCandidate(file, options, state.scratch, state.dir));
    });
    after();
    return;
  }
  const isInside = (p: string) => options.roots.some((r) => isWithin(r.real, p));
  for (let first = 0; first < files.length;) {
    const parent = path.dirname(files[first]);
    let end = first + 1;
    while (end < files.length && path.dirname(files[end]) === parent) end++;
    const names = files.slice(first, end).map((f) => path.basename(f));
    const dirFd = verifiedParent(parent, isInside, state.dir);
    if (dirFd === null) {
      for (let i = first; i < end; i++) each(i, { kind: 'unreadable' });
    } else {
      let answered = 0;
      try {
        nativeReadRun(addon, dirFd, names, options.maxFileBytes, options.needle, state.buffers, (k, r) => {
          before(first + k);
          each(first + k, r.code === NATIVE_CODES.candidate ? matched(r.bytes, options) : NATIVE_KIND[r.code]);
          after();
          answered = k + 1;
        });
      } catch {
        // A name the addon refuses (it opened nothing): the JavaScript path, with its own checks, for the rest.
        for (let i = first + answered; i < end; i++) {
          before(i);
          each(i, readCandidate(files[i], options, state.scratch, state.dir));
          after();
        }
      }
    }
    first = end;
  }
}

/**
 * The files of one batch, answered together (one promise per batch, not per file; a caller whose batch is
 * answered reads a file's outcome synchronously, without a microtask per file).
 */
class PendingBatch {
  /** The outcomes in file order, once the batch is answered. */
  outcomes: ReadOutcome[] | null = null;
  /** Resolves when the batch is answered. */
  readonly ready: Promise<void>;
  private resolveReady!: () => void;
  /** Files in the batch so far. */
  count = 0;

  constructor() {
    this.ready = new Promise<void>((resolve) => (this.resolveReady = resolve));
  }

  /** Answers the batch (the first answer wins): `outcome(index)` per file, or the outcomes themselves, in file order. */
  settle(outcome: ((index: number) => ReadOutcome) | ReadOutcome[]): void {
    if (this.outcomes) return;
    this.outcomes = Array.isArray(outcome) ? outcome : Array.from({ length: this.count }, (_, i) => outcome(i));
    this.resolveReady();
  }
}

/** One file handed to the reader threads (`session().submit`). */
export class ReadTicket {
  constructor(
    private readonly batch: PendingBatch,
    private readonly index: number,
  ) {}

  /** The file's outcome, or undefined while its batch is unanswered. */
  get outcome(): ReadOutcome | undefined {
    return this.batch.outcomes?.[this.index];
  }

  /** The file's outcome when its batch is answered. */
  wait(): Promise<ReadOutcome> {
    return this.batch.ready.then(() => this.batch.outcomes![this.index]);
  }
}

interface Batch {
  id: number;
  pending: PendingBatch;
  bounded: boolean;
}

interface WorkerSlot {
  worker: Worker;
  progress: Int32Array;
  batches: Map<number, Batch>;
  load: number;
  /** Terminated on purpose (a timeout): its exit is not a failure of the pool. */
  retired: boolean;
  /** Sessions whose options this worker has been sent (they are sent once, with the first batch). */
  sessions: Set<number>;
}

/**
 * The message to a worker: a batch of one session's files, NUL-separated in one string (a path never holds a NUL; one
 * string clones far faster than an array of them: posting batches was 14 % of a search's main thread), and the
 * session's options the first time this worker sees the session.
 */
export interface BatchRequest {
  id: number;
  session: number;
  options?: ReaderOptions;
  files: string;
}

/**
 * A worker's answer: one kind code per file, in order (KIND_CODES), and for the files with bytes (`text`, `hits`) their
 * index, bytes (transferred) and hits.
 */
export interface BatchReply {
  id: number;
  kinds: string;
  found: Array<{ index: number; bytes: Uint8Array; hits?: LineHit[] }>;
}

/** One character per outcome kind in BatchReply.kinds. */
const KIND_CODES = {
  too_large: 'L',
  unreadable: 'U',
  binary: 'B',
  no_match: 'N',
  deferred: 'D',
  fallback: 'F',
  regex_timeout: 'R',
  text: 'T',
  hits: 'H',
} as const satisfies Record<ReadOutcome['kind'], string>;
const KIND_OF_CODE = new Map<string, ReadOutcome['kind']>(
  Object.entries(KIND_CODES).map(([kind, code]) => [code, kind as ReadOutcome['kind']]),
);

/** The outcomes without bytes, one frozen object per kind, shared by every file with that outcome. */
const PLAIN_OUTCOMES = new Map<string, ReadOutcome>(
  (['too_large', 'unreadable', 'binary', 'no_match', 'deferred', 'fallback', 'regex_timeout'] as const).map((kind) => [
    KIND_CODES[kind],
    Object.freeze({ kind }),
  ]),
);
const FALLBACK = PLAIN_OUTCOMES.get(KIND_CODES.fallback)!;

/** The outcomes of a reply, in file order (`fallback` for anything missing or malformed). */
export function outcomesOf(reply: BatchReply, count: number): ReadOutcome[] {
  const out: ReadOutcome[] = [];
  const found = reply.found.length > 0 ? new Map(reply.found.map((f) => [f.index, f])) : null;
  for (let i = 0; i < count; i++) {
    const code = reply.kinds[i] ?? '';
    const plain = PLAIN_OUTCOMES.get(code);
    if (plain) {
      out.push(plain);
      continue;
    }
    const kind = KIND_OF_CODE.get(code);
    const f = found?.get(i);
    if (kind === 'hits' && f?.hits) out.push({ kind, bytes: f.bytes, hits: f.hits });
    else if (kind === 'text' && f) out.push({ kind, bytes: f.bytes });
    else out.push(FALLBACK);
  }
  return out;
}

/** Session options a worker keeps (older ones are dropped; their batches are long answered). */
const WORKER_SESSIONS = 8;

/** The worker pool (one per process, threads created on first use and unref'd). */
export class SearchReaderPool {
  private slots: WorkerSlot[] | null = null;
  private broken = false;
  private nextBatch = 1;
  private nextSession = 1;
  private watchdog: NodeJS.Timeout | null = null;
  private readonly epoch = Date.now();
  /**
   * The native addon reader threads attach to (`setNativeAddon`: the path of the copy loaded at start-up,
   * src/fs/native-load.ts); null: the JavaScript path.
   */
  private nativePath: string | null = null;

  /**
   * @param size worker threads
   * @param code the reader worker's code (src/fs/worker-code.ts: embedded in the bundle, never read from a file);
   *   null: no threads, every file is read by the caller (`fallback`)
   * @param timeoutMs a user regular expression's time per file before its worker is stopped
   */
  constructor(
    private readonly size: number,
    private readonly code: string | null,
    private readonly timeoutMs: number = REGEX_FILE_TIMEOUT_MS,
  ) {}

  /**
   * The addon reader threads started from now on read through: `path` is where the process loaded it at start-up
   * (`LoadedNativeAddon.path`, a descriptor of a private copy, so a thread's dlopen finds the library already loaded
   * and reads no file); null (the default, and `--native=off`): the JavaScript path. Threads already running keep
   * what they started with; the CLI sets this before any search.
   */
  setNativeAddon(path: string | null): void {
    this.nativePath = path;
  }

  /**
   * A batching reader for one search (all its files share `options`): `submit` hands a file over and returns its
   * ticket; `read` is `submit` and wait.
   */
  session(options: ReaderOptions): { submit(file: string): ReadTicket; read(file: string): Promise<ReadOutcome> } {
    // A needle cut from Buffer's shared pool would clone the whole 8 KiB pool into every message: copy it out.
    options = { ...options, needle: options.needle ? new Uint8Array(options.needle) : null };
    const session = this.nextSession++;
    let files: string[] = [];
    let pending = new PendingBatch();
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      if (files.length === 0) return;
      this.dispatch(session, files, pending, options);
      files = [];
      pending = new PendingBatch();
    };
    const submit = (file: string): ReadTicket => {
      const ticket = new ReadTicket(pending, pending.count++);
      files.push(file);
      if (files.length >= BATCH_FILES) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
      return ticket;
    };
    return { submit, read: (file) => submit(file).wait() };
  }

  private dispatch(session: number, files: string[], pending: PendingBatch, options: ReaderOptions): void {
    const slots = this.ensureWorkers();
    if (!slots) {
      pending.settle(() => ({ kind: 'fallback' }));
      return;
    }
    let slot = slots[0];
    for (const s of slots) if (s.load < slot.load) slot = s;
    const batch: Batch = { id: this.nextBatch++, pending, bounded: options.match?.bounded ?? false };
    slot.batches.set(batch.id, batch);
    slot.load += files.length;
    const request: BatchRequest = { id: batch.id, session, files: files.join('\0') };
    if (!slot.sessions.has(session)) {
      request.options = options;
      slot.sessions.add(session);
      if (slot.sessions.size > WORKER_SESSIONS) slot.sessions.delete(slot.sessions.values().next().value!);
    }
    slot.worker.postMessage(request);
    if (batch.bounded) this.armWatchdog();
  }

  private ensureWorkers(): WorkerSlot[] | null {
    if (this.broken || this.code === null) return null;
    if (this.slots) return this.slots;
    try {
      this.slots = Array.from({ length: this.size }, () => this.startWorker());
      return this.slots;
    } catch {
      this.broken = true;
      return null;
    }
  }

  private startWorker(): WorkerSlot {
    const progress = new Int32Array(new SharedArrayBuffer(PROGRESS_SLOTS * 4));
    const worker = startWorkerFromCode(this.code!, {
      workerData: { progress, epoch: this.epoch, nativePath: this.nativePath },
    });
    worker.unref();
    const slot: WorkerSlot = { worker, progress, batches: new Map(), load: 0, retired: false, sessions: new Set() };
    worker.on('message', (msg: BatchReply) => {
      const batch = slot.batches.get(msg.id);
      if (!batch) return;
      slot.batches.delete(msg.id);
      slot.load -= batch.pending.count;
      batch.pending.settle(outcomesOf(msg, batch.pending.count));
    });
    const fail = () => {
      if (slot.retired) return;
      // Every outstanding file is read by the caller instead; later searches do without workers.
      this.broken = true;
      this.release(slot, () => ({ kind: 'fallback' }));
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    return slot;
  }

  /** Answers every outstanding file of a slot with `outcome(batch, index)`. */
  private release(slot: WorkerSlot, outcome: (batch: Batch, index: number) => ReadOutcome): void {
    const batches = [...slot.batches.values()];
    slot.batches.clear();
    slot.load = 0;
    for (const b of batches) b.pending.settle((i) => outcome(b, i));
  }

  private armWatchdog(): void {
    if (this.watchdog) return;
    this.watchdog = setInterval(() => this.checkTimeouts(), WATCHDOG_INTERVAL_MS);
    this.watchdog.unref();
  }

  /** Stops a worker stuck on one file under a user regular expression; disarms when nothing bounded is pending. */
  private checkTimeouts(): void {
    let pendingBounded = false;
    const now = Date.now() - this.epoch;
    this.slots?.forEach((slot, index) => {
      const batchId = Atomics.load(slot.progress, P_BATCH);
      const started = Atomics.load(slot.progress, P_STARTED);
      const batch = slot.batches.get(batchId);
      if (batch?.bounded && started > 0 && now - started > this.timeoutMs) {
        const fileIndex = Atomics.load(slot.progress, P_INDEX);
        slot.retired = true;
        void slot.worker.terminate();
        this.release(slot, (b, i) =>
          b.id === batchId && i === fileIndex ? { kind: 'regex_timeout' } : { kind: 'fallback' },
        );
        this.slots![index] = this.startWorker();
        return;
      }
      for (const b of slot.batches.values()) if (b.bounded) pendingBounded = true;
    });
    if (!pendingBounded && this.watchdog) {
      clearInterval(this.watchdog);
      this.watchdog = null;
    }
  }
}

/**
 * The worker loop (run by src/fs/search-reader-worker.ts): answers each batch in order, publishing the file it is on
 * in `progress` for the watchdog.
 */
export function serveBatches(
  port: import('node:worker_threads').MessagePort,
  progress: Int32Array,
  epoch: number,
  addon: NativeAddon | null = null,
): void {
  const state = readerState(addon);
  const sessions = new Map<number, ReaderOptions>();
  const before = (i: number) => {
    Atomics.store(progress, P_INDEX, i);
    Atomics.store(progress, P_STARTED, Math.max(1, Date.now() - epoch));
  };
  const after = () => Atomics.store(progress, P_STARTED, 0);
  port.on('message', (job: BatchRequest) => {
    if (job.options) {
      sessions.set(job.session, job.options);
      if (sessions.size > WORKER_SESSIONS) sessions.delete(sessions.keys().next().value!);
    }
    const options = sessions.get(job.session);
    const files = job.files.split('\0');
    const codes: string[] = new Array<string>(files.length);
    const found: BatchReply['found'] = [];
    const transfer: ArrayBuffer[] = [];
    Atomics.store(progress, P_BATCH, job.id);
    const each = (i: number, r: ReadOutcome) => {
      codes[i] = KIND_CODES[r.kind];
      if (r.kind === 'text' || r.kind === 'hits') {
        transfer.push(r.bytes.buffer as ArrayBuffer);
        found.push(r.kind === 'hits' ? { index: i, bytes: r.bytes, hits: r.hits } : { index: i, bytes: r.bytes });
      }
    };
    // A session this worker does not know (never sent, or dropped): the caller reads the files itself.
    if (options) readBatch(files, options, state, each, before, after);
    else files.forEach((_, i) => each(i, { kind: 'fallback' }));
    // The directory is verified afresh by the next batch (its roots may differ, and it may have moved since).
    closeDir(state.dir);
    Atomics.store(progress, P_STARTED, 0);
    const reply: BatchReply = { id: job.id, kinds: codes.join(''), found };
    port.postMessage(reply, transfer);
  });
}

/** Reader threads: one per core (they block in syscalls as much as they compute), at least 1, at most 4. */
const POOL_SIZE = Math.max(1, Math.min(4, availableParallelism()));

/** The process's pool. */
export const searchReaderPool = new SearchReaderPool(POOL_SIZE, embeddedWorkerCode('search-reader-worker'));
