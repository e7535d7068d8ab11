/**
 * Pins the multi-file transaction in process (SPEC §6.4, §3.1 ROLLBACK_*; src/patch/transaction.ts,
 * src/fs/journal.ts), on real files:
 *  - a commit writes every file and removes its journal entry; no temporary file is left; a created file's missing
 *    directories are created (as git apply does) and removed again by a rollback;
 *  - the journal entry (old bytes, old hash, intended new hash, mode, pid) is durable on disk before the first
 *    file is written;
 *  - the second of three commits fails → ROLLBACK_COMPLETE, every file `restored`, the cause's envelope inside, and
 *    the tree holds exactly its original bytes and modes (a created file is removed again, a 0755 file keeps 0755);
 *  - a deleted file is restored with its bytes and mode when a later commit fails;
 *  - a file changed by another writer after our commit is `left_alone` (its bytes stay the other writer's) while the
 *    rest is restored → ROLLBACK_PARTIAL;
 *  - the only written file cannot be restored → ROLLBACK_FAILED with `not_restored` and the OS reason;
 *  - start-up recovery (recoverJournals) rolls back entries of dead processes, skips entries of live ones, leaves
 *    alone files changed since, removes the entry, drops never-committed `.json.tmp` files, and removes the
 *    temporary copies a killed writer left beside the journaled files (regression: they stayed as litter), nothing
 *    else.
 *
 * How faults are produced. Tests run as root, where chmod does not stop writes. The real fault used here is the
 * immutable attribute (`chattr +i DIR`): creating the temporary file, or renaming into DIR, then fails with EPERM,
 * exactly as on a read-only directory. It is applied after the changes were planned (validated, hashed, patched in
 * memory), i.e. after validation. Where a test needs something to happen at a precise moment *between* two commits
 * (another writer changing a file we already committed; the directory turning immutable after a file's temporary
 * file was written), the documented seam `setWriteFaultInjector` of src/fs/atomic-write.ts is used as a timing hook
 * only — the other writer's write and the EPERM are real. If chattr is unavailable (no ext4/xfs, no CAP_LINUX_IMMUTABLE),
 * the seam throws an injected EIO instead, and the ROLLBACK_FAILED case is skipped.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toEnvelope } from '../../src/errors/to-envelope.js';
import { RollbackError } from '../../src/errors/tool-error.js';
import { identityOf, setWriteFaultInjector } from '../../src/fs/atomic-write.js';
import { hashBytes } from '../../src/fs/hash.js';
import { listJournals, STALE_TEMPORARY_MS, writeJournal, type JournalFile } from '../../src/fs/journal.js';
import { commitTransaction, recoverJournals, type PlannedChange } from '../../src/patch/transaction.js';
import type { AllowedPath } from '../../src/policy/resolve-path.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree, type TreeSpec } from '../helpers/tree.js';

/** True when `chattr +i` really makes a directory refuse new entries here. */
function chattrWorks(): boolean {
  const probe = makeTree({}, 'fs-tools-chattr-');
  try {
    execFileSync('chattr', ['+i', probe.dir], { stdio: 'ignore' });
    try {
      writeFileSync(path.join(probe.dir, 'x'), 'x');
      return false;
    } catch {
      return true;
    } finally {
      execFileSync('chattr', ['-i', probe.dir], { stdio: 'ignore' });
    }
  } catch {
    return false;
  } finally {
    probe.cleanup();
  }
}
const CHATTR = chattrWorks();

const immutableDirs = new Set<string>();
function setImmutable(dir: string, on: boolean): void {
  execFileSync('chattr', [on ? '+i' : '-i', dir]);
  if (on) immutableDirs.add(dir);
  else immutableDirs.delete(dir);
}

