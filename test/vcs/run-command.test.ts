/**
 * The one subprocess runner (src/vcs/run-command.ts) on its own, without the kernel wall's helper, once with Node's
 * `spawn` and once with the wall addon's (src/vcs/run-command.ts; where the build has it): exit codes and
 * output as given, input on stdin, extra descriptors, a program that cannot start, and the three ways a command is
 * stopped (timeout, output cap, cancel), each leaving no process behind; then the less common ends: a program the
 * kernel refuses to start (E2BIG) or Node refuses before the kernel (a NUL byte in an argument), a child that ignores
 * SIGTERM (SIGKILL 5 s later), a child that exits without reading its input (EPIPE is its outcome, not an error), and
 * the exit hook that stops every command still running when the server exits (called directly here: the test cannot
 * exit its own worker; test/vcs/run-command-exit-review.test.ts ends a real parent each way).
 */
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, setChildSpawner, stopRunningCommands } from '../../src/vcs/run-command.js';
import { starters } from '../helpers/native-spawner.js';

const SH = '/bin/sh';
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };
const base = { env, timeoutMs: 20_000, maxOutputBytes: 1 << 20 };
/** This suite's directory (one per starter: a pid file of the other's run is never read). */
let dir = '';

/** True when process `pid` (a real one: > 0) no longer exists. */
function gone(pid: number): boolean {
  expect(pid).toBeGreaterThan(0);
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** The pid a shell wrote to `file`, once it is there (at most 10 s). */
async function pidFrom(file: string): Promise<number> {
  for (let i = 0; i < 200 && !(existsSync(file) && readFileSync(file, 'utf8').endsWith('\n')); i++) await sleep(50);
  return Number(readFileSync(file, 'utf8').trim());
}

// Every test runs twice: with Node's `spawn` and with the kernel wall addon's (src/vcs/run-command.ts).
describe.each(starters())('runCommand through %s', (_name, spawner) => {
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'run-command-'));
    setChildSpawner(spawner);
  });
  afterAll(() => {
    setChildSpawner(null);
    rmSync(dir, { recursive: true, force: true });
  });

  it('returns the exit code, stdout and stderr byte for byte, with nothing inherited from the environment', async () => {
    const r = await runCommand(SH, ['-c', 'printf "a\\303\\244\\n"; printf "err" >&2; printf "%s" "$HOME"; exit 3'], {
      ...base,
      cwd: dir,
    });
    expect(r).toMatchObject({ exitCode: 3, stdout: 'aä\n', stderr: 'err', timedOut: false, outputLimited: false });
    expect(r.spawnError).toBeNull();
    expect(r.durationMs).toBeGreaterThan(0);
  });

  it('runs in cwd and hands over input on stdin', async () => {
    const r = await runCommand(SH, ['-c', 'pwd; cat'], { ...base, cwd: dir, input: 'from stdin\n' });
    expect(r.stdout).toBe(`${dir}\nfrom stdin\n`);
    expect(r.exitCode).toBe(0);
  });

  it('hands open descriptors over as fds 3, 4, …', async () => {
    const file = path.join(dir, 'fd3');
    writeFileSync(file, 'through the descriptor');
    const fd = openSync(file, 'r');
    try {
      const r = await runCommand(SH, ['-c', 'cat <&3'], { ...base, fds: [fd] });
      expect(r.stdout).toBe('through the descriptor');
    } finally {
      closeSync(fd);
    }
  });

  it('reports a program that cannot start by its errno, with no exit code', async () => {
    const r = await runCommand(path.join(dir, 'no-such-program'), [], base);
    expect(r).toMatchObject({ exitCode: null, spawnError: 'ENOENT', stdout: '', timedOut: false });
  });

  it('stops a command at its timeout, and the process is gone', async () => {
    const pidFile = path.join(dir, 'timeout.pid');
    const r = await runCommand(SH, ['-c', `echo $$ > ${pidFile}; exec sleep 30`], { ...base, timeoutMs: 2000 });
    expect(r).toMatchObject({ timedOut: true, exitCode: null, outputLimited: false });
    expect(gone(Number(readFileSync(pidFile, 'utf8').trim()))).toBe(true);
    expect(r.durationMs).toBeLessThan(10_000);
  });

  it('returns at the exit of a stopped command even when a process it started still holds its output', async () => {
    const pidFile = path.join(dir, 'held.pid');
    const r = await runCommand(SH, ['-c', `sleep 30 & echo $! > ${pidFile}; exec sleep 30`], {
      ...base,
      timeoutMs: 2000,
    });
    const held = Number(readFileSync(pidFile, 'utf8').trim());
    try {
      expect(r).toMatchObject({ timedOut: true, exitCode: null });
      expect(r.durationMs).toBeLessThan(10_000);
    } finally {
      if (held > 0 && !gone(held)) process.kill(held, 'SIGKILL');
    }
  });

  it('stops a command whose output exceeds the cap, keeping at most the cap', async () => {
    const pidFile = path.join(dir, 'cap.pid');
    const r = await runCommand(SH, ['-c', `echo $$ > ${pidFile}; while :; do echo xxxxxxxxxxxxxxxxxxxxxxxx; done`], {
      ...base,
      maxOutputBytes: 4096,
    });
    expect(r).toMatchObject({ outputLimited: true, timedOut: false, exitCode: null });
    expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(4096);
    expect(r.stdout.startsWith('xxxx')).toBe(true);
    expect(gone(Number(readFileSync(pidFile, 'utf8').trim()))).toBe(true);
  });

  it('stops a command when its signal aborts, and the process is gone', async () => {
    const controller = new AbortController();
    const pidFile = path.join(dir, 'cancel.pid');
    // Aborted once the command has started (it wrote its pid).
    const poll = setInterval(() => existsSync(pidFile) && controller.abort(), 20);
    const r = await runCommand(SH, ['-c', `echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 30`], {
      ...base,
      signal: controller.signal,
    });
    clearInterval(poll);
    expect(r).toMatchObject({ exitCode: null, timedOut: false, outputLimited: false });
    expect(gone(Number(readFileSync(pidFile, 'utf8').trim()))).toBe(true);
    expect(r.durationMs).toBeLessThan(10_000);
  });

  describe('the less common ends', () => {
    it('reports arguments the kernel refuses (E2BIG) by their errno, with no exit code and no output', async () => {
      // 40 arguments of 100 KiB: past Linux's 2 MiB bound on arguments and environment together.
      const r = await runCommand(
        SH,
        ['-c', 'exit 0', ...Array.from({ length: 40 }, () => 'a'.repeat(100 * 1024))],
        base,
      );
      expect(r).toMatchObject({ exitCode: null, spawnError: 'E2BIG', stdout: '', stderr: '', timedOut: false });
    });

    it('reports an argument Node refuses before spawning (a NUL byte) by its code', async () => {
      const r = await runCommand(SH, ['-c', 'exit 0', 'a\0b'], base);
      expect(r).toMatchObject({ exitCode: null, spawnError: 'ERR_INVALID_ARG_VALUE', stdout: '', timedOut: false });
    });

    it('kills a child that ignores SIGTERM 5 s after its timeout, and returns then', async () => {
      const pidFile = path.join(dir, 'ignores-term.pid');
      // An ignored signal stays ignored across exec: `sleep` itself ignores SIGTERM.
      const r = await runCommand(SH, ['-c', `trap '' TERM; echo $$ > ${pidFile}; exec sleep 60`], {
        ...base,
        timeoutMs: 300,
      });
      expect(r).toMatchObject({ timedOut: true, exitCode: null, outputLimited: false });
      expect(r.durationMs).toBeGreaterThanOrEqual(5000);
      expect(r.durationMs).toBeLessThan(20_000);
      expect(gone(await pidFrom(pidFile))).toBe(true);
    });

    it('takes a child that exits without reading its input as that exit (EPIPE is not an error)', async () => {
      const r = await runCommand(SH, ['-c', 'printf done; exit 4'], { ...base, input: 'x'.repeat(4 * 1024 * 1024) });
      expect(r).toMatchObject({ exitCode: 4, stdout: 'done', spawnError: null, timedOut: false });
    });

    it('stops a command whose error output exceeds the cap, keeping at most the cap of it', async () => {
      const pidFile = path.join(dir, 'stderr-cap.pid');
      const r = await runCommand(SH, ['-c', `echo $$ > ${pidFile}; while :; do echo yyyyyyyyyyyyyyyy >&2; done`], {
        ...base,
        maxOutputBytes: 2048,
      });
      expect(r).toMatchObject({ outputLimited: true, timedOut: false, exitCode: null, stdout: '' });
      expect(Buffer.byteLength(r.stderr)).toBeLessThanOrEqual(2048);
      expect(r.stderr.startsWith('yyyy')).toBe(true);
      expect(gone(await pidFrom(pidFile))).toBe(true);
    });

    it('stops at once a command whose signal was aborted before the call, leaving no process', async () => {
      const pidFile = path.join(dir, 'pre-aborted.pid');
      const controller = new AbortController();
      controller.abort();
      const r = await runCommand(SH, ['-c', `echo $$ > ${pidFile}; exec sleep 60`], {
        ...base,
        signal: controller.signal,
      });
      expect(r).toMatchObject({ exitCode: null, timedOut: false, outputLimited: false });
      expect(r.durationMs).toBeLessThan(10_000);
      // The shell may be stopped before it wrote its pid; when it did, that process is gone.
      if (existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n')) {
        expect(gone(Number(readFileSync(pidFile, 'utf8').trim()))).toBe(true);
      }
    });

    it('stops every running command when the server exits (the exit hook), leaving no process', async () => {
      const pidFile = path.join(dir, 'exit-hook.pid');
      const running = runCommand(SH, ['-c', `echo $$ > ${pidFile}; exec sleep 60`], base);
      const pid = await pidFrom(pidFile);
      expect(gone(pid)).toBe(false);
      stopRunningCommands();
      const r = await running;
      expect(r).toMatchObject({ exitCode: null, timedOut: false, outputLimited: false, spawnError: null });
      expect(r.durationMs).toBeLessThan(10_000);
      expect(gone(pid)).toBe(true);
    });
  });
});
