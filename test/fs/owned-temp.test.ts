/**
 * The server's private temporary directories (src/fs/owned-temp.ts): marked with the owner (pid namespace, pid, start
 * time), 0700, removed by their owner, and swept at start only when the owner is proven gone:
 * - removed: a dead pid's; a live pid whose start time differs (the pid was reused); a legacy unmarked gh token
 *   directory older than an hour;
 * - kept: this process's, a live process's, another pid namespace's (cannot be judged), a young legacy one, and
 *   anything that is not a directory of this user with a matching name (a symbolic link is not followed);
 * - an uncaught error (the 'uncaughtExceptionMonitor' path) removes this process's directories.
 */
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  LEGACY_MAX_AGE_MS,
  makeOwnedTempDir,
  removeOwnedTempDir,
  sweepOwnedTempDirs,
} from '../../src/fs/owned-temp.js';
import { selfIdentity, startTimeOf } from '../../src/fs/process-identity.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-owned-temp-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const ns = /\d+/.exec(selfIdentity().pidns ?? '')?.[0] ?? '0';

/** A pid that no process has now (a child that has exited and was reaped). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

function plant(name: string): string {
  const dir = path.join(base, name);
  mkdirSync(dir, { mode: 0o700 });
  writeFileSync(path.join(dir, 'hosts.yml'), 'token\n');
  return dir;
}

describe('owned temporary directories', () => {
  it('made 0700 with the owner in the name, removed by the owner', () => {
    const dir = makeOwnedTempDir(base, 'ghtoken');
    expect(path.basename(dir)).toMatch(
      new RegExp(`^fs-tools-ghtoken-${ns}-${process.pid}-${startTimeOf(process.pid)}-\\w{6}$`),
    );
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    removeOwnedTempDir(dir);
    expect(existsSync(dir)).toBe(false);
  });

  it('the sweep removes only what belongs to a process proven gone', () => {
    const ppid = process.ppid;
    const mine = makeOwnedTempDir(base, 'native');
    const dead = plant(`fs-tools-ghtoken-${ns}-${deadPid()}-12345-aaaaaa`);
    const reused = plant(`fs-tools-native-${ns}-${ppid}-1-bbbbbb`);
    const live = plant(`fs-tools-ghtoken-${ns}-${ppid}-${startTimeOf(ppid)}-cccccc`);
    const otherNs = plant(`fs-tools-ghtoken-999-${deadPid()}-12345-dddddd`);
    const legacyOld = plant('fs-tools-ghtoken-eeeeee');
    const old = (Date.now() - LEGACY_MAX_AGE_MS - 60_000) / 1000;
    utimesSync(legacyOld, old, old);
    const legacyYoung = plant('fs-tools-ghtoken-ffffff');
    const target = plant('victim');
    const link = path.join(base, `fs-tools-ghtoken-${ns}-${deadPid()}-12345-gggggg`);
    symlinkSync(target, link);
    const file = path.join(base, `fs-tools-native-${ns}-${deadPid()}-12345-hhhhhh`);
    writeFileSync(file, 'x');
    const unrelated = plant('fs-tools-gitview-1-xyz');

    const removed = sweepOwnedTempDirs([base, path.join(base, 'missing')]);
    expect(removed.sort()).toEqual([dead, legacyOld, reused].sort());
    for (const kept of [mine, live, otherNs, legacyYoung, target, link, file, unrelated])
      expect(existsSync(kept)).toBe(true);
    expect(readdirSync(target)).toEqual(['hosts.yml']); // the link was not followed
    removeOwnedTempDir(mine);
  });

  it("an uncaught error removes this process's directories", () => {
    const dir = makeOwnedTempDir(base, 'ghtoken');
    // Only ours (the test runner has its own): the one the module registered for this path.
    const ours = process.listeners('uncaughtExceptionMonitor').filter((l) => l.name === 'removeAllOwnedTempDirs');
    expect(ours).toHaveLength(1);
    ours[0](new Error('test'), 'uncaughtException');
    expect(existsSync(dir)).toBe(false);
  });
});
