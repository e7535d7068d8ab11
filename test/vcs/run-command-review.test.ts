/**
 * Review attacks on the subprocess runner (src/vcs/run-command.ts) since it spawns directly: a command that exits
 * while a process it started keeps its output open must still end at its timeout or output cap.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, setChildSpawner } from '../../src/vcs/run-command.js';
import { starters } from '../helpers/native-spawner.js';

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

// Through Node's `spawn` and through the kernel wall addon's (src/vcs/run-command.ts).
describe.each(starters())(
  'runCommand through %s: a command that exits while a process it started holds its output',
  (name, spawner) => {
    beforeAll(() => setChildSpawner(spawner));
    afterAll(() => setChildSpawner(null));
    it('returns at its timeout, not when the other process ends', async () => {
      const pidFile = path.join(dir, `exited-held-${name.replace(/\W+/g, '-')}.pid`);
      // The shell exits at once (status 0); its background sleep keeps stdout and stderr open for 30 s.
      const r = await runCommand(SH, ['-c', `sleep 30 & echo $! > ${pidFile}; exit 0`], { ...base, timeoutMs: 1500 });
      killIfAlive(Number(readFileSync(pidFile, 'utf8').trim()));
      expect(r.durationMs).toBeLessThan(10_000);
      expect(r).toMatchObject({ timedOut: true, outputLimited: false, spawnError: null });
    }, 40_000);

    it('returns at its output cap when the other process writes past it', async () => {
      const pidFile = path.join(dir, `exited-cap-${name.replace(/\W+/g, '-')}.pid`);
      const r = await runCommand(
        SH,
        [
          '-c',
          `(sleep 1; while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done) & echo $! > ${pidFile}; exit 0`,
        ],
        { ...base, maxOutputBytes: 4096, timeoutMs: 30_000 },
      );
      killIfAlive(Number(readFileSync(pidFile, 'utf8').trim()));
      expect(r.durationMs).toBeLessThan(10_000);
      expect(r).toMatchObject({ outputLimited: true, timedOut: false });
      expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(4096);
    }, 40_000);
  },
);

describe('runCommand: a large output and the event loop', () => {
  it('decodes as the output arrives: no stretch of the event loop near a whole 50 MB decode', async () => {
    let last = performance.now();
    let worst = 0;
    const tick = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 5);
    try {
      // Multi-byte text (the slow decode): one toString of the whole output held the loop 300–430 ms here.
      const r = await runCommand(SH, ['-c', 'yes "äöü abc" | head -c 50000000'], {
        ...base,
        maxOutputBytes: 64 * 1024 * 1024,
        timeoutMs: 60_000,
      });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(r.exitCode).toBe(0);
      expect(r.stdout.startsWith('äöü abc\näöü abc\n')).toBe(true);
      expect(Buffer.byteLength(r.stdout)).toBe(50_000_000);
    } finally {
      clearInterval(tick);
    }
    expect(worst).toBeLessThan(250);
  }, 60_000);
});
