/**
 * The process's one pool of worker threads for content search and user regular expressions (docs/tools.md: search
 * "stays responsive on huge trees"; a user regular expression "can never stall the server"), main thread's side.
 *
 * Opening, checking and reading tens of thousands of small files costs five syscalls each (open, fstat, the
 * /proc/self/fd containment re-check, read, close); as promise-based calls on the main thread each is a thread-pool
 * round trip, and a 23,000-file search spent seconds in that overhead alone. Here a small pool of worker threads
 * (src/fs/search-reader-worker.ts) does the same checks synchronously through the verified-access module
 * (src/fs/search-reader-read.ts), tells text from binary, applies the query's required bytes (`LineMatcher.needle`: a
 * file without them is "no match" without being decoded), and matches the lines itself
 * (src/fs/search-reader-match.ts). Only files with matches come back, with their bytes (transferred, not copied) and
 * hits; a matching file over `keepMaxBytes` comes back "deferred" (the caller reads it when it gets there), so the
 * memory held by read-ahead stays bounded. The same threads run regular-expression jobs on one text (`regexLines`,
 * `regexReplace`: a user regular expression's search on the main thread's path, replace_in_files).
 *
 * A user regular expression is bounded: each worker publishes which file or job it is on and since when in shared
 * memory; a watchdog terminates a worker stuck on one for longer than REGEX_FILE_TIMEOUT_MS, answers that file
 * `regex_timeout` (a job: rejects with the regex_timeout error), starts a fresh worker, and answers the other files
 * it held `fallback` (its other jobs run again on the fresh worker). A thread's start-up is not charged to its first file.
 *
 * Requests are batched (BATCH_FILES per message; a partial batch goes out as soon as the main thread is idle); each
 * file has a ticket (`submit`) whose outcome is there, synchronously, once its batch is answered, so callers consume
 * results in any order (search consumes them in walk order) without a promise per file. If a worker cannot start or
 * dies, its files resolve as `fallback` and the caller reads them on the main thread as before.
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { ToolError } from '../errors/tool-error.js';
import type { LineHit } from './match-lines.js';
import type { LineReplacement } from './replace-lines.js';
import {
  BatchRuns,
  P_BATCH,
  P_INDEX,
  P_STARTED,
  PROGRESS_SLOTS,
  ReplyOutcomes,
  WORKER_SESSIONS,
  type BatchReply,
  type BatchRequest,
  type ReaderOptions,
  type ReadOutcome,
  type RegexJobReply,
  type RegexJobRequest,
} from './search-reader-protocol.js';
import { embeddedWorkerCode, startWorkerFromCode } from './worker-code.js';
import { processSlot } from '../process-slots.js';

/** How long one file may take under a user regular expression, ms. */
export const REGEX_FILE_TIMEOUT_MS = 1000;

/** The error of a regular expression stopped after REGEX_FILE_TIMEOUT_MS on one file (VALIDATION regex_timeout). */
export function regexTimeoutError(): ToolError {
  return new ToolError(
    'VALIDATION',
    `The regular expression took longer than ${REGEX_FILE_TIMEOUT_MS} ms on one file and was stopped.`,
    {
      details: { reason: 'regex_timeout', field: 'query', timeout_ms: REGEX_FILE_TIMEOUT_MS },
      suggestion: 'Simplify the pattern (avoid nested quantifiers such as (a+)+), or use a literal query.',
    },
  );
}

/** Files per message to a worker. */
const BATCH_FILES = 512;
/** How often the watchdog looks at workers running a user regular expression, ms. */
const WATCHDOG_INTERVAL_MS = 100;

/**
 * The files of one batch, answered together (one promise per batch, not per file; a caller whose batch is
 * answered reads a file's outcome synchronously, without a microtask per file).
 */
class PendingBatch {
  /** The answer, once there: the worker's reply (read file by file), or an outcome per file. */
  private answer: ReplyOutcomes | ((index: number) => ReadOutcome) | null = null;
  /** Resolves when the batch is answered. */
  readonly ready: Promise<void>;
  private resolveReady!: () => void;
  /** Files in the batch so far. */
  count = 0;

  constructor() {
    this.ready = new Promise<void>((resolve) => (this.resolveReady = resolve));
  }

  /** File `index`'s outcome, or undefined while the batch is unanswered. */
  outcome(index: number): ReadOutcome | undefined {
    const answer = this.answer;
    if (answer === null) return undefined;
    return answer instanceof ReplyOutcomes ? answer.at(index) : answer(index);
  }

