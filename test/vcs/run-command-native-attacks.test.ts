/**
 * Attacks on the wall addon's spawn (native/fs_tools_spawn.c, src/vcs/run-command.ts) by a reviewer of its merge:
 * an environment that loaded the addon ending while its children still run (the waiter threads must neither run
 * unmapped code nor use a thread-safe function Node has deleted, and the children are still reaped), and what reaches
 * the child compared with Node's `spawn`.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runCommand, setChildSpawner, type CommandResult, type RunOptions } from '../../src/vcs/run-command.js';
import { loadNativeSpawner, WALL_ADDON } from '../helpers/native-spawner.js';

const spawner = loadNativeSpawner();
const base = {
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
  timeoutMs: 20_000,
  maxOutputBytes: 1 << 20,
};

/** The command's result under Node's `spawn` and under the addon, less the durations. */
async function bothWays(
  file: string,
  args: readonly string[],
  options: RunOptions,
): Promise<Array<Partial<CommandResult>>> {
  const results: Array<Partial<CommandResult>> = [];
  for (const starter of [null, spawner]) {
    setChildSpawner(starter);
    const { durationMs: _, ...rest } = await runCommand(file, args, options);
    results.push(rest);
  }
  return results;
}

/**
 * A process whose worker threads load the addon, start 40 children each through it (half sleeping 0.3 s) and end
 * before or while the children exit; the main thread, which never loaded the addon, lives on. It prints its zombie
 * children at the end.
 */
const WORKER_ENDS_FIRST = `
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
if (isMainThread) {
  for (let k = 0; k < 4; k++) {
    const w = new Worker(__filename, { workerData: process.argv[2] });
    w.on('message', () => w.terminate());
  }
  setTimeout(() => {
    let zombies = 0;
    for (const name of fs.readdirSync('/proc')) {
      if (!/^\\d+$/.test(name)) continue;
      try {
        const stat = fs.readFileSync('/proc/' + name + '/stat', 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(fields[1]) === process.pid && fields[0] === 'Z') zombies++;
      } catch {}
    }
    console.log('survived zombies=' + zombies);
  }, 1500);
} else {
  const addon = require(workerData);
  for (let i = 0; i < 40; i++) {
    // Half exit while the worker is being torn down (their exits queued then), half after it has ended.
    const r = i % 2 ? addon.spawn('/bin/true', ['/bin/true'], [], null, false, []) : addon.spawn('/bin/sleep', ['/bin/sleep', '0.3'], [], null, false, []);
    fs.closeSync(r[2]);
    fs.closeSync(r[3]);
    addon.waitExit(r[0], () => {});
  }
  parentPort.postMessage('started');
}
`;

