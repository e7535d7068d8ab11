/**
 * Undo of tree operations (issue 18: "a multi-file patch or tree operation is one change"), end to end through real
 * server processes of both protocol eras. Pins, for a recursive delete_path, a recursive copy_path and a move_path of a
 * directory: one change listing every entry; a dry run shows what a revert would do and writes nothing; the revert
 * puts the tree back exactly (bytes, modes, links, empty directories) or removes exactly the copy; a revert after an
 * external change (a file edited, an entry added, the old place taken) is OCC_MISMATCH with nothing changed on disk;
 * a tree too large for --history-max-bytes is not recorded and the listing says so; a tree holding a secret is not
 * moved at all (its bytes never reach the history).
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, ERAS, type Era, type TestClient } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

/** A root holding `t/`: files (one binary, one with mode 0640), a nested directory (0750), a link and an empty dir. */
function fixture(): { dir: string; cleanup: () => void } {
  const r = makeTree({
    t: {
      'a.txt': 'alpha\n',
      sub: { 'b.bin': Buffer.from([0, 1, 2, 255, 254]), deeper: { 'c.txt': 'see\n' } },
      empty: {},
    },
    'other.txt': 'stays\n',
  });
  chmodSync(path.join(r.dir, 't', 'a.txt'), 0o640);
  chmodSync(path.join(r.dir, 't', 'sub'), 0o750);
  symlinkSync('../a.txt', path.join(r.dir, 't', 'sub', 'link'));
  return r;
}

async function withServer(
  era: Era,
  flags: string[],
  body: (client: TestClient, root: string, state: string) => Promise<void>,
): Promise<void> {
  const r = fixture();
  const s = makeTree();
  const client = await connect(era, { args: ['--state-dir', s.dir, '--auto-occ=off', ...flags, r.dir] });
  try {
    await body(client, r.dir, s.dir);
  } finally {
    await client.close();
    r.cleanup();
    s.cleanup();
  }
}

interface Listed {
  id: string;
  tool: string;
  files: Array<{ path: string; previous_hash: string | null; content_hash: string | null; type?: string }>;
}
const newest = async (client: TestClient): Promise<Listed> =>
  (await client.callOk('list_changes', { limit: 1 })).changes[0] as Listed;

describe.each(ERAS)('undo of tree operations (%s era)', (era) => {
  it('a recursive delete is one change; the revert recreates the tree; refused when something took its place', async () => {
    await withServer(era, [], async (client, R) => {
      const T = path.join(R, 't');
      const before = snapshotTree(T);
      await client.callOk('delete_path', { path: 't', recursive: true });
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
      await client.callOk('delete_path', { path: 't', recursive: true });
      mkdirSync(T);
      writeFileSync(path.join(T, 'new.txt'), 'mine\n');
      const taken = snapshotTree(R);
      const e = expectCode(await client.call('revert_changes', { last: 1 }), 'OCC_MISMATCH');
      expect(e.error.path).toBe(T);
      expect(snapshotTree(R)).toEqual(taken);
    });
  });

  it('a recursive copy is one change; the revert removes exactly the copy; refused after an edit or an addition', async () => {
    await withServer(era, [], async (client, R) => {
      const T = path.join(R, 't');
      const U = path.join(R, 'u');
      const source = snapshotTree(T);
      await client.callOk('copy_path', { source: 't', destination: 'u', recursive: true });
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
      await client.callOk('delete_path', { path: 'u/sub/added.txt' });
      const dry = await client.callOk('revert_changes', { change_id: change.id, dry_run: true });
      expect(dry.files.map((f: { action: string }) => f.action)).toEqual(Array(8).fill('deleted'));
      expect(existsSync(U)).toBe(true); // the dry run removed nothing
      await client.callOk('revert_changes', { change_id: change.id });
      expect(existsSync(U)).toBe(false);
      expect(snapshotTree(T)).toEqual(source);
    });
  });

  it('a directory move is one change; the revert moves it back; refused after an edit or when the old place is taken', async () => {
    await withServer(era, [], async (client, R) => {
      const T = path.join(R, 't');
      const U = path.join(R, 'moved');
      const before = snapshotTree(T);
      await client.callOk('move_path', { source: 't', destination: 'moved' });
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
      await client.callOk('delete_path', { path: 't' });

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

describe('undo of tree operations: bounds', () => {
  it('a tree too large for --history-max-bytes is not recorded, and the listing says so', async () => {
    await withServer('modern', ['--history-max-bytes=1500'], async (client, R) => {
      writeFileSync(path.join(R, 't', 'big.txt'), 'x'.repeat(4000));
      await client.callOk('delete_path', { path: 't', recursive: true });
      const listed = await client.callOk('list_changes', {});
      expect(listed.changes).toHaveLength(0);
      expect(listed.note).toMatch(/1 change\(s\) were not recorded/);
      expectCode(await client.call('revert_changes', { last: 1 }), 'NOT_FOUND');
      expect(existsSync(path.join(R, 't'))).toBe(false);
      expect(readFileSync(path.join(R, 'other.txt'), 'utf8')).toBe('stays\n');
    });
  });

  it('a tree holding a secret is not moved (SECRET_DENIED), so its bytes never reach the history', async () => {
    await withServer('legacy', [], async (client, R, S) => {
      writeFileSync(path.join(R, 't', 'sub', '.env'), 'TOKEN=s3cr3t-value\n');
      const before = snapshotTree(R);
      const e = expectCode(await client.call('move_path', { source: 't', destination: 'moved' }), 'SECRET_DENIED');
      expect(e.error.details.reason).toBe('secret_inside');
      expect(snapshotTree(R)).toEqual(before);
      expect((await client.callOk('list_changes', {})).changes).toHaveLength(0);
      const history = path.join(S, 'history');
      const records = existsSync(history) ? readdirSync(history) : [];
      const secret = Buffer.from('TOKEN=s3cr3t-value\n').toString('base64');
      for (const name of records) expect(readFileSync(path.join(history, name), 'utf8')).not.toContain(secret);
    });
  });
});
