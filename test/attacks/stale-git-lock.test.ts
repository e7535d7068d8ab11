/**
 * A call refused for STALE_GIT (docs/errors.md "Order of checks" step 8) takes no path lock.
 *
 * The mutation pipeline (src/mutation/pipeline.ts) computes the git verdict before the lock and, since existence and
 * kind (step 7) are read inside the lock, held a stale verdict until after the lock was taken. A stale call then
 * waited for another holder's lock, and a lock not refreshed (another host's, a hung process's) turned the refusal
 * into IO_ERROR `locked` — step 10 deciding before step 8, where the build before the pipeline's steps answered
 * STALE_GIT at once. The stale call must answer STALE_GIT without waiting, leave the planted lock alone, and still
 * report step 7 first (a path through a file).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfIdentity } from '../../src/fs/process-identity.js';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const STALE = `sha256:${'0'.repeat(64)}`;
const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@example.com',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
};

/** The lock file of `target` in its parent (src/fs/path-lock.ts: SHA-256 of the name, 32 hex digits). */
const lockFileOf = (target: string) =>
  path.join(
    path.dirname(target),
    `.fs-tools-lock-${createHash('sha256').update(path.basename(target)).digest('hex').slice(0, 32)}`,
  );

/** A lock another host holds (never refreshed here): a locked call fails IO_ERROR `locked` after ~0.7 s. */
function plantForeignLock(target: string): string {
  const file = lockFileOf(target);
  writeFileSync(file, JSON.stringify({ ...selfIdentity(), host: 'another-host.example' }));
  return file;
}

describe('a STALE_GIT refusal takes no path lock', () => {
  let dir: string;
  let cleanup: () => void;
  let client: TestClient;
  const locks: Record<string, string> = {};

  beforeAll(async () => {
    ({ dir, cleanup } = makeTree({ 'tracked.txt': 'one\ntwo\n', sub: { 'inner.txt': 'inner\n' } }, 'fs-tools-stale-'));
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: dir, env: GIT_ENV });
    execFileSync('git', ['add', '.'], { cwd: dir, env: GIT_ENV });
    execFileSync('git', ['commit', '-q', '-m', 'init'], { cwd: dir, env: GIT_ENV });
    for (const t of ['tracked.txt', 'new-dir', 'fresh.txt']) locks[t] = plantForeignLock(path.join(dir, t));
    client = await connect('modern', { args: [dir] });
  });
  afterAll(async () => {
    await client?.close();
    cleanup?.();
  });

  it('every mutating tool with expected_status_hash answers STALE_GIT at once, not IO_ERROR locked', async () => {
    const before = readFileSync(path.join(dir, 'tracked.txt'), 'utf8');
    const hash = `sha256:${createHash('sha256').update(before).digest('hex')}`;
    const calls: Array<[string, Record<string, unknown>]> = [
      ['write_file', { path: 'tracked.txt', content: 'x\n', expected_hash: hash }],
      ['write_file', { path: 'fresh.txt', content: 'x\n' }],
      ['edit_file', { path: 'tracked.txt', edits: [{ old_text: 'two', new_text: 'TWO' }], expected_hash: hash }],
      [
        'apply_patch',
        {
          patch: '--- a/tracked.txt\n+++ b/tracked.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n',
          expected_hashes: { 'tracked.txt': hash },
        },
      ],
      ['create_directory', { path: 'new-dir' }],
      ['delete_path', { path: 'tracked.txt', expected_hash: hash }],
      ['move_path', { source: 'tracked.txt', destination: 'fresh.txt', expected_source_hash: hash }],
      ['copy_path', { source: 'sub/inner.txt', destination: 'fresh.txt' }],
    ];
    for (const [tool, args] of calls) {
      for (const dry_run of [false, true]) {
        const started = Date.now();
        const res = await client.call(tool, { ...args, dry_run, expected_status_hash: STALE });
        expect(expectCode(res, 'STALE_GIT').error.code, `${tool} dry_run=${dry_run}`).toBe('STALE_GIT');
        // Not waited for the lock (a not-refreshed lock fails after 0.7 s; a live holder's after 10 s).
        expect(Date.now() - started, `${tool} dry_run=${dry_run}`).toBeLessThan(5_000);
      }
    }
    // Nothing changed: the file, the planted locks, no directory or file created.
    expect(readFileSync(path.join(dir, 'tracked.txt'), 'utf8')).toBe(before);
    for (const file of Object.values(locks)) expect(readFileSync(file, 'utf8')).toContain('another-host.example');
    expect(
      readdirSync(dir)
        .filter((n) => !n.startsWith('.fs-tools-lock-'))
        .sort(),
    ).toEqual(['.git', 'sub', 'tracked.txt']);
  });

  it('step 7 still comes before the held STALE_GIT: a path through a file', async () => {
    const through = { expected_status_hash: STALE, dry_run: true };
    const made = { path: 'tracked.txt/x', content: 'x\n', create_dirs: true, ...through };
    expect(expectCode(await client.call('write_file', made), 'VALIDATION').error.details.reason).toBe(
      'not_a_directory',
    );
    const bare = { path: 'tracked.txt/x', content: 'x\n', ...through };
    expect(expectCode(await client.call('write_file', bare), 'NOT_FOUND').error.details.reason).toBe('parent_missing');
  });
});
