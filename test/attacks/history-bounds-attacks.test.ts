/**
 * Attacks on the undo history's bounds (src/fs/history-prune.ts; found by r16-review-history). The prune runs after
 * the answer; entries of the history directory are hostile input (docs/security.md "The undo history's bounds after a
 * crash"). Real servers over stdio.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
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
    expect([listed?.structured?.changes.length, records.length, listed?.structured?.dropped]).toEqual([2, 2, 4]);
    server.child.kill('SIGTERM');
    await server.exited;
  });
});
