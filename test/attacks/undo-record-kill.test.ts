/**
 * A server killed between a write_file's effect and its undo record (found by r11-review). The record of a
 * write_file/edit_file is staged (written and fsynced under a temporary name) while the file is written; it was
 * committed only after the file's rename. A SIGKILL in between (the client killed the server, OOM, a power loss)
 * left the file replaced, no change in list_changes, and the old bytes only in a temporary no listing reads: the undo
 * of a change that happened was lost, and the temporary stayed in the history directory for ever.
 *
 * The kill is exact, not timed: an inotify watch on the root (fs.watch) SIGKILLs the server as the new file is
 * renamed over the target, the one moment a record must already exist. Then a fresh server must list the change and
 * revert it to the old bytes exactly, and a staged temporary a process killed long ago left is removed.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startRaw } from '../helpers/raw-server.js';

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups) c();
});

describe('undo record and SIGKILL', () => {
  it('a write_file killed right after its rename keeps its undo record (revert restores the old bytes)', async () => {
    const base = mkdtempSync(path.join(tmpdir(), 'fs-tools-undo-kill-'));
    cleanups.push(() => rmSync(base, { recursive: true, force: true }));
    const root = path.join(base, 'root');
    const state = path.join(base, 'state');
    mkdirSync(root);
    mkdirSync(state, { mode: 0o700 });
    const file = path.join(root, 'data.bin');
    // 1 MiB of old bytes: the record (base64 of them) takes longer to write than the file's new content.
    const old = Buffer.alloc(1 << 20);
    for (let i = 0; i < old.length; i++) old[i] = (i * 7919) & 0xff;
    writeFileSync(file, old);
    const args = [root, '--state-dir', state];

    const first = startRaw(args);
    cleanups.push(() => first.child.kill('SIGKILL'));
    await first.ready;
    const read = await first.call('read_file', { path: file, max_bytes: 16, encoding: 'base64' });
    const hash = read?.structured?.content_hash as string;
    expect(hash).toMatch(/^sha256:/);
    const watcher = watch(root, (_event, name) => {
      if (name === 'data.bin') first.child.kill('SIGKILL');
    });
    try {
      const answer = await first.call('write_file', { path: file, content: 'new content\n', expected_hash: hash });
      // Killed before it could answer (or, on a machine where the watch came late, answered).
      if (answer) expect(answer.isError).toBe(false);
      await first.exited;
    } finally {
      watcher.close();
    }
    // The kill came after the rename: the file holds the new bytes.
    expect(readFileSync(file, 'utf8')).toBe('new content\n');

    // A staged record left by a process killed long ago (its change never became visible): the next change's bounds
    // check removes it; nothing else reads it.
    const stale = path.join(state, 'history', '000000000000001-aaaaaaaaaaaa.json.abcdef01.tmp');
    writeFileSync(stale, '{}');
    const second = startRaw(args);
    cleanups.push(() => second.child.kill('SIGKILL'));
    await second.ready;
    const listed = await second.call('list_changes', {});
    expect(listed?.isError).toBe(false);
    const changes = listed!.structured!.changes as Array<{ id: string; files: Array<{ path: string }> }>;
    expect(changes.map((c) => c.files.map((f) => f.path))).toEqual([[file]]);
    const reverted = await second.call('revert_changes', { change_id: changes[0].id });
    expect(reverted?.isError, JSON.stringify(reverted?.envelope)).toBe(false);
    expect(readFileSync(file).equals(old)).toBe(true);
    // No staged temporary is left in the history directory (the revert's own record removed it by the bounds check,
    // which runs after the answer: a listing waits for it, src/fs/history-prune.ts).
    expect((await second.call('list_changes', {}))?.isError).toBe(false);
    expect(readdirSync(path.join(state, 'history')).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    second.child.stdin.end();
    await second.exited;
  }, 60_000);
});
