/**
 * Attack (issue 11): a concurrent thread swaps a directory of the target's path for a symbolic link to an outside
 * directory and back, with no delay — `rename(d, d.real); symlink(OUTSIDE, d); unlink(d); rename(d.real, d)` — while
 * every mutating tool and mode, read_file, stat, list_directory and search_files (glob and
 * content) are called. Two batches per mode:
 * the swapped entry is an ANCESTOR of the target (`d`), or the target's FINAL component. Pins, per batch:
 *  - the outside tree is identical to its snapshot (names, bytes, modes, mtimes of files and directories: a temporary
 *    file created and removed there would change its directory's mtime) and no fs-tools temporary file is left inside;
 *  - no outside name, size or mtime appears in any result (outside files carry a marker, a size and an mtime no inside
 *    file has);
 *  - every call succeeded or failed with NOT_ALLOWED, NOT_FOUND, VALIDATION, IO_ERROR or OCC_MISMATCH — never
 *    INTERNAL, never ROLLBACK_PARTIAL/FAILED (a multi-file patch may report ROLLBACK_COMPLETE: its second file was
 *    swapped after the first was committed, and the first was restored);
 *  - the race happened: the swapper counts its swaps in shared memory and each call records how many happened while
 *    it ran; a batch in which no call saw one fails.
 *
 * In-process through `callTool` (the path the stdio server and `fs-tools call` use) so thousands of calls fit in
 * seconds; the swapper is a worker thread (a separate OS thread doing real syscalls concurrently — for the kernel the
 * same race as a second process) so the per-call swap count can be read from shared memory without a syscall.
 * Content search in-process reads candidates on the main thread (the reader-thread bundle is not built for in-process
 * tests); the last batches run content search against a real server process, whose reader threads open each
 * candidate's directory with O_NOFOLLOW, prove it is exactly the listed directory, and open the file relative to it.
 *
 * Calls per mode and swap kind: FS_TOOLS_RACE_CALLS (default 30 in `npm test`; `npm run test:race` runs 500).
 * The summary printed at the end gives per batch the calls during which the swapper swapped, and of those the calls
 * refused at use (NOT_ALLOWED symlink_swapped / changed_during_call: authorization had passed, the swap landed in the
 * window between check and use, and the verified descriptor caught it).
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { connect, type CallResult } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

const CALLS = Number(process.env.FS_TOOLS_RACE_CALLS ?? 30);
const MARKER = `OUTSIDE-${randomBytes(6).toString('hex')}`;
const OUTSIDE_SIZE = 7777;
const OUTSIDE_TIME = new Date('2001-02-03T04:05:06Z');
const ALLOWED = new Set(['NOT_ALLOWED', 'NOT_FOUND', 'VALIDATION', 'IO_ERROR', 'OCC_MISMATCH']);

let R: string;
let O: string;
let state: ProcessState;
let stateDir: string;
const cleanups: Array<() => void> = [];

/** An outside file: the marker, padded to OUTSIDE_SIZE bytes; the query of the content search matches it too. */
function outsideFile(p: string): void {
  const head = `inside ${MARKER}\n`;
  writeFileSync(p, head + 'x'.repeat(OUTSIDE_SIZE - head.length));
  utimesSync(p, OUTSIDE_TIME, OUTSIDE_TIME);
}

beforeAll(() => {
  const r = makeTree({}, 'fs-tools-race-root-');
  const o = makeTree({}, 'fs-tools-race-outside-');
  const s = makeTree({}, 'fs-tools-race-state-');
  cleanups.push(r.cleanup, o.cleanup, s.cleanup);
  R = r.dir;
  O = o.dir;
  stateDir = s.dir;
  // The outside mirrors every name a call touches inside `d`, so a redirected call would find something there.
  for (const f of ['f.txt', 'g.txt', 'c.txt', 'm.txt', `${MARKER}.txt`]) outsideFile(path.join(O, f));
  for (const dir of ['empty', 'victim', 'victim/deep', 'new', 'new/deep', 'newdir', 'sub'])
    mkdirSync(path.join(O, dir));
  for (const f of ['victim/a.txt', 'victim/deep/b.txt', 'new/deep/f.txt', 'sub/s.txt', `sub/${MARKER}.txt`])
    outsideFile(path.join(O, f));
  symlinkSync('f.txt', path.join(O, 'lnk'));
  for (const dir of ['empty', 'victim/deep', 'victim', 'new/deep', 'new', 'newdir', 'sub', '.']) {
    utimesSync(path.join(O, dir), OUTSIDE_TIME, OUTSIDE_TIME);
  }
  // --auto-occ=off: the fixture is rebuilt before every call, so no session could hold its hash; off lets every call
  // reach the code under attack (explicit hashes still bind, and OCC_MISMATCH stays an allowed outcome).
  const config = parseConfig(['--state-dir', s.dir, '--auto-occ=off', R], {
    cwd: R,
    home: '/nonexistent-home',
    toolNames: TOOL_NAMES,
  });
  state = createProcessState(config, TOOLS, 'test');
});
afterAll(() => {
  for (const c of cleanups) c();
});

