/**
 * The one concurrency queue for heavy calls (docs/security.md "One queue for heavy calls, and untrusted text"). A
 * heavy call is one that starts a child process or walks a tree. Each call names the classes of work it does
 * (`HeavyClass`), takes one slot of every one of them at once before it starts, and holds them until it ends:
 *
 * - `walk`: listing, searching and reading many files, tree operations (copy, move, recursive delete, replace in files,
 *   revert_changes);
 * - `git`: a git view and the git processes run in it (git_status, git_diff, a mutation given expected_status_hash);
 * - `forge`: an issue call (gh, glab or an HTTPS request to GitLab, and the git view that finds its repository from a
 *   work tree's remotes).
 *
 * At most `HEAVY_LIMITS[class]` calls of a class run at once. Every call runs its child processes one after another,
 * so at most `HEAVY_LIMITS.forge` gh/glab processes and `HEAVY_LIMITS.git + HEAVY_LIMITS.forge` child processes in
 * all exist at any time. Calls that cannot start wait in one FIFO queue, first come first served within each class: a
 * waiting call reserves its classes for itself, so a later call needing any of them waits behind it (no call
 * starves), while a call of other classes starts at once. A waiting call costs a promise and its arguments, nothing
 * polls; when the client cancels it (its AbortSignal fires) it leaves the queue at once. A call that would make the
 * queue longer than HEAVY_QUEUE_LIMIT, or the arguments waiting larger than HEAVY_QUEUE_BYTES, is refused at once
 * with a retryable envelope (IO_ERROR, details.reason "busy", recovery retry_later). Slots are taken all at once and
 * never while holding others, so no two calls can wait for each other.
 */
import { ToolError } from '../errors/tool-error.js';
import { processSlot } from '../process-slots.js';

/** The kinds of heavy work a call can do (see the module comment). */
export type HeavyClass = 'walk' | 'git' | 'forge';

/** Every class, in a fixed order (details of the busy envelope, stats). */
export const HEAVY_CLASSES: readonly HeavyClass[] = ['walk', 'git', 'forge'];

/** Calls of each class running at once at most. */
export const HEAVY_LIMITS: Readonly<Record<HeavyClass, number>> = { walk: 4, git: 4, forge: 4 };

/** Heavy calls waiting at most (all classes together); one more is refused (retryable). */
export const HEAVY_QUEUE_LIMIT = 1000;
/**
 * Arguments held by waiting calls at most, in serialized bytes (a waiting call holds its arguments, and one may be
 * up to the 10 MiB message limit); a call that would exceed it is refused like a full queue.
 */
export const HEAVY_QUEUE_BYTES = 16 * 1024 * 1024;

interface Waiter {
  classes: readonly HeavyClass[];
  bytes: number;
  start: () => void;
}

/**
 * The queue's state (src/process-slots.ts): calls running per class; calls waiting per class (a call of several
 * classes counts in each); the arguments' bytes held by waiting calls; the waiting calls, first come first.
 */
const heavy = processSlot('tools/heavy-calls', () => ({
  running: { walk: 0, git: 0, forge: 0 },
  waiting: { walk: 0, git: 0, forge: 0 },
  queuedBytes: 0,
  queue: [] as Waiter[],
}));

/**
 * The classes named, each once, in HEAVY_CLASSES order; `false`, `undefined` and `null` entries are left out, so a
 * tool can write `heavyClasses(args.recursive && 'walk', args.expected_status_hash !== undefined && 'git')`.
 */
export function heavyClasses(...named: readonly (HeavyClass | false | undefined | null)[]): HeavyClass[] {
  return HEAVY_CLASSES.filter((c) => named.includes(c));
}

/**
 * Runs `fn` once a slot of every class in `classes` is free (at once when `classes` is empty). `args` are the
 * call's arguments: their serialized size counts against HEAVY_QUEUE_BYTES while the call waits.
 * @throws ToolError IO_ERROR (reason busy, retryable) when the queue is full; IO_ERROR (reason cancelled) when
 *   `signal` aborts while the call waits; whatever `fn` throws (its slots are freed)
 */
