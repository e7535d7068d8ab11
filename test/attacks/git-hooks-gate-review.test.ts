/**
 * Review of the name gate on the whole-root repository search (docs/security.md "Execution-bearing files and git
 * directories"), through the real server over stdio and the user's real git. The gate ran the search only for
 * entries named as git hooks; two places it guards are reached by other names:
 *  - a configuration file a repository's config includes from outside that repository's work tree (a shared
 *    `../shared/gitconfig` beside it in the root): any name, and git reads it as its own config, so a `core.fsmonitor`
 *    written there runs on the user's `git status`;
 *  - a file inside a shared hooks directory (`core.hooksPath = ../tools/githooks`) that a hook there runs (a
 *    `common.sh` the `pre-commit` sources): the hooks directory is guarded "and everything in it".
 * Each case has a control that shows the same bytes written directly do run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({ root: {}, state: {}, home: {}, outside: {} }, 'fs-tools-hooks-gate-');
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
/** The user's git, whose failure (a planted fsmonitor exits 1) does not matter: the marker is what counts. */
function userGit(cwd: string, ...args: string[]): void {
  try {
    git(cwd, ...args);
  } catch {
    /* the marker decides */
  }
}
const FSMONITOR = `[core]\n\tfsmonitor = "touch ${MARK}; false"\n`;
const PLANT = `touch ${MARK}\n`;

/** A repository at `dir` with one committed file. */
function repo(dir: string): void {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q');
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  git(dir, 'add', 'a.txt');
  git(dir, 'commit', '-qm', 'init');
}

let client: TestClient;
beforeAll(async () => {
  // Shared configuration beside the repositories, included by each (one present, one optional and absent).
  mkdirSync(r('shared'));
  writeFileSync(r('shared/gitconfig'), '[user]\n\tname = shared\n');
  repo(r('svc'));
  git(r('svc'), 'config', 'include.path', '../../shared/gitconfig');
  git(r('svc'), 'config', `includeIf.gitdir:${r('svc')}/.path`, '../../shared/local.gitconfig');
  // A shared hooks directory whose pre-commit sources a helper beside it.
  mkdirSync(r('tools/githooks'), { recursive: true });
  writeFileSync(r('tools/githooks/pre-commit'), '#!/bin/sh\n. "$(dirname "$0")/common.sh"\n', { mode: 0o755 });
  writeFileSync(r('tools/githooks/common.sh'), 'true\n');
  repo(r('app'));
  git(r('app'), 'config', 'core.hooksPath', '../tools/githooks');
  // A hook that is a link to a tracked script (`ln -s ../../scripts/pre-commit .git/hooks/pre-commit`), in the
  // repository's own hooks directory and in a core.hooksPath directory.
  repo(r('linked'));
  mkdirSync(r('linked/scripts'));
  writeFileSync(r('linked/scripts/pre-commit'), '#!/bin/sh\ntrue\n', { mode: 0o755 });
  symlinkSync('../../scripts/pre-commit', r('linked/.git/hooks/pre-commit'));
  repo(r('linked2'));
  mkdirSync(r('linked2/.githooks'));
  writeFileSync(r('hook-scripts-post-commit'), '#!/bin/sh\ntrue\n', { mode: 0o755 });
  symlinkSync('../../hook-scripts-post-commit', r('linked2/.githooks/post-commit'));
  git(r('linked2'), 'config', 'core.hooksPath', '.githooks');
  // A dangling hook link (its script not written yet), and a repository whose whole hooks directory is a link.
  symlinkSync('../../scripts/post-commit', r('linked/.git/hooks/post-commit'));
  repo(r('linkdir'));
  mkdirSync(r('shared-git-hooks'));
  rmSync(r('linkdir/.git/hooks'), { recursive: true });
  symlinkSync('../../shared-git-hooks', r('linkdir/.git/hooks'));
  client = await connect('modern', { args: ['--state-dir', path.join(T.dir, 'state'), R], env: cleanEnv() });
}, 60_000);
afterAll(async () => {
  await client?.close();
  T.cleanup();
});