/** Files, directories (with their mtimes) and links of the outside tree. */
function outsideSnapshot(): unknown {
  const dirs: Record<string, number> = {};
  const visit = (abs: string, rel: string): void => {
    const st = lstatSync(abs);
    if (!st.isDirectory()) return;
    dirs[rel] = st.mtimeMs;
    for (const name of readdirSync(abs)) visit(path.join(abs, name), rel ? `${rel}/${name}` : name);
  };
  visit(O, '');
  return { tree: snapshotTree(O, { withMtime: true }), dirs };
}

/** Every fs-tools temporary file under `dir`. */
function temporaries(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return temporaries(p);
    return e.name.includes('.fs-tools-') ? [p] : [];
  });
}

const patchOf = (name: string, minus: string[], plus: string[], from = `a/${name}`, to = `b/${name}`) =>
  `--- ${from}\n+++ ${to}\n@@ -${minus.length ? 1 : 0},${minus.length} +${plus.length ? 1 : 0},${plus.length} @@\n` +
  [...minus.map((l) => `-${l}`), ...plus.map((l) => `+${l}`)].join('\n') +
  '\n';

/** One tool and mode under attack. `final`: the entry (relative to R) swapped in the final-component batch. */
interface Mode {
  name: string;
  /** Builds the inside fixture under R/d (R/d exists and is empty). */
  setup: (d: string) => void;
  call: () => [string, Record<string, unknown>];
  final: string;
}

const twoLines = (d: string, ...names: string[]) => {
  for (const n of names) writeFileSync(path.join(d, n), 'alpha\nbeta\n');
};

