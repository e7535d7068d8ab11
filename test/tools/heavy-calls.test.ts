/**
 * The heavy-call queue (src/tools/heavy-calls.ts; docs/security.md "One queue for heavy calls, and untrusted text"):
 * at most HEAVY_LIMITS[class] calls of a class run at once, the rest wait in order; a call of several classes takes
 * all its slots at once and reserves them while it waits (no starvation, no deadlock); a call of other classes
 * passes; a cancelled waiter leaves the queue without running and frees what it reserved; past HEAVY_QUEUE_LIMIT
 * waiters (or HEAVY_QUEUE_BYTES of their arguments) a call is refused with a retryable IO_ERROR envelope (reason
 * busy). Every tool that starts git, talks to a forge or walks a tree declares its classes.
 */
import { describe, expect, it } from 'vitest';
import { toEnvelope } from '../../src/errors/to-envelope.js';
import {
  HEAVY_LIMITS,
  HEAVY_QUEUE_BYTES,
  HEAVY_QUEUE_LIMIT,
  heavyCallStats,
  runHeavy,
  type HeavyClass,
} from '../../src/tools/heavy-calls.js';
import { TOOLS } from '../../src/tools/registry.js';

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

const idle = { running: 0, runningByClass: { walk: 0, git: 0, forge: 0 }, queued: 0, queuedBytes: 0 };
const tick = () => new Promise((r) => setTimeout(r, 5));

