/**
 * Issue #14, the heavy-call limiter (src/tools/heavy-calls.ts): at most HEAVY_CONCURRENCY run at once, the rest
 * wait in order; a cancelled waiter leaves the queue without running; past HEAVY_QUEUE_LIMIT waiters a call is
 * refused with a retryable IO_ERROR envelope (reason busy).
 */
import { describe, expect, it } from 'vitest';
import { toEnvelope } from '../../src/errors/to-envelope.js';
import {
  HEAVY_CONCURRENCY,
  HEAVY_QUEUE_BYTES,
  HEAVY_QUEUE_LIMIT,
  heavyCallStats,
  runHeavy,
} from '../../src/tools/heavy-calls.js';

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

describe('runHeavy', () => {
  it('runs at most HEAVY_CONCURRENCY at once, the rest in arrival order', async () => {
    const g = gate();
    let active = 0;
    let peak = 0;
    const order: number[] = [];
    const calls = Array.from({ length: 20 }, (_, i) =>
      runHeavy(undefined, async () => {
        active++;
        peak = Math.max(peak, active);
        order.push(i);
        await g.opened;
        active--;
        return i;
      }),
    );
    await new Promise((r) => setTimeout(r, 10));
    expect(heavyCallStats()).toMatchObject({ running: HEAVY_CONCURRENCY, queued: 20 - HEAVY_CONCURRENCY });
    g.open();
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(peak).toBe(HEAVY_CONCURRENCY);
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(heavyCallStats()).toEqual({ running: 0, queued: 0, queuedBytes: 0 });
  });

  it('a cancelled waiter leaves the queue and never runs; a failing call frees its slot', async () => {
    const g = gate();
    const blockers = Array.from({ length: HEAVY_CONCURRENCY }, () => runHeavy(undefined, () => g.opened));
    const controller = new AbortController();
    let ran = false;
    const waiting = runHeavy(controller.signal, async () => {
      ran = true;
    });
    controller.abort();
    const envelope = toEnvelope(await waiting.catch((e: unknown) => e));
    expect(envelope.error).toMatchObject({ code: 'IO_ERROR', details: { reason: 'cancelled' } });
    expect(heavyCallStats().queued).toBe(0);
    g.open();
    await Promise.all(blockers);
    await expect(
      runHeavy(undefined, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(ran).toBe(false);
    expect(heavyCallStats()).toEqual({ running: 0, queued: 0, queuedBytes: 0 });
  });

  it('past the queue limit a call is refused at once with a retryable envelope', async () => {
    const g = gate();
    const held = Array.from({ length: HEAVY_CONCURRENCY + HEAVY_QUEUE_LIMIT }, () =>
      runHeavy(undefined, () => g.opened),
    );
    let ran = false;
    const refused = await runHeavy(undefined, async () => {
      ran = true;
    }).catch((e: unknown) => e);
    const envelope = toEnvelope(refused);
    expect(envelope.error).toMatchObject({
      code: 'IO_ERROR',
      retryable: true,
      recovery: 'retry_later',
      details: { reason: 'busy', queue_limit: HEAVY_QUEUE_LIMIT, retry_after_s: 1 },
    });
    expect(ran).toBe(false);
    g.open();
    await Promise.all(held);
    expect(heavyCallStats()).toEqual({ running: 0, queued: 0, queuedBytes: 0 });
  });

  it('past the queued-arguments limit a call is refused too (waiting calls hold their arguments)', async () => {
    const g = gate();
    const big = { query: 'q'.repeat(HEAVY_QUEUE_BYTES / 4) };
    const held = [
      ...Array.from({ length: HEAVY_CONCURRENCY }, () => runHeavy(undefined, () => g.opened, big)),
      ...Array.from({ length: 3 }, () => runHeavy(undefined, () => g.opened, big)),
    ];
    expect(heavyCallStats().queuedBytes).toBeGreaterThan((3 * HEAVY_QUEUE_BYTES) / 4);
    const refused = toEnvelope(await runHeavy(undefined, async () => 1, big).catch((e: unknown) => e));
    expect(refused.error).toMatchObject({
      code: 'IO_ERROR',
      retryable: true,
      details: { reason: 'busy', queue_bytes_limit: HEAVY_QUEUE_BYTES },
    });
    // A small call still queues.
    const small = runHeavy(undefined, async () => 'small', { path: '.' });
    g.open();
    await Promise.all(held);
    expect(await small).toBe('small');
    expect(heavyCallStats()).toEqual({ running: 0, queued: 0, queuedBytes: 0 });
  });
});
