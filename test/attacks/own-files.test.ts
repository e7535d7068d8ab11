/**
 * Attack: the server's own files turned against it (docs/security.md "Locks, temporaries and shutdown"), against real
 * server processes (dist/cli.js).
 *
 * 1. Forged locks: a lock-named directory at a file's lock name, a lock-named entry in the middle of a path, lock
 *    files naming another host, `{}`, pid 1 (with its real start time), and a lock in an ancestor for a file whose
 *    directory does not exist yet. Every write succeeds or fails within a second; a failure is IO_ERROR reason
 *    `locked`, retryable, retry_later, naming the lock root-relative; after the stale time every one succeeds (no
 *    state in which a file can never be written again). The server is the seams build with a stale time of STALE_MS
 *    instead of LOCK_STALE_MS (10 s; `--test-seams=lock-stale:MS`, src/cli/seam-flags.ts): the same judgement,
 *    without waiting 10 s. The locks are planted once it has started, so the three failing writes (~0.7 s each,
 *    LOCK_STUCK_MS) all meet them fresh.
 * 2. No tool creates an entry of the own class (lock, temporary, copy tree) in any component: create_directory,
 *    write_file create_dirs, apply_patch, copy_path and move_path destinations — nothing is created.
 * 3. A temporary of `.env` (what a server killed mid-write leaves) and a copy tree holding a `.env`: never listed,
 *    read or searched, with or without --allow-secrets.
 * 4. Shutdown: stdin closed (or SIGTERM) during a copy_path that takes over a second: the copy finishes and is
 *    answered, a call arriving afterwards is refused (shutting_down), the process exits, and no temporary tree,
 *    lock or register is left.
 * 5. SIGKILL during a copy_path leaves a copy tree and lock files; the next start sweeps them and says so on stderr.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isOwnFileName } from '../../src/fs/own-files.js';
import { selfIdentity, startTimeOf } from '../../src/fs/process-identity.js';
import { connect, type TestClient } from '../helpers/server.js';
import { startRaw } from '../helpers/raw-server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

/** The stale time (ms) of the forged-locks server (seams build): above the ~2.1 s the three failing writes wait. */
const STALE_MS = 4_000;
const cleanups: Array<() => void> = [];
const clients: TestClient[] = [];
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const c of cleanups) c();
});

function tree(spec = {}): string {
  const t = makeTree(spec, 'fs-tools-own-');
  cleanups.push(t.cleanup);
  return t.dir;
}

const lockName = (relative: string) =>
  `.fs-tools-lock-${createHash('sha256').update(relative).digest('hex').slice(0, 32)}`;

/** Every own-class entry under `dir` (relative paths), at any depth. */
function ownEntries(dir: string): string[] {
  const out: string[] = [];
  const visit = (d: string, rel: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (isOwnFileName(e.name)) out.push(r);
      if (e.isDirectory()) visit(path.join(d, e.name), r);
    }
  };
  visit(dir, '');
  return out;
}

async function server(args: string[]): Promise<TestClient> {
  const c = await connect('legacy', { args });
  clients.push(c);
  return c;
}