/** Makes `dir` refuse writes: chattr +i when it works, else arms the seam to fail writes into `dir` with EIO. */
function breakDirectory(dir: string): void {
  if (CHATTR) {
    setImmutable(dir, true);
    return;
  }
  setWriteFaultInjector((step, target) => {
    if (step === 'write' && path.dirname(target) === dir) {
      throw Object.assign(new Error(`EIO: injected fault, write ${target}`), {
        code: 'EIO',
        path: target,
        syscall: 'write',
      });
    }
  });
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  setWriteFaultInjector(null);
  for (const d of [...immutableDirs]) setImmutable(d, false);
  for (const c of cleanups.splice(0)) c();
});

function setup(spec: TreeSpec) {
  const root = makeTree(spec);
  const state = makeTree({}, 'fs-tools-state-');
  cleanups.push(root.cleanup, state.cleanup);
  const isInside = (p: string) => p === root.dir || p.startsWith(`${root.dir}${path.sep}`);
  return { root: root.dir, state: state.dir, isInside, at: (rel: string) => path.join(root.dir, rel) };
}

/** Plans a change the way apply_patch does after validation: old bytes, hash, identity and mode; new bytes or null. */
function plan(file: string, next: string | null): PlannedChange {
  const st = existsSync(file) ? lstatSync(file) : null;
  const oldBytes = st ? readFileSync(file) : null;
  const newBytes = next === null ? null : Buffer.from(next);
  return {
    real: file as AllowedPath,
    oldBytes,
    oldHash: oldBytes ? hashBytes(oldBytes) : null,
    oldIdentity: st ? identityOf(st) : null,
    oldMode: st ? st.mode & 0o7777 : null,
    newBytes,
    newHash: newBytes ? hashBytes(newBytes) : null,
  };
}

async function rollbackOf(promise: Promise<unknown>): Promise<RollbackError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, 'expected a RollbackError').toBeInstanceOf(RollbackError);
  return caught as RollbackError;
}

const journalNames = (state: string) =>
  existsSync(path.join(state, 'journal')) ? readdirSync(path.join(state, 'journal')) : [];
const tempFiles = (root: string) => Object.keys(snapshotTree(root)).filter((p) => /\.fs-tools-[0-9a-f]+\.tmp$/.test(p));

