/**
 * Undo of tree operations (issue 18: "a multi-file patch or tree operation is one change"), end to end through real
 * server processes of both protocol eras. Pins, for a recursive delete_path, a recursive copy_path and a move_path of a
 * directory: one change listing every entry; a dry run shows what a revert would do and writes nothing; the revert
 * puts the tree back exactly (bytes, modes, links, empty directories) or removes exactly the copy; a revert after an
 * external change (a file edited, an entry added, the old place taken) is OCC_MISMATCH with nothing changed on disk;
 * a tree too large for --history-max-bytes is not recorded and the listing says so; a tree holding a secret is not
 * moved at all (its bytes never reach the history).
 *
 * Which server each case runs on: what a revert records and restores on the filesystem is the server's alone, so each
 * tree case runs once, under one era — the recursive delete and the directory move on one modern-era server, the
 * recursive copy and the secret tree on one legacy-era server (both eras' results of list_changes and revert_changes
 * are checked case by case in test/e2e/undo.test.ts). Cases sharing a server (same flags, one state directory) each
 * work in their own copy of the fixture under its root; the --history-max-bytes case has its own server and state.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, type Era, type TestClient } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree, writeTree } from '../helpers/tree.js';

/** Writes into `dir` `t/`: files (one binary, one with mode 0640), a nested directory (0750), a link and an empty dir. */
function fixture(dir: string): void {
  writeTree(dir, {
    t: {
      'a.txt': 'alpha\n',
      sub: { 'b.bin': Buffer.from([0, 1, 2, 255, 254]), deeper: { 'c.txt': 'see\n' } },
      empty: {},
    },
    'other.txt': 'stays\n',
  });
  chmodSync(path.join(dir, 't', 'a.txt'), 0o640);
  chmodSync(path.join(dir, 't', 'sub'), 0o750);
  symlinkSync('../a.txt', path.join(dir, 't', 'sub', 'link'));
}

type Body = (client: TestClient, dir: string, state: string) => Promise<void>;

/**
 * One server of `era` (`--auto-occ=off` and `flags`, one state directory) for the cases of the enclosing describe:
 * started before them, closed after. The returned function runs a case on it in a fresh copy of the fixture, a
 * directory of its own under the server's root (the case names paths absolutely).
 */
function serverFor(era: Era, flags: string[] = []): (body: Body) => Promise<void> {
  const root = makeTree();
  const state = makeTree();
  let client: TestClient;
  let cases = 0;
  beforeAll(async () => {
    client = await connect(era, {
      args: ['--state-dir', state.dir, '--auto-occ=off', ...flags, root.dir],
    });
  });
  afterAll(async () => {
    await client.close();
    root.cleanup();
    state.cleanup();
  });
  return async (body) => {
    const dir = path.join(root.dir, `case${++cases}`);
    fixture(dir);
    await body(client, dir, state.dir);
  };
}

interface Listed {
  id: string;
  tool: string;
  files: Array<{ path: string; previous_hash: string | null; content_hash: string | null; type?: string }>;
}
const newest = async (client: TestClient): Promise<Listed> =>
  (await client.callOk('list_changes', { limit: 1 })).changes[0] as Listed;

describe('undo of tree operations (modern era, one server)', () => {
  const onServer = serverFor('modern');

  it('a recursive delete is one change; the revert recreates the tree; refused when something took its place', async () => {
    await onServer(async (client, R) => {
      const T = path.join(R, 't');
      const before = snapshotTree(T);
      await client.callOk('delete_path', { path: T, recursive: true });
      expect(existsSync(T)).toBe(false);
      const change = await newest(client);
      expect(change.tool).toBe('delete_path');
      expect(change.files.map((f) => path.relative(R, f.path)).sort()).toEqual(
        ['t', 't/a.txt', 't/empty', 't/sub', 't/sub/b.bin', 't/sub/deeper', 't/sub/deeper/c.txt', 't/sub/link'].sort(),
      );
      expect(change.files.every((f) => f.content_hash === null && f.type === undefined)).toBe(true);

      const dry = await client.callOk('revert_changes', { change_id: change.id, dry_run: true });
      expect(dry.files).toHaveLength(8);
      expect(dry.files.every((f: { action: string }) => f.action === 'recreated')).toBe(true);
      expect(dry.diff).toContain('+alpha');
      expect(existsSync(T)).toBe(false); // the dry run wrote nothing

      await client.callOk('revert_changes', { change_id: change.id });
      expect(snapshotTree(T)).toEqual(before); // bytes, modes, the link's target, the empty directory

      // Deleted again, then something new at its place: the revert is refused and touches nothing.
      await client.callOk('delete_path', { path: T, recursive: true });
      mkdirSync(T);
      writeFileSync(path.join(T, 'new.txt'), 'mine\n');
      const taken = snapshotTree(R);
      const e = expectCode(await client.call('revert_changes', { last: 1 }), 'OCC_MISMATCH');
      expect(e.error.path).toBe(T);
      expect(snapshotTree(R)).toEqual(taken);
    });
  });

  it('a directory move is one change; the revert moves it back; refused after an edit or when the old place is taken', async () => {
    await onServer(async (client, R) => {
      const T = path.join(R, 't');
      const U = path.join(R, 'moved');
      const before = snapshotTree(T);
      await client.callOk('move_path', { source: T, destination: U });
      const change = await newest(client);
      expect(change.tool).toBe('move_path');
      expect(change.files).toHaveLength(16); // each of the 8 entries at its old and its new place

      // A moved file edited: refused, nothing changed.
      writeFileSync(path.join(U, 'a.txt'), 'changed\n');
      let now = snapshotTree(R);
      let e = expectCode(await client.call('revert_changes', { change_id: change.id }), 'OCC_MISMATCH');
      expect(e.error.path).toBe(path.join(U, 'a.txt'));
      expect(snapshotTree(R)).toEqual(now);
      writeFileSync(path.join(U, 'a.txt'), 'alpha\n');

      // The old place taken by a new directory: refused, nothing changed.
      mkdirSync(T);
      now = snapshotTree(R);
      e = expectCode(await client.call('revert_changes', { change_id: change.id }), 'OCC_MISMATCH');
      expect(e.error.path).toBe(T);
      expect(snapshotTree(R)).toEqual(now);
      await client.callOk('delete_path', { path: T });

      await client.callOk('revert_changes', { change_id: change.id });
      expect(existsSync(U)).toBe(false);
      expect(snapshotTree(T)).toEqual(before);
      // The revert is itself a change: undoing it moves the tree to its new place again.
      await client.callOk('revert_changes', { last: 1 });
      expect(existsSync(T)).toBe(false);
      expect(snapshotTree(U)).toEqual(before);
    });
  });
});

