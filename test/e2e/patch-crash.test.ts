/**
 * Crash safety of multi-file patches (SPEC §6.4), with real processes and real SIGKILLs. The built server
 * (dist/cli.js, `fs-tools call apply_patch …`: the same tool code the MCP server runs, without a client) is killed by
 * the test seam `--test-seams=kill-at:k` (first CLI argument; issue #20) (src/patch/transaction.ts: k = 0 right after the journal is durable, then
 * 2j+1 just before file j's rename/unlink and 2j+2 right after it) at every point between the journal write and the
 * end of the last commit: patches of 3, 5, 8 and 10 files (7 + 11 + 17 + 21 = 56 kill points; `npm test` runs 20 of
 * them, `npm run test:crash` all, below). Each patch modifies files in two directories, creates one file (/dev/null)
 * and, from 5 files on, deletes one. Pins:
 *  - the kill really lands mid-transaction: the process dies by SIGKILL, its journal entry is on disk, and exactly
 *    the files committed before point k hold their new bytes (a temporary copy sits beside file j at point 2j+1);
 *  - the next start recovers: every file holds its old bytes again (never a mix), created files are gone, deleted
 *    files are back with their modes, and no temporary file is left (regression: killed writers' temporaries stayed);
 *  - `list_allowed_directories` of that start reports each recovered transaction (recovered_transactions: outcome
 *    ROLLBACK_COMPLETE, every file `restored`) and logs it on stderr, the journal is empty afterwards, and a later
 *    start reports nothing;
 *  - without a kill the same patch applies completely.
 * Every killed process has its own state dir (a start recovers the journals of dead processes, so parallel kills
 * sharing one would recover each other). The 3-file patch restarts once per kill (one transaction per recovery); for
 * the larger ones the journal entries are gathered in one state dir and one restart recovers them all at once.
 *
 * How many kill points run (one process each, ~0.3 s of CPU, and one more per point for the 3-file patch's restarts):
 * `npm test` runs a fixed subset, 20 of the 56 — of the 3-file patch the point after the journal, the create's two
 * (before and after its rename) and the last file's two (before and after its rename; file 0's two are the same kind),
 * and of each larger patch the point after the journal, its middle file's two (before and after a rename) and its last
 * file's two (before and after the unlink) — so every kind of kill point is killed under both restart modes but the
 * unlink's (batch only: the 3-file patch deletes nothing). `FS_TOOLS_CRASH_POINTS=all` runs all 56: `npm run
 * test:crash`, which `.ci/run` runs (docs/development.md, the long suites).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliFor, coverageEnv } from '../helpers/server.js';
import { contentHash, snapshotTree, type TreeSnapshot } from '../helpers/snapshot.js';
import { makeTree, writeTree, type TreeSpec } from '../helpers/tree.js';

interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI once (the seams test build when `args` starts with a seam). */
function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliFor(args), ...args], {
      env: { ...(process.env as Record<string, string>), ...coverageEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

/** Runs `tasks` with at most `limit` at a time. */
async function pool<T>(tasks: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const i = next++;
        out[i] = await tasks[i]();
      }
    }),
  );
  return out;
}

type Kind = 'modify' | 'create' | 'delete';

/** The files of an n-file patch, in patch (= commit) order. */
function plan(n: number): Array<{ rel: string; kind: Kind; old: string | null; next: string | null }> {
  return Array.from({ length: n }, (_, j) => {
    const rel = `${j % 2 === 0 ? 'a' : 'b'}/f${j}.txt`;
    const kind: Kind = j === 1 ? 'create' : j === n - 1 && n >= 5 ? 'delete' : 'modify';
    const old = kind === 'create' ? null : `file ${j}\nline 2\nline 3\n`;
    const next =
      kind === 'delete' ? null : kind === 'create' ? `created ${j}\n` : `file ${j}\nline 2 changed\nline 3\n`;
    return { rel, kind, old, next };
  });
}

function specOf(files: ReturnType<typeof plan>, which: 'old' | 'next'): TreeSpec {
  const spec: TreeSpec = { a: {}, b: {} };
  for (const f of files) {
    const content = f[which];
    if (content !== null) (spec[f.rel.split('/')[0]] as TreeSpec)[f.rel.split('/')[1]] = content;
  }
  return spec;
}