describe('a configuration file included from outside the including work tree', () => {
  it('control: the planted include runs on the user git status when written directly', () => {
    repo(r('control'));
    git(r('control'), 'config', 'include.path', '../../control-cfg');
    writeFileSync(r('control-cfg'), FSMONITOR);
    userGit(r('control'), 'status', '--short');
    expect(existsSync(MARK)).toBe(true);
    rmSync(MARK);
    rmSync(r('control'), { recursive: true });
    rmSync(r('control-cfg'));
  });

  it('write_file and edit_file of the shared include, and creating the absent one, are refused; git status runs nothing', async () => {
    const p = r('shared/gitconfig');
    const before = readFileSync(p, 'utf8');
    const hash = (await client.callOk('read_file', { path: p })).content_hash as string;
    for (const [tool, args] of [
      ['write_file', { path: p, content: FSMONITOR, expected_hash: hash }],
      ['edit_file', { path: p, edits: [{ old_text: '[user]', new_text: FSMONITOR + '[user]' }] }],
      ['write_file', { path: r('shared/local.gitconfig'), content: FSMONITOR }],
    ] as const) {
      const envelope = await client.callError(tool, args);
      expect(envelope.error.code).toBe('FILE_POLICY_DENIED');
      expect(envelope.error.details).toMatchObject({ source: 'builtin', rule: 'git_dir', reason: 'included_config' });
    }
    writeFileSync(r('staged-cfg'), FSMONITOR);
    const moved = await client.callError('move_path', { source: r('staged-cfg'), destination: p, overwrite: true });
    expect(moved.error.code).toBe('FILE_POLICY_DENIED');
    rmSync(r('staged-cfg'));
    expect(readFileSync(p, 'utf8')).toBe(before);
    expect(existsSync(r('shared/local.gitconfig'))).toBe(false);
    userGit(r('svc'), 'status', '--short');
    expect(existsSync(MARK)).toBe(false);
  });
});

describe('a file a hook runs, inside a shared hooks directory', () => {
  it('control: the planted helper runs on the user git commit when written directly', () => {
    repo(r('control2'));
    mkdirSync(r('control-hooks'));
    writeFileSync(r('control-hooks/pre-commit'), '#!/bin/sh\n. "$(dirname "$0")/common.sh"\n', { mode: 0o755 });
    writeFileSync(r('control-hooks/common.sh'), PLANT);
    git(r('control2'), 'config', 'core.hooksPath', '../control-hooks');
    writeFileSync(r('control2/b.txt'), 'b\n');
    git(r('control2'), 'add', 'b.txt');
    userGit(r('control2'), 'commit', '-qm', 'user commit');
    expect(existsSync(MARK)).toBe(true);
    rmSync(MARK);
    rmSync(r('control2'), { recursive: true });
    rmSync(r('control-hooks'), { recursive: true });
  });

  it('writing, editing or moving onto common.sh in the hooks directory is refused; git commit runs nothing', async () => {
    const p = r('tools/githooks/common.sh');
    const hash = (await client.callOk('read_file', { path: p })).content_hash as string;
    for (const [tool, args] of [
      ['write_file', { path: p, content: PLANT, expected_hash: hash }],
      ['edit_file', { path: p, edits: [{ old_text: 'true', new_text: PLANT }] }],
      ['write_file', { path: r('tools/githooks/other.sh'), content: PLANT }],
    ] as const) {
      const envelope = await client.callError(tool, args);
      expect(envelope.error.code).toBe('FILE_POLICY_DENIED');
      expect(envelope.error.details).toMatchObject({ source: 'builtin', rule: 'hooks_dir', reason: 'core_hookspath' });
    }
    writeFileSync(r('staged.sh'), PLANT);
    const moved = await client.callError('move_path', { source: r('staged.sh'), destination: p, overwrite: true });
    expect(moved.error.code).toBe('FILE_POLICY_DENIED');
    rmSync(r('staged.sh'));
    expect(readFileSync(p, 'utf8')).toBe('true\n');
    expect(existsSync(r('tools/githooks/other.sh'))).toBe(false);
    writeFileSync(r('app/b.txt'), 'b\n');
    git(r('app'), 'add', 'b.txt');
    userGit(r('app'), 'commit', '-qm', 'user commit');
    expect(existsSync(MARK)).toBe(false);
    // The rest of the root stays writable.
    await client.callOk('write_file', { path: r('notes.txt'), content: 'fine\n' });
  });
});

