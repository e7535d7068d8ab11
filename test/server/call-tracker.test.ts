/**
 * CallTracker.run (src/server/shutdown.ts): the signal each call hands its tool fires when the request's signal fires
 * (the client cancelled, or the connection closed) and when the shutdown grace ends, and carries that reason; the
 * listener it adds to the request's signal is gone once the call settled; a request signal given as a function is asked
 * for only when the call makes its own.
 */
import { describe, expect, it, vi } from 'vitest';
import { CallTracker, SHUTDOWN_GRACE_MS } from '../../src/server/shutdown.js';

/** A call that runs until its signal fires, then settles with the reason it saw (it asks for the signal at once). */
function untilAborted(signalOf: () => AbortSignal): Promise<unknown> {
  const signal = signalOf();
  return new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });
}

describe('CallTracker.run', () => {
  it("fires the call's signal when the request's signal fires, with its reason", async () => {
    const calls = new CallTracker();
    const request = new AbortController();
    const running = calls.run(request.signal, untilAborted);
    expect(calls.size).toBe(1);
    const reason = new Error('cancelled by the client');
    request.abort(reason);
    await expect(running).resolves.toBe(reason);
    await Promise.resolve();
    expect(calls.size).toBe(0);
  });

  it("asks for the request's signal only when the call makes its own (a function given for it), and then as the signal", async () => {
    const calls = new CallTracker();
    const request = new AbortController();
    let asked = 0;
    const requestSignal = () => (asked++, request.signal);
    // A call that never asks for its signal never asks for the request's.
    await calls.run(requestSignal, () => Promise.resolve('done'));
    expect(asked).toBe(0);
    // One that asks gets the request's reason when it fires; the request's signal is asked for once.
    const running = calls.run(requestSignal, untilAborted);
    const reason = new Error('cancelled by the client');
    request.abort(reason);
    await expect(running).resolves.toBe(reason);
    expect(asked).toBe(1);
  });

  it('hands an already aborted signal to a call whose request was aborted before it started', async () => {
    const calls = new CallTracker();
    const request = new AbortController();
    request.abort('gone');
    await expect(calls.run(request.signal, untilAborted)).resolves.toBe('gone');
  });

  it('aborts the calls still running when the grace ends, and hands later calls an aborted signal', async () => {
    const calls = new CallTracker();
    const request = new AbortController();
    const seen: unknown[] = [];
    const running = calls.run(request.signal, async (signal) => seen.push(await untilAborted(signal)));
    const left = await calls.drain(10, 1000);
    expect(left).toBe(0);
    await running;
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBe(calls.signal.reason);
    expect(request.signal.aborted).toBe(false);
    const late = await calls.run(new AbortController().signal, async (signal) => Promise.resolve(signal().aborted));
    expect(late).toBe(true);
  });

  it('drains for SHUTDOWN_GRACE_MS, 10 s, by default (the shutdown-grace seam is the seams build only)', async () => {
    expect(SHUTDOWN_GRACE_MS).toBe(10_000);
    vi.useFakeTimers();
    try {
      const calls = new CallTracker();
      const running = calls.run(new AbortController().signal, untilAborted);
      const draining = calls.drain();
      await vi.advanceTimersByTimeAsync(SHUTDOWN_GRACE_MS - 10);
      expect(calls.signal.aborted).toBe(false);
      await vi.advanceTimersByTimeAsync(20);
      expect(calls.signal.aborted).toBe(true);
      await expect(running).resolves.toBe(calls.signal.reason);
      await expect(draining).resolves.toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('leaves no listener on the request signal once the call settled', async () => {
    const calls = new CallTracker();
    const request = new AbortController();
    let fired = 0;
    let callSignal: AbortSignal | undefined;
    await calls.run(request.signal, (signal) => {
      callSignal = signal();
      callSignal.addEventListener('abort', () => fired++);
      return Promise.resolve('done');
    });
    request.abort();
    expect(callSignal?.aborted).toBe(false);
    expect(fired).toBe(0);
  });

  it('makes the signal only when asked, as it would have been at the start', async () => {
    // Asked after the request fired (the call looked late): aborted with the request's reason.
    const calls = new CallTracker();
    const request = new AbortController();
    let ask: (() => AbortSignal) | undefined;
    let release = (): void => undefined;
    const running = calls.run(request.signal, (signal) => {
      ask = signal;
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    request.abort('cancelled');
    expect(ask?.().aborted).toBe(true);
    expect(ask?.().reason).toBe('cancelled');
    release();
    await running;

    // Asked after the grace ended: aborted with the shutdown's reason, though the request never fired.
    const second = new AbortController();
    let askLate: (() => AbortSignal) | undefined;
    let releaseLate = (): void => undefined;
    const slow = calls.run(second.signal, (signal) => {
      askLate = signal;
      return new Promise<void>((resolve) => {
        releaseLate = resolve;
      });
    });
    const draining = calls.drain(10, 50);
    await new Promise((r) => setTimeout(r, 20));
    expect(askLate?.().aborted).toBe(true);
    expect(askLate?.().reason).toBe(calls.signal.reason);
    releaseLate();
    await slow;
    expect(await draining).toBe(0);

    // Asked after the call settled: a live signal no one holds a listener for.
    const third = new AbortController();
    let askAfter: (() => AbortSignal) | undefined;
    await new CallTracker().run(third.signal, (signal) => {
      askAfter = signal;
      return Promise.resolve();
    });
    const after = askAfter?.();
    third.abort();
    expect(after?.aborted).toBe(false);
  });
});