describe.skipIf(spawner === null)('the wall addon spawn under attack', () => {
  it('survives a worker thread that loaded it ending before its children exit, and reaps them', async () => {
    // Before the fix: SIGSEGV (the waiter threads ran the code of an addon Node had unloaded with the worker) or
    // SIGABRT (they used the worker's thread-safe functions, which Node deletes at its teardown).
    const { writeFileSync, mkdtempSync, rmSync } = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fst-spawn-worker-'));
    try {
      const script = path.join(dir, 'worker-ends-first.cjs');
      writeFileSync(script, WORKER_ENDS_FIRST);
      for (let run = 0; run < 3; run++) {
        const r = spawnSync(process.execPath, ['--no-warnings', script, WALL_ADDON], {
          encoding: 'utf8',
          timeout: 20_000,
        });
        expect({ status: r.status, signal: r.signal, stdout: r.stdout.trim() }).toEqual({
          status: 0,
          signal: null,
          stdout: 'survived zombies=0',
        });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  describe("gives what Node's spawn gives", () => {
    afterEach(() => setChildSpawner(null));

    it('runs a command with more than 4096 arguments or environment entries (git-locate passes the whole environment)', async () => {
      // Before the fix: ESPAWN under the addon (a limit of 4096 strings), exit 0 under Node's spawn.
      const many = Array.from({ length: 5000 }, (_, i) => `a${i}`);
      const [viaNode, viaAddon] = await bothWays('/bin/sh', ['-c', 'echo $#', 'sh', ...many], base);
      expect(viaNode).toMatchObject({ exitCode: 0, stdout: '5000\n', spawnError: null });
      expect(viaAddon).toEqual(viaNode);
      const env = { ...base.env, ...Object.fromEntries(many.map((name) => [`FST_${name}`, 'x'])) };
      const [envNode, envAddon] = await bothWays('/bin/sh', ['-c', 'env | grep -c ^FST_'], { ...base, env });
      expect(envNode).toMatchObject({ exitCode: 0, stdout: '5000\n', spawnError: null });
      expect(envAddon).toEqual(envNode);
    });

    it('reports a directory or a program path longer than PATH_MAX as ENAMETOOLONG', async () => {
      // Before the fix: ESPAWN under the addon (its fixed buffers refused the string as a bad argument).
      const deep = `/tmp/${'a/'.repeat(2100)}`;
      const [viaNode, viaAddon] = await bothWays('/bin/pwd', [], { ...base, cwd: deep });
      expect(viaNode).toMatchObject({ exitCode: null, stdout: '', stderr: '', spawnError: 'ENAMETOOLONG' });
      expect(viaAddon).toEqual(viaNode);
      const [progNode, progAddon] = await bothWays(`${deep}prog`, [], base);
      expect(progNode).toMatchObject({ exitCode: null, spawnError: 'ENAMETOOLONG' });
      expect(progAddon).toEqual(progNode);
    });

    it('drops the stdin socket and its unwritten input at the exit even if a process the child started holds stdin', async () => {
      // Before the fix: under the addon the call returned with the socket (and 20 MB of input) still open in this
      // process until that process ended; Node's spawn destroys stdin at the exit.
      const fdsNow = (): number => readdirSync('/proc/self/fd').length;
      await runCommand('/bin/true', [], base); // the first call's one-time set-up
      const script = 'exec 3<&0; (exec sleep 1 0<&3 3<&- >/dev/null 2>&1 &); exit 0';
      const left: number[] = [];
      for (const starter of [null, spawner]) {
        setChildSpawner(starter);
        const before = fdsNow();
        const r = await runCommand('/bin/sh', ['-c', script], { ...base, input: 'y'.repeat(20_000_000) });
        expect(r).toMatchObject({ exitCode: 0, stdout: '', stderr: '', spawnError: null });
        await new Promise((resolve) => setTimeout(resolve, 200));
        left.push(fdsNow() - before);
      }
      expect(left).toEqual([0, 0]);
      await new Promise((resolve) => setTimeout(resolve, 1000)); // the sleeps end
    });
  });
});

/**
 * The addon's two failure ends that no real part can reach here: a socket that cannot be wrapped, and a waiter thread
 * that cannot start (forcing pthread_create to fail needs RLIMIT_NPROC, shared with every process of this user). The
 * spawner is the real addon with one call replaced — a stand-in, said so here — that fails as the addon does: for the
 * waiter, after stopping and reaping the child itself (native/fs_tools_spawn.c `stop_and_reap`).
 */
describe('the addon path when a started child cannot be watched', () => {
  afterEach(() => setChildSpawner(null));
  const zombiesOfThisProcess = (): number =>
    readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .filter((name) => {
        try {
          const stat = spawnSync('cat', [`/proc/${name}/stat`], { encoding: 'utf8' }).stdout;
          const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          return Number(fields[1]) === process.pid && fields[0] === 'Z';
        } catch {
          return false;
        }
      }).length;

  it.runIf(spawner !== null)('no waiter thread: a spawn error, the child gone and reaped, no socket left', async () => {
    const real = spawner!;
    let started = 0;
    setChildSpawner({
      spawn: (...args) => {
        const out = real.spawn(...args);
        if (typeof out !== 'number') started = out[0];
        return out;
      },
      signal: (pid, signo) => real.signal(pid, signo),
      waitExit: (pid) => {
        real.signal(pid, 9);
        real.waitExit(pid, () => {});
        throw new Error('waitExit: no thread');
      },
    });
    const fdsBefore = readdirSync('/proc/self/fd').length;
    const r = await runCommand('/bin/sleep', ['30'], base);
    expect(r.exitCode).toBeNull();
    expect(r.spawnError).not.toBeNull();
    expect(started).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(() => process.kill(started, 0)).toThrow(); // no such process: killed and reaped
    expect(readdirSync('/proc/self/fd').length).toBe(fdsBefore);
    expect(zombiesOfThisProcess()).toBe(0);
  });

  it.runIf(spawner !== null)(
    'a socket that cannot be wrapped: a spawn error, the child killed and reaped',
    async () => {
      const real = spawner!;
      let started = 0;
      setChildSpawner({
        spawn: (...args) => {
          const out = real.spawn(...args);
          if (typeof out === 'number') return out;
          started = out[0];
          closeSync(out[3]);
          return [out[0], out[1], out[2], openSync('/dev/null', 'r')]; // stderr: a descriptor net.Socket cannot wrap
        },
        signal: (pid, signo) => real.signal(pid, signo),
        waitExit: (pid, callback) => real.waitExit(pid, callback),
      });
      const fdsBefore = readdirSync('/proc/self/fd').length;
      const r = await runCommand('/bin/sleep', ['30'], base);
      expect(r.exitCode).toBeNull();
      expect(r.spawnError).not.toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(() => process.kill(started, 0)).toThrow();
      expect(readdirSync('/proc/self/fd').length).toBe(fdsBefore);
      expect(zombiesOfThisProcess()).toBe(0);
    },
  );
});