const MODES: Mode[] = [
  {
    name: 'write_file',
    setup: (d) => twoLines(d, 'f.txt'),
    final: 'd/f.txt',
    call: () => ['write_file', { path: 'd/f.txt', content: 'written\n' }],
  },
  {
    name: 'write_file create_dirs',
    setup: () => undefined,
    final: 'd/new',
    call: () => ['write_file', { path: 'd/new/deep/f.txt', content: 'written\n', create_dirs: true }],
  },
  {
    name: 'edit_file',
    setup: (d) => twoLines(d, 'f.txt'),
    final: 'd/f.txt',
    call: () => ['edit_file', { path: 'd/f.txt', edits: [{ old_text: 'alpha', new_text: 'ALPHA' }] }],
  },
  {
    name: 'apply_patch create',
    setup: () => undefined,
    final: 'd/c.txt',
    call: () => ['apply_patch', { patch: patchOf('d/c.txt', [], ['new'], '/dev/null') }],
  },
  {
    name: 'apply_patch modify',
    setup: (d) => twoLines(d, 'f.txt'),
    final: 'd/f.txt',
    call: () => ['apply_patch', { patch: patchOf('d/f.txt', ['alpha', 'beta'], ['ALPHA', 'beta']) }],
  },
  {
    name: 'apply_patch delete',
    setup: (d) => twoLines(d, 'f.txt'),
    final: 'd/f.txt',
    call: () => ['apply_patch', { patch: patchOf('d/f.txt', ['alpha', 'beta'], [], 'a/d/f.txt', '/dev/null') }],
  },
  {
    name: 'apply_patch multi-file',
    setup: (d) => twoLines(d, 'f.txt', 'g.txt'),
    final: 'd/g.txt',
    call: () => [
      'apply_patch',
      {
        patch:
          patchOf('d/f.txt', ['alpha', 'beta'], ['ALPHA', 'beta']) +
          patchOf('d/g.txt', ['alpha', 'beta'], ['ALPHA', 'beta']),
      },
    ],
  },
  {
    name: 'move_path out of d',
    setup: (d) => twoLines(d, 'f.txt'),
    final: 'd/f.txt',
    call: () => ['move_path', { source: 'd/f.txt', destination: 'moved.txt' }],
  },
  {
    name: 'move_path into d',
    setup: () => twoLines(R, 'src.txt'),
    final: 'd/m.txt',
    call: () => ['move_path', { source: 'src.txt', destination: 'd/m.txt' }],
  },
  {
    name: 'move_path overwrite',
    setup: (d) => twoLines(d, 'f.txt', 'g.txt'),
    final: 'd/g.txt',
    call: () => ['move_path', { source: 'd/f.txt', destination: 'd/g.txt', overwrite: true }],
  },
  {
    name: 'delete_path file',
    setup: (d) => twoLines(d, 'f.txt'),
    final: 'd/f.txt',
    call: () => ['delete_path', { path: 'd/f.txt' }],
  },
  {
    name: 'delete_path link',
    setup: (d) => {
      twoLines(d, 'f.txt');
      symlinkSync('f.txt', path.join(d, 'lnk'));
    },
    final: 'd/lnk',
    call: () => ['delete_path', { path: 'd/lnk' }],
  },
  {
    name: 'delete_path empty directory',
    setup: (d) => mkdirSync(path.join(d, 'empty')),
    final: 'd/empty',
    call: () => ['delete_path', { path: 'd/empty' }],
  },
  {
    name: 'delete_path recursive',
    final: 'd/victim',
    setup: (d) => {
      mkdirSync(path.join(d, 'victim/deep'), { recursive: true });
      twoLines(path.join(d, 'victim'), 'a.txt');
      twoLines(path.join(d, 'victim/deep'), 'b.txt');
    },
    call: () => ['delete_path', { path: 'd/victim', recursive: true }],
  },
  {
    name: 'create_directory',
    setup: () => undefined,
    final: 'd/newdir',
    call: () => ['create_directory', { path: 'd/newdir/sub' }],
  },
  // Reads (review of the merged integration): the file is opened relative to its verified parent. (Near paths under a
  // swap are pinned in test/policy/near-paths.test.ts: a requested name carrying the marker would echo it here.)
  {
    name: 'read_file',
    setup: (d) => twoLines(d, 'f.txt'),
    final: 'd/f.txt',
    call: () => ['read_file', { path: 'd/f.txt' }],
  },
  { name: 'stat', setup: (d) => twoLines(d, 'f.txt'), final: 'd/f.txt', call: () => ['stat', { path: 'd/f.txt' }] },
  {
    name: 'list_directory',
    setup: (d) => {
      mkdirSync(path.join(d, 'sub/in'), { recursive: true });
      twoLines(path.join(d, 'sub'), 's.txt');
    },
    final: 'd/sub',
    call: () => ['list_directory', { path: 'd/sub', depth: 3 }],
  },
  {
    name: 'search_files glob',
    setup: (d) => {
      mkdirSync(path.join(d, 'sub/in'), { recursive: true });
      twoLines(path.join(d, 'sub'), 's.txt');
    },
    final: 'd/sub',
    call: () => ['search_files', { path: 'd/sub', glob: '**/*' }],
  },
  {
    name: 'search_files content',
    setup: (d) => {
      mkdirSync(path.join(d, 'sub/in'), { recursive: true });
      writeFileSync(path.join(d, 'sub/s.txt'), 'inside\n');
    },
    final: 'd/sub',
    call: () => ['search_files', { path: 'd/sub', query: 'inside' }],
  },
];

