/**
 * The one subprocess runner (src/vcs/run-command.ts) on its own, without the kernel wall's helper: exit codes and
 * output as given, input on stdin, extra descriptors, a program that cannot start, and the three ways a command is
 * stopped (timeout, output cap, cancel), each leaving no process behind.
 */
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/vcs/run-command.js';

const SH = '/bin/sh';
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };
const base = { env, timeoutMs: 20_000, maxOutputBytes: 1 << 20 };
const dir = mkdtempSync(path.join(os.tmpdir(), 'run-command-'));
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

describe('runCommand', () => {
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
});
