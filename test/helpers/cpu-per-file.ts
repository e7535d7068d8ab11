/**
 * Per-file CPU accounting for `npm test` (vitest.config.ts `setupFiles`, every test file), off unless
 * `FS_TOOLS_TEST_CPU_LOG=FILE` is set: then each test file appends one line `CPU_S<TAB>WALL_S<TAB>FILE` to FILE when
 * it ends.
 *
 * CPU_S is the CPU time (user + system, seconds) of the vitest worker running the file plus that of every child it
 * reaped meanwhile (`/proc/self/stat` utime, stime, cutime, cstime): the spawned servers, their git and gh children,
 * the test's own git and CLI runs. A child still running when the file ends is not counted (none should be). Linux
 * only; elsewhere the probe writes nothing. docs/development.md "Where `npm test`'s time goes" says how to read it:
 * `FS_TOOLS_TEST_CPU_LOG=/tmp/cpu.tsv npm test && sort -rn /tmp/cpu.tsv | head`.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';

const LOG = process.env.FS_TOOLS_TEST_CPU_LOG;
/** Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** CPU seconds of this process and its reaped children, or null where `/proc/self/stat` is unreadable. */
function cpuSeconds(): number | null {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name in parentheses: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    return ticks / USER_HZ;
  } catch {
    return null;
  }
}

if (LOG) {
  let cpuAtStart: number | null = null;
  let wallAtStart = 0;
  beforeAll(() => {
    cpuAtStart = cpuSeconds();
    wallAtStart = Date.now();
  });
  afterAll(() => {
    const cpuAtEnd = cpuSeconds();
    if (cpuAtStart === null || cpuAtEnd === null) return;
    const file = expect.getState().testPath ?? 'unknown';
    const wall = (Date.now() - wallAtStart) / 1000;
    appendFileSync(LOG, `${(cpuAtEnd - cpuAtStart).toFixed(2)}\t${wall.toFixed(1)}\t${file}\n`);
  });
}