describe(`commitTransaction (faults: ${CHATTR ? 'real, chattr +i' : 'injected EIO: chattr unavailable'})`, () => {
  it('commits every file and removes its journal entry', async () => {
    const t = setup({ d1: { 'a.py': 'a = 1\n' }, d2: { 'b.py': 'b = 1\n' } });
    await commitTransaction(
      [plan(t.at('d1/a.py'), 'a = 2\n'), plan(t.at('d2/b.py'), 'b = 2\n'), plan(t.at('d2/new.py'), 'n = 1\n')],
      { stateDir: t.state, isInside: t.isInside },
    );
    expect(readFileSync(t.at('d1/a.py'), 'utf8')).toBe('a = 2\n');
    expect(readFileSync(t.at('d2/b.py'), 'utf8')).toBe('b = 2\n');
    expect(readFileSync(t.at('d2/new.py'), 'utf8')).toBe('n = 1\n');
    expect(journalNames(t.state)).toEqual([]);
    expect(tempFiles(t.root)).toEqual([]);
  });

  it('a journal that cannot be written refuses the change: IO_ERROR without the state path, nothing written', async () => {
    const t = setup({ 'a.txt': 'old a\n' });
    // `journal` a regular file: mkdir fails (EEXIST) even for root, before any file is touched.
    writeFileSync(path.join(t.state, 'journal'), 'not a directory');
    const before = snapshotTree(t.root);
    const error = await commitTransaction([plan(t.at('a.txt'), 'new a\n'), plan(t.at('b.txt'), 'b\n')], {
      stateDir: t.state,
      isInside: t.isInside,
    }).then(
      () => null,
      (e: unknown) => e,
    );
    const envelope = toEnvelope(error);
    expect(envelope.error.code).toBe('IO_ERROR');
    expect(envelope.error.details).toMatchObject({ reason: 'journal_write_failed', errno: 'EEXIST' });
    expect(JSON.stringify(envelope)).not.toContain(t.state);
    expect(snapshotTree(t.root)).toEqual(before);
  });

  it('writes the journal entry durably before the first file', async () => {
    const t = setup({ 'a.txt': 'old a\n', 'b.txt': 'old b\n' });
    chmodSync(t.at('a.txt'), 0o640);
    const changes = [plan(t.at('a.txt'), 'new a\n'), plan(t.at('b.txt'), 'new b\n'), plan(t.at('c.txt'), 'new c\n')];
    let seen: JournalFile[] | null = null;
    let pid = 0;
    setWriteFaultInjector((step, target) => {
      if (step !== 'write' || seen) return;
      // The first write of the transaction: the entry must already be on disk, and no file changed yet.
      const names = journalNames(t.state);
      expect(names).toHaveLength(1);
      expect(names[0]).toMatch(/^[0-9a-f-]{36}\.json$/);
      const entry = JSON.parse(readFileSync(path.join(t.state, 'journal', names[0]), 'utf8'));
      seen = entry.files;
      pid = entry.pid;
      expect(target).toBe(t.at('a.txt'));
      expect(readFileSync(t.at('a.txt'), 'utf8')).toBe('old a\n');
    });
    await commitTransaction(changes, { stateDir: t.state, isInside: t.isInside });
    expect(pid).toBe(process.pid);
    expect(seen).toEqual([
      {
        path: t.at('a.txt'),
        old_base64: Buffer.from('old a\n').toString('base64'),
        old_hash: hashBytes(Buffer.from('old a\n')),
        new_hash: hashBytes(Buffer.from('new a\n')),
        mode: 0o640,
      },
      {
        path: t.at('b.txt'),
        old_base64: Buffer.from('old b\n').toString('base64'),
        old_hash: hashBytes(Buffer.from('old b\n')),
        new_hash: hashBytes(Buffer.from('new b\n')),
        mode: 0o644,
      },
      {
        path: t.at('c.txt'),
        old_base64: null,
        old_hash: null,
        new_hash: hashBytes(Buffer.from('new c\n')),
        mode: null,
      },
    ]);
    expect(journalNames(t.state)).toEqual([]);
  });

  it('the second of three commits fails → ROLLBACK_COMPLETE and every file holds its original bytes and mode', async () => {
    const t = setup({ d1: { 'a.py': 'a = 1\n' }, d2: { 'b.py': 'b = 1\n' }, d3: { 'c.py': 'c = 1\n' } });
    chmodSync(t.at('d1/a.py'), 0o755);
    const before = snapshotTree(t.root);
    // Planned (validated) first; then d2 stops accepting writes.
    const changes = [
      plan(t.at('d1/a.py'), 'a = 2\n'),
      plan(t.at('d1/new.py'), 'n = 1\n'),
      plan(t.at('d2/b.py'), 'b = 2\n'),
      plan(t.at('d3/c.py'), 'c = 2\n'),
    ];
    breakDirectory(t.at('d2'));
    const e = await rollbackOf(commitTransaction(changes, { stateDir: t.state, isInside: t.isInside }));
    expect(e.code).toBe('ROLLBACK_COMPLETE');
    expect(e.message).toContain('file 3 of 4');
    expect(e.details.files).toEqual([
      { path: t.at('d1/a.py'), status: 'restored' },
      { path: t.at('d1/new.py'), status: 'restored' },
      { path: t.at('d2/b.py'), status: 'restored' },
      { path: t.at('d3/c.py'), status: 'restored' },
    ]);
    const cause = e.details.cause as { code: string; details: Record<string, unknown> };
    if (CHATTR) expect(cause).toMatchObject({ code: 'FILE_POLICY_DENIED', details: { source: 'os', errno: 'EPERM' } });
    else expect(cause).toMatchObject({ code: 'IO_ERROR', details: { errno: 'EIO' } });
    for (const d of [...immutableDirs]) setImmutable(d, false);
    expect(snapshotTree(t.root)).toEqual(before);
    expect(journalNames(t.state)).toEqual([]);
  });

  it('creates the missing directories of a new file, and removes them again on a rollback', async () => {
    const t = setup({ d1: {}, d2: { 'x.txt': 'x\n' } });
    await commitTransaction([plan(t.at('d1/new/deep/a.txt'), 'a\n')], { stateDir: t.state, isInside: t.isInside });
    expect(readFileSync(t.at('d1/new/deep/a.txt'), 'utf8')).toBe('a\n');
    const before = snapshotTree(t.root);
    const changes = [plan(t.at('d1/other/b.txt'), 'b\n'), plan(t.at('d2/x.txt'), 'y\n')];
    breakDirectory(t.at('d2'));
    const e = await rollbackOf(commitTransaction(changes, { stateDir: t.state, isInside: t.isInside }));
    expect(e.code).toBe('ROLLBACK_COMPLETE');
    for (const d of [...immutableDirs]) setImmutable(d, false);
    expect(snapshotTree(t.root)).toEqual(before);
  });

  it('a deleted file comes back with its bytes and mode when a later commit fails', async () => {
    const t = setup({ d1: { 'gone.txt': 'keep me\n' }, d2: { 'x.txt': 'x\n' } });
    chmodSync(t.at('d1/gone.txt'), 0o600);
    const before = snapshotTree(t.root);
    const changes = [plan(t.at('d1/gone.txt'), null), plan(t.at('d2/x.txt'), 'y\n')];
    breakDirectory(t.at('d2'));
    const e = await rollbackOf(commitTransaction(changes, { stateDir: t.state, isInside: t.isInside }));
    expect(e.code).toBe('ROLLBACK_COMPLETE');
    expect(e.details.files).toEqual([
      { path: t.at('d1/gone.txt'), status: 'restored' },
      { path: t.at('d2/x.txt'), status: 'restored' },
    ]);
    for (const d of [...immutableDirs]) setImmutable(d, false);
    expect(snapshotTree(t.root)).toEqual(before);
  });

  it('a file another writer changed after our commit is left_alone → ROLLBACK_PARTIAL', async () => {
    const t = setup({ d1: { 'a.txt': 'a1\n', 'b.txt': 'b1\n' }, d2: { 'c.txt': 'c1\n' } });
    const changes = [plan(t.at('d1/a.txt'), 'a2\n'), plan(t.at('d1/b.txt'), 'b2\n'), plan(t.at('d2/c.txt'), 'c2\n')];
    // Timing hook: when b's write starts, a is committed; another writer replaces a right then.
    const injector = (step: 'write' | 'rename', target: string) => {
      if (step === 'write' && target === t.at('d1/b.txt')) writeFileSync(t.at('d1/a.txt'), 'someone else\n');
    };
    breakDirectory(t.at('d2'));
    if (CHATTR) setWriteFaultInjector(injector);
    else {
      setWriteFaultInjector((step, target) => {
        injector(step, target);
        if (step === 'write' && target === t.at('d2/c.txt'))
          throw Object.assign(new Error('EIO: injected'), { code: 'EIO', path: target });
      });
    }
    const e = await rollbackOf(commitTransaction(changes, { stateDir: t.state, isInside: t.isInside }));
    expect(e.code).toBe('ROLLBACK_PARTIAL');
    expect(e.details.files).toEqual([
      { path: t.at('d1/a.txt'), status: 'left_alone', reason: 'changed_by_another_writer' },
      { path: t.at('d1/b.txt'), status: 'restored' },
      { path: t.at('d2/c.txt'), status: 'restored' },
    ]);
    expect(readFileSync(t.at('d1/a.txt'), 'utf8')).toBe('someone else\n');
    expect(readFileSync(t.at('d1/b.txt'), 'utf8')).toBe('b1\n');
    expect(readFileSync(t.at('d2/c.txt'), 'utf8')).toBe('c1\n');
    expect(journalNames(t.state)).toEqual([]);
  });

  it.skipIf(!CHATTR)('the only written file cannot be restored → ROLLBACK_FAILED with not_restored', async () => {
    const t = setup({ d1: { 'a.txt': 'a1\n', 'b.txt': 'b1\n' } });
    const changes = [plan(t.at('d1/a.txt'), 'a2\n'), plan(t.at('d1/b.txt'), 'b2\n')];
    // Timing hook: once b's temporary file is written, d1 turns immutable: b's rename fails (EPERM), and so does
    // restoring a, which we already replaced.
    setWriteFaultInjector((step, target) => {
      if (step === 'write' && target === t.at('d1/b.txt')) setImmutable(t.at('d1'), true);
    });
    const e = await rollbackOf(commitTransaction(changes, { stateDir: t.state, isInside: t.isInside }));
    expect(e.code).toBe('ROLLBACK_FAILED');
    expect(e.details.files).toEqual([
      { path: t.at('d1/a.txt'), status: 'not_restored', reason: 'FILE_POLICY_DENIED' },
      { path: t.at('d1/b.txt'), status: 'restored' },
    ]);
    expect(e.details.cause).toMatchObject({ code: 'FILE_POLICY_DENIED', details: { source: 'os', errno: 'EPERM' } });
    setImmutable(t.at('d1'), false);
    // Reported truthfully: a holds our new bytes, b its old ones.
    expect(readFileSync(t.at('d1/a.txt'), 'utf8')).toBe('a2\n');
    expect(readFileSync(t.at('d1/b.txt'), 'utf8')).toBe('b1\n');
  });
});