describe('runHeavy', () => {
  it('runs at most the limit of a class at once, the rest in arrival order', async () => {
    const g = gate();
    let active = 0;
    let peak = 0;
    const order: number[] = [];
    const calls = Array.from({ length: 20 }, (_, i) =>
      runHeavy(['walk'], undefined, async () => {
        active++;
        peak = Math.max(peak, active);
        order.push(i);
        await g.opened;
        active--;
        return i;
      }),
    );
    await tick();
    expect(heavyCallStats()).toMatchObject({ running: HEAVY_LIMITS.walk, queued: 20 - HEAVY_LIMITS.walk });
    g.open();
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(peak).toBe(HEAVY_LIMITS.walk);
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(heavyCallStats()).toEqual(idle);
  });

  it('a full class does not hold up the others; a call of no class never waits', async () => {
    const g = gate();
    const forge = Array.from({ length: HEAVY_LIMITS.forge + 5 }, () => runHeavy(['forge'], undefined, () => g.opened));
    await tick();
    expect(heavyCallStats()).toMatchObject({ runningByClass: { forge: HEAVY_LIMITS.forge }, queued: 5 });
    expect(await runHeavy(['git'], undefined, async () => 'git ran')).toBe('git ran');
    expect(await runHeavy(['walk'], undefined, async () => 'walk ran')).toBe('walk ran');
    expect(await runHeavy([], undefined, async () => 'free')).toBe('free');
    g.open();
    await Promise.all(forge);
    expect(heavyCallStats()).toEqual(idle);
  });

  it('a call of two classes takes both at once and reserves them while it waits (FIFO per class)', async () => {
    const gits = gate();
    const git = Array.from({ length: HEAVY_LIMITS.git }, () => runHeavy(['git'], undefined, () => gits.opened));
    const started: string[] = [];
    const both = runHeavy(['walk', 'git'], undefined, async () => {
      started.push('walk+git');
      const now = heavyCallStats().runningByClass;
      expect(now.walk).toBeGreaterThanOrEqual(1);
      expect(now.git).toBeGreaterThanOrEqual(1);
    });
    // walk has free slots, but the earlier walk+git call reserved walk: a later walk call waits behind it.
    const walk = runHeavy(['walk'], undefined, async () => {
      started.push('walk');
    });
    await tick();
    expect(started).toEqual([]);
    expect(heavyCallStats()).toMatchObject({ queued: 2, runningByClass: { walk: 0, git: HEAVY_LIMITS.git } });
    gits.open();
    await Promise.all([...git, both, walk]);
    expect(started).toEqual(['walk+git', 'walk']);
    expect(heavyCallStats()).toEqual(idle);
  });

  it('a cancelled waiter leaves the queue, never runs, and frees what it reserved; a failing call frees its slot', async () => {
    const g = gate();
    const blockers = Array.from({ length: HEAVY_LIMITS.git }, () => runHeavy(['git'], undefined, () => g.opened));
    const controller = new AbortController();
    let ran = false;
    const waiting = runHeavy(['walk', 'git'], controller.signal, async () => {
      ran = true;
    });
    let walkRan = false;
    const walk = runHeavy(['walk'], undefined, async () => {
      walkRan = true;
    });
    await tick();
    expect(walkRan).toBe(false); // reserved by the waiting walk+git call
    controller.abort();
    const envelope = toEnvelope(await waiting.catch((e: unknown) => e));
    expect(envelope.error).toMatchObject({ code: 'IO_ERROR', details: { reason: 'cancelled' } });
    await walk;
    expect(walkRan).toBe(true); // the reservation went with the cancelled call
    expect(heavyCallStats().queued).toBe(0);
    g.open();
    await Promise.all(blockers);
    await expect(
      runHeavy(['git'], undefined, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(ran).toBe(false);
    expect(heavyCallStats()).toEqual(idle);
  });

  it('past the queue limit a call is refused at once with a retryable envelope; a call of a free class still runs', async () => {
    const g = gate();
    const held = Array.from({ length: HEAVY_LIMITS.forge + HEAVY_QUEUE_LIMIT }, () =>
      runHeavy(['forge'], undefined, () => g.opened),
    );
    let ran = false;
    const refused = await runHeavy(['forge'], undefined, async () => {
      ran = true;
    }).catch((e: unknown) => e);
    const envelope = toEnvelope(refused);
    expect(envelope.error).toMatchObject({
      code: 'IO_ERROR',
      retryable: true,
      recovery: 'retry_later',
      details: {
        reason: 'busy',
        running: HEAVY_LIMITS.forge,
        running_by_class: { forge: HEAVY_LIMITS.forge, git: 0, walk: 0 },
        queued: HEAVY_QUEUE_LIMIT,
        queue_limit: HEAVY_QUEUE_LIMIT,
        retry_after_s: 1,
      },
    });
    expect(ran).toBe(false);
    expect(await runHeavy(['git'], undefined, async () => 'git ran')).toBe('git ran');
    g.open();
    await Promise.all(held);
    expect(heavyCallStats()).toEqual(idle);
  });

  it('past the queued-arguments limit a call is refused too (waiting calls hold their arguments)', async () => {
    const g = gate();
    const big = { query: 'q'.repeat(HEAVY_QUEUE_BYTES / 4) };
    const held = [
      ...Array.from({ length: HEAVY_LIMITS.walk }, () => runHeavy(['walk'], undefined, () => g.opened, big)),
      ...Array.from({ length: 3 }, () => runHeavy(['walk'], undefined, () => g.opened, big)),
    ];
    expect(heavyCallStats().queuedBytes).toBeGreaterThan((3 * HEAVY_QUEUE_BYTES) / 4);
    const refused = toEnvelope(await runHeavy(['walk'], undefined, async () => 1, big).catch((e: unknown) => e));
    expect(refused.error).toMatchObject({
      code: 'IO_ERROR',
      retryable: true,
      details: { reason: 'busy', queue_bytes_limit: HEAVY_QUEUE_BYTES },
    });
    // A small call still queues.
    const small = runHeavy(['walk'], undefined, async () => 'small', { path: '.' });
    g.open();
    await Promise.all(held);
    expect(await small).toBe('small');
    expect(heavyCallStats()).toEqual(idle);
  });
});

describe('the tools declare their classes', () => {
  const tool = (name: string) => {
    const t = TOOLS.find((x) => x.name === name);
    if (!t) throw new Error(name);
    return t;
  };
  const classesOf = (name: string, args: Record<string, unknown>): readonly HeavyClass[] =>
    tool(name).heavy?.(args) ?? [];
  const HASH = `sha256:${'0'.repeat(64)}`;

  it('every tool that can take expected_status_hash starts git with it, and only with it', () => {
    const withHash = TOOLS.filter((t) => 'expected_status_hash' in t.input.shape).map((t) => t.name);
    expect(withHash.sort()).toEqual(
      [
        'apply_patch',
        'copy_path',
        'create_directory',
        'delete_path',
        'edit_file',
        'git_diff',
        'move_path',
        'write_file',
      ].sort(),
    );
    const minimal: Record<string, Record<string, unknown>> = {
      apply_patch: { patch: '*** Begin Patch\n*** End Patch' },
      copy_path: { source: 'a', destination: 'b' },
      create_directory: { path: 'a' },
      delete_path: { path: 'a' },
      edit_file: { path: 'a', edits: [{ old_text: 'x', new_text: 'y' }] },
      git_diff: {},
      move_path: { source: 'a', destination: 'b' },
      write_file: { path: 'a', content: '' },
    };
    for (const name of withHash) {
      expect(classesOf(name, { ...minimal[name], expected_status_hash: HASH }), name).toContain('git');
      if (name !== 'git_diff') expect(classesOf(name, minimal[name]), name).not.toContain('git');
    }
  });

  it('git, issue and tree tools hold their classes; single-file tools hold none', () => {
    expect(classesOf('git_status', {})).toEqual(['git']);
    expect(classesOf('git_diff', {})).toEqual(['git']);
    expect(classesOf('github_issues', { action: 'list', repo: 'o/r' })).toEqual(['forge']);
    expect(classesOf('gitlab_issues', { action: 'view', repo: 'g/r', number: 1 })).toEqual(['forge']);
    for (const [name, args] of [
      ['list_directory', {}],
      ['search_files', { query: 'x' }],
      ['read_files', { paths: ['a'] }],
      ['replace_in_files', { search: 'a', replace: 'b', glob: '**' }],
      ['copy_path', { source: 'a', destination: 'b' }],
      ['move_path', { source: 'a', destination: 'b' }],
      ['delete_path', { path: 'a', recursive: true }],
    ] as const) {
      expect(classesOf(name, args), name).toEqual(['walk']);
    }
    expect(classesOf('delete_path', { path: 'a' })).toEqual([]);
    expect(classesOf('write_file', { path: 'a', content: '' })).toEqual([]);
    for (const name of ['read_file', 'read_media', 'stat', 'list_allowed_directories', 'list_changes']) {
      expect(tool(name).heavy, name).toBeUndefined();
    }
  });
});
