/**
 * The kernel wall addon's way of starting a child (native/fs_tools_spawn.c, src/vcs/run-command.ts), through the one
 * subprocess runner: what the child gets (only fds 0–2 and the descriptors handed over — not even one this process
 * inherited without close-on-exec, which Node's `spawn` passes on —, an empty signal mask, no ignored signal but glibc's own two), how its end is reported (exit codes, a signal), and what 200
 * commands leave behind in this process: no child (running or zombie), no descriptor, no waiter thread.
 */
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, setChildSpawner } from '../../src/vcs/run-command.js';
import { loadNativeSpawner } from '../helpers/native-spawner.js';

const SH = '/bin/sh';
const base = {
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
  timeoutMs: 20_000,
  maxOutputBytes: 1 << 20,
};
const spawner = loadNativeSpawner();

/** This process's children still in the process table (running or zombie), by pid. */
function ownChildren(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const count = (dir: string): number => readdirSync(dir).length;

describe.skipIf(spawner === null)('runCommand through the wall addon', () => {
  beforeAll(() => setChildSpawner(spawner));
  afterAll(() => setChildSpawner(null));

  it("gives the child only fds 0-2 and the descriptors handed over, no blocked and no ignored signal but glibc's", async () => {
    const fd = openSync('/dev/null', 'r');
    try {
      // `exec` so that the shell's own descriptors and signal state do not count: what the runner gave is listed.
      const r = await runCommand(SH, ['-c', 'exec /bin/ls /proc/self/fd'], { ...base, fds: [fd] });
      // ls's own directory descriptor is the one above those handed over.
      expect(
        r.stdout
          .trim()
          .split('\n')
          .map(Number)
          .sort((a, b) => a - b),
      ).toEqual([0, 1, 2, 3, 4]);
      const status = await runCommand('/bin/cat', ['/proc/self/status'], base);
      expect(status.stdout).toMatch(/^SigBlk:\s+0+$/m);
      // glibc's posix_spawn leaves its two internal signals (32, 33: bits 31 and 32) ignored; none else is.
      const ignored = BigInt(`0x${/^SigIgn:\s+([0-9a-f]+)$/m.exec(status.stdout)![1]}`);
      expect(ignored & ~0x180000000n).toBe(0n);
    } finally {
      closeSync(fd);
    }
  });

  it('reports exit codes as given and a child ended by a signal with no exit code', async () => {
    for (const code of [0, 1, 2, 126, 255]) {
      expect((await runCommand(SH, ['-c', `exit ${code}`], base)).exitCode).toBe(code);
    }
    const killed = await runCommand(SH, ['-c', 'kill -KILL $$'], base);
    expect(killed).toMatchObject({ exitCode: null, timedOut: false, outputLimited: false, spawnError: null });
  });

  it('reports a directory that cannot be entered by its errno', async () => {
    const r = await runCommand(SH, ['-c', 'exit 0'], { ...base, cwd: '/nonexistent-dir-of-the-test' });
    expect(r).toMatchObject({ exitCode: null, spawnError: 'ENOENT', stdout: '', stderr: '' });
  });

  it('leaves no child, zombie, descriptor or waiter thread after 200 commands', async () => {
    await runCommand(SH, ['-c', 'exit 0'], base); // the first call's one-time set-up (the exit hook)
    const fds = count('/proc/self/fd');
    const threads = count('/proc/self/task');
    const before = ownChildren();
    const outputs = await Promise.all(
      Array.from({ length: 200 }, (_, i) => runCommand(SH, ['-c', `echo ${i}; echo e >&2; exit ${i % 3}`], base)),
    );
    outputs.forEach((r, i) => expect(r).toMatchObject({ exitCode: i % 3, stdout: `${i}\n`, stderr: 'e\n' }));
    // A waiter thread ends right after handing its child's exit over.
    for (let i = 0; i < 100 && count('/proc/self/task') > threads; i++) await new Promise((r) => setTimeout(r, 20));
    expect(ownChildren().filter((pid) => !before.includes(pid))).toEqual([]);
    expect(count('/proc/self/fd')).toBe(fds);
    expect(count('/proc/self/task')).toBeLessThanOrEqual(threads);
  }, 60_000);
});
