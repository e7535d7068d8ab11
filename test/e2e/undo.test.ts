/**
 * Undo (issue 18): list_changes / revert_changes end to end through real server processes of both protocol eras.
 * Pins: changes listed newest first after edits (paths, hashes); revert one change and the last N; a revert after an
 * external change is OCC_MISMATCH naming the file (the external bytes stay) and succeeds with the current hash
 * passed; the history survives a restart on the same --state-dir; a multi-file patch reverts as a whole (a created
 * file is deleted, a deleted one recreated with its mode); a revert is itself a change and can be undone; dry_run
 * shows the diff and writes nothing; --readonly does not list revert_changes and refuses it; one budget unit per
 * revert call; a revert onto a path the policy now protects (a file policy read_only rule) or a secret is refused with
 * nothing written; the bounds drop the oldest changes with a note; an invalid record on disk is ignored, never applied.
 *
 * Eras: the calls of the first describe run under both (each era's client parses list_changes, revert_changes,
 * tools/list and the envelopes); its two cases that start a server of their own for what is the server's alone — the
 * history surviving a restart, the budget count — run once, under the modern era. The other describes each run once,
 * under the era they name.
 */
import {
  chmodSync,
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { CLI, connect, SEAMS_CLI, ERAS, inEra, type Era, type TestClient } from '../helpers/server.js';
import { contentHash } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

function start(era: Era, root: string, state: string, flags: string[] = []): Promise<TestClient> {
  return connect(era, { args: ['--state-dir', state, ...flags, root] });
}

describe.each(ERAS)('undo (%s era)', (era) => {
  /** For a case that starts a server of its own for what is the server's alone: once, under the modern era. */
  const itOnce = inEra(era, 'modern', it);
  let R: string;
  let S: string;
  let client: TestClient;
  const cleanups: Array<() => void> = [];
  beforeAll(async () => {
    const r = makeTree({ 'a.txt': 'one\n', 'b.txt': 'bee\n', 'gone.sh': '#!/bin/sh\necho hi\n' });
    const s = makeTree();
    cleanups.push(r.cleanup, s.cleanup);
    R = r.dir;
    S = s.dir;
    chmodSync(path.join(R, 'gone.sh'), 0o755);
    client = await start(era, R, S);
  });
  afterAll(async () => {
    await client.close();
    for (const c of cleanups) c();
  });

  const read = (name: string) => readFileSync(path.join(R, name), 'utf8');

  it('lists edits newest first and reverts one change', async () => {
    const a = path.join(R, 'a.txt');
    await client.callOk('write_file', { path: a, content: 'two\n', expected_hash: contentHash('one\n') });
    await client.callOk('edit_file', {
      path: a,
      edits: [{ old_text: 'two', new_text: 'three' }],
      expected_hash: contentHash('two\n'),
    });
    const listed = await client.callOk('list_changes', {});
    expect(listed.changes[0]).toMatchObject({
      tool: 'edit_file',
      files: [{ path: a, previous_hash: contentHash('two\n'), content_hash: contentHash('three\n') }],
    });
    expect(listed.changes[1]).toMatchObject({
      tool: 'write_file',
      files: [{ path: a, previous_hash: contentHash('one\n'), content_hash: contentHash('two\n') }],
    });
    // dry run: the diff, nothing written
    const dry = await client.callOk('revert_changes', { change_id: listed.changes[0].id, dry_run: true });
    expect(dry.diff).toContain('-three');
    expect(dry.diff).toContain('+two');
    expect(read('a.txt')).toBe('three\n');
    const done = await client.callOk('revert_changes', { change_id: listed.changes[0].id });
    expect(done.files).toEqual([
      { path: a, action: 'restored', previous_hash: contentHash('three\n'), content_hash: contentHash('two\n') },
    ]);
    expect(read('a.txt')).toBe('two\n');
    // The revert is itself a change, and can be undone.
    const after = await client.callOk('list_changes', {});
    expect(after.changes[0]).toMatchObject({ tool: 'revert_changes', reverts: [listed.changes[0].id] });
    await client.callOk('revert_changes', { last: 1 });
    expect(read('a.txt')).toBe('three\n');
  });

  it('reverts the last N (back to the state before the oldest)', async () => {
    const b = path.join(R, 'b.txt');
    await client.callOk('write_file', { path: b, content: 'b1\n', expected_hash: contentHash('bee\n') });
    await client.callOk('write_file', { path: b, content: 'b2\n', expected_hash: contentHash('b1\n') });
    await client.callOk('write_file', { path: b, content: 'b3\n', expected_hash: contentHash('b2\n') });
    const r = await client.callOk('revert_changes', { last: 3 });
    expect(r.reverted).toHaveLength(3);
    expect(read('b.txt')).toBe('bee\n');
  });

  it('refuses a revert after an external change (OCC_MISMATCH naming the file) and accepts the current hash', async () => {
    const b = path.join(R, 'b.txt');
    await client.callOk('write_file', { path: b, content: 'mine\n', expected_hash: contentHash('bee\n') });
    writeFileSync(b, 'theirs\n');
    const e = expectCode(await client.call('revert_changes', { last: 1 }), 'OCC_MISMATCH');
    expect(e.error.path).toBe(b);
    expect(e.error.current_hash).toBe(contentHash('theirs\n'));
    expect(read('b.txt')).toBe('theirs\n');
    await client.callOk('revert_changes', { last: 1, expected_hashes: { [b]: contentHash('theirs\n') } });
    expect(read('b.txt')).toBe('bee\n');
  });

  it('a revert of several changes checks every file they touched, not only the newest change, before writing', async () => {
    const b = path.join(R, 'b.txt');
    const a = path.join(R, 'a.txt');
    const aNow = read('a.txt');
    await client.callOk('write_file', { path: b, content: 'older\n', expected_hash: contentHash('bee\n') });
    await client.callOk('write_file', { path: a, content: 'newer\n', expected_hash: contentHash(aNow) });
    writeFileSync(b, 'external\n'); // the older change's file moved
    const e = expectCode(await client.call('revert_changes', { last: 2 }), 'OCC_MISMATCH');
    expect(e.error.path).toBe(b);
    expect(e.error.details.files).toEqual([
      { path: b, expected_hash: contentHash('older\n'), current_hash: contentHash('external\n') },
    ]);
    expect(read('a.txt')).toBe('newer\n'); // the newest change's file was not reverted either
    expect(read('b.txt')).toBe('external\n');
    writeFileSync(a, 'external a\n'); // both moved: both named
    const both = expectCode(await client.call('revert_changes', { last: 2 }), 'OCC_MISMATCH');
    expect(both.error.details.files.map((f: { path: string }) => f.path).sort()).toEqual([a, b].sort());
    await client.callOk('revert_changes', {
      last: 2,
      expected_hashes: { [a]: contentHash('external a\n'), [b]: contentHash('external\n') },
    });
    expect(read('b.txt')).toBe('bee\n');
    expect(read('a.txt')).toBe(aNow);
  });

  it('reverts a multi-file patch as a whole (created deleted, deleted recreated with its mode)', async () => {
    const patch = [
      '--- a/b.txt',
      '+++ b/b.txt',
      '@@ -1 +1 @@',
      '-bee',
      '+BEE',
      '--- /dev/null',
      '+++ b/new.txt',
      '@@ -0,0 +1 @@',
      '+fresh',
      '--- a/gone.sh',
      '+++ /dev/null',
      '@@ -1,2 +0,0 @@',
      '-#!/bin/sh',
      '-echo hi',
      '',
    ].join('\n');
    await client.callOk('apply_patch', {
      patch,
      path: R,
      expected_hashes: {
        'b.txt': contentHash('bee\n'),
        'new.txt': 'absent',
        'gone.sh': contentHash('#!/bin/sh\necho hi\n'),
      },
    });
    expect(existsSync(path.join(R, 'gone.sh'))).toBe(false);
    const listed = await client.callOk('list_changes', { limit: 1 });
    expect(listed.changes[0].tool).toBe('apply_patch');
    expect(listed.changes[0].files).toHaveLength(3);
    await client.callOk('revert_changes', { change_id: listed.changes[0].id });
    expect(read('b.txt')).toBe('bee\n');
    expect(existsSync(path.join(R, 'new.txt'))).toBe(false);
    expect(read('gone.sh')).toBe('#!/bin/sh\necho hi\n');
    expect(statSync(path.join(R, 'gone.sh')).mode & 0o777).toBe(0o755);
  });

  itOnce('keeps the history across a restart (same --state-dir) and reverts since a point', async () => {
    const a = path.join(R, 'a.txt');
    const before = read('a.txt');
    await client.callOk('write_file', { path: a, content: 'r1\n', expected_hash: contentHash(before) });
    await client.callOk('write_file', { path: a, content: 'r2\n', expected_hash: contentHash('r1\n') });
    const ids = (await client.callOk('list_changes', { limit: 2 })).changes.map((c: { id: string }) => c.id);
    await client.close();
    client = await start(era, R, S);
    const again = await client.callOk('list_changes', { limit: 2 });
    expect(again.changes.map((c: { id: string }) => c.id)).toEqual(ids);
    await client.callOk('revert_changes', { since: ids[1] });
    expect(read('a.txt')).toBe(before);
  });

  it('refuses under --readonly (not listed)', async () => {
    const ro = await start(era, R, S, ['--readonly']);
    try {
      const names = (await ro.listTools()).map((t) => t.name);
      expect(names).toContain('list_changes');
      expect(names).not.toContain('revert_changes');
      const snapshot = read('a.txt');
      expectCode(await ro.call('revert_changes', { last: 1 }), 'READONLY');
      expect(read('a.txt')).toBe(snapshot);
    } finally {
      await ro.close();
    }
  });

  itOnce('counts one budget unit per revert', async () => {
    const budget = await start(era, R, S, ['--mutation-budget=2']);
    try {
      const a = path.join(R, 'a.txt');
      await budget.callOk('write_file', { path: a, content: 'x1\n', expected_hash: contentHash(read('a.txt')) });
      await budget.callOk('revert_changes', { last: 1, dry_run: true }); // free
      await budget.callOk('revert_changes', { last: 1 });
      const kept = read('a.txt');
      expectCode(await budget.call('revert_changes', { last: 1 }), 'BUDGET_EXCEEDED');
      expect(read('a.txt')).toBe(kept);
    } finally {
      await budget.close();
    }
  });
});

describe('undo: policy, bounds and hostile records', () => {
  it('refuses a revert onto a path the file policy now protects, writing nothing', async () => {
    const r = makeTree({ 'p.txt': 'p0\n' });
    const s = makeTree();
    const pol = makeTree({ 'policy.json': JSON.stringify({ rules: [{ pattern: 'p.txt', access: 'read_only' }] }) });
    try {
      const c = await start('modern', r.dir, s.dir);
      await c.callOk('write_file', {
        path: path.join(r.dir, 'p.txt'),
        content: 'p1\n',
        expected_hash: contentHash('p0\n'),
      });
      await c.close();
      const guarded = await start('modern', r.dir, s.dir, [`--policy=${path.join(pol.dir, 'policy.json')}`]);
      try {
        expectCode(await guarded.call('revert_changes', { last: 1 }), 'FILE_POLICY_DENIED');
        expect(readFileSync(path.join(r.dir, 'p.txt'), 'utf8')).toBe('p1\n');
      } finally {
        await guarded.close();
      }
    } finally {
      r.cleanup();
      s.cleanup();
      pol.cleanup();
    }
  });

  it('never applies a forged record: a secret is not even shown, .git is refused, a bad record is ignored', async () => {
    const r = makeTree({ '.env': 'TOKEN=real\n', 'x.txt': 'x\n', '.git': { config: '[core]\n' } });
    const s = makeTree();
    try {
      const c = await start('legacy', r.dir, s.dir);
      await c.callOk('write_file', {
        path: path.join(r.dir, 'x.txt'),
        content: 'y\n',
        expected_hash: contentHash('x\n'),
      });
      const dir = path.join(s.dir, 'history');
      const [name] = readdirSync(dir).filter((n) => n !== 'meta.json');
      const record = JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
      const forge = (id: string, file: string, real: string, evil: string) => {
        const f = {
          ...record,
          id,
          files: [
            {
              path: path.join(r.dir, file),
              old_base64: Buffer.from(evil).toString('base64'),
              old_hash: contentHash(evil),
              old_mode: 0o644,
              new_hash: contentHash(real),
            },
          ],
        };
        writeFileSync(path.join(dir, `${id}.json`), JSON.stringify(f));
        return f;
      };
      // Aimed at the secret (claiming it held attacker bytes) and at .git/config (a hook-injection vector).
      const secret = forge(record.id.replace(/.{2}$/, 'a0'), '.env', 'TOKEN=real\n', 'TOKEN=evil\n');
      const git = forge(record.id.replace(/.{2}$/, 'a1'), '.git/config', '[core]\n', '[core]\nfsmonitor = evil\n');
      // And a malformed one (bytes not matching their hash): ignored and counted.
      const badId = record.id.replace(/.{2}$/, 'b0');
      writeFileSync(
        path.join(dir, `${badId}.json`),
        JSON.stringify({ ...secret, id: badId, files: [{ ...secret.files[0], old_hash: contentHash('other') }] }),
      );
      const listed = await c.callOk('list_changes', {});
      expect(listed.invalid).toBe(1);
      expect(listed.hidden).toBe(1);
      expect(JSON.stringify(listed)).not.toContain('.env');
      expectCode(await c.call('revert_changes', { change_id: secret.id }), 'NOT_FOUND');
      expectCode(await c.call('revert_changes', { change_id: git.id }), 'FILE_POLICY_DENIED');
      expectCode(await c.call('revert_changes', { change_id: badId }), 'NOT_FOUND');
      expect(readFileSync(path.join(r.dir, '.env'), 'utf8')).toBe('TOKEN=real\n');
      expect(readFileSync(path.join(r.dir, '.git', 'config'), 'utf8')).toBe('[core]\n');
      await c.close();
    } finally {
      r.cleanup();
      s.cleanup();
    }
  });

  it('drops the oldest changes beyond --history-max-changes with a note', async () => {
    const r = makeTree({ 'n.txt': '0\n' });
    const s = makeTree();
    try {
      const c = await start('modern', r.dir, s.dir, ['--history-max-changes=2']);
      const f = path.join(r.dir, 'n.txt');
      for (let i = 1; i <= 4; i++) {
        await c.callOk('write_file', { path: f, content: `${i}\n`, expected_hash: contentHash(`${i - 1}\n`) });
      }
      const listed = await c.callOk('list_changes', {});
      expect(listed.changes).toHaveLength(2);
      expect(listed.dropped).toBe(2);
      expect(listed.note).toMatch(/dropped/);
      // Only the 2 held can be reverted: back to the state before the oldest held change, not further.
      const r3 = await c.callOk('revert_changes', { last: 3 });
      expect(r3.reverted).toHaveLength(2);
      expect(readFileSync(f, 'utf8')).toBe('2\n');
      await c.close();
    } finally {
      r.cleanup();
      s.cleanup();
    }
  });

  it('bounds the history by bytes: oldest dropped, a record alone over the bound skipped with a note', async () => {
    const r = makeTree({ 'm.txt': '0\n' });
    const s = makeTree();
    try {
      const c = await start('legacy', r.dir, s.dir, ['--history-max-bytes=2000']);
      const f = path.join(r.dir, 'm.txt');
      let prev = '0\n';
      for (let i = 1; i <= 6; i++) {
        await c.callOk('write_file', { path: f, content: `${i}\n`, expected_hash: contentHash(prev) });
        prev = `${i}\n`;
      }
      const listed = await c.callOk('list_changes', {});
      expect(listed.dropped).toBeGreaterThan(0);
      expect(listed.changes.length + listed.dropped).toBe(6);
      const onDisk = readdirSync(path.join(s.dir, 'history'))
        .filter((n) => n !== 'meta.json')
        .reduce((sum, n) => sum + statSync(path.join(s.dir, 'history', n)).size, 0);
      expect(onDisk).toBeLessThanOrEqual(2000);
      const big = 'z'.repeat(3000);
      await c.callOk('write_file', { path: f, content: big, expected_hash: contentHash(prev) });
      await c.callOk('write_file', { path: f, content: 'small\n', expected_hash: contentHash(big) }); // old bytes 3000: skipped
      const after = await c.callOk('list_changes', { limit: 1 });
      expect(after.note).toMatch(/1 change\(s\) were not recorded/);
      expect(after.changes[0].files[0].content_hash).toBe(contentHash(big));
      await c.close();
    } finally {
      r.cleanup();
      s.cleanup();
    }
  });

  it('refuses to revert through a symlink swapped in at a recorded path; the outside file is untouched', async () => {
    const r = makeTree({ 'l.txt': 'l0\n' });
    const o = makeTree({ 'outside.txt': 'outside\n' });
    const s = makeTree();
    try {
      const c = await start('modern', r.dir, s.dir);
      const f = path.join(r.dir, 'l.txt');
      await c.callOk('write_file', { path: f, content: 'l1\n', expected_hash: contentHash('l0\n') });
      rmSync(f);
      symlinkSync(path.join(o.dir, 'outside.txt'), f);
      const e = expectCode(
        await c.call('revert_changes', { last: 1, expected_hashes: { [f]: contentHash('outside\n') } }),
        'NOT_ALLOWED',
      );
      // A link at a recorded path: the path no longer resolves to itself (docs/tools.md), not a "special file".
      expect(e.error.path).toBe(f);
      expect(e.error.details).toEqual({ reason: 'symlink_at_path' });
      expect(readFileSync(path.join(o.dir, 'outside.txt'), 'utf8')).toBe('outside\n');
      expect(lstatSync(f).isSymbolicLink()).toBe(true);
      await c.close();
    } finally {
      r.cleanup();
      o.cleanup();
      s.cleanup();
    }
  });

  it('a revert killed part-way recovers to nothing reverted (journaled like a patch)', async () => {
    const r = makeTree({ 'k1.txt': 'one\n', 'k2.txt': 'two\n' });
    const s = makeTree();
    try {
      const patch = [
        '--- a/k1.txt',
        '+++ b/k1.txt',
        '@@ -1 +1 @@',
        '-one',
        '+ONE',
        '--- a/k2.txt',
        '+++ b/k2.txt',
        '@@ -1 +1 @@',
        '-two',
        '+TWO',
        '',
      ].join('\n');
      const c = await start('modern', r.dir, s.dir);
      await c.callOk('apply_patch', {
        patch,
        path: r.dir,
        expected_hashes: { 'k1.txt': contentHash('one\n'), 'k2.txt': contentHash('two\n') },
      });
      await c.close();
      // --test-seams=kill-at:2: SIGKILL right after the first file's rename (src/patch/transaction.ts seam; the
      // seams test build).
      const killed = spawnSync(
        process.execPath,
        [
          SEAMS_CLI,
          '--test-seams=kill-at:2',
          '--state-dir',
          s.dir,
          '--root',
          r.dir,
          'call',
          'revert_changes',
          JSON.stringify({ last: 1 }),
        ],
        { encoding: 'utf8' },
      );
      expect(killed.signal).toBe('SIGKILL');
      expect(readFileSync(path.join(r.dir, 'k1.txt'), 'utf8')).toBe('one\n'); // the kill landed mid-revert
      // The next start recovers (the `call` mode runs the same start-up recovery as the server).
      const restart = spawnSync(
        process.execPath,
        [CLI, '--state-dir', s.dir, '--root', r.dir, 'call', 'list_allowed_directories'],
        { encoding: 'utf8' },
      );
      expect(JSON.parse(restart.stdout).recovered_transactions[0].outcome, restart.stderr).toBe('ROLLBACK_COMPLETE');
      const again = await start('modern', r.dir, s.dir);
      expect(readFileSync(path.join(r.dir, 'k1.txt'), 'utf8')).toBe('ONE\n');
      expect(readFileSync(path.join(r.dir, 'k2.txt'), 'utf8')).toBe('TWO\n');
      // The killed revert was never recorded: the newest change is still the patch.
      expect((await again.callOk('list_changes', { limit: 1 })).changes[0].tool).toBe('apply_patch');
      await again.close();
    } finally {
      r.cleanup();
      s.cleanup();
    }
  });
});

/**
 * Undo gaps (issue 18): create_directory, move_path and copy_path of a file or link, delete_path of a link or an
 * empty directory are recorded and reverted (and the revert can be undone).
 */
// Once (legacy era): what is recorded and reverted on the filesystem is the server's; the per-era results are above.
describe('undo of directories, links, moves and copies (legacy era)', () => {
  const era: Era = 'legacy';
  it('records and reverts create_directory, move_path, copy_path, delete_path of links and empty directories', async () => {
    const r = makeTree({ 'm.txt': 'move me\n', 'c.txt': 'copy me\n', 'gone-dir': {}, 'target.txt': 't\n' });
    const s = makeTree();
    const R = r.dir;
    symlinkSync('target.txt', path.join(R, 'link'));
    chmodSync(path.join(R, 'm.txt'), 0o640);
    chmodSync(path.join(R, 'gone-dir'), 0o750);
    const client = await start(era, R, s.dir, ['--auto-occ=off']);
    const newest = async () => (await client.callOk('list_changes', { limit: 1 })).changes[0];
    try {
      // create_directory: every directory it created is one change; the revert removes them (deepest first).
      await client.callOk('create_directory', { path: 'd1/d2' });
      const made = await newest();
      expect(made).toMatchObject({ tool: 'create_directory' });
      expect(made.files).toEqual([
        { path: path.join(R, 'd1'), previous_hash: null, content_hash: null, type: 'directory' },
        { path: path.join(R, 'd1', 'd2'), previous_hash: null, content_hash: null, type: 'directory' },
      ]);
      await client.callOk('revert_changes', { change_id: made.id });
      expect(existsSync(path.join(R, 'd1'))).toBe(false);
      await client.callOk('revert_changes', { last: 1 }); // the revert undone: the directories are back
      expect(statSync(path.join(R, 'd1', 'd2')).isDirectory()).toBe(true);

      // move_path of a file: reverted to the source with its bytes and mode.
      await client.callOk('move_path', { source: 'm.txt', destination: 'd1/moved.txt' });
      expect((await newest()).tool).toBe('move_path');
      await client.callOk('revert_changes', { last: 1 });
      expect(readFileSync(path.join(R, 'm.txt'), 'utf8')).toBe('move me\n');
      expect(statSync(path.join(R, 'm.txt')).mode & 0o777).toBe(0o640);
      expect(existsSync(path.join(R, 'd1', 'moved.txt'))).toBe(false);

      // move_path of a link moves the link; the revert puts it back with its target.
      await client.callOk('move_path', { source: 'link', destination: 'link2' });
      await client.callOk('revert_changes', { last: 1 });
      expect(lstatSync(path.join(R, 'link')).isSymbolicLink()).toBe(true);
      expect(readFileSync(path.join(R, 'link'), 'utf8')).toBe('t\n');
      expect(existsSync(path.join(R, 'link2'))).toBe(false);

      // copy_path of a file: the revert deletes the copy, the source stays.
      await client.callOk('copy_path', { source: 'c.txt', destination: 'c2.txt' });
      expect((await newest()).tool).toBe('copy_path');
      await client.callOk('revert_changes', { last: 1 });
      expect(existsSync(path.join(R, 'c2.txt'))).toBe(false);
      expect(readFileSync(path.join(R, 'c.txt'), 'utf8')).toBe('copy me\n');

      // delete_path of a link and of an empty directory: recreated.
      await client.callOk('delete_path', { path: 'link' });
      await client.callOk('revert_changes', { last: 1 });
      expect(lstatSync(path.join(R, 'link')).isSymbolicLink()).toBe(true);
      await client.callOk('delete_path', { path: 'gone-dir' });
      const dry = await client.callOk('revert_changes', { last: 1, dry_run: true });
      expect(dry.files).toEqual([
        {
          path: path.join(R, 'gone-dir'),
          action: 'recreated',
          previous_hash: null,
          content_hash: null,
          type: 'directory',
        },
      ]);
      expect(existsSync(path.join(R, 'gone-dir'))).toBe(false); // a dry run writes nothing
      await client.callOk('revert_changes', { last: 1 });
      expect(statSync(path.join(R, 'gone-dir')).mode & 0o777).toBe(0o750);

      // A directory that is no longer empty is not removed: OCC_MISMATCH naming it before anything is written, the
      // file inside stays.
      await client.callOk('create_directory', { path: 'd3' });
      writeFileSync(path.join(R, 'd3', 'keep.txt'), 'keep\n');
      const e = expectCode(await client.call('revert_changes', { last: 1 }), 'OCC_MISMATCH');
      expect(e.error.path).toBe(path.join(R, 'd3'));
      expect(readFileSync(path.join(R, 'd3', 'keep.txt'), 'utf8')).toBe('keep\n');
    } finally {
      await client.close();
      r.cleanup();
      s.cleanup();
    }
  });
});