describe('undo of tree operations (legacy era, one server)', () => {
  const onServer = serverFor('legacy');

  it('a recursive copy is one change; the revert removes exactly the copy; refused after an edit or an addition', async () => {
    await onServer(async (client, R) => {
      const T = path.join(R, 't');
      const U = path.join(R, 'u');
      const source = snapshotTree(T);
      await client.callOk('copy_path', { source: T, destination: U, recursive: true });
      const change = await newest(client);
      expect(change.tool).toBe('copy_path');
      expect(change.files).toHaveLength(8);
      expect(change.files[0]).toMatchObject({ path: U, previous_hash: null, type: 'directory' });
      const copied = change.files.find((f) => f.path === path.join(U, 'a.txt'))!;
      expect(copied.content_hash).toMatch(/^sha256:/);

      // A file of the copy edited: OCC_MISMATCH naming it; the copy and the source stay as they are.
      writeFileSync(path.join(U, 'sub', 'deeper', 'c.txt'), 'edited\n');
      let now = snapshotTree(R);
      let e = expectCode(await client.call('revert_changes', { change_id: change.id }), 'OCC_MISMATCH');
      expect(e.error.path).toBe(path.join(U, 'sub', 'deeper', 'c.txt'));
      expect(snapshotTree(R)).toEqual(now);
      writeFileSync(path.join(U, 'sub', 'deeper', 'c.txt'), 'see\n');

      // An entry added inside the copy: refused (the directory holds what the copy did not create), nothing removed.
      writeFileSync(path.join(U, 'sub', 'added.txt'), 'added\n');
      now = snapshotTree(R);
      e = expectCode(await client.call('revert_changes', { change_id: change.id }), 'OCC_MISMATCH');
      expect(e.error.path).toBe(path.join(U, 'sub'));
      expect(snapshotTree(R)).toEqual(now);

      // Without the addition the revert removes exactly the copy; the source is untouched.
      await client.callOk('delete_path', { path: path.join(R, 'u', 'sub', 'added.txt') });
      const dry = await client.callOk('revert_changes', { change_id: change.id, dry_run: true });
      expect(dry.files.map((f: { action: string }) => f.action)).toEqual(Array(8).fill('deleted'));
      expect(existsSync(U)).toBe(true); // the dry run removed nothing
      await client.callOk('revert_changes', { change_id: change.id });
      expect(existsSync(U)).toBe(false);
      expect(snapshotTree(T)).toEqual(source);
    });
  });

  it('a tree holding a secret is not moved (SECRET_DENIED), so its bytes never reach the history', async () => {
    await onServer(async (client, R, S) => {
      writeFileSync(path.join(R, 't', 'sub', '.env'), 'TOKEN=s3cr3t-value\n');
      const before = snapshotTree(R);
      const history = (await client.callOk('list_changes', {})).changes;
      const e = expectCode(
        await client.call('move_path', { source: path.join(R, 't'), destination: path.join(R, 'moved') }),
        'SECRET_DENIED',
      );
      expect(e.error.details.reason).toBe('secret_inside');
      expect(snapshotTree(R)).toEqual(before);
      // Nothing recorded: the server's history (the other cases' changes) is as it was before the call.
      expect((await client.callOk('list_changes', {})).changes).toEqual(history);
      const dir = path.join(S, 'history');
      const records = existsSync(dir) ? readdirSync(dir) : [];
      const secret = Buffer.from('TOKEN=s3cr3t-value\n').toString('base64');
      for (const name of records) expect(readFileSync(path.join(dir, name), 'utf8')).not.toContain(secret);
    });
  });
});

describe('undo of tree operations: bounds', () => {
  const onServer = serverFor('modern', ['--history-max-bytes=1500']);

  it('a tree too large for --history-max-bytes is not recorded, and the listing says so', async () => {
    await onServer(async (client, R) => {
      writeFileSync(path.join(R, 't', 'big.txt'), 'x'.repeat(4000));
      await client.callOk('delete_path', { path: path.join(R, 't'), recursive: true });
      const listed = await client.callOk('list_changes', {});
      expect(listed.changes).toHaveLength(0);
      expect(listed.note).toMatch(/1 change\(s\) were not recorded/);
      expectCode(await client.call('revert_changes', { last: 1 }), 'NOT_FOUND');
      expect(existsSync(path.join(R, 't'))).toBe(false);
      expect(readFileSync(path.join(R, 'other.txt'), 'utf8')).toBe('stays\n');
    });
  });
});