export async function runHeavy<T>(
  classes: readonly HeavyClass[],
  signal: AbortSignal | undefined,
  fn: () => Promise<T>,
  args?: unknown,
): Promise<T> {
  const need = heavyClasses(...classes);
  if (need.length === 0) return fn();
  if (need.every((c) => heavy.running[c] < HEAVY_LIMITS[c] && heavy.waiting[c] === 0)) take(need);
  else await waitForSlots(need, signal, args === undefined ? 0 : JSON.stringify(args).length);
  try {
    return await fn();
  } finally {
    for (const c of need) heavy.running[c]--;
    schedule();
  }
}

function take(classes: readonly HeavyClass[]): void {
  for (const c of classes) heavy.running[c]++;
}

/**
 * Starts every waiting call whose classes all have a free slot and are not reserved by a call before it, in queue
 * order. Called whenever a slot frees or a waiter leaves.
 */
function schedule(): void {
  const reserved = new Set<HeavyClass>();
  for (let i = 0; i < heavy.queue.length && reserved.size < HEAVY_CLASSES.length;) {
    const w = heavy.queue[i];
    if (w.classes.every((c) => !reserved.has(c) && heavy.running[c] < HEAVY_LIMITS[c])) {
      unqueue(i);
      take(w.classes);
      w.start();
    } else {
      for (const c of w.classes) reserved.add(c);
      i++;
    }
  }
}

function unqueue(at: number): void {
  const [w] = heavy.queue.splice(at, 1);
  heavy.queuedBytes -= w.bytes;
  for (const c of w.classes) heavy.waiting[c]--;
}

function waitForSlots(classes: readonly HeavyClass[], signal: AbortSignal | undefined, bytes: number): Promise<void> {
  if (signal?.aborted) return Promise.reject(cancelled());
  if (
    heavy.queue.length >= HEAVY_QUEUE_LIMIT ||
    (heavy.queue.length > 0 && heavy.queuedBytes + bytes > HEAVY_QUEUE_BYTES)
  ) {
    return Promise.reject(busy());
  }
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      const at = heavy.queue.indexOf(waiter);
      if (at >= 0) {
        unqueue(at);
        schedule(); // this call may have reserved classes that later calls can now take
      }
      reject(cancelled());
    };
    const waiter: Waiter = {
      classes,
      bytes,
      start: () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
    };
    heavy.queue.push(waiter);
    heavy.queuedBytes += bytes;
    for (const c of classes) heavy.waiting[c]++;
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function busy(): ToolError {
  const total = HEAVY_CLASSES.reduce((n, c) => n + heavy.running[c], 0);
  return new ToolError(
    'IO_ERROR',
    `The server is busy: ${total} heavy calls are running and ${heavy.queue.length} are waiting.`,
    {
      details: {
        reason: 'busy',
        errno: 'EAGAIN',
        running: total,
        running_by_class: { ...heavy.running },
        limits: { ...HEAVY_LIMITS },
        queued: heavy.queue.length,
        queue_limit: HEAVY_QUEUE_LIMIT,
        queue_bytes_limit: HEAVY_QUEUE_BYTES,
        retry_after_s: 1,
      },
      suggestion:
        'Retry the same call in a moment, or make fewer concurrent listing, search, tree, git or issue calls.',
      retryable: true,
      recovery: 'retry_later',
    },
  );
}

function cancelled(): ToolError {
  return new ToolError('IO_ERROR', 'The call was cancelled while it waited for a free slot.', {
    details: { reason: 'cancelled', errno: 'ECANCELED' },
    suggestion: 'Nothing to do: the call was cancelled by the client before it started.',
  });
}

/** Heavy calls running (in all and per class) and waiting (tests, diagnostics). */
export function heavyCallStats(): {
  running: number;
  runningByClass: Record<HeavyClass, number>;
  queued: number;
  queuedBytes: number;
} {
  return {
    running: HEAVY_CLASSES.reduce((n, c) => n + heavy.running[c], 0),
    runningByClass: { ...heavy.running },
    queued: heavy.queue.length,
    queuedBytes: heavy.queuedBytes,
  };
}
