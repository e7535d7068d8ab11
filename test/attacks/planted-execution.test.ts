/**
 * Planted execution (docs/security.md "Execution-bearing files and git directories"), through the real server over
 * stdio, against real git repositories built by real git:
 *  - each git-directory shape — a bare `repo.git` with a linked work tree, a `--separate-git-dir` target, the
 *    `worktrees/NAME` admin dir, a common dir named only by `commondir` (no HEAD of its own), a `core.hooksPath`
 *    directory — refuses every mutating tool (write_file create and overwrite, edit_file, apply_patch create and
 *    modify, create_directory, copy_path into, move_path into and out of, delete_path, replace_in_files) with
 *    FILE_POLICY_DENIED source builtin, and its bytes are unchanged;
 *  - afterwards the USER's own plain git (status and a commit, in the work tree) runs nothing planted: the marker
 *    file outside the root is never created — and a control shows the same plant, written directly, does run;
 *  - each execution-bearing configuration file: write_file, edit_file, apply_patch (create and modify), copy_path
 *    and move_path onto it are refused by default and allowed with --allow-exec-config; read_file works either way;
 *    a directory moved or copied so that it lands as `.claude/settings.json` is refused too, and so are deleting one
 *    or moving it away;
 *  - what an attacker tries next: a repository built entry by entry (any tool, any case, two servers racing), a `.git`
 *    file in every spelling, links (symbolic: refused on the target; hard: replaced, not written through), renames
 *    of a git or hooks directory, core.hooksPath absolute, `~/`, shared by sibling repositories.
 */
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXEC_CONFIG } from '../../src/policy/exec-config.js';
import { connect, type TestClient } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({ root: {}, state: {}, home: {}, outside: {} }, 'fs-tools-planted-');
const R = path.join(T.dir, 'root');
const HOME = path.join(T.dir, 'home');
const MARK = path.join(T.dir, 'outside', 'marker');

/** The environment of the user's git and of the server: no system or global config of this machine. */
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

/** The user's plain git in `cwd`. */
function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: cleanEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

const FSMONITOR = `[core]\n\tfsmonitor = "touch ${MARK}; false"\n`;
const HOOK = `#!/bin/sh\ntouch ${MARK}\n`;

/** One protected directory and how to attack it. */
interface Shape {
  name: string;
  /** The protected directory (relative to R). */
  dir: string;
  /** An existing file in it the user's git reads (relative to R). */
  existing: string;
  /** Text to add to `existing` that would run the marker on the user's next git command. */
  plant: string;
  /** The user's work tree. */
  workTree: string;
  rule: 'git_dir' | 'hooks_dir';
}

const SHAPES: Shape[] = [
  {
    name: 'bare repo.git',
    dir: 'bare/repo.git',
    existing: 'bare/repo.git/config',
    plant: FSMONITOR,
    workTree: 'bare/main',
    rule: 'git_dir',
  },
  {
    name: '--separate-git-dir target',
    dir: 'sep/gitdir',
    existing: 'sep/gitdir/config',
    plant: FSMONITOR,
    workTree: 'sep/wt',
    rule: 'git_dir',
  },
  {
    name: 'worktrees/NAME admin dir',
    dir: 'wtl/repo.git/worktrees/linked',
    existing: 'wtl/repo.git/worktrees/linked/config.worktree',
    plant: FSMONITOR,
    workTree: 'wtl/linked',
    rule: 'git_dir',
  },
  {
    name: 'common dir named by commondir (no HEAD)',
    dir: 'cd/common',
    existing: 'cd/common/config',
    plant: FSMONITOR,
    workTree: 'cd/wt',
    rule: 'git_dir',
  },
  {
    name: 'core.hooksPath directory',
    dir: 'hp/repo/.githooks',
    existing: 'hp/repo/.githooks/pre-commit',
    plant: `touch ${MARK}\n`,
    workTree: 'hp/repo',
    rule: 'hooks_dir',
  },
];

const r = (rel: string) => path.join(R, rel);

