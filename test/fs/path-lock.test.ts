/**
 * The cross-process path lock (src/fs/path-lock.ts; docs/security.md "Locks, temporaries and shutdown"), with real
 * foreign owners: each test plants what another fs-tools process (or an attacker, or a `git checkout` of a committed
 * lock) would leave at the lock name, and checks what a writer does:
 *   - an exited owner: taken over at once, and the stale file is gone afterwards;
 *   - a live owner that keeps its lock fresh (touches it, as the heartbeat does): waited for; taken once it is gone;
 *   - a live pid whose start time is not the recorded one (the pid was reused): taken over;
 *   - an owner that does not refresh its lock (another host, another pid namespace, pid 1, a live child): the call
 *     fails within a second with IO_ERROR reason `locked` naming the lock, retryable, recovery retry_later;
 *   - what is not a lock this program wrote (`{}`, a damaged record, a FIFO, a directory): taken away at once (a
 *     directory is renamed aside, visibly), and the write proceeds;
 * plus: no lock or temporary file remains after a release; a target whose parent is missing is locked in the nearest
 * existing ancestor; a parent that is a symlink to outside (a swap) makes the lock fail without creating anything in
 * the outside directory; the lock of a root lives inside it (its parent is outside the roots).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { toEnvelope } from '../../src/errors/to-envelope.js';
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

  it('waits for a live owner that keeps its lock fresh, and takes the lock once the owner is gone', async () => {
    const d = dir();
    const target = path.join(d, 'f.txt');
    const file = lockFileOf(target);
    // The owner refreshes its lock as fs-tools' heartbeat does (the file's ctime moves).
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const fs=require('fs');setInterval(()=>{const t=new Date();try{fs.utimesSync(${JSON.stringify(file)},t,t)}catch{}},100)`,
      ],
      { stdio: 'ignore' },
    );
    children.push(child);
    plant(target, { pid: child.pid, start: startTimeOf(child.pid!) });
    // Once the owner has refreshed it at least once (a loaded machine may take a while to start it).
    const planted = lstatSync(file).ctimeMs;
    while (lstatSync(file).ctimeMs === planted) await new Promise((r) => setTimeout(r, 20));
    const { ran, done } = await ranWithin(target, 1500);
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

  it('fails within a second, naming the lock, when its owner does not refresh it (another host, pid namespace, pid 1, a live child)', async () => {
    const d = dir();
    const child = await liveChild();
    const records: Array<Record<string, unknown>> = [
      { host: 'another-host.example' },
      { pid: spawnSync(process.execPath, ['-e', '']).pid, pidns: 'pid:[1]' },
      { pid: 1, start: startTimeOf(1) },
      { pid: 1, start: null, boot: null, pidns: null },
      { pid: child.pid, start: startTimeOf(child.pid!) },
    ];
    for (const [i, record] of records.entries()) {
      const target = path.join(d, `f${i}.txt`);
      const file = plant(target, record);
      const started = Date.now();
      const error = await withPathLock([target], '', async () => {
        throw new Error('ran');
      }).catch((e: unknown) => e as ToolError);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(error).toBeInstanceOf(ToolError);
      const envelope = toEnvelope(error).error;
      expect(envelope).toMatchObject({
        code: 'IO_ERROR',
        retryable: true,
        recovery: 'retry_later',
        path: target,
        details: { reason: 'locked', lock: path.basename(file), held_by: 'not_refreshed' },
      });
      expect(existsSync(file)).toBe(true); // not broken before LOCK_STALE_MS without a refresh
    }
  });

  it('a lock of the same target in an ancestor (taken before its directories existed): a live one stops the call, a dead one is broken', async () => {
    const d = dir();
    const child = await liveChild();
    const deep = path.join(d, 'a', 'b', 'c.txt');
    // Another process locked `a/b/c.txt` while a/b did not exist: its lock lives in d, under the name of a/b/c.txt.
    const above = lockFileOf(path.join(d, 'x'), 'a/b/c.txt');
    writeFileSync(above, JSON.stringify({ ...selfIdentity(), pid: child.pid, start: startTimeOf(child.pid!) }));
    mkdirSync(path.join(d, 'a', 'b'), { recursive: true });
    const error = await withPathLock([deep], '', async () => {
      throw new Error('ran');
    }).catch((e: unknown) => e as ToolError);
    expect(toEnvelope(error).error).toMatchObject({
      code: 'IO_ERROR',
      path: deep,
      details: { reason: 'locked', lock: path.basename(above), held_by: 'not_refreshed' },
    });
    expect(existsSync(above)).toBe(true);
    expect(readdirSync(path.join(d, 'a', 'b'))).toEqual([]); // our own lock beside the target was released
    // The same lock of an owner that exited is broken, and the call runs.
    writeFileSync(
      above,
      JSON.stringify({ ...selfIdentity(), pid: spawnSync(process.execPath, ['-e', '']).pid, start: '1' }),
    );
    let ran = false;
    await withPathLock([deep], '', async () => {
      ran = true;
      expect(readdirSync(path.join(d, 'a', 'b')).filter(isLockFileName)).toHaveLength(1);
    });
    expect(ran).toBe(true);
    expect(readdirSync(d).sort()).toEqual(['a']);
    expect(readdirSync(path.join(d, 'a', 'b'))).toEqual([]);
  });

  it('takes away at once what is not a lock it wrote ({}, a damaged record, a FIFO, a directory), and writes', async () => {
    const d = dir();
    const targets: string[] = [];
    for (const [i, make] of [
      (f: string) => writeFileSync(f, '{}'),
      (f: string) => writeFileSync(f, '{"pid": "x"'),
      (f: string) => spawnSync('mkfifo', [f]),
      (f: string) => {
        mkdirSync(f);
        writeFileSync(path.join(f, 'x'), 'planted');
      },
    ].entries()) {
      const target = path.join(d, `g${i}.txt`);
      make(lockFileOf(target));
      targets.push(target);
    }
    const started = Date.now();
    await withPathLock(targets, '', async () => undefined);
    expect(Date.now() - started).toBeLessThan(1000);
    const left = readdirSync(d);
    expect(left.filter((n) => isLockFileName(n))).toEqual([]);
    // The planted directory is kept, renamed aside under a visible name, with its content.
    const aside = left.filter((n) => n.startsWith('fs-tools-forged-lock-'));
    expect(aside).toHaveLength(1);
    expect(readdirSync(path.join(d, aside[0]))).toEqual(['x']);
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
