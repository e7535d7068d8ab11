/**
 * fs-tools' own path-lock files (src/fs/path-lock.ts: `.fs-tools-lock-<hash>` beside the file being written) are not
 * part of git_status or the status hash: a mutation carrying expected_status_hash takes its lock before it checks the
 * hash, and must not see its own lock as a change (found by the hostile-repository matrix after the lock moved beside
 * the target). A planted lock-named file stands in for a lock held at the moment of the check.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, ERAS, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

describe.each(ERAS)('path-lock files and git (%s era)', (era) => {
  const tree = makeTree({ repo: { 'a.txt': 'one\n' } });
  const repo = path.join(tree.dir, 'repo');
  let client: TestClient;
  beforeAll(async () => {
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: repo });
    git('init', '-q');
    git('add', '.');
    git('commit', '-qm', 'init');
    client = await connect(era, { args: [tree.dir] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it('a lock file beside a tracked file changes neither the entries nor the status hash', async () => {
    const before = await client.callOk('git_status', { path: repo });
    expect(before.clean).toBe(true);
    const lock = path.join(repo, `.fs-tools-lock-${'0'.repeat(32)}`);
    writeFileSync(lock, '{}');
    try {
      const during = await client.callOk('git_status', { path: repo });
      expect(during.entries).toEqual([]);
      expect(during.status_hash).toBe(before.status_hash);
      // A mutation with the hash taken before proceeds (its own lock is invisible to the check).
      const w = await client.callOk('write_file', {
        path: path.join(repo, 'b.txt'),
        content: 'two\n',
        expected_status_hash: before.status_hash,
      });
      expect(w.created).toBe(true);
      expect(existsSync(path.join(repo, 'b.txt'))).toBe(true);
    } finally {
      execFileSync('rm', ['-f', lock]);
    }
  });
});