describe('forged locks', () => {
  it('a lock planted anywhere on the path, from another host, {}, pid 1: each write succeeds or fails within 1 s naming the lock, and succeeds after the stale time', async () => {
    const root = tree({ sub: {}, deep: {} });
    const state = tree();
    const c = await server([`--test-seams=lock-stale:${STALE_MS}`, '--auto-occ=off', '--state-dir', state, root]);
    const me = selfIdentity();
    // A lock-named directory at a.txt's lock name (what create_directory could make before the fix).
    mkdirSync(path.join(root, lockName('a.txt'), 'x'), { recursive: true });
    writeFileSync(path.join(root, lockName('a.txt'), 'x', 'kept.txt'), 'planted');
    writeFileSync(path.join(root, 'sub', lockName('b.txt')), '{}');
    writeFileSync(
      path.join(root, lockName('c.txt')),
      JSON.stringify({ ...me, host: 'another-host.example', pid: 4242 }),
    );
    writeFileSync(path.join(root, lockName('d.txt')), JSON.stringify({ ...me, pid: 1, start: startTimeOf(1) }));
    // An ancestor's lock for a file whose directory does not exist yet (create_dirs).
    writeFileSync(path.join(root, lockName('new/e.txt')), JSON.stringify({ ...me, host: 'another-host.example' }));
    // A lock-named directory in the middle of a path.
    mkdirSync(path.join(root, 'deep', lockName('zz')));
    const planted = Date.now();
    const targets = ['a.txt', 'sub/b.txt', 'c.txt', 'd.txt', 'new/e.txt'];
    const locks: Record<string, string> = {
      'c.txt': lockName('c.txt'),
      'd.txt': lockName('d.txt'),
      'new/e.txt': lockName('new/e.txt'),
    };
    for (const t of targets) {
      const started = Date.now();
      const r = await c.call('write_file', { path: path.join(root, t), content: `new ${t}\n`, create_dirs: true });
      expect(Date.now() - started, t).toBeLessThan(1000);
      if (!r.isError) {
        expect(readFileSync(path.join(root, t), 'utf8')).toBe(`new ${t}\n`);
        continue;
      }
      const { error } = JSON.parse(r.content[0].text!) as { error: Record<string, any> };
      expect(error, t).toMatchObject({
        code: 'IO_ERROR',
        retryable: true,
        recovery: 'retry_later',
        details: { reason: 'locked', lock: locks[t], held_by: 'not_refreshed' },
      });
      expect(error.details.clears_in_s).toBeLessThanOrEqual(STALE_MS / 1000);
      expect(error.message).toContain(`not been refreshed for ${STALE_MS / 1000} s`);
    }
    // What is not a lock this program wrote is taken away at once: a.txt and sub/b.txt were written.
    expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('new a.txt\n');
    expect(readFileSync(path.join(root, 'sub/b.txt'), 'utf8')).toBe('new sub/b.txt\n');
    // The planted directory is kept, visibly, with its content.
    const aside = readdirSync(root).filter((n) => n.startsWith('fs-tools-forged-lock-'));
    expect(aside).toHaveLength(1);
    expect(readFileSync(path.join(root, aside[0], 'x', 'kept.txt'), 'utf8')).toBe('planted');
    // A path through a lock-named directory is refused at once.
    const started = Date.now();
    const through = await c.callError('write_file', {
      path: path.join(root, 'deep', lockName('zz'), 'f.txt'),
      content: 'x',
    });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(through.error).toMatchObject({
      code: 'FILE_POLICY_DENIED',
      details: { source: 'builtin', rule: 'lock_file' },
    });
    // No state in which a file can never be written again: after the stale time, every write goes through.
    await new Promise((r) => setTimeout(r, Math.max(0, planted + STALE_MS + 300 - Date.now())));
    for (const t of targets) {
      await c.callOk('write_file', { path: path.join(root, t), content: `later ${t}\n`, create_dirs: true });
      expect(readFileSync(path.join(root, t), 'utf8')).toBe(`later ${t}\n`);
    }
    expect(ownEntries(root)).toEqual([`deep/${lockName('zz')}`]);
  }, 30_000);

  it('no tool creates a lock-named or temporary-named entry in any path component; nothing is created', async () => {
    const root = tree({ src: { 'f.txt': 'f\n' }, 'm.txt': 'm\n' });
    const state = tree();
    const c = await server(['--auto-occ=off', '--state-dir', state, root]);
    const before = snapshotTree(root);
    const names = [lockName('a.txt'), '.a.txt.fs-tools-0123456789ab.tmp', '.d.fs-tools-copy-0123456789ab'];
    for (const n of names) {
      const attempts: Array<[string, Record<string, unknown>]> = [
        ['create_directory', { path: path.join(root, n, 'x') }],
        ['create_directory', { path: path.join(root, n) }],
        ['write_file', { path: path.join(root, n, 'y.txt'), content: 'y', create_dirs: true }],
        ['write_file', { path: path.join(root, 'd', n, 'y.txt'), content: 'y', create_dirs: true }],
        ['apply_patch', { patch: `--- /dev/null\n+++ b/${n}/z.txt\n@@ -0,0 +1 @@\n+z\n`, path: root }],
        ['copy_path', { source: path.join(root, 'src'), destination: path.join(root, n), recursive: true }],
        ['copy_path', { source: path.join(root, 'm.txt'), destination: path.join(root, 'src', n) }],
        ['move_path', { source: path.join(root, 'm.txt'), destination: path.join(root, n) }],
        ['move_path', { source: path.join(root, 'src'), destination: path.join(root, n) }],
      ];
      for (const [tool, args] of attempts) {
        const r = await c.call(tool, args);
        expect(r.isError, `${tool} ${n}`).toBe(true);
        const { error } = JSON.parse(r.content[0].text!) as { error: Record<string, any> };
        expect(error, `${tool} ${n}`).toMatchObject({ code: 'FILE_POLICY_DENIED', details: { source: 'builtin' } });
      }
    }
    expect(snapshotTree(root)).toEqual(before);
  });
});

