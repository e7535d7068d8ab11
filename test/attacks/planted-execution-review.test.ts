/**
 * Review of the planted-execution guard (docs/security.md "Execution-bearing files and git directories"), through the
 * real server over stdio with real git: configuration the user's git reads from outside any git directory.
 *  - a repository whose `.git/config` includes a file in its work tree (`[include] path = ../tools/gitconfig`, a
 *    shared-config pattern): writing that file plants `core.fsmonitor`, which the user's `git status` runs. The
 *    included file is part of the repository's configuration and is refused like the config itself; a control shows
 *    the same bytes written directly do run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({ root: {}, state: {}, home: {}, outside: {} }, 'fs-tools-planted-review-');
const R = path.join(T.dir, 'root');
const HOME = path.join(T.dir, 'home');
const MARK = path.join(T.dir, 'outside', 'marker');
const r = (...p: string[]) => path.join(R, ...p);

function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_') && v !== undefined) env[k] = v;
  return {
    ...env,
    HOME,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@e.invalid',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@e.invalid',
  };
}
function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: cleanEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
const FSMONITOR = `[core]\n\tfsmonitor = "touch ${MARK}; false"\n`;

let client: TestClient;
beforeAll(async () => {
  mkdirSync(r('inc'));
  git(r('inc'), 'init', '-q');
  mkdirSync(r('inc/tools'));
  writeFileSync(r('inc/tools/gitconfig'), '[user]\n\tname = shared\n');
  writeFileSync(r('inc/a.txt'), 'a\n');
  git(r('inc'), 'config', 'include.path', '../tools/gitconfig');
  git(r('inc'), 'add', '.');
  git(r('inc'), 'commit', '-qm', 'init');
  // includeIf with a condition that holds for this repository.
  mkdirSync(r('incif'));
  git(r('incif'), 'init', '-q');
  writeFileSync(r('incif/.shared-gitconfig'), '[user]\n\tname = shared\n');
  git(r('incif'), 'config', `includeIf.gitdir:${r('incif')}/.path`, '../.shared-gitconfig');
  // husky (v9) layout: core.hooksPath = .husky/_, whose generated hooks run the user's `.husky/<hook>` scripts.
  mkdirSync(r('husky'));
  git(r('husky'), 'init', '-q');
  mkdirSync(r('husky/.husky/_'), { recursive: true });
  writeFileSync(r('husky/.husky/_/pre-commit'), '#!/bin/sh\n. "$(dirname "$0")/../pre-commit"\n', { mode: 0o755 });
  writeFileSync(r('husky/.husky/pre-commit'), 'true\n');
  git(r('husky'), 'config', 'core.hooksPath', '.husky/_');
  writeFileSync(r('husky/a.txt'), 'a\n');
  git(r('husky'), 'add', 'a.txt');
  // A repository two levels below the root whose core.hooksPath names a shared directory elsewhere in the root.
  mkdirSync(r('group/sub/deep'), { recursive: true });
  git(r('group/sub/deep'), 'init', '-q');
  mkdirSync(r('shared-hooks'));
  git(r('group/sub/deep'), 'config', 'core.hooksPath', r('shared-hooks'));
  writeFileSync(r('group/sub/deep/a.txt'), 'a\n');
  git(r('group/sub/deep'), 'add', 'a.txt');
  client = await connect('modern', { args: ['--state-dir', path.join(T.dir, 'state'), R], env: cleanEnv() });
}, 60_000);
afterAll(async () => {
  await client?.close();
  T.cleanup();
});

describe('a configuration file the repository config includes from its work tree', () => {
  it('control: the planted include runs on the user git status when written directly', () => {
    const dir = r('control');
    mkdirSync(dir);
    git(dir, 'init', '-q');
    git(dir, 'config', 'include.path', '../cfg');
    writeFileSync(path.join(dir, 'cfg'), FSMONITOR);
    try {
      git(dir, 'status', '--short');
    } catch {
      // fsmonitor failing is fine; the marker is what counts
    }
    expect(existsSync(MARK)).toBe(true);
    rmSync(MARK);
    rmSync(dir, { recursive: true });
  });

  it.each([
    ['include.path', 'inc/tools/gitconfig', 'inc'],
    ['includeIf.*.path', 'incif/.shared-gitconfig', 'incif'],
  ])(
    '%s target: write_file, edit_file, move_path onto it are refused; git status runs nothing',
    async (_k, file, wt) => {
      const p = r(file);
      const before = readFileSync(p, 'utf8');
      const hash = (await client.callOk('read_file', { path: p })).content_hash as string;
      for (const [tool, args] of [
        ['write_file', { path: p, content: FSMONITOR, expected_hash: hash }],
        ['edit_file', { path: p, edits: [{ old_text: '[user]', new_text: FSMONITOR + '[user]' }] }],
      ] as const) {
        const envelope = await client.callError(tool, args);
        expect(envelope.error.code).toBe('FILE_POLICY_DENIED');
        expect(envelope.error.details).toMatchObject({ source: 'builtin', rule: 'git_dir', reason: 'included_config' });
      }
      writeFileSync(r(wt, 'staged'), FSMONITOR);
      const moved = await client.callError('move_path', { source: r(wt, 'staged'), destination: p, overwrite: true });
      expect(moved.error.code).toBe('FILE_POLICY_DENIED');
      const del = await client.callError('delete_path', {
        path: path.dirname(p) === r(wt) ? p : path.dirname(p),
        recursive: true,
      });
      expect(del.error.code).toBe('FILE_POLICY_DENIED');
      rmSync(r(wt, 'staged'));
      expect(readFileSync(p, 'utf8')).toBe(before);
      try {
        git(r(wt), 'status', '--short');
      } catch {
        // nothing planted: status succeeds; a failure still must not create the marker
      }
      expect(existsSync(MARK)).toBe(false);
    },
  );
});

describe('husky: the scripts the generated hooks run', () => {
  it('writing .husky/pre-commit is refused (exec_config) and the user git commit runs nothing planted', async () => {
    const p = r('husky/.husky/pre-commit');
    const hash = (await client.callOk('read_file', { path: p })).content_hash as string;
    const envelope = await client.callError('write_file', {
      path: p,
      content: `touch ${MARK}\n`,
      expected_hash: hash,
    });
    expect(envelope.error.code).toBe('FILE_POLICY_DENIED');
    expect(envelope.error.details).toMatchObject({ source: 'builtin', rule: 'exec_config' });
    const fresh = await client.callError('write_file', {
      path: r('husky/.husky/pre-push'),
      content: `touch ${MARK}\n`,
    });
    expect(fresh.error.details).toMatchObject({ source: 'builtin', rule: 'exec_config' });
    expect(readFileSync(p, 'utf8')).toBe('true\n');
    expect(existsSync(r('husky/.husky/pre-push'))).toBe(false);
    git(r('husky'), 'commit', '-qm', 'user commit');
    expect(existsSync(MARK)).toBe(false);
  });
});

describe('a repository nested two levels deep whose core.hooksPath names a directory elsewhere', () => {
  it('writing a hook there is refused (the whole root is searched for repositories); the user git commit runs nothing', async () => {
    const hook = r('shared-hooks/pre-commit');
    const envelope = await client.callError('write_file', { path: hook, content: `#!/bin/sh\ntouch ${MARK}\n` });
    expect(envelope.error.code).toBe('FILE_POLICY_DENIED');
    expect(envelope.error.details).toMatchObject({ source: 'builtin', rule: 'hooks_dir', reason: 'core_hookspath' });
    // Moved in as a directory, or copied in: refused the same way.
    mkdirSync(r('staged-hooks'));
    writeFileSync(r('staged-hooks/pre-commit'), `#!/bin/sh\ntouch ${MARK}\n`, { mode: 0o755 });
    const copied = await client.callError('copy_path', {
      source: r('staged-hooks/pre-commit'),
      destination: hook,
    });
    expect(copied.error.code).toBe('FILE_POLICY_DENIED');
    rmSync(r('shared-hooks'), { recursive: true });
    const moved = await client.callError('move_path', { source: r('staged-hooks'), destination: r('shared-hooks') });
    expect(moved.error.code).toBe('FILE_POLICY_DENIED');
    expect(existsSync(hook)).toBe(false);
    // A repository created after the first search (a new directory level, deeper still) is found too.
    mkdirSync(r('group/sub/deep/x/y'), { recursive: true });
    git(r('group/sub/deep/x/y'), 'init', '-q');
    git(r('group/sub/deep/x/y'), 'config', 'core.hooksPath', r('later-hooks'));
    // The server reuses a root's list of repositories for up to REPOSITORY_SEARCH_REUSE_MS (2 s; the file tools
    // cannot create one): a repository another process just made is guarded once that has passed.
    await new Promise((done) => setTimeout(done, 2_100));
    const later = await client.callError('write_file', { path: r('later-hooks/post-checkout'), content: 'x\n' });
    expect(later.error.details).toMatchObject({ source: 'builtin', rule: 'hooks_dir' });
    expect(existsSync(r('later-hooks'))).toBe(false);
    git(r('group/sub/deep'), 'commit', '-qm', 'user commit');
    expect(existsSync(MARK)).toBe(false);
    // The rest of the root stays writable.
    await client.callOk('write_file', { path: r('group/notes.txt'), content: 'fine\n' });
  });
});