  /** Answers the batch (the first answer wins): the worker's reply, or `outcome(index)` per file. */
  settle(answer: ReplyOutcomes | ((index: number) => ReadOutcome)): void {
    if (this.answer) return;
    if (answer instanceof ReplyOutcomes) this.answer = answer;
    else {
      // Made once per file, so that each file's outcome is one object.
      const outcomes = Array.from({ length: this.count }, (_, i) => answer(i));
      this.answer = (i) => outcomes[i];
    }
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
    return this.batch.outcome(this.index);
  }

  /** The file's outcome when its batch is answered. */
  wait(): Promise<ReadOutcome> {
    return this.batch.ready.then(() => this.batch.outcome(this.index)!);
  }
}

/** A batch or job a worker holds. */
interface InFlight {
  id: number;
  /** Under the per-file time limit (a user regular expression). */
  bounded: boolean;
  /** Files it holds (a job: 1), the slot's load. */
  count: number;
  /** The worker's answer. */
  answer(reply: BatchReply | RegexJobReply): void;
  /** The worker is gone: `timedOut` is the index of the file (0 for a job) the watchdog stopped, if in this one. */
  abandon(timedOut: number | null): void;
}

interface WorkerSlot {
  worker: Worker;
  progress: Int32Array;
  held: Map<number, InFlight>;
  load: number;
  /** Terminated on purpose (a timeout): its exit is not a failure of the pool. */
  retired: boolean;
  /** Sessions whose options this worker has been sent (they are sent once, with the first batch). */
  sessions: Set<number>;
}

/** A regular-expression job's parameters (RegexJobRequest.job). */
type RegexJob = RegexJobRequest['job'];

