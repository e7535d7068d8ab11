/**
 * The server's own files (src/fs/own-files.ts): the class by name in every component, the in-flight register (noted
 * before creation, cut back when nothing is in flight, removed with what is left on exit) and the start-up sweep of a
 * dead owner's register — only inside the roots, only names of the recorded kind, a lock only while it holds the dead
 * owner's record, nothing under --readonly, live owners' registers untouched.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  configureOwnFiles,
  dropOwnFile,
  isOwnFileName,
  noteOwnFile,
  ownComponentOf,
  ownFileKind,
  ownFilesInFlight,
  removeOwnFilesOnExit,
  sweepOwnLeftovers,
} from '../../src/fs/own-files.js';
import { selfIdentity } from '../../src/fs/process-identity.js';
import { makeTree } from '../helpers/tree.js';

const cleanups: Array<() => void> = [];
afterAll(() => {
  configureOwnFiles(null);
  for (const c of cleanups) c();
});

function dir(): string {
  const t = makeTree({}, 'fs-tools-own-unit-');
  cleanups.push(t.cleanup);
  return t.dir;
}

const HEX12 = '0123456789ab';

describe('the class', () => {
  it('recognises locks, temporaries and copy trees by name, and in any component of a path', () => {
    expect(ownFileKind(`.fs-tools-lock-${'a'.repeat(32)}`)).toBe('lock');
    expect(ownFileKind(`.fs-tools-lock-${'a'.repeat(32)}.break`)).toBe('lock');
    expect(ownFileKind(`.fs-tools-lock-${'a'.repeat(32)}.${'b'.repeat(16)}.tmp`)).toBe('lock');
    expect(ownFileKind(`..env.fs-tools-${HEX12}.tmp`)).toBe('temporary');
    expect(ownFileKind(`.a b.txt.fs-tools-${HEX12}.tmp`)).toBe('temporary');
    expect(ownFileKind(`.dst.fs-tools-copy-${HEX12}`)).toBe('tree');
    expect(ownFileKind(`.l.fs-tools-link-${HEX12}`)).toBe('tree');
    for (const name of [
      '.env',
      'fs-tools-lock-x',
      `.fs-tools-lock-${'a'.repeat(31)}`,
      `x.fs-tools-${HEX12}.tmp`,
      `.x.fs-tools-${HEX12}.tmpx`,
      `.x.fs-tools-copy-${HEX12}x`,
      'fs-tools-forged-lock-0123456789ab',
    ])
      expect(isOwnFileName(name), name).toBe(false);
    expect(ownComponentOf(`/r/a/.fs-tools-lock-${'c'.repeat(32)}/x/y.txt`)).toBe(`.fs-tools-lock-${'c'.repeat(32)}`);
    expect(ownComponentOf(`/r/.d.fs-tools-copy-${HEX12}/.env`)).toBe(`.d.fs-tools-copy-${HEX12}`);
    expect(ownComponentOf('/r/a/b.txt')).toBeNull();
  });
});

describe('the in-flight register', () => {
  it('notes before creation, cuts back to the owner line when nothing is in flight, and removes what is left on exit', () => {
    const state = dir();
    const root = dir();
    configureOwnFiles(state);
    const tmp = path.join(root, `.a.txt.fs-tools-${HEX12}.tmp`);
    noteOwnFile(tmp, 'temporary');
    writeFileSync(tmp, 'bytes');
    const [log] = readdirSync(path.join(state, 'inflight'));
    const file = path.join(state, 'inflight', log);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(JSON.parse(lines[0])).toEqual(selfIdentity());
    expect(JSON.parse(lines[1])).toEqual({ add: tmp, kind: 'temporary' });
    const other = path.join(root, `.b.txt.fs-tools-${HEX12}.tmp`);
    noteOwnFile(other, 'temporary');
    dropOwnFile(other);
    expect(readFileSync(file, 'utf8')).toContain(`"drop":${JSON.stringify(other)}`);
    dropOwnFile(tmp);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(1); // back to the owner line
    dropOwnFile(tmp); // dropping twice changes nothing
    // Left in flight at exit: a temporary and this process's own lock are removed, a foreign lock is not.
    noteOwnFile(tmp, 'temporary');
    const mine = path.join(root, `.fs-tools-lock-${'d'.repeat(32)}`);
    const theirs = path.join(root, `.fs-tools-lock-${'e'.repeat(32)}`);
    writeFileSync(mine, JSON.stringify(selfIdentity()));
    writeFileSync(theirs, JSON.stringify({ ...selfIdentity(), pid: 1 }));
    noteOwnFile(mine, 'lock');
    noteOwnFile(theirs, 'lock');
    removeOwnFilesOnExit();
    expect(existsSync(tmp)).toBe(false);
    expect(existsSync(mine)).toBe(false);
    expect(existsSync(theirs)).toBe(true);
    expect(ownFilesInFlight().size).toBe(0);
    expect(readdirSync(path.join(state, 'inflight'))).toEqual([]);
    configureOwnFiles(null);
  });
});

describe('the start-up sweep', () => {
  function deadRegister(state: string, notes: object[]): { file: string; owner: object } {
    const pid = spawnSync(process.execPath, ['-e', '']).pid;
    const owner = { ...selfIdentity(), pid, start: '1' };
    mkdirSync(path.join(state, 'inflight'), { recursive: true });
    const file = path.join(state, 'inflight', `${pid}-1.log`);
    writeFileSync(file, [owner, ...notes].map((n) => JSON.stringify(n)).join('\n') + '\n{"add":"torn');
    return { file, owner };
  }

  it("removes a dead owner's leftovers inside the roots only, and only what it recorded of the right kind", async () => {
    const state = dir();
    const root = dir();
    const outside = dir();
    const isInside = (p: string) => p === root || p.startsWith(`${root}/`);
    const tmp = path.join(root, `..env.fs-tools-${HEX12}.tmp`);
    const tree = path.join(root, `.dst.fs-tools-copy-${HEX12}`);
    const link = path.join(root, `.l.fs-tools-link-${HEX12}`);
    const deadLock = path.join(root, `.fs-tools-lock-${'1'.repeat(32)}`);
    const liveLock = path.join(root, `.fs-tools-lock-${'2'.repeat(32)}`);
    const dropped = path.join(root, `.x.fs-tools-${HEX12}.tmp`);
    const outsideTmp = path.join(outside, `.o.fs-tools-${HEX12}.tmp`);
    const wrongKind = path.join(root, 'plain.txt');
    const { file, owner } = deadRegister(state, [
      { add: tmp, kind: 'temporary' },
      { add: tree, kind: 'tree' },
      { add: link, kind: 'tree' },
      { add: deadLock, kind: 'lock' },
      { add: liveLock, kind: 'lock' },
      { add: dropped, kind: 'temporary' },
      { drop: dropped },
      { add: outsideTmp, kind: 'temporary' },
      { add: wrongKind, kind: 'temporary' },
      { add: path.join(root, `.gone.fs-tools-${HEX12}.tmp`), kind: 'temporary' },
    ]);
    writeFileSync(tmp, 'SECRET=1');
    mkdirSync(path.join(tree, 'a', 'b'), { recursive: true });
    writeFileSync(path.join(tree, 'a', 'b', '.env'), 'SECRET=2');
    symlinkSync('/etc/passwd', link);
    writeFileSync(deadLock, JSON.stringify(owner));
    writeFileSync(liveLock, JSON.stringify(selfIdentity())); // a later writer's lock at that name: never removed
    writeFileSync(dropped, 'finished, not ours to remove');
    writeFileSync(outsideTmp, 'outside');
    writeFileSync(wrongKind, 'a user file');

    // --readonly: nothing removed, the register stays.
    const ro = await sweepOwnLeftovers(state, isInside, { readonly: true });
    expect(ro.every((f) => f.outcome === 'kept')).toBe(true);
    expect(existsSync(tmp) && existsSync(tree) && existsSync(file)).toBe(true);

    const swept = await sweepOwnLeftovers(state, isInside);
    const outcome = Object.fromEntries(swept.map((f) => [path.basename(f.path), f.outcome]));
    expect(outcome).toEqual({
      [path.basename(tmp)]: 'removed',
      [path.basename(tree)]: 'removed',
      [path.basename(link)]: 'removed',
      [path.basename(deadLock)]: 'removed',
      [path.basename(liveLock)]: 'kept',
      [`.gone.fs-tools-${HEX12}.tmp`]: 'gone',
    });
    expect(readdirSync(root).sort()).toEqual([path.basename(liveLock), path.basename(dropped), 'plain.txt'].sort());
    expect(existsSync(outsideTmp)).toBe(true);
    expect(lstatSync('/etc/passwd').isFile()).toBe(true);
    // The entry outside the roots stays in the register for a start with those roots.
    const kept = readFileSync(file, 'utf8').trim().split('\n');
    expect(kept.slice(1).map((l) => JSON.parse(l) as object)).toEqual([{ add: outsideTmp, kind: 'temporary' }]);
    const again = await sweepOwnLeftovers(state, (p) => isInside(p) || p === outside || p.startsWith(`${outside}/`));
    expect(again).toEqual([{ path: outsideTmp, kind: 'temporary', outcome: 'removed' }]);
    expect(existsSync(file)).toBe(false);
  });

  it("leaves a live owner's register alone and removes one that is not a register", async () => {
    const state = dir();
    const root = dir();
    mkdirSync(path.join(state, 'inflight'));
    const me = selfIdentity();
    const tmp = path.join(root, `.a.fs-tools-${HEX12}.tmp`);
    writeFileSync(tmp, 'in flight');
    const live = path.join(state, 'inflight', `1-${me.start ?? '0'}.log`);
    writeFileSync(
      live,
      `${JSON.stringify({ ...me, pid: 1, start: null })}\n${JSON.stringify({ add: tmp, kind: 'temporary' })}\n`,
    );
    const junk = path.join(state, 'inflight', '2-2.log');
    writeFileSync(junk, 'not json\n');
    writeFileSync(path.join(state, 'inflight', 'other.txt'), 'ignored');
    expect(await sweepOwnLeftovers(state, () => true)).toEqual([]);
    expect(existsSync(tmp) && existsSync(live)).toBe(true);
    expect(existsSync(junk)).toBe(false);
    expect(await sweepOwnLeftovers(path.join(state, 'missing'), () => true)).toEqual([]);
  });
});