describe('recoverJournals', () => {
  const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid;

  it('rolls back an entry of a dead process, leaves alone files changed since, and removes the entry', async () => {
    const t = setup({
      'a.txt': 'a2\n',
      'b.txt': 'someone else\n',
      'created.txt': 'c2\n',
      'edited-new.txt': 'not ours\n',
    });
    const h = (s: string) => hashBytes(Buffer.from(s));
    const { file } = await writeJournal(t.state, [
      {
        path: t.at('a.txt'),
        old_base64: Buffer.from('a1\n').toString('base64'),
        old_hash: h('a1\n'),
        new_hash: h('a2\n'),
        mode: 0o600,
      },
      {
        path: t.at('b.txt'),
        old_base64: Buffer.from('b1\n').toString('base64'),
        old_hash: h('b1\n'),
        new_hash: h('b2\n'),
        mode: 0o644,
      },
      { path: t.at('created.txt'), old_base64: null, old_hash: null, new_hash: h('c2\n'), mode: null },
      { path: t.at('edited-new.txt'), old_base64: null, old_hash: null, new_hash: h('e2\n'), mode: null },
      {
        path: t.at('deleted.txt'),
        old_base64: Buffer.from('d1\n').toString('base64'),
        old_hash: h('d1\n'),
        new_hash: null,
        mode: 0o640,
      },
    ]);
    const entry = JSON.parse(readFileSync(file, 'utf8'));
    entry.pid = deadPid();
    writeFileSync(file, JSON.stringify(entry));
    // A never-committed entry: removed once stale; a young one may be another live server's, between its write and
    // its rename (servers can share a state directory), and stays.
    const staleTmp = path.join(t.state, 'journal', 'half-written.json.tmp');
    const youngTmp = path.join(t.state, 'journal', 'being-written.json.tmp');
    writeFileSync(staleTmp, '{"id":');
    const old = new Date(Date.now() - STALE_TEMPORARY_MS - 60_000);
    utimesSync(staleTmp, old, old);
    writeFileSync(youngTmp, '{"id":');
    // What a process killed between a temporary write and its rename leaves beside the file; and look-alikes.
    writeFileSync(t.at('.a.txt.fs-tools-0123456789ab.tmp'), 'a2\n');
    writeFileSync(t.at('.a.txt.fs-tools-notes.tmp'), 'mine\n');
    writeFileSync(t.at('.other.txt.fs-tools-0123456789ab.tmp'), 'not journaled\n');
    const logs: string[] = [];
    const recovered = await recoverJournals(t.state, t.isInside, (l) => logs.push(l));
    expect(recovered).toEqual([
      {
        id: entry.id,
        created_at: entry.created_at,
        pid: entry.pid,
        outcome: 'ROLLBACK_PARTIAL',
        files: [
          { path: t.at('a.txt'), status: 'restored' },
          { path: t.at('b.txt'), status: 'left_alone', reason: 'changed_by_another_writer' },
          { path: t.at('created.txt'), status: 'restored' },
          { path: t.at('edited-new.txt'), status: 'left_alone', reason: 'changed_by_another_writer' },
          { path: t.at('deleted.txt'), status: 'restored' },
        ],
      },
    ]);
    expect([existsSync(staleTmp), existsSync(youngTmp)]).toEqual([false, true]);
    expect(readFileSync(t.at('a.txt'), 'utf8')).toBe('a1\n');
    expect(lstatSync(t.at('a.txt')).mode & 0o777).toBe(0o600);
    expect(readFileSync(t.at('b.txt'), 'utf8')).toBe('someone else\n');
    expect(existsSync(t.at('created.txt'))).toBe(false);
    expect(readFileSync(t.at('edited-new.txt'), 'utf8')).toBe('not ours\n');
    expect(readFileSync(t.at('deleted.txt'), 'utf8')).toBe('d1\n');
    expect(lstatSync(t.at('deleted.txt')).mode & 0o777).toBe(0o640);
    expect(existsSync(t.at('.a.txt.fs-tools-0123456789ab.tmp'))).toBe(false);
    expect(existsSync(t.at('.a.txt.fs-tools-notes.tmp'))).toBe(true);
    expect(existsSync(t.at('.other.txt.fs-tools-0123456789ab.tmp'))).toBe(true);
    expect(journalNames(t.state)).toEqual(['being-written.json.tmp']); // the young temporary stays
    expect(logs).toHaveLength(1);
    expect(logs[0]).toContain(entry.id);
    expect(logs[0]).toContain('ROLLBACK_PARTIAL');
    expect(await recoverJournals(t.state, t.isInside, () => undefined)).toEqual([]);
  });

  it('skips an entry whose process is alive, and never applies (nor removes) an entry naming a file outside the roots', async () => {
    const t = setup({ 'a.txt': 'a2\n' });
    const outside = makeTree({ 'o.txt': 'o2\n' }, 'fs-tools-outside-');
    cleanups.push(outside.cleanup);
    const h = (s: string) => hashBytes(Buffer.from(s));
    const live = await writeJournal(t.state, [
      {
        path: t.at('a.txt'),
        old_base64: Buffer.from('a1\n').toString('base64'),
        old_hash: h('a1\n'),
        new_hash: h('a2\n'),
        mode: 0o644,
      },
    ]);
    const liveEntry = JSON.parse(readFileSync(live.file, 'utf8'));
    liveEntry.pid = process.ppid; // our parent: alive
    writeFileSync(live.file, JSON.stringify(liveEntry));
    const dead = await writeJournal(t.state, [
      {
        path: path.join(outside.dir, 'o.txt'),
        old_base64: Buffer.from('o1\n').toString('base64'),
        old_hash: h('o1\n'),
        new_hash: h('o2\n'),
        mode: 0o644,
      },
    ]);
    const deadEntry = JSON.parse(readFileSync(dead.file, 'utf8'));
    deadEntry.pid = deadPid();
    writeFileSync(dead.file, JSON.stringify(deadEntry));
    const recovered = await recoverJournals(t.state, t.isInside, () => undefined);
    // Issue 11: an entry naming a path outside the roots is refused as a whole, never applied, and stays on disk.
    expect(recovered).toEqual([
      expect.objectContaining({
        id: deadEntry.id,
        outcome: 'NOT_APPLIED',
        reason: 'refused',
        files: [{ path: path.join(outside.dir, 'o.txt'), status: 'not_restored', reason: 'NOT_ALLOWED' }],
      }),
    ]);
    expect(readFileSync(path.join(outside.dir, 'o.txt'), 'utf8')).toBe('o2\n');
    expect(readFileSync(t.at('a.txt'), 'utf8')).toBe('a2\n');
    expect((await listJournals(t.state)).map((j) => j.entry.id).sort()).toEqual([liveEntry.id, deadEntry.id].sort());
  });
});
