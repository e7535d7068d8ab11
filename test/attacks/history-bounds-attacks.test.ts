/**
 * Attacks on the undo history's bounds (src/fs/history-prune.ts; found by r16-review-history). The prune runs after
 * the answer; entries of the history directory are hostile input (docs/security.md "The undo history's bounds after a
 * crash"). Real servers over stdio.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startRaw } from '../helpers/raw-server.js';

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups.reverse()) c();
});

function dirs(prefix: string): { root: string; state: string; history: string } {
  const base = mkdtempSync(path.join(tmpdir(), prefix));
  cleanups.push(() => rmSync(base, { recursive: true, force: true }));
  const root = path.join(base, 'root');
  const state = path.join(base, 'state');
  mkdirSync(root);
  mkdirSync(path.join(state, 'history'), { recursive: true, mode: 0o700 });
  return { root, state, history: path.join(state, 'history') };
}

describe('the undo history bounds against hostile entries', () => {
  it('an entry named like the oldest record that cannot be unlinked does not stop every later prune', async () => {
    const { root, state, history } = dirs('fs-tools-history-bounds-');
    // A directory under a record's name (oldest of all): unlink() fails with EISDIR; it was retried first by every
    // prune, which then gave up, so no record was ever dropped again.
    const planted = '000000000000001-aaaaaaaaaaaa.json';
    mkdirSync(path.join(history, planted));
    const server = startRaw([root, '--state-dir', state, '--history-max-changes', '2']);
    cleanups.push(() => server.child.kill('SIGKILL'));
    await server.ready;
    for (let i = 0; i < 6; i++) {
      const answer = await server.call('write_file', { path: path.join(root, `f${i}.txt`), content: `${i}\n` });
      expect(answer?.isError).toBe(false);
    }
    const listed = await server.call('list_changes', {});
    const records = readdirSync(history).filter((n) => /^[0-9]{15}-[0-9a-f]{12}\.json$/.test(n) && n !== planted);
    expect([
      (listed?.structured?.changes as unknown[] | undefined)?.length,
      records.length,
      listed?.structured?.dropped,
    ]).toEqual([2, 2, 4]);
    server.child.kill('SIGTERM');
    await server.exited;
  });

  it('a stale meta.lock that cannot be broken (history directory not writable) does not spin the server', async () => {
    const { root, state, history } = dirs('fs-tools-history-lock-');
    // As root, the server runs as nobody (root renames in a read-only directory).
    const asRoot = process.getuid?.() === 0;
    const owner = asRoot ? { uid: 65534, gid: 65534 } : {};
    chmodSync(path.dirname(state), 0o755);
    // Its old bytes (4 KiB, base64 in the record) make a write_file's record larger than --history-max-bytes.
    writeFileSync(path.join(root, 'big.txt'), 'x'.repeat(4096));
    if (asRoot) for (const p of [root, state, history, path.join(root, 'big.txt')]) chownSync(p, 65534, 65534);
    // A server killed holding meta.lock left it; it is stale once META_LOCK_STALE_MS (5 s) old by its ctime.
    writeFileSync(path.join(history, 'meta.lock'), '');
    await new Promise((resolve) => setTimeout(resolve, 5_300));
    chmodSync(history, 0o500);
    cleanups.push(() => chmodSync(history, 0o700));
    const server = startRaw([root, '--state-dir', state, '--history-max-bytes', '1024'], owner);
    cleanups.push(() => server.child.kill('SIGKILL'));
    await server.ready;
    // Too large to record: counted as skipped in meta.json, under meta.lock. Breaking the stale lock (a rename in the
    // history directory) fails with EACCES; the lock was retried at once, for ever, in one turn of the event loop.
    const read = await server.call('read_file', { path: path.join(root, 'big.txt'), max_bytes: 16 });
    const hash = read?.structured?.content_hash as string;
    expect(hash).toMatch(/^sha256:/);
    const late = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 4_000).unref());
    const answer = await Promise.race([
      server.call('write_file', { path: path.join(root, 'big.txt'), content: 'small\n', expected_hash: hash }),
      late,
    ]);
    expect(answer === 'late' ? 'late' : answer?.isError).toBe(false);
    const listed = await Promise.race([server.call('list_changes', {}), late]);
    expect(listed === 'late' ? 'late' : listed?.structured?.changes).toEqual([]);
    expect(readdirSync(history)).toEqual(['meta.lock']);
    server.child.kill('SIGTERM');
    await server.exited;
  }, 20_000);
});