function patchOf(files: ReturnType<typeof plan>): string {
  return files
    .map((f) => {
      if (f.kind === 'create') return `--- /dev/null\n+++ b/${f.rel}\n@@ -0,0 +1 @@\n+${f.next!.trimEnd()}\n`;
      if (f.kind === 'delete')
        return `--- a/${f.rel}\n+++ /dev/null\n@@ -1,3 +0,0 @@\n${f
          .old!.trimEnd()
          .split('\n')
          .map((l) => `-${l}`)
          .join('\n')}\n`;
      return `diff --git a/${f.rel} b/${f.rel}\n--- a/${f.rel}\n+++ b/${f.rel}\n@@ -1,3 +1,3 @@\n ${f.old!.split('\n')[0]}\n-line 2\n+line 2 changed\n line 3\n`;
    })
    .join('');
}

/** A snapshot of a fresh directory holding `spec`, made as the test's directories are (writeTree). */
function snapshotOf(spec: TreeSpec): TreeSnapshot {
  const t = makeTree({ x: spec });
  try {
    return snapshotTree(path.join(t.dir, 'x'));
  } finally {
    t.cleanup();
  }
}

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups) c();
});

const timings: string[] = [];
afterAll(() => {
  if (timings.length) process.stderr.write(`patch-crash timings: ${timings.join('; ')}\n`);
});

const CONCURRENCY = 3;

/** Every kill point (`FS_TOOLS_CRASH_POINTS=all`, `npm run test:crash`), or `npm test`'s subset (the header). */
const ALL_POINTS = process.env.FS_TOOLS_CRASH_POINTS === 'all';

/**
 * The kill points of an n-file patch to run: k = 0 after the journal, 2j+1 before and 2j+2 after file j's commit.
 * The subset: 0, then the two of the create (file 1) for the 3-file patch or of the middle file for a larger one, and
 * the last file's two.
 */
function killPoints(n: number): number[] {
  if (ALL_POINTS) return Array.from({ length: 2 * n + 1 }, (_, k) => k);
  const middle = n === 3 ? 1 : Math.floor(n / 2);
  return [0, 2 * middle + 1, 2 * middle + 2, 2 * n - 1, 2 * n];
}

