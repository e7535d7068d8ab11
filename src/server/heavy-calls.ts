/**
 * Concurrency bound for heavy calls (issue #14): listing and searching directory trees, multi-file reads and diffs.
 * At most HEAVY_CONCURRENCY of them run at once in this process; further calls wait in a FIFO queue (each leaves the
 * queue as soon as its client cancels it), and a call that would make the queue longer than HEAVY_QUEUE_LIMIT is
 * refused at once with a retryable envelope (IO_ERROR, details.reason "busy", recovery retry_later). Together with
 * the response budget and the shared directory listings this bounds peak memory whatever the number of concurrent
 * calls: the queued calls hold only their arguments.
 */
import { ToolError } from '../errors/tool-error.js';

/** Heavy calls running at once. */
export const HEAVY_CONCURRENCY = 4;
/** Heavy calls waiting at most; one more is refused (retryable). */
export const HEAVY_QUEUE_LIMIT = 1000;

interface Waiter {
  start: () => void;
  cancel: () => void;
}

let running = 0;
const queue: Waiter[] = [];

/**
 * Runs `fn` when a heavy slot is free.
 * @throws ToolError IO_ERROR (reason busy, retryable) when the queue is full; IO_ERROR (reason cancelled) when
 *   `signal` aborts while the call waits
 */
export async function runHeavy<T>(signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
  if (running >= HEAVY_CONCURRENCY) await waitForSlot(signal);
  else running++;
  try {
    return await fn();
  } finally {
    release();
  }
}

function release(): void {
  const next = queue.shift();
  if (next) next.start(); // the slot passes straight to the next call
  else running--;
}

function waitForSlot(signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(cancelled());
  if (queue.length >= HEAVY_QUEUE_LIMIT) {
    return Promise.reject(new ToolError('IO_ERROR',
      `The server is busy: ${HEAVY_CONCURRENCY} heavy calls are running and ${queue.length} are waiting.`, {
        details: { reason: 'busy', errno: 'EAGAIN', running: HEAVY_CONCURRENCY, queued: queue.length,
          queue_limit: HEAVY_QUEUE_LIMIT, retry_after_s: 1 },
        suggestion: 'Retry the same call in a moment, or make fewer concurrent listing/search/read_files calls.',
        retryable: true,
        recovery: 'retry_later',
      }));
  }
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      const at = queue.indexOf(waiter);
      if (at >= 0) queue.splice(at, 1);
      reject(cancelled());
    };
    const waiter: Waiter = {
      start: () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      cancel: onAbort,
    };
    queue.push(waiter);
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
export function heavyCallStats(): { running: number; queued: number } {
  return { running, queued: queue.length };
}