function buildRepositories(): void {
  mkdirSync(r('src-repo'));
  git(r('src-repo'), 'init', '-q', '-b', 'main');
  writeFileSync(r('src-repo/a.txt'), 'a\n');
  git(r('src-repo'), 'add', 'a.txt');
  git(r('src-repo'), 'commit', '-q', '-m', 'init');
  // A bare repository and a linked work tree beside it (the layout).
  mkdirSync(r('bare'));
  git(R, 'clone', '-q', '--bare', r('src-repo'), r('bare/repo.git'));
  git(R, '--git-dir', r('bare/repo.git'), 'worktree', 'add', '-q', r('bare/main'));
  // --separate-git-dir.
  git(R, 'init', '-q', '-b', 'main', `--separate-git-dir=${r('sep/gitdir')}`, r('sep/wt'));
  writeFileSync(r('sep/wt/a.txt'), 'a\n');
  git(r('sep/wt'), 'add', 'a.txt');
  git(r('sep/wt'), 'commit', '-q', '-m', 'init');
  // worktrees/NAME with per-worktree config (extensions.worktreeConfig, set by the user).
  mkdirSync(r('wtl'));
  git(R, 'clone', '-q', '--bare', r('src-repo'), r('wtl/repo.git'));
  git(R, '--git-dir', r('wtl/repo.git'), 'worktree', 'add', '-q', r('wtl/linked'));
  // git-worktree(1): with worktreeConfig, core.bare must leave the common config.
  git(R, '--git-dir', r('wtl/repo.git'), 'config', '--unset', 'core.bare');
  git(r('wtl/linked'), 'config', 'extensions.worktreeConfig', 'true');
  git(r('wtl/linked'), 'config', '--worktree', 'user.note', 'mine');
  // A common dir named only by an admin dir's commondir, with no HEAD of its own.
  mkdirSync(r('cd'));
  git(R, 'clone', '-q', '--bare', r('src-repo'), r('cd/common'));
  git(R, '--git-dir', r('cd/common'), 'worktree', 'add', '-q', r('cd/wt'));
  renameSync(r('cd/common/worktrees/wt'), r('cd/admin'));
  rmdirSync(r('cd/common/worktrees'));
  writeFileSync(r('cd/admin/commondir'), '../common\n');
  writeFileSync(r('cd/admin/gitdir'), `${r('cd/wt/.git')}\n`);
  writeFileSync(r('cd/wt/.git'), `gitdir: ${r('cd/admin')}\n`);
  renameSync(r('cd/common/HEAD'), r('cd/common/HEAD.orig'));
  // core.hooksPath (relative to the work tree) with an executable hook the user wrote.
  mkdirSync(r('hp'));
  git(r('hp'), 'clone', '-q', r('src-repo'), r('hp/repo'));
  git(r('hp/repo'), 'config', 'core.hooksPath', '.githooks');
  mkdirSync(r('hp/repo/.githooks'));
  writeFileSync(r('hp/repo/.githooks/pre-commit'), '#!/bin/sh\n: the user hook\n');
  chmodSync(r('hp/repo/.githooks/pre-commit'), 0o755);
  // Every work tree answers `git status` as the user set it up.
  for (const s of SHAPES) git(r(s.workTree), 'status', '--short');
  // Files outside the protected directories to copy and move in.
  writeFileSync(r('incoming.txt'), HOOK);
}

let client: TestClient;
beforeAll(async () => {
  buildRepositories();
  client = await connect('modern', { args: ['--state-dir', path.join(T.dir, 'state'), R], env: cleanEnv() });
}, 60_000);
afterAll(async () => {
  await client?.close();
  T.cleanup();
});

function expectBuiltin(envelope: { error: Record<string, any> }, rule: string): void {
  expect(envelope.error.code).toBe('FILE_POLICY_DENIED');
  expect(envelope.error.details).toMatchObject({ source: 'builtin', rule });
}