/** The worker pool (one per process, threads created on first use and unref'd). */
export class SearchReaderPool {
  private slots: WorkerSlot[] | null = null;
  private broken = false;
  private nextId = 1;
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
   *   null: no threads, every file is read by the caller (`fallback`) and every regular-expression job fails
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
   * A batching reader for one search (all its files share `options`): `submit` hands over the entry `name` of the
   * directory `parent` (absolute) and returns its ticket; `read` is `submit` of an absolute path and wait.
   */
  session(options: ReaderOptions): {
    submit(parent: string, name: string): ReadTicket;
    read(file: string): Promise<ReadOutcome>;
  } {
    const session = this.nextSession++;
    // A needle cut from Buffer's shared pool would clone the whole 8 KiB pool into every message: copy them out. The
    // session's number is the search's for the content summaries (the process has one pool: unique, never 0).
    options = {
      ...options,
      needle: options.needle ? new Uint8Array(options.needle) : null,
      anyOf: options.anyOf ? options.anyOf.map((b) => new Uint8Array(b)) : null,
      search: (session % 0xfffffffe) + 1,
    };
    const files = new BatchRuns();
    let pending = new PendingBatch();
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      if (files.count === 0) return;
      this.dispatch(session, files.take(), pending, options);
      pending = new PendingBatch();
    };
    const submit = (parent: string, name: string): ReadTicket => {
      const ticket = new ReadTicket(pending, pending.count++);
      files.add(parent, name);
      if (files.count >= BATCH_FILES) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
      return ticket;
    };
    return { submit, read: (file) => submit(path.dirname(file), path.basename(file)).wait() };
  }

  /**
   * The matching lines of `text` under the user regular expression (`source`, `flags`; already compiled once by the
   * caller), in a worker, under the per-file time limit.
   * @throws ToolError VALIDATION regex_timeout; Error when no worker can run it (a build without the worker code)
   */
  regexLines(source: string, flags: string, text: string): Promise<LineHit[]> {
    return this.runJob({ source, flags, text }).then((reply) => reply.lines!);
  }

  /**
   * `text` with every match of (`source`, `flags`) replaced (src/fs/replace-lines.ts `replaceLines`: `$1`, `$<name>`,
   * `$&`, `$$` expanded; bounded by `maxChars` and `maxCount`), in a worker, under the per-file time limit.
   * @throws as `regexLines`
   */
  regexReplace(
    source: string,
    flags: string,
    text: string,
    replace: { replacement: string; maxChars: number; maxCount: number },
  ): Promise<LineReplacement> {
    return this.runJob({ source, flags, text, replace }).then((reply) => reply.replaced!);
  }

  private runJob(job: RegexJob): Promise<RegexJobReply> {
    return new Promise<RegexJobReply>((resolve, reject) => {
      const slot = this.leastLoaded();
      if (!slot) {
        reject(
          new Error(
            this.code === null
              ? 'this build embeds no regex worker (run the bundle, dist/cli.js)'
              : 'the regular-expression worker could not start',
          ),
        );
        return;
      }
      const id = this.nextId++;
      this.hold(slot, {
        id,
        bounded: true,
        count: 1,
        answer: (reply) => {
          const r = reply as RegexJobReply;
          if (r.error !== undefined) reject(new Error(`the regular expression failed: ${r.error}`));
          else resolve(r);
        },
        // Stopped for another job's timeout: run again on the thread that replaced it (the pool is broken when a
        // thread died: then it rejects).
        abandon: (timedOut) => {
          if (timedOut === null) void this.runJob(job).then(resolve, reject);
          else reject(regexTimeoutError());
        },
      });
      const request: RegexJobRequest = { id, job };
      slot.worker.postMessage(request);
    });
  }

  private dispatch(session: number, files: string, pending: PendingBatch, options: ReaderOptions): void {
    const slot = this.leastLoaded();
    if (!slot) {
      pending.settle(() => ({ kind: 'fallback' }));
      return;
    }
    const id = this.nextId++;
    this.hold(slot, {
      id,
      bounded: options.match?.bounded ?? false,
      count: pending.count,
      answer: (reply) => pending.settle(new ReplyOutcomes(reply as BatchReply)),
      abandon: (timedOut) => pending.settle((i) => ({ kind: i === timedOut ? 'regex_timeout' : 'fallback' })),
    });
    const request: BatchRequest = { id, session, files };
    if (!slot.sessions.has(session)) {
      request.options = options;
      slot.sessions.add(session);
      if (slot.sessions.size > WORKER_SESSIONS) slot.sessions.delete(slot.sessions.values().next().value!);
    }
    slot.worker.postMessage(request);
  }

  /** Notes that `slot` holds `work` (its load, the watchdog when bounded). */
  private hold(slot: WorkerSlot, work: InFlight): void {
    slot.held.set(work.id, work);
    slot.load += work.count;
    if (work.bounded) this.armWatchdog();
  }

  /** The least loaded worker (the threads started on first use), or null when there are none. */
  private leastLoaded(): WorkerSlot | null {
    const slots = this.ensureWorkers();
    if (!slots) return null;
    let slot = slots[0];
    for (const s of slots) if (s.load < slot.load) slot = s;
    return slot;
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
    const slot: WorkerSlot = { worker, progress, held: new Map(), load: 0, retired: false, sessions: new Set() };
    worker.on('message', (msg: BatchReply | RegexJobReply) => {
      const work = slot.held.get(msg.id);
      if (!work) return;
      slot.held.delete(msg.id);
      slot.load -= work.count;
      work.answer(msg);
    });
    const fail = () => {
      if (slot.retired) return;
      // Every outstanding file is read by the caller instead; later searches do without workers.
      this.broken = true;
      this.release(slot, null, 0);
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    return slot;
  }

  /** Abandons everything a slot holds: the file `index` of batch or job `stopped` timed out, if any. */
  private release(slot: WorkerSlot, stopped: number | null, index: number): void {
    const held = [...slot.held.values()];
    slot.held.clear();
    slot.load = 0;
    for (const w of held) w.abandon(w.id === stopped ? index : null);
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
      const current = Atomics.load(slot.progress, P_BATCH);
      const started = Atomics.load(slot.progress, P_STARTED);
      if (slot.held.get(current)?.bounded && started > 0 && now - started > this.timeoutMs) {
        slot.retired = true;
        void slot.worker.terminate();
        // The fresh worker first: what `release` abandons may be submitted again at once (a job). A worker that
        // cannot start leaves the pool without threads (what it held is then read by the callers, its jobs fail).
        try {
          this.slots![index] = this.startWorker();
        } catch {
          this.broken = true;
        }
        this.release(slot, current, Atomics.load(slot.progress, P_INDEX));
        return;
      }
      for (const w of slot.held.values()) if (w.bounded) pendingBounded = true;
    });
    if (!pendingBounded && this.watchdog) {
      clearInterval(this.watchdog);
      this.watchdog = null;
    }
  }
}

/** Reader threads: one per core (they block in syscalls as much as they compute), at least 1, at most 4. */
const POOL_SIZE = Math.max(1, Math.min(4, availableParallelism()));

/** The process's pool (src/process-slots.ts). */
export const searchReaderPool = processSlot(
  'fs/search-reader',
  () => new SearchReaderPool(POOL_SIZE, embeddedWorkerCode('search-reader-worker')),
);
