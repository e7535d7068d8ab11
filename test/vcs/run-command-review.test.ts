/**
 * Review attacks on the subprocess runner (src/vcs/run-command.ts) since it spawns directly: a command that exits
 * while a process it started keeps its output open must still end at its timeout or output cap.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/vcs/run-command.js';

const SH = '/bin/sh';
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };
const base = { env, timeoutMs: 20_000, maxOutputBytes: 1 << 20 };
const dir = mkdtempSync(path.join(os.tmpdir(), 'run-command-review-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function killIfAlive(pid: number): void {
  try {
    if (pid > 0) process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

describe('runCommand: a command that exits while a process it started holds its output', () => {
  it('returns at its timeout, not when the other process ends', async () => {
    const pidFile = path.join(dir, 'exited-held.pid');
    // The shell exits at once (status 0); its background sleep keeps stdout and stderr open for 30 s.
    const r = await runCommand(SH, ['-c', `sleep 30 & echo $! > ${pidFile}; exit 0`], { ...base, timeoutMs: 1500 });
    killIfAlive(Number(readFileSync(pidFile, 'utf8').trim()));
    expect(r.durationMs).toBeLessThan(10_000);
    expect(r).toMatchObject({ timedOut: true, outputLimited: false, spawnError: null });
  }, 40_000);

  it('returns at its output cap when the other process writes past it', async () => {
    const pidFile = path.join(dir, 'exited-cap.pid');
    const r = await runCommand(
      SH,
      ['-c', `(sleep 1; while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done) & echo $! > ${pidFile}; exit 0`],
      { ...base, maxOutputBytes: 4096, timeoutMs: 30_000 },
    );
    killIfAlive(Number(readFileSync(pidFile, 'utf8').trim()));
    expect(r.durationMs).toBeLessThan(10_000);
    expect(r).toMatchObject({ outputLimited: true, timedOut: false });
    expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(4096);
  }, 40_000);
});