describe.each(SHAPES)('$name', (shape) => {
  it('every mutating tool is refused (FILE_POLICY_DENIED builtin) and nothing in it changes', async () => {
    const before = snapshotTree(r(shape.dir));
    const existing = r(shape.existing);
    const fresh = path.join(r(shape.dir), 'post-checkout');
    const text = readFileSync(existing, 'utf8');
    const firstLine = text.split('\n')[0];
    // Reading stays allowed (and gives the hash an overwrite needs).
    const read = await client.callOk('read_file', { path: existing });
    const hash = read.content_hash as string;
    const rel = (p: string) => path.relative(R, p);
    const attempts: Array<[string, Record<string, unknown>]> = [
      ['write_file', { path: fresh, content: HOOK }],
      ['write_file', { path: existing, content: text + shape.plant, expected_hash: hash }],
      ['edit_file', { path: existing, edits: [{ old_text: firstLine, new_text: `${shape.plant}${firstLine}` }] }],
      ['apply_patch', { patch: `--- /dev/null\n+++ b/${rel(fresh)}\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch ${MARK}\n` }],
      [
        'apply_patch',
        {
          patch: `--- a/${rel(existing)}\n+++ b/${rel(existing)}\n@@ -1,1 +1,2 @@\n+${shape.plant.split('\n')[0]}\n ${firstLine}\n`,
          expected_hashes: { [rel(existing)]: hash },
        },
      ],
      ['create_directory', { path: path.join(r(shape.dir), 'newdir') }],
      ['copy_path', { source: r('incoming.txt'), destination: fresh }],
      ['move_path', { source: r('incoming.txt'), destination: fresh }],
      ['move_path', { source: existing, destination: r('taken-out.txt') }],
      ['delete_path', { path: existing, expected_hash: hash }],
      ['replace_in_files', { path: r(shape.dir), query: firstLine, replacement: shape.plant.split('\n')[0] }],
    ];
    for (const [tool, args] of attempts) {
      const envelope = await client.callError(tool, args);
      expect(envelope.error.code, `${tool} ${JSON.stringify(args).slice(0, 80)}`).toBe('FILE_POLICY_DENIED');
      expectBuiltin(envelope, shape.rule);
    }
    expect(snapshotTree(r(shape.dir))).toEqual(before);
    expect(existsSync(r('incoming.txt'))).toBe(true);
    expect(existsSync(r('taken-out.txt'))).toBe(false);
  });

  it("the user's own git status and commit in the work tree run nothing planted", () => {
    git(r(shape.workTree), 'status', '--short');
    git(r(shape.workTree), 'commit', '-q', '--allow-empty', '-m', 'user commit');
    expect(existsSync(MARK)).toBe(false);
  });
});

describe('control: the same plants, written directly, do run', () => {
  it.each(SHAPES)('$name', (shape) => {
    expect(existsSync(MARK)).toBe(false);
    appendFileSync(r(shape.existing), shape.plant);
    try {
      git(r(shape.workTree), 'status', '--short');
    } catch {
      /* fsmonitor's `false` may make git complain; the marker is what counts */
    }
    if (!existsSync(MARK)) git(r(shape.workTree), 'commit', '-q', '--allow-empty', '-m', 'control');
    expect(existsSync(MARK)).toBe(true);
    execFileSync('rm', ['-f', MARK]);
    writeFileSync(r(shape.existing), readFileSync(r(shape.existing), 'utf8').replace(shape.plant, ''));
  });
});

