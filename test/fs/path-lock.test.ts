/**
 * The cross-process path lock (src/fs/path-lock.ts; issue 11 items 4 and 7), with real foreign owners: each test
 * plants a lock file whose owner record names a real process (a child that is alive, or one that has exited) the way
 * another fs-tools process would, and checks when the lock is taken over:
 *   - an exited owner: taken over at once, and the stale file is gone afterwards;
 *   - a live owner, even with a lock file an hour old: waited for (never broken by age); once it is killed, taken;
 *   - a live pid whose start time is not the recorded one (the pid was reused): taken over;
 *   - an owner in another pid namespace (cannot be judged): waited for, even though its pid does not exist here;
 *   - a damaged record: waited for (fail closed);
 * plus: no lock or temporary file remains after a release; a target whose parent is missing is locked in the nearest
 * existing ancestor; a parent that is a symlink to outside (a swap) makes the lock fail without creating anything in
 * the outside directory; the lock of a root lives inside it (its parent is outside the roots).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { isLockFileName, registerLockScope, withPathLock } from '../../src/fs/path-lock.js';
import { selfIdentity, startTimeOf } from '../../src/fs/process-identity.js';
import { makeTree } from '../helpers/tree.js';

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups.reverse()) c();
});
const children: ChildProcess[] = [];
const unregister: Array<() => void> = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const u of unregister.splice(0)) u();
});

function dir(): string {
  const t = makeTree({}, 'fs-tools-lock-');
  cleanups.push(t.cleanup);
  return t.dir;
}

const lockFileOf = (target: string, relative = path.basename(target)) =>
  path.join(path.dirname(target), `.fs-tools-lock-${createHash('sha256').update(relative).digest('hex').slice(0, 32)}`);

function plant(target: string, record: Record<string, unknown>): string {
  const file = lockFileOf(target);
  writeFileSync(file, JSON.stringify({ ...selfIdentity(), ...record }));
  return file;
}

async function liveChild(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  children.push(child);
  await new Promise((r) => setTimeout(r, 50));
  return child;
}

/** Starts withPathLock and reports whether `fn` ran within `ms`. */
async function ranWithin(target: string, ms: number): Promise<{ ran: boolean; done: Promise<void> }> {
  let ran = false;
  const done = withPathLock([target], '/nonexistent-state', async () => {
    ran = true;
  });
  await Promise.race([done.catch(() => undefined), new Promise((r) => setTimeout(r, ms))]);
  return { ran, done };
}

describe('withPathLock across processes', () => {
  it('takes over the lock of an exited owner at once, and leaves no lock or temporary file', async () => {
    const d = dir();
    const target = path.join(d, 'f.txt');
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    plant(target, { pid: dead, start: '1' });
    const { ran, done } = await ranWithin(target, 1000);
    await done;
    expect(ran).toBe(true);
    expect(readdirSync(d)).toEqual([]);
  });

  it('waits for a live owner however old its lock, and takes the lock once the owner is gone', async () => {
    const d = dir();
    const target = path.join(d, 'f.txt');
    const child = await liveChild();
    const file = plant(target, { pid: child.pid, start: startTimeOf(child.pid!) });
    const hourAgo = new Date(Date.now() - 3600_000);
    utimesSync(file, hourAgo, hourAgo);
    const { ran, done } = await ranWithin(target, 700);
    expect(ran).toBe(false);
    expect(existsSync(file)).toBe(true);
    child.kill('SIGKILL');
    await done;
    expect(readdirSync(d)).toEqual([]);
  });

  it('takes over a lock whose pid is alive but was reused by another process (start time differs)', async () => {
    const d = dir();
    const target = path.join(d, 'f.txt');
    const child = await liveChild();
    plant(target, { pid: child.pid, start: '12345' });
    const { ran, done } = await ranWithin(target, 1000);
    await done;
    expect(ran).toBe(true);
  });

  it('waits for an owner it cannot judge (another pid namespace, a damaged record), even when its pid is free here', async () => {
    const d = dir();
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    for (const record of [{ pid: dead, pidns: 'pid:[1]' }, { pid: 'x' }]) {
      const target = path.join(d, `f${String(record.pid)}.txt`);
      const file = plant(target, record);
      const { ran, done } = await ranWithin(target, 500);
      expect(ran).toBe(false);
      expect(existsSync(file)).toBe(true);
      // Once someone removes it (its owner was really gone), the waiter proceeds.
      const { rmSync } = await import('node:fs');
      rmSync(file);
      await done;
    }
    expect(readdirSync(d)).toEqual([]);
  });

  it('locks a target with a missing parent in its nearest existing ancestor; refuses a parent swapped for a link, creating nothing outside', async () => {
    const d = dir();
    const outside = dir();
    unregister.push(registerLockScope((p) => p === d || p.startsWith(`${d}/`)));
    const deep = path.join(d, 'a', 'b', 'c.txt');
    await withPathLock([deep], '', async () => {
      const names = readdirSync(d);
      expect(names).toHaveLength(1);
      expect(names[0]).toBe(path.basename(lockFileOf(path.join(d, 'x'), 'a/b/c.txt')));
      expect(isLockFileName(names[0])).toBe(true);
    });
    expect(readdirSync(d)).toEqual([]);
    symlinkSync(outside, path.join(d, 'swapped'));
    // A link where a directory should be: no lock file anywhere (the mutation's own checks refuse the path).
    await withPathLock([path.join(d, 'swapped', 'f.txt')], '', async () => {
      expect(readdirSync(outside)).toEqual([]);
      expect(readdirSync(d).filter(isLockFileName)).toEqual([]);
    });
    expect(readdirSync(outside)).toEqual([]);
    // A root's lock lives inside the root (its parent directory is outside the roots).
    await withPathLock([d], '', async () => {
      expect(readdirSync(d).filter(isLockFileName)).toHaveLength(1);
      expect(readdirSync(path.dirname(d)).filter(isLockFileName)).toEqual([]);
    });
    mkdirSync(path.join(d, 'a'));
    expect(readdirSync(d).sort()).toEqual(['a', 'swapped']);
  });
});