describe('a hook that is a link to a file elsewhere in the root', () => {
  it.each([
    ['.git/hooks/pre-commit -> scripts/pre-commit', 'linked', 'linked/scripts/pre-commit'],
    ['core.hooksPath/.githooks/post-commit -> a file beside the repository', 'linked2', 'hook-scripts-post-commit'],
  ])('%s: writing the target is refused; the user git commit runs nothing', async (_shape, wt, target) => {
    const p = r(target);
    const before = readFileSync(p, 'utf8');
    const hash = (await client.callOk('read_file', { path: p })).content_hash as string;
    const envelope = await client.callError('write_file', {
      path: p,
      content: `#!/bin/sh\n${PLANT}`,
      expected_hash: hash,
    });
    expect(envelope.error.code).toBe('FILE_POLICY_DENIED');
    expect(envelope.error.details).toMatchObject({ source: 'builtin', rule: 'hooks_dir' });
    writeFileSync(r('staged-hook'), `#!/bin/sh\n${PLANT}`, { mode: 0o755 });
    const moved = await client.callError('move_path', { source: r('staged-hook'), destination: p, overwrite: true });
    expect(moved.error.code).toBe('FILE_POLICY_DENIED');
    rmSync(r('staged-hook'));
    expect(readFileSync(p, 'utf8')).toBe(before);
    writeFileSync(r(wt, 'c.txt'), 'c\n');
    git(r(wt), 'add', 'c.txt');
    userGit(r(wt), 'commit', '-qm', 'user commit');
    expect(existsSync(MARK)).toBe(false);
  });
});

describe('a hook reached through a link that does not lead to a file yet', () => {
  it('control: git runs a dangling hook link once its target exists', () => {
    repo(r('control3'));
    symlinkSync('../../hook-target', r('control3/.git/hooks/pre-commit'));
    writeFileSync(r('control3/hook-target'), `#!/bin/sh\n${PLANT}`, { mode: 0o755 });
    writeFileSync(r('control3/b.txt'), 'b\n');
    git(r('control3'), 'add', 'b.txt');
    userGit(r('control3'), 'commit', '-qm', 'user commit');
    expect(existsSync(MARK)).toBe(true);
    rmSync(MARK);
    rmSync(r('control3'), { recursive: true });
  });

  it.each([
    ['a dangling .git/hooks/post-commit link', 'linked', 'linked/scripts/post-commit'],
    ['a .git/hooks directory that is a link', 'linkdir', 'shared-git-hooks/post-commit'],
  ])('%s: creating the file it names is refused; the user git commit runs nothing', async (_shape, wt, target) => {
    const envelope = await client.callError('write_file', { path: r(target), content: `#!/bin/sh\n${PLANT}` });
    expect(envelope.error.code).toBe('FILE_POLICY_DENIED');
    expect(envelope.error.details).toMatchObject({ source: 'builtin', rule: 'hooks_dir' });
    expect(existsSync(r(target))).toBe(false);
    writeFileSync(r(wt, 'd.txt'), 'd\n');
    git(r(wt), 'add', 'd.txt');
    userGit(r(wt), 'commit', '-qm', 'user commit');
    expect(existsSync(MARK)).toBe(false);
  });
});