describe('execution-bearing configuration', () => {
  const E = makeTree({}, 'fs-tools-exec-config-');
  let allowed: TestClient;
  let denied: TestClient;
  beforeAll(async () => {
    for (const side of ['default', 'allowed']) {
      for (const entry of EXEC_CONFIG) {
        const rel = entry.components.join('/');
        for (const p of [`${side}/${rel}`, `${side}/nested/${rel}`]) {
          mkdirSync(path.dirname(path.join(E.dir, p)), { recursive: true });
          writeFileSync(path.join(E.dir, p), 'original\n');
        }
        mkdirSync(path.join(E.dir, side, 'fresh', ...entry.components.slice(0, -1)), { recursive: true });
      }
      writeFileSync(path.join(E.dir, side, 'payload.txt'), 'planted\n');
    }
    const state = (n: string) => path.join(E.dir, `state-${n}`);
    denied = await connect('modern', { args: ['--state-dir', state('d'), path.join(E.dir, 'default')] });
    allowed = await connect('modern', {
      args: ['--allow-exec-config', '--state-dir', state('a'), path.join(E.dir, 'allowed')],
    });
  }, 60_000);
  afterAll(async () => {
    await denied?.close();
    await allowed?.close();
    E.cleanup();
  });

  /** The calls on one entry: each must be refused by default and succeed with the flag. */
  function attempts(base: string, rel: string, n: number): Array<[string, Record<string, unknown>]> {
    const top = path.join(base, rel);
    const nested = path.join(base, 'nested', rel);
    const newAt = (tool: string) => path.join(base, `new-${tool}-${n}`, rel);
    return [
      ['write_file', { path: newAt('write'), content: 'planted\n', create_dirs: true }],
      ['edit_file', { path: top, edits: [{ old_text: 'original', new_text: 'planted' }] }],
      ['apply_patch', { patch: `--- /dev/null\n+++ b/new-patch-${n}/${rel}\n@@ -0,0 +1 @@\n+planted\n`, path: base }],
      [
        'apply_patch',
        { patch: `--- a/nested/${rel}\n+++ b/nested/${rel}\n@@ -1 +1 @@\n-original\n+planted\n`, path: base },
      ],
      ['copy_path', { source: path.join(base, 'payload.txt'), destination: path.join(base, 'fresh', rel) }],
      ['move_path', { source: path.join(base, 'payload.txt'), destination: nested, overwrite: true }],
    ];
  }

  it.each(EXEC_CONFIG.map((e, n) => [e.components.join('/'), n] as const))(
    '%s: refused by default, allowed with --allow-exec-config, readable either way',
    async (rel, n) => {
      const base = path.join(E.dir, 'default');
      const before = snapshotTree(base);
      for (const p of [path.join(base, rel), path.join(base, 'nested', rel)]) {
        expect((await denied.callOk('read_file', { path: p })).content).toBe('original\n');
      }
      for (const [tool, args] of attempts(base, rel, n)) {
        const envelope = await denied.callError(tool, args);
        expect(envelope.error.code, tool).toBe('FILE_POLICY_DENIED');
        expect(envelope.error.details).toMatchObject({
          source: 'builtin',
          rule: 'exec_config',
          flag: '--allow-exec-config',
        });
        expect(envelope.error.message).toMatch(/execution-bearing configuration \(.+\).*--allow-exec-config/);
      }
      expect(snapshotTree(base)).toEqual(before);

      const abase = path.join(E.dir, 'allowed');
      for (const p of [path.join(abase, rel), path.join(abase, 'nested', rel)]) {
        expect((await allowed.callOk('read_file', { path: p })).content).toBe('original\n');
      }
      for (const [tool, args] of attempts(abase, rel, n)) {
        await allowed.callOk(tool, args);
        if (tool === 'move_path') writeFileSync(path.join(abase, 'payload.txt'), 'planted\n');
      }
      expect(readFileSync(path.join(abase, rel), 'utf8')).toBe('planted\n');
      expect(readFileSync(path.join(abase, 'nested', rel), 'utf8')).toBe('planted\n');
      expect(readFileSync(path.join(abase, 'fresh', rel), 'utf8')).toBe('planted\n');
      expect(readFileSync(path.join(abase, `new-write-${n}`, rel), 'utf8')).toBe('planted\n');
      expect(readFileSync(path.join(abase, `new-patch-${n}`, rel), 'utf8')).toBe('planted\n');
    },
  );

  it('a directory moved or copied so that it lands as the configuration directory is refused', async () => {
    const base = path.join(E.dir, 'default');
    mkdirSync(path.join(base, 'tmp'));
    writeFileSync(path.join(base, 'tmp', 'settings.json'), '{"hooks":{}}\n');
    mkdirSync(path.join(base, 'tmp2'));
    writeFileSync(path.join(base, 'tmp2', 'tasks.json'), '{}\n');
    mkdirSync(path.join(base, 'land', '.claude'), { recursive: true });
    rmdirSync(path.join(base, 'land', '.claude'));
    mkdirSync(path.join(base, '.claude-x'));
    writeFileSync(path.join(base, '.claude-x', 'settings.json'), '{"hooks":{}}\n');
    const before = snapshotTree(base);
    const to = (...p: string[]) => path.join(base, ...p);
    const refusals = [
      await denied.callError('move_path', { source: to('tmp'), destination: to('land', '.claude') }),
      await denied.callError('copy_path', { source: to('tmp'), destination: to('land', '.claude'), recursive: true }),
      await denied.callError('move_path', { source: to('tmp2'), destination: to('land', '.VSCode') }),
      await denied.callError('move_path', {
        source: to('.claude-x', 'settings.json'),
        destination: to('land', '.claude', 'settings.json'),
      }),
      // Removing one removes the user's restrictions too (permissions.deny): deleting or moving it away is refused.
      await denied.callError('delete_path', { path: to('.mcp.json') }),
      await denied.callError('move_path', { source: to('.envrc'), destination: to('envrc.bak') }),
    ];
    for (const envelope of refusals) {
      expect(envelope.error.code, JSON.stringify(envelope)).toBe('FILE_POLICY_DENIED');
      expect(envelope.error.details).toMatchObject({ source: 'builtin', rule: 'exec_config' });
    }
    expect(snapshotTree(base)).toEqual(before);
  });
});

