/**
 * Review of the per-entry shortcut of whole-tree operations (src/policy/authorize.ts `assertEntryAllowed`, used by
 * src/policy/tree-authorize.ts when the top is clean): a move, copy or recursive delete must give the answer the
 * whole-path check (`assertPathAllowed` on every entry) gives, for every shape of tree.
 *
 * The attack that worked: beneath a directory named `.git` in any spelling (`.git`, `.GIT`, `.git.`, `git~1`) the
 * whole-path check refuses every entry by the built-in `git_dir` rule, which a refusal names; the shortcut read only
 * the entry's own name, so an entry there that the file policy hides or denies turned the named refusal into the
 * generic one — the answer of a move of `p` told whether `p/.git/` holds a hidden entry, which nothing else tells
 * (listings omit it, reads answer NOT_FOUND). The property test of test/policy/entry-allowed.test.ts stopped at the
 * first refused directory, so it never compared an entry beneath one.
 *
 * Pinned here, against a real server: the refusal of a move, copy or recursive delete of a tree holding a `.git`
 * directory (two spellings) is the same envelope whether or not a hidden entry lies inside that directory. The
 * per-entry property (every entry the walk judges, beneath named refusals too) is test/policy/entry-allowed.test.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

describe('a hidden entry beneath a .git directory does not change the refusal of a tree (attack)', () => {
  const tree = makeTree({}, 'fs-tools-entry-shortcut-');
  const aux = makeTree({}, 'fs-tools-entry-shortcut-aux-');
  const p = (...parts: string[]) => path.join(tree.dir, ...parts);
  let client: TestClient;

  beforeAll(async () => {
    for (const [top, git] of [
      ['plain', '.git'],
      ['holds', '.git'],
      ['plain2', 'git~1'],
      ['holds2', 'git~1'],
    ]) {
      mkdirSync(p(top, 'repo', git, 'refs'), { recursive: true });
      writeFileSync(p(top, 'repo', git, 'HEAD'), 'ref: refs/heads/main\n');
      writeFileSync(p(top, 'repo', 'readme.md'), 'readme\n');
    }
    // The hidden entries: only in `holds` and `holds2`.
    for (const top of ['holds', 'holds2']) {
      const git = top === 'holds' ? '.git' : 'git~1';
      mkdirSync(p(top, 'repo', git, 'vault'), { recursive: true });
      writeFileSync(p(top, 'repo', git, 'vault', 'notes.txt'), 'hidden notes\n');
    }
    const policy = path.join(aux.dir, 'policy.json');
    writeFileSync(policy, JSON.stringify({ rules: [{ pattern: '**/vault/**', access: 'hidden' }] }));
    client = await connect('modern', {
      args: ['--state-dir', path.join(aux.dir, 'state'), '--policy', policy, '--auto-occ=off', tree.dir],
    });
  });
  afterAll(async () => {
    await client?.close();
    tree.cleanup();
    aux.cleanup();
  });

  it('move, copy and recursive delete: the same named git_dir refusal with and without the hidden entry', async () => {
    const before = snapshotTree(tree.dir);
    for (const [plain, holds, git] of [
      ['plain', 'holds', '.git'],
      ['plain2', 'holds2', 'git~1'],
    ]) {
      const calls: Array<[string, (top: string) => Record<string, unknown>]> = [
        ['move_path', (top) => ({ source: top, destination: `${top}-moved` })],
        ['copy_path', (top) => ({ source: top, destination: `${top}-copied`, recursive: true })],
        ['delete_path', (top) => ({ path: top, recursive: true })],
      ];
      for (const [tool, args] of calls) {
        const a = expectCode(await client.call(tool, args(plain)), 'FILE_POLICY_DENIED');
        const b = expectCode(await client.call(tool, args(holds)), 'FILE_POLICY_DENIED');
        expect(a.error.details, `${tool} ${plain}`).toMatchObject({ source: 'builtin', rule: 'git_dir' });
        expect(b.error.path, `${tool} ${holds}`).toBe(p(holds, 'repo', git));
        // The same envelope but for the top's name.
        expect(JSON.stringify(b).replaceAll(p(holds), p(plain)), `${tool} ${holds}`).toBe(JSON.stringify(a));
      }
    }
    expect(snapshotTree(tree.dir)).toEqual(before);
  });
});
