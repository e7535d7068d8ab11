/**
 * Attack (docs/security.md "What git may read"): a loose-object fan-out directory the server cannot list. Every loose
 * object that is a link must lead inside the roots, and the view learns the links by listing each fan-out directory;
 * one of mode 0311 (search, no read) listed as empty, so its links went unverified while the mirror still linked the
 * directory, and git, opening objects by name, followed them. A repository whose index names a blob that lives only
 * in such a directory, as a link to a loose object outside the roots, made `git_diff` print the outside file with the
 * kernel wall off (with the wall on, git could not read it). Now a store directory that cannot be listed whole is not
 * mirrored: git finds no object there. Real server over stdio (as nobody when the tests run as root, so the mode
 * holds), with the policy layer alone (`--sandbox=off`) and with the kernel wall in force, real git.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';
import { isolatedGit } from '../helpers/isolated-git.js';

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
const MARK = 'OUTSIDE_LOOSE_MARKER';

const tree = makeTree({ home: {}, root: {}, outside: {} }, 'fs-tools-unlistable-');
const HOME = path.join(tree.dir, 'home');
const ROOT = path.join(tree.dir, 'root');
const REPO = path.join(ROOT, 'repo');
let fanOut = '';

/** git in `cwd`, isolated from this machine's git configuration and GIT_* variables (test/helpers/isolated-git.ts). */
const git = (cwd: string, ...args: string[]): string => isolatedGit(cwd, HOME, ...args);

beforeAll(() => {
  // A commit (packed), then a staged a.txt whose blob is moved outside the roots and linked from its fan-out directory.
  mkdirSync(REPO);
  git(REPO, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(REPO, 'a.txt'), 'inside\n');
  git(REPO, 'add', '-A');
  git(REPO, 'commit', '-q', '-m', 'i');
  git(REPO, 'repack', '-adq');
  git(REPO, 'prune-packed');
  writeFileSync(path.join(REPO, 'a.txt'), `${MARK}\n`);
  git(REPO, 'add', 'a.txt');
  const blob = git(REPO, 'rev-parse', ':a.txt').trim();
  fanOut = path.join(REPO, '.git', 'objects', blob.slice(0, 2));
  const outside = path.join(tree.dir, 'outside', 'obj');
  renameSync(path.join(fanOut, blob.slice(2)), outside);
  symlinkSync(outside, path.join(fanOut, blob.slice(2)));
  writeFileSync(path.join(REPO, 'a.txt'), 'changed\n');
  // Armed: plain git follows the link and prints the outside file.
  expect(git(REPO, 'diff')).toContain(`-${MARK}`);
  if (asRoot) spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, tree.dir]);
  chmodSync(fanOut, 0o311);
}, 60_000);

afterAll(() => {
  chmodSync(fanOut, 0o755);
  tree.cleanup();
});

describe('a fan-out directory the server cannot list', () => {
  for (const sandbox of ['off', 'auto'] as const) {
    it(`is not mirrored: git_diff and git_status carry no outside byte (--sandbox=${sandbox})`, async () => {
      const state = path.join(tree.dir, `state-${sandbox}`);
      mkdirSync(state, { mode: 0o700 });
      if (asRoot) chownSync(state, NOBODY, NOBODY);
      let client: TestClient | undefined;
      try {
        client = await connect('modern', {
          ...(asRoot ? { command: 'setpriv' } : {}),
          args: [
            ...(asRoot ? ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI] : []),
            `--sandbox=${sandbox}`,
            '--state-dir',
            state,
            ROOT,
          ],
          env: { HOME },
        });
        const diff = await client.call('git_diff', { path: REPO });
        const status = await client.call('git_status', { path: REPO });
        for (const r of [diff, status]) {
          expect(JSON.stringify(r)).not.toContain(MARK);
          expect(JSON.stringify(r)).not.toContain(path.join(tree.dir, 'outside'));
        }
        // The blob is only behind the unverified link: git finds no such object (a coded envelope).
        expect(diff.isError, JSON.stringify(diff).slice(0, 600)).toBe(true);
        const { error } = JSON.parse(diff.content[0].text!) as { error: Record<string, unknown> };
        expect(error).toMatchObject({ code: 'IO_ERROR', details: { reason: 'corrupt_repository' } });
        // The rest of the repository is still read.
        const entries = (status.structuredContent?.entries ?? []) as Array<{ path: string }>;
        expect(entries.map((e) => e.path)).toEqual(['a.txt']);
      } finally {
        await client?.close();
      }
    }, 60_000);
  }
});