/** Swapper thread: swaps `a` for a link to `target` and back, as fast as it can; paused between calls. */
const SWAPPER = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { ctl, a, target } = workerData;
const real = a + '.real';
function restore() {
  try { const st = fs.lstatSync(a, { throwIfNoEntry: false }); if (st && st.isSymbolicLink()) fs.unlinkSync(a); } catch {}
  try { fs.lstatSync(real); fs.renameSync(real, a); } catch {}
}
let acknowledged = -1;
for (;;) {
  const cmd = Atomics.load(ctl, 1);
  if (cmd !== 0) {
    // Acknowledge the newest pause request (its generation, read before restoring), then wait with a bound: a
    // wake-up lost between resume and the next pause must not leave either thread waiting forever.
    // Restore once per request: restoring again while the test rebuilds the tree would race with it.
    const generation = Atomics.load(ctl, 3);
    if (generation !== acknowledged) {
      restore();
      acknowledged = generation;
      Atomics.store(ctl, 2, generation);
      Atomics.notify(ctl, 2);
    }
    if (cmd === 2) break;
    Atomics.wait(ctl, 1, 1, 20);
    continue;
  }
  let moved = false;
  try { fs.renameSync(a, real); moved = true; } catch {}
  try { fs.symlinkSync(target, a); Atomics.add(ctl, 0, 1); } catch {}
  try { fs.unlinkSync(a); } catch {}
  if (moved) { try { fs.renameSync(real, a); } catch {} }
  Atomics.add(ctl, 0, 1);
}
`;

/**
 * A running swapper and its shared counters: [0] swaps, [1] command (0 run, 1 pause, 2 stop), [2] the newest pause
 * generation the swapper has acknowledged (entry restored, no swap until the next resume), [3] the newest pause
 * generation requested.
 */
class Swapper {
  private readonly ctl = new Int32Array(new SharedArrayBuffer(16));
  private readonly worker: Worker;

  private exited = false;

  constructor(a: string, target: string) {
    Atomics.store(this.ctl, 1, 1);
    this.worker = new Worker(SWAPPER, { eval: true, workerData: { ctl: this.ctl, a, target } });
    this.worker.once('exit', () => (this.exited = true));
  }

  get swaps(): number {
    return Atomics.load(this.ctl, 0);
  }

  /**
   * Stops swapping and waits until the real entry is back in place. The wait blocks this thread (the calls under
   * test must not run while the entry is swapped), so it is bounded: a swapper thread that never started or died
   * would otherwise hold the test process forever, where no vitest timeout can fire.
   * @throws Error when the swapper has not paused within 30 s.
   */
  pause(): void {
    const generation = Atomics.add(this.ctl, 3, 1) + 1;
    Atomics.store(this.ctl, 1, 1);
    const end = Date.now() + 30_000;
    for (let seen = Atomics.load(this.ctl, 2); seen < generation; seen = Atomics.load(this.ctl, 2)) {
      if (Date.now() > end) {
        throw new Error(
          `the swapper thread did not pause within 30 s (${this.exited ? 'it exited' : 'still running'})`,
        );
      }
      Atomics.wait(this.ctl, 2, seen, 50);
    }
  }

  resume(): void {
    Atomics.store(this.ctl, 1, 0);
    Atomics.notify(this.ctl, 1);
  }

  /** Ends the swapper thread (terminated if it does not end by itself within 10 s). */
  async stop(): Promise<void> {
    Atomics.add(this.ctl, 3, 1);
    Atomics.store(this.ctl, 1, 2);
    Atomics.notify(this.ctl, 1);
    if (this.exited) return;
    const exited = new Promise((resolve) => this.worker.once('exit', resolve));
    const timer = setTimeout(() => void this.worker.terminate(), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/** Resets the inside tree for one call: an empty R/d (and nothing left from earlier calls at the root). */
function resetInside(): string {
  for (const name of readdirSync(R)) rmSync(path.join(R, name), { recursive: true, force: true });
  const d = path.join(R, 'd');
  mkdirSync(d);
  return d;
}

/** A real server's result as the in-process outcome shape (for the same checks). */
function asOutcome(r: CallResult): CallOutcome {
  if (!r.isError) return { ok: true, structured: r.structuredContent ?? {}, text: r.content.map((c) => c.text ?? '') };
  return {
    ok: false,
    envelope: JSON.parse(r.content[0].text ?? '{}') as Extract<CallOutcome, { ok: false }>['envelope'],
  };
}

/** What in a result would reveal the outside: its marker (names, content), its size, its mtime. */
function leaks(outcome: CallOutcome): string[] {
  const found: string[] = [];
  const text = JSON.stringify(outcome);
  if (text.includes(MARKER)) found.push('marker');
  if (!outcome.ok) return found;
  const s = outcome.structured as { entries?: unknown };
  for (const e of Array.isArray(s.entries) ? (s.entries as Array<{ size: number; mtime: string }>) : []) {
    if (e.size === OUTSIDE_SIZE) found.push('size');
    if (e.mtime === OUTSIDE_TIME.toISOString()) found.push('mtime');
  }
  return found;
}

const summary: string[] = [];
afterAll(() => {
  if (summary.length) console.log(`verified-access race (${CALLS} calls per batch):\n${summary.join('\n')}`);
});

/** Runs one batch: CALLS calls of `mode` through `invoke` while `kind` is swapped; checks everything listed on top. */
async function runBatch(
  kind: 'ancestor' | 'final',
  mode: Mode,
  invoke: (tool: string, args: Record<string, unknown>) => Promise<CallOutcome>,
  label = mode.name,
): Promise<void> {
  const before = outsideSnapshot();
  const swapped = kind === 'ancestor' ? 'd' : mode.final;
  const outsideTarget = path.join(O, kind === 'ancestor' ? '' : swapped.replace(/^d\//, ''));
  const swapper = new Swapper(path.join(R, swapped), outsideTarget);
  const outcomes: Record<string, number> = {};
  const bad: string[] = [];
  let sawSwap = 0;
  let caughtAtUse = 0;
  try {
    for (let i = 0; i < CALLS; i++) {
      swapper.pause();
      mode.setup(resetInside());
      const [tool, args] = mode.call();
      swapper.resume();
      const s0 = swapper.swaps;
      const outcome = await invoke(tool, args);
      if (swapper.swaps !== s0) sawSwap++;
      const code = outcome.ok ? 'ok' : outcome.envelope.error.code;
      // RACE_DEBUG=CODE prints the outcomes with that code (for investigating a batch).
      if (process.env.RACE_DEBUG && code === process.env.RACE_DEBUG) console.log(JSON.stringify(outcome).slice(0, 600));
      const reason = outcome.ok ? '' : String((outcome.envelope.error.details.reason as string | undefined) ?? '');
      if (code === 'NOT_ALLOWED' && (reason === 'symlink_swapped' || reason === 'changed_during_call')) caughtAtUse++;
      outcomes[`${code}${reason ? ` ${reason}` : ''}`] = (outcomes[`${code}${reason ? ` ${reason}` : ''}`] ?? 0) + 1;
      // A multi-file patch whose second file is swapped after the first was committed rolls the first back: that is
      // the transaction's contract (SPEC §6.4), and ROLLBACK_COMPLETE says every file holds its old bytes.
      const allowed = ALLOWED.has(code) || (mode.name === 'apply_patch multi-file' && code === 'ROLLBACK_COMPLETE');
      if (!outcome.ok && !allowed) bad.push(`${code}: ${outcome.envelope.error.message}`);
      for (const l of leaks(outcome)) bad.push(`leak (${l}): ${JSON.stringify(outcome).slice(0, 300)}`);
    }
  } finally {
    try {
      swapper.pause();
    } finally {
      await swapper.stop();
    }
  }
  summary.push(
    `  ${kind} ${label}: ${sawSwap}/${CALLS} calls saw a swap, ${caughtAtUse} caught at use; ${JSON.stringify(outcomes)}`,
  );
  expect(bad.slice(0, 5)).toEqual([]);
  expect(outsideSnapshot()).toEqual(before);
  expect(temporaries(R)).toEqual([]);
  // The race happened inside calls: a batch where no call saw a swap proves nothing.
  expect(sawSwap).toBeGreaterThan(0);
}

const TIMEOUT = Math.max(120_000, CALLS * 1000);

describe.each(['ancestor', 'final'] as const)('a %s directory swapped for a link to outside', (kind) => {
  it.each(MODES.map((m) => [m.name, m] as const))(
    '%s',
    async (_name, mode) => {
      await runBatch(kind, mode, (tool, args) => callTool(state, tool, args, new AbortController().signal));
    },
    TIMEOUT,
  );
});

describe('content search through the reader threads of a real server', () => {
  it.each(['ancestor', 'final'] as const)(
    'a %s directory swapped for a link to outside',
    async (kind) => {
      const client = await connect('modern', { args: ['--state-dir', stateDir, '--auto-occ=off', R] });
      try {
        const mode = MODES.find((m) => m.name === 'search_files content')!;
        await runBatch(
          kind,
          mode,
          async (tool, args) => asOutcome(await client.call(tool, args)),
          `${mode.name} (server)`,
        );
      } finally {
        await client.close();
      }
    },
    TIMEOUT,
  );
});