describe('temporaries take the class of the server, whatever they hold', () => {
  it('a temporary of .env and a copy tree holding a .env are never listed, read or searched', async () => {
    const secret = 'SECRET-VALUE-7f3a9c';
    const root = tree({
      '..env.fs-tools-0123456789ab.tmp': `TOKEN=${secret}\n`,
      '.conf.fs-tools-copy-0123456789ab': { '.env': `TOKEN=${secret}\n`, 'plain.txt': `${secret}\n` },
      'visible.txt': 'nothing here\n',
    });
    for (const flags of [[], ['--allow-secrets']]) {
      const c = await server([...flags, '--state-dir', tree(), root]);
      const listed = await c.callOk('list_directory', { path: root, depth: 5 });
      expect(listed.entries).toEqual(['visible.txt']);
      const found = await c.callOk('search_files', { path: root, query: secret });
      expect(JSON.stringify(found)).not.toContain(secret);
      expect(JSON.stringify(found)).not.toContain('.fs-tools-');
      for (const p of ['..env.fs-tools-0123456789ab.tmp', '.conf.fs-tools-copy-0123456789ab/plain.txt']) {
        const r = await c.call('read_file', { path: path.join(root, p) });
        expect(r.isError).toBe(true);
        expect(r.content[0].text).not.toContain(secret);
        expect(JSON.parse(r.content[0].text!).error).toMatchObject({
          code: 'FILE_POLICY_DENIED',
          details: { rule: 'own_temporary' },
        });
      }
    }
  });
});

/** A root with a tree of `n` files to copy, and a state directory. */
function copySetup(n: number): { root: string; state: string } {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) files[`f${String(i).padStart(3, '0')}.txt`] = `file ${i}\n`;
  return { root: tree({ src: files }), state: tree() };
}

describe('graceful shutdown', () => {
  for (const how of ['stdin', 'SIGTERM'] as const) {
    it(`${how} during a copy_path of over a second: the copy finishes and is answered, later calls are refused, nothing of ours is left`, async () => {
      const { root, state } = copySetup(30);
      const s = startRaw(['--state-dir', state, root], { seam: '--test-seams=copy-delay:50' });
      await s.ready;
      const answer = s.call('copy_path', {
        source: path.join(root, 'src'),
        destination: path.join(root, 'dst'),
        recursive: true,
      });
      await new Promise((r) => setTimeout(r, 400));
      expect(ownEntries(root).length).toBeGreaterThan(0); // mid-copy: the temporary tree and the locks exist
      if (how === 'stdin') s.child.stdin.end();
      else {
        s.child.kill('SIGTERM');
        await new Promise((r) => setTimeout(r, 100));
        const late = await s.call('read_file', { path: path.join(root, 'src', 'f000.txt') });
        expect(late?.envelope?.error).toMatchObject({ code: 'IO_ERROR', details: { reason: 'shutting_down' } });
      }
      const result = await answer;
      expect(result?.isError).toBe(false);
      expect(result?.structured).toMatchObject({ type: 'directory', entries: 30 });
      expect((await s.exited).code).toBe(0);
      expect(readdirSync(path.join(root, 'dst'))).toHaveLength(30);
      expect(ownEntries(root)).toEqual([]);
      expect(existsSync(path.join(state, 'inflight')) ? readdirSync(path.join(state, 'inflight')) : []).toEqual([]);
      expect(s.stderr()).toMatch(/1 call\(s\) in flight answered/);
    }, 30_000);
  }
});

describe('start-up sweep', () => {
  it('SIGKILL mid copy_path leaves a copy tree and lock files; the next start removes them and says so', async () => {
    const { root, state } = copySetup(30);
    const s = startRaw(['--state-dir', state, root], { seam: '--test-seams=copy-delay:50' });
    await s.ready;
    void s.call('copy_path', { source: path.join(root, 'src'), destination: path.join(root, 'dst'), recursive: true });
    await new Promise((r) => setTimeout(r, 500));
    s.child.kill('SIGKILL');
    await s.exited;
    const left = ownEntries(root);
    expect(left.some((e) => e.includes('.fs-tools-copy-'))).toBe(true);
    expect(left.some((e) => e.startsWith('.fs-tools-lock-'))).toBe(true);
    const next = startRaw(['--state-dir', state, root]);
    await next.ready;
    expect(ownEntries(root)).toEqual([]);
    expect(existsSync(path.join(root, 'dst'))).toBe(false);
    expect(next.stderr()).toMatch(/start-up sweep: \d+ leftover\(s\) of a killed fs-tools process removed/);
    next.child.stdin.end();
    expect((await next.exited).code).toBe(0);
  }, 30_000);
});
