/**
 * The subprocess runner's (src/vcs/run-command.ts) less common ends: a program the kernel refuses to start (E2BIG) or
 * Node refuses before the kernel (a NUL byte in an argument), a child that ignores SIGTERM (SIGKILL 5 s later), a
 * child that exits without reading its input (EPIPE is its outcome, not an error), and the exit hook that stops every
 * command still running when the server exits (called directly here: the test cannot exit its own worker).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand, stopRunningCommands } from '../../src/vcs/run-command.js';

const SH = '/bin/sh';
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };
const base = { env, timeoutMs: 20_000, maxOutputBytes: 1 << 20 };
const dir = mkdtempSync(path.join(os.tmpdir(), 'run-command-stops-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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

describe('runCommand: the less common ends', () => {
  it('reports arguments the kernel refuses (E2BIG) by their errno, with no exit code and no output', async () => {
    // 40 arguments of 100 KiB: past Linux's 2 MiB bound on arguments and environment together.
    const r = await runCommand(SH, ['-c', 'exit 0', ...Array.from({ length: 40 }, () => 'a'.repeat(100 * 1024))], base);
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