describe('what an attacker tries next', () => {
  const call = (tool: string, args: Record<string, unknown>) => client.callError(tool, args);
  // The repositories the last two cases need, made by the user (another process) when this describe starts: the
  // server reuses a root's list of repositories for up to REPOSITORY_SEARCH_REUSE_MS (2 s; the file tools cannot
  // create one), so a repository made meanwhile is guarded once that has passed. Made here, the 2 s pass during the
  // cases before them instead of in two waits of their own; `reposKnown` waits for whatever is left.
  let reposMadeAt = 0;
  beforeAll(() => {
    // A hooks directory shared by a repository below the root, outside its work tree.
    git(R, 'clone', '-q', r('src-repo'), r('tree-svc'));
    mkdirSync(r('tree-tools/githooks'), { recursive: true });
    writeFileSync(r('tree-tools/githooks/pre-commit'), '#!/bin/sh\n: user hook\n');
    chmodSync(r('tree-tools/githooks/pre-commit'), 0o755);
    git(r('tree-svc'), 'config', 'core.hooksPath', '../tree-tools/githooks');
    // Two repositories directly below the root sharing ../shared-hooks (outside each work tree).
    for (const name of ['svc-a', 'svc-b']) {
      git(R, 'clone', '-q', r('src-repo'), r(name));
      git(r(name), 'config', 'core.hooksPath', '../shared-hooks');
    }
    reposMadeAt = Date.now();
  });
  const reposKnown = () => new Promise((done) => setTimeout(done, Math.max(0, reposMadeAt + 2_100 - Date.now())));
  const denied = (envelope: { error: Record<string, any> }, rule: string) => {
    expect(envelope.error.code, JSON.stringify(envelope.error)).toBe('FILE_POLICY_DENIED');
    expect(envelope.error.details).toMatchObject({ source: 'builtin', rule });
  };

  it('a repository built entry by entry: the second of HEAD/objects/refs/commondir is refused, in any tool and case', async () => {
    await client.callOk('create_directory', { path: r('build/x/objects') });
    denied(await call('create_directory', { path: r('build/x/refs') }), 'git_dir');
    denied(await call('create_directory', { path: r('build/x/REFS') }), 'git_dir');
    denied(await call('write_file', { path: r('build/x/HEAD'), content: 'ref: refs/heads/main\n' }), 'git_dir');
    denied(
      await call('write_file', { path: r('build/x/refs/heads/main'), content: '0'.repeat(40), create_dirs: true }),
      'git_dir',
    );
    denied(
      await call('apply_patch', { patch: '--- /dev/null\n+++ b/build/x/HEAD\n@@ -0,0 +1 @@\n+ref: refs/heads/main\n' }),
      'git_dir',
    );
    await client.callOk('create_directory', { path: r('build/stage/refs/heads') });
    denied(await call('move_path', { source: r('build/stage/refs'), destination: r('build/x/refs') }), 'git_dir');
    denied(
      await call('copy_path', { source: r('build/stage/refs'), destination: r('build/x/refs'), recursive: true }),
      'git_dir',
    );
    // A worktree admin dir: HEAD, then commondir naming the user's common dir.
    await client.callOk('write_file', {
      path: r('build/y/HEAD'),
      content: 'ref: refs/heads/main\n',
      create_dirs: true,
    });
    denied(await call('write_file', { path: r('build/y/commondir'), content: `${r('bare/repo.git')}\n` }), 'git_dir');
    // A directory named like a bare repository is nothing special until it has the shape.
    await client.callOk('write_file', { path: r('build/z.git/notes.txt'), content: 'n\n', create_dirs: true });
    expect(snapshotTree(r('build/x'))).toEqual({ '': expect.anything(), objects: expect.anything() });
    expect(Object.keys(snapshotTree(r('build/y'))).sort()).toEqual(['', 'HEAD']);
  });

  it('two servers racing to add the two halves of a repository never both succeed', async () => {
    const other = await connect('modern', { args: ['--state-dir', path.join(T.dir, 'state'), R], env: cleanEnv() });
    try {
      for (let i = 0; i < 8; i++) {
        const d = r(`race/r${i}`);
        mkdirSync(d, { recursive: true });
        const [a, b] = await Promise.all([
          client.call('write_file', { path: path.join(d, 'HEAD'), content: 'ref: refs/heads/main\n' }),
          other.call('create_directory', { path: path.join(d, 'refs') }),
        ]);
        expect([a.isError, b.isError].filter((e) => !e).length, `round ${i}`).toBeLessThanOrEqual(1);
        expect(existsSync(path.join(d, 'HEAD')) && existsSync(path.join(d, 'refs'))).toBe(false);
      }
    } finally {
      await other.close();
    }
  });

  it('a .git file (or directory) in any spelling is never written, created or moved into place', async () => {
    await client.callOk('create_directory', { path: r('build/wt2') });
    for (const name of ['.git', '.GIT', '.git ', '.git.', 'git~1', '.g\u200cit']) {
      denied(
        await call('write_file', { path: r(`build/wt2/${name}`), content: `gitdir: ${r('build/y')}\n` }),
        'git_dir',
      );
    }
    writeFileSync(r('build/gitfile.txt'), `gitdir: ${r('build/y')}\n`);
    denied(await call('move_path', { source: r('build/gitfile.txt'), destination: r('build/wt2/.git') }), 'git_dir');
    denied(await call('copy_path', { source: r('build/gitfile.txt'), destination: r('build/wt2/.git') }), 'git_dir');
    expect(snapshotTree(r('build/wt2'))).toEqual({ '': expect.anything() });
  });

  it('links: a symlink to a git directory or to exec config is refused on its target; a hard link is replaced, not written through', async () => {
    execFileSync('ln', ['-s', r('bare/repo.git'), r('links-repo')]);
    denied(await call('write_file', { path: r('links-repo/config'), content: FSMONITOR }), 'git_dir');
    denied(await call('write_file', { path: r('links-repo/hooks/post-checkout'), content: HOOK }), 'git_dir');
    writeFileSync(r('.mcp.json'), '{"mcpServers":{}}\n');
    execFileSync('ln', ['-s', '.mcp.json', r('mcp-link.json')]);
    await client.callOk('read_file', { path: r('mcp-link.json') });
    denied(
      await call('write_file', { path: r('mcp-link.json'), content: '{"mcpServers":{"x":{"command":"sh"}}}\n' }),
      'exec_config',
    );
    // Hard links the user made: writing the other name replaces that entry; the guarded file keeps its bytes.
    const config = readFileSync(r('bare/repo.git/config'));
    execFileSync('ln', [r('bare/repo.git/config'), r('config-hardlink')]);
    await client.callOk('read_file', { path: r('config-hardlink') });
    await client.callOk('write_file', { path: r('config-hardlink'), content: FSMONITOR });
    expect(readFileSync(r('bare/repo.git/config'))).toEqual(config);
    execFileSync('ln', [r('.mcp.json'), r('mcp-hardlink.json')]);
    await client.callOk('read_file', { path: r('mcp-hardlink.json') });
    await client.callOk('edit_file', {
      path: r('mcp-hardlink.json'),
      edits: [{ old_text: '{}', new_text: '{"x":1}' }],
    });
    expect(readFileSync(r('.mcp.json'), 'utf8')).toBe('{"mcpServers":{}}\n');
    git(r('bare/main'), 'status', '--short');
    expect(existsSync(MARK)).toBe(false);
  });

  it('renames: a git directory or hooks directory is moved or deleted neither as a whole nor by its parent name', async () => {
    denied(await call('move_path', { source: r('bare/repo.git'), destination: r('bare/renamed.git') }), 'git_dir');
    denied(await call('delete_path', { path: r('sep/gitdir'), recursive: true }), 'git_dir');
    denied(
      await call('move_path', { source: r('hp/repo/.githooks'), destination: r('hp/repo/old-hooks') }),
      'hooks_dir',
    );
    // Replacing the hooks directory by another one.
    await client.callOk('write_file', { path: r('hp/evil/pre-commit'), content: HOOK, create_dirs: true });
    denied(
      await call('move_path', { source: r('hp/evil'), destination: r('hp/repo/.githooks'), overwrite: true }),
      'hooks_dir',
    );
    expect(existsSync(r('bare/repo.git/config')) && existsSync(r('hp/repo/.githooks/pre-commit'))).toBe(true);
  });

  it('whole trees: a directory carrying a git directory or a hooks directory is moved, copied and deleted by no tool', async () => {
    const before = snapshotTree(r('bare'));
    for (const [tool, args] of [
      ['move_path', { source: r('bare'), destination: r('bare-moved') }],
      ['copy_path', { source: r('bare'), destination: r('bare-copy'), recursive: true }],
      ['delete_path', { path: r('bare'), recursive: true }],
      ['move_path', { source: r('cd'), destination: r('cd-moved') }],
      ['copy_path', { source: r('cd/common'), destination: r('common-copy'), recursive: true }],
    ] as const) {
      denied(await call(tool, args), 'git_dir');
    }
    expect(snapshotTree(r('bare'))).toEqual(before);
    // tree-svc (made in beforeAll) shares ../tree-tools/githooks, outside its work tree.
    await reposKnown();
    denied(await call('move_path', { source: r('tree-tools'), destination: r('tree-tools-old') }), 'hooks_dir');
    denied(await call('delete_path', { path: r('tree-tools'), recursive: true }), 'hooks_dir');
    writeFileSync(r('stage-hooks.txt'), HOOK);
    mkdirSync(r('stage-dir'));
    writeFileSync(r('stage-dir/post-commit'), HOOK);
    denied(
      await call('copy_path', { source: r('stage-dir'), destination: r('tree-tools/githooks/more'), recursive: true }),
      'hooks_dir',
    );
    denied(
      await call('move_path', { source: r('stage-hooks.txt'), destination: r('tree-tools/githooks/post-commit') }),
      'hooks_dir',
    );
    expect(readFileSync(r('tree-tools/githooks/pre-commit'), 'utf8')).toBe('#!/bin/sh\n: user hook\n');
    git(r('tree-svc'), 'commit', '-q', '--allow-empty', '-m', 'user commit');
    expect(existsSync(MARK)).toBe(false);
  });

  it('core.hooksPath absolute, `~/`, shared by sibling repositories, and set by a later config change', async () => {
    // svc-a and svc-b (made in beforeAll) share ../shared-hooks, outside each work tree.
    await reposKnown();
    denied(
      await call('write_file', { path: r('shared-hooks/pre-commit'), content: HOOK, create_dirs: true }),
      'hooks_dir',
    );
    // Absolute and `~/` (the server's HOME is T/home; the user sets it inside the work tree here).
    git(r('svc-a'), 'config', 'core.hooksPath', r('svc-a/abs-hooks'));
    denied(
      await call('write_file', { path: r('svc-a/abs-hooks/pre-commit'), content: HOOK, create_dirs: true }),
      'hooks_dir',
    );
    await client.callOk('write_file', { path: r('svc-a/src/ok.txt'), content: 'fine\n', create_dirs: true });
    git(r('svc-b'), 'config', 'core.hooksPath', '~/hooks-in-home');
    const other = await connect('modern', {
      args: ['--state-dir', path.join(T.dir, 'state'), R],
      env: { ...cleanEnv(), HOME: r('svc-b') },
    });
    try {
      const e = await other.callError('write_file', {
        path: r('svc-b/hooks-in-home/pre-commit'),
        content: HOOK,
        create_dirs: true,
      });
      denied(e, 'hooks_dir');
    } finally {
      await other.close();
    }
    expect(
      existsSync(r('shared-hooks')) || existsSync(r('svc-a/abs-hooks')) || existsSync(r('svc-b/hooks-in-home')),
    ).toBe(false);
    writeFileSync(r('svc-a/a.txt'), 'changed\n');
    git(r('svc-a'), 'commit', '-q', '-am', 'user commit');
    expect(existsSync(MARK)).toBe(false);
  });
});
