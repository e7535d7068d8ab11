/**
 * Graceful shutdown (docs/security.md "Locks, temporaries and shutdown"): when the client closes stdin or the
 * process gets SIGTERM, the server stops taking calls (a call that arrives afterwards is answered with IO_ERROR
 * reason `shutting_down` and nothing is run), lets the calls in flight finish for up to SHUTDOWN_GRACE_MS, then
 * cancels the ones still running (their AbortSignal fires: a copy or a walk stops and removes its own temporaries)
 * and gives them ABORT_GRACE_MS more. Whatever is answered by then is written out; then the process removes the own
 * files it still has in flight (src/fs/own-files.ts: temporaries, its lock files) and exits. A multi-file change cut
 * off mid-effect keeps its journal entry and is rolled back by the next start.
 */
import { processSlot } from '../process-slots.js';

/** How long (ms) calls in flight may run on after stdin closed or SIGTERM. */
export const SHUTDOWN_GRACE_MS = 10_000;
/** How long (ms) cancelled calls get to stop and clean up after the grace. */
export const ABORT_GRACE_MS = 2_000;

/** The grace `drain` gives by default (src/process-slots.ts): SHUTDOWN_GRACE_MS unless `setShutdownGrace` changed it. */
const grace = processSlot('server/shutdown', () => ({ ms: SHUTDOWN_GRACE_MS }));

/**
 * Sets the grace this process's shutdown gives the calls in flight: SHUTDOWN_GRACE_MS unless a test build shortens it
 * (`--test-seams=shutdown-grace:MS`, src/cli/seam-flags.ts), so that a test of a call cut off at the end of the grace
 * does not wait 10 s.
 * @param ms the grace (ms)
 */
export function setShutdownGrace(ms: number): void {
  grace.ms = ms;
}

/** The calls of one process in flight, and whether it still takes new ones. */
export class CallTracker {
  private readonly running = new Set<Promise<unknown>>();
  /** One controller per call in flight: aborted when the grace ends (see `drain`). */
  private readonly controllers = new Set<AbortController>();
  private readonly cancel = new AbortController();
  private stopping = false;

  /** True once shutdown began: new calls are refused. */
  get closing(): boolean {
    return this.stopping;
  }

  /** Fires when the calls still running after the grace are cancelled. */
  get signal(): AbortSignal {
    return this.cancel.signal;
  }

  /** Number of calls in flight. */
  get size(): number {
    return this.running.size;
  }

  /** Tracks `call` until it settles. @returns `call` */
  track<T>(call: Promise<T>): Promise<T> {
    this.running.add(call);
    const done = (): void => {
      this.running.delete(call);
    };
    call.then(done, done);
    return call;
  }

  /**
   * Runs one call, tracked until it settles, with the signal it hands its tool: it fires when `request` fires (the
   * client cancelled the call, or the connection closed) or when the shutdown grace ends. The call gets the signal
   * through `signal()`, which makes it on first use: a call that never asks (a small read_file) costs no
   * AbortController and no listener (about 10 µs per call with its listener; `AbortSignal.any` cost about 17 µs:
   * docs/benchmarks.md). Made late, the signal is what it would have been if made at the start: aborted with the
   * shutdown's reason once the grace ended, else with the request's reason once the request fired, else live, with
   * one listener on `request` (removed when the call settles) and cancelled by `drain` at the end of the grace.
   * @param request the request's signal, or a function that gives it: asked only when the call's own signal is made
   *   (the MCP SDK makes a request's AbortSignal on first use: scripts/sdk-patch.mjs)
   * @param call an async function (it must not throw synchronously)
   * @returns what `call` returns
   */
  run<T>(request: AbortSignal | (() => AbortSignal), call: (signal: () => AbortSignal) => Promise<T>): Promise<T> {
    let controller: AbortController | undefined;
    let settledAlready = false;
    let requestSignal: AbortSignal | undefined;
    const requestOf = (): AbortSignal => (requestSignal ??= typeof request === 'function' ? request() : request);
    const onAbort = (): void => controller?.abort(requestOf().reason);
    const signal = (): AbortSignal => {
      if (controller) return controller.signal;
      controller = new AbortController();
      const req = requestOf();
      if (this.cancel.signal.aborted) controller.abort(this.cancel.signal.reason);
      else if (req.aborted) controller.abort(req.reason);
      else if (!settledAlready) {
        req.addEventListener('abort', onAbort, { once: true });
        this.controllers.add(controller);
      }
      return controller.signal;
    };
    const settled = (): void => {
      settledAlready = true;
      if (!controller) return;
      requestOf().removeEventListener('abort', onAbort);
      this.controllers.delete(controller);
    };
    const running = call(signal);
    running.then(settled, settled);
    return this.track(running);
  }

  /**
   * Stops taking calls and waits for those in flight: up to `graceMs`, then cancels the rest and waits up to
   * `abortMs` more. @returns the number of calls still running at the end (0: all answered)
   */
  async drain(graceMs = grace.ms, abortMs = ABORT_GRACE_MS): Promise<number> {
    this.stopping = true;
    if (!(await this.settledWithin(graceMs))) {
      this.cancel.abort();
      for (const controller of this.controllers) controller.abort(this.cancel.signal.reason);
      await this.settledWithin(abortMs);
    }
    return this.running.size;
  }

  private async settledWithin(ms: number): Promise<boolean> {
    if (this.running.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((r) => {
      timer = setTimeout(() => r(false), ms);
    });
    const all = (async () => {
      while (this.running.size > 0) await Promise.allSettled([...this.running]);
      return true as const;
    })();
    const settled = await Promise.race([all, timeout]);
    clearTimeout(timer);
    return settled;
  }
}
