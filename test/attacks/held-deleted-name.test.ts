/**
 * Review of r19-soak (near paths through held directories, src/fs/held-dir-set.ts) and of main's read-tool held
 * directories (src/fs/held-dirs.ts): both prove a held descriptor by `locationOf(fd) === dir`. The kernel spells a
 * deleted directory's /proc/self/fd link as its last path plus " (deleted)", so a held directory whose authorized path
 * itself ends in " (deleted)" passes the proof after it was renamed to that path minus the suffix and removed: the
 * search (or the read) then uses the deleted, empty directory instead of the one that now stands at the path.
 * Symptom (real server over stdio, before the fix): the directory `a (deleted)` is replaced by a new one holding
 * `edit.txt`; a missing `zz/edit.txt` gives no `details.near` (main's build offers `a (deleted)/edit.txt`), and
 * read_file of the existing `a (deleted)/edit.txt` answers NOT_FOUND (main too: its read-tool held directories).
 * No outside content is reachable this way (a deleted directory has no entries); the answer is wrong, not a leak.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const LINUX_PROC = process.platform === 'linux';

describe.runIf(LINUX_PROC)('a held directory named "… (deleted)" replaced by a new one of that name', () => {
  const tree = makeTree({}, 'fs-tools-held-deleted-');
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('legacy', { args: [tree.dir] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  /** Makes `dir` anew holding `edit.txt` with `text`, the old one renamed to its name minus " (deleted)" and removed. */
  function replace(dir: string, text: string): void {
    const stripped = dir.slice(0, -' (deleted)'.length);
    renameSync(dir, stripped);
    rmSync(stripped, { recursive: true });
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'edit.txt'), text);
  }

  it('near paths: the new directory is read, not the deleted held one', async () => {
    const dir = path.join(tree.dir, 'n (deleted)');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'edit.txt'), 'old\n');
    const first = await client.callError('read_file', { path: 'zz/edit.txt' });
    expect(first.error.details.near).toEqual([path.join(dir, 'edit.txt')]);
    replace(dir, 'new\n'); // within HELD_DIRS_IDLE_MS of the first call: the search still holds `dir`
    const second = await client.callError('read_file', { path: 'zz/edit.txt' });
    expect(second.error.code).toBe('NOT_FOUND');
    expect(second.error.details.near).toEqual([path.join(dir, 'edit.txt')]);
  });

  it('read_file: the file in the new directory is read (main has this defect too)', async () => {
    const dir = path.join(tree.dir, 'r (deleted)');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'edit.txt'), 'old\n');
    expect((await client.callOk('read_file', { path: 'r (deleted)/edit.txt' })).content).toBe('old\n');
    replace(dir, 'new\n');
    expect((await client.callOk('read_file', { path: 'r (deleted)/edit.txt' })).content).toBe('new\n');
  });
});
