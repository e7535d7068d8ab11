/**
 * Attacks on the wall addon's spawn (native/fs_tools_spawn.c, src/vcs/run-command.ts) by a reviewer of its merge:
 * an environment that loaded the addon ending while its children still run (the waiter threads must neither run
 * unmapped code nor use a thread-safe function Node has deleted, and the children are still reaped), and what reaches
 * the child compared with Node's `spawn`.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { loadNativeSpawner, WALL_ADDON } from '../helpers/native-spawner.js';

const spawner = loadNativeSpawner();

/**
 * A process whose worker threads load the addon, start 20 children each through it (sleeping 0.3 s) and end before
 * the children exit; the main thread, which never loaded the addon, lives on. It prints its zombie children at the end.
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
  for (let i = 0; i < 20; i++) {
    const r = addon.spawn('/bin/sleep', ['/bin/sleep', '0.3'], [], null, false, []);
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
});