describe.each([
  [3, 'each'],
  [5, 'batch'],
  [8, 'batch'],
  [10, 'batch'],
] as const)('a %i-file patch killed mid-transaction (restart: %s)', (n, restart) => {
  const points = killPoints(n);
  const which = ALL_POINTS ? `each of its ${2 * n + 1}` : `${points.length} of its ${2 * n + 1} (${points.join(', ')})`;
  it(`is all-old after recovery at ${which} kill points, and all-new without a kill`, async () => {
    const started = Date.now();
    const files = plan(n);
    const patch = patchOf(files);
    const oldSnap = snapshotOf(specOf(files, 'old'));
    const newSnap = snapshotOf(specOf(files, 'next'));
    const root = makeTree({}, `fs-tools-crash${n}-`);
    cleanups.push(root.cleanup);
    const sharedState = makeTree({}, 'fs-tools-state-');
    cleanups.push(sharedState.cleanup);
    const stateOf = new Map<number, string>();
    const dirOf = (k: number | 'control') => path.join(root.dir, `k${k}`);
    const argsFor = (k: number | 'control') => {
      const dir = dirOf(k);
      const expected = Object.fromEntries(files.filter((f) => f.old !== null).map((f) => [f.rel, contentHash(f.old!)]));
      return [
        '--state-dir',
        k === 'control' ? sharedState.dir : stateOf.get(k)!,
        '--root',
        root.dir,
        'call',
        'apply_patch',
        JSON.stringify({ patch, path: dir, expected_hashes: expected }),
      ];
    };
    for (const k of points) {
      writeTree(root.dir, { [`k${k}`]: specOf(files, 'old') });
      // Every killed process gets its own state dir: a process starting on a state dir recovers the journals of
      // dead ones, so a shared one would roll the earlier kills back before we could look at them.
      const s = makeTree({}, 'fs-tools-state-');
      cleanups.push(s.cleanup);
      stateOf.set(k, s.dir);
    }

    // 1. Kill at every point.
    const killed = await pool(
      points.map((k) => () => cli([`--test-seams=kill-at:${k}`, ...argsFor(k)])),
      CONCURRENCY,
    );
    const killedAt = Date.now();
    for (const [i, k] of points.entries()) {
      const run = killed[i];
      expect(run.signal, `kill point ${k}: ${run.stdout}${run.stderr}`).toBe('SIGKILL');
      expect(run.stdout).toBe('');
      // Mid-transaction for real: exactly the files committed before point k hold their new bytes.
      const committed = Math.floor(k / 2);
      const dir = dirOf(k);
      files.forEach((f, j) => {
        const p = path.join(dir, f.rel);
        const now = existsSync(p) ? readFileSync(p, 'utf8') : null;
        expect(now, `kill point ${k}, ${f.rel}`).toBe(j < committed ? f.next : f.old);
      });
      // The killed process's path-lock files (`.fs-tools-lock-*`, issue 11) are crash leftovers by design: the
      // recovery below takes them over (their owner is gone) and removes them — step 3's snapshot checks that.
      const temps = ['a', 'b'].flatMap((d) =>
        readdirSync(path.join(dir, d)).filter(
          (name) => name.includes('.fs-tools-') && !name.startsWith('.fs-tools-lock-'),
        ),
      );
      const pending = k % 2 === 1 ? files[committed] : null;
      expect(temps.length, `kill point ${k}: temporaries ${temps.join(', ')}`).toBe(
        pending && pending.kind !== 'delete' ? 1 : 0,
      );
    }
    const journals = (state: string) =>
      readdirSync(path.join(state, 'journal')).filter((name) => name.endsWith('.json'));
    for (const k of points) expect(journals(stateOf.get(k)!), `kill point ${k}`).toHaveLength(1);
    if (restart === 'batch') {
      // One start recovers them all: the entries (self-contained, absolute paths) are gathered in one state dir.
      mkdirSync(path.join(sharedState.dir, 'journal'), { recursive: true, mode: 0o700 });
      for (const k of points) {
        const [name] = journals(stateOf.get(k)!);
        renameSync(path.join(stateOf.get(k)!, 'journal', name), path.join(sharedState.dir, 'journal', name));
      }
    }

    // 2. Restart: recovery, reported by list_allowed_directories.
    const recovered: Array<{ id: string; outcome: string; files: Array<{ path: string; status: string }> }> = [];
    const states = restart === 'each' ? points.map((k) => stateOf.get(k)!) : [sharedState.dir];
    const restarts = await pool(
      states.map((state) => () => cli(['--state-dir', state, '--root', root.dir, 'call', 'list_allowed_directories'])),
      CONCURRENCY,
    );
    for (const [i, run] of restarts.entries()) {
      expect(run.status, run.stderr).toBe(0);
      const listed = JSON.parse(run.stdout);
      const mine = listed.recovered_transactions as typeof recovered;
      expect(mine).toHaveLength(restart === 'each' ? 1 : points.length);
      expect(run.stderr.match(/recovered unfinished transaction/g)).toHaveLength(mine.length);
      recovered.push(...mine);
      expect(journals(states[i])).toEqual([]);
    }
    // Every kill point's transaction was recovered exactly once, completely.
    const byDir = new Map<string, (typeof recovered)[number]>();
    for (const t of recovered) {
      expect(t.outcome).toBe('ROLLBACK_COMPLETE');
      const dirs = new Set(t.files.map((f) => f.path.split(path.sep).slice(0, -2).join(path.sep)));
      expect(dirs.size).toBe(1);
      const [dir] = dirs;
      expect(byDir.has(dir)).toBe(false);
      byDir.set(dir, t);
      expect(t.files).toEqual(files.map((f) => ({ path: path.join(dir, f.rel), status: 'restored' })));
    }
    expect([...byDir.keys()].sort()).toEqual(points.map((k) => dirOf(k)).sort());

    // 3. Every file is all-old (the unfinished transaction was rolled back), never mixed; no temporaries are left.
    for (const k of points) {
      const snap = snapshotTree(dirOf(k));
      expect(snap, `kill point ${k}`).toEqual(oldSnap);
    }

    // 4. A later start has nothing to recover; without a kill the patch applies completely.
    writeTree(root.dir, { kcontrol: specOf(files, 'old') });
    const [control, again] = await Promise.all([
      cli(argsFor('control')),
      ...(restart === 'each'
        ? [cli(['--state-dir', states[0], '--root', root.dir, 'call', 'list_allowed_directories'])]
        : []),
    ]);
    if (again) expect(JSON.parse(again.stdout).recovered_transactions).toEqual([]);
    expect(control.status, control.stdout + control.stderr).toBe(0);
    expect(JSON.parse(control.stdout).files.map((f: { action: string }) => f.action)).toEqual(
      files.map((f) => ({ modify: 'modified', create: 'created', delete: 'deleted' })[f.kind]),
    );
    expect(snapshotTree(dirOf('control'))).toEqual(newSnap);
    timings.push(`${n} files: ${points.length} kills ${killedAt - started} ms, total ${Date.now() - started} ms`);
  }, 240_000);
});
