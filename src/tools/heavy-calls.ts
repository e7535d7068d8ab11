/**
 * Concurrency bound for heavy calls (issue #14): listing and searching directory trees, multi-file reads and diffs.
 * At most HEAVY_CONCURRENCY of them run at once in this process; further calls wait in a FIFO queue (each leaves the
 * queue as soon as its client cancels it), and a call that would make the queue longer than HEAVY_QUEUE_LIMIT, or the
 * arguments waiting larger than HEAVY_QUEUE_BYTES, is refused at once with a retryable envelope (IO_ERROR, details.reason "busy", recovery retry_later). Together with
 * the response budget and the shared directory listings this bounds peak memory whatever the number of concurrent
 * calls: the queued calls hold only their arguments, and those are bounded too.
 */
import { ToolError } from '../errors/tool-error.js';

/** Heavy calls running at once. */
export const HEAVY_CONCURRENCY = 4;
/** Heavy calls waiting at most; one more is refused (retryable). */
export const HEAVY_QUEUE_LIMIT = 1000;
/**
 * Arguments held by waiting calls at most, in serialized bytes (a waiting call holds its arguments, and one may be
 * up to the 10 MiB message limit); a call that would exceed it is refused like a full queue.
 */
export const HEAVY_QUEUE_BYTES = 16 * 1024 * 1024;

interface Waiter {
  bytes: number;
  start: () => void;
  cancel: () => void;
}

let running = 0;
let queuedBytes = 0;
const queue: Waiter[] = [];

/**
 * Runs `fn` when a heavy slot is free. `args` are the call's arguments (their serialized size counts against
 * HEAVY_QUEUE_BYTES while the call waits).
 * @throws ToolError IO_ERROR (reason busy, retryable) when the queue is full; IO_ERROR (reason cancelled) when
 *   `signal` aborts while the call waits
 */
export async function runHeavy<T>(signal: AbortSignal | undefined, fn: () => Promise<T>, args?: unknown): Promise<T> {
  if (running >= HEAVY_CONCURRENCY || queue.length > 0)
    await waitForSlot(signal, args === undefined ? 0 : JSON.stringify(args).length);
  else running++;
  try {
    return await fn();
  } finally {
    release();
  }
}

function release(): void {
  const next = queue.shift();
  if (next) {
    queuedBytes -= next.bytes;
    next.start(); // the slot passes straight to the next call
  } else running--;
}

function waitForSlot(signal: AbortSignal | undefined, bytes: number): Promise<void> {
  if (signal?.aborted) return Promise.reject(cancelled());
  if (queue.length >= HEAVY_QUEUE_LIMIT || (queue.length > 0 && queuedBytes + bytes > HEAVY_QUEUE_BYTES)) {
    return Promise.reject(
      new ToolError(
        'IO_ERROR',
        `The server is busy: ${HEAVY_CONCURRENCY} heavy calls are running and ${queue.length} are waiting.`,
        {
          details: {
            reason: 'busy',
            errno: 'EAGAIN',
            running: HEAVY_CONCURRENCY,
            queued: queue.length,
            queue_limit: HEAVY_QUEUE_LIMIT,
            queue_bytes_limit: HEAVY_QUEUE_BYTES,
            retry_after_s: 1,
          },
          suggestion: 'Retry the same call in a moment, or make fewer concurrent listing/search/read_files calls.',
          retryable: true,
          recovery: 'retry_later',
        },
      ),
    );
  }
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      const at = queue.indexOf(waiter);
      if (at >= 0) {
        queue.splice(at, 1);
        queuedBytes -= waiter.bytes;
      }
      reject(cancelled());
    };
    const waiter: Waiter = {
      bytes,
      start: () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      cancel: onAbort,
    };
    queue.push(waiter);
    queuedBytes += bytes;
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function cancelled(): ToolError {
  return new ToolError('IO_ERROR', 'The call was cancelled while it waited for a free slot.', {
    details: { reason: 'cancelled', errno: 'ECANCELED' },
    suggestion: 'Nothing to do: the call was cancelled by the client before it started.',
  });
}

/** Heavy calls running and waiting (tests, diagnostics). */
export function heavyCallStats(): { running: number; queued: number; queuedBytes: number } {
  return { running, queued: queue.length, queuedBytes };
}
