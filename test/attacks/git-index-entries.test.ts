/**
 * Attack (docs/security.md "What git may read"): crafted index entries make git read files the server never checked.
 * Before the fix an entry `../../outside-zone/notes.txt` (or an absolute path) made git_diff return the outside file
 * and git_status reveal that it exists. Real server over stdio, real git:
 * - a hostile repository whose `.git/index` carries `../x`, `/abs/x`, `.git/config`, `.GIT/config`, `x/../../y`, a
 *   name with a NUL inside its declared length, the same through v4 prefix compression, and an entry under a work-tree
 *   directory link that leads outside (`link/notes.txt`);
 * - the agent's own way in: a bare repository with a linked work tree (`repo.git/`, `repo.git/worktrees/main/`, work
 *   tree `main/` with a `.git` file), the index written into `repo.git/worktrees/main/` (through write_file when the
 *   server lets it, else with plain fs as a hostile repository would ship it).
 * - an untracked nested repository whose `.git` file names a git dir outside the roots (shown, or ignored by a
 *   `.gitignore`): plain git's status tells whether that outside directory is a repository.
 * Each attack is first shown armed (plain git in that repository prints the outside file). Then git_status, git_diff
 * (work tree, staged, paths, paged) and write_file with expected_status_hash are refused with a clear code, no result
 * carries an outside byte or the outside path, and every result is byte-identical whether or not the outside file
 * exists (nothing tells its existence).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, type CallResult, type TestClient } from '../helpers/server.js';
import { blobId, buildIndex, type IndexEntrySpec } from '../helpers/git-index.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {} }, 'fs-tools-index-attack-');
const HOME = path.join(scratch.dir, 'home');
const ROOT = path.join(scratch.dir, 'root-zone');
const OUTSIDE = path.join(scratch.dir, 'outside-zone');
const MARK = 'OUTSIDE_INDEX_MARKER';
mkdirSync(ROOT);
afterAll(() => scratch.cleanup());

function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return {
    ...env,
    HOME,
    XDG_CONFIG_HOME: HOME,
    GIT_CONFIG_NOSYSTEM: '1',
    LC_ALL: 'C',
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@e.invalid',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@e.invalid',
  };
}
const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, { cwd, env: gitEnv(), encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });

/** The outside files: present, or moved away (to show their existence does not change any answer). */
function outside(present: boolean): void {
  rmSync(OUTSIDE, { recursive: true, force: true });
  if (!present) return;
  mkdirSync(path.join(OUTSIDE, 'dir'), { recursive: true });
  writeFileSync(path.join(OUTSIDE, 'notes.txt'), `${MARK} notes\n`);
  writeFileSync(path.join(OUTSIDE, 'dir', 'notes.txt'), `${MARK} dir\n`);
}

const EMPTY = blobId('');
const A = blobId('a\n');

/** A committed repository (a.txt, x/keep) whose object store holds the empty blob the crafted entries name. */
function plainRepo(dir: string): string {
  mkdirSync(path.join(dir, 'x'), { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  writeFileSync(path.join(dir, 'x', 'keep'), '');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'i');
  return dir;
}

/** An index with the legitimate entries plus the crafted one, sorted as git sorts them. */
function craftedIndex(bad: IndexEntrySpec, version: 2 | 4 = 2, extra: IndexEntrySpec[] = []): Buffer {
  const entries: IndexEntrySpec[] = [
    { path: 'a.txt', oid: A, size: 2 },
    { path: 'x/keep', oid: EMPTY },
    { size: 1, ...bad },
    ...extra,
  ];
  const key = (e: IndexEntrySpec) => (typeof e.path === 'string' ? Buffer.from(e.path) : e.path);
  entries.sort((p, q) => Buffer.compare(key(p), key(q)));
  return buildIndex({ version, entries });
}

interface Case {
  name: string;
  /** The crafted entries, given the work tree top. */
  entry: (top: string) => { bad: IndexEntrySpec; version?: 2 | 4; extra?: IndexEntrySpec[] };
  code: string;
  reason: string;
  /** Plain git's `git diff` in this repository prints the outside file (the attack is armed). */
  armed: boolean;
  setup?: (top: string) => void;
}

const CASES: Case[] = [
  {
    name: 'dotdot',
    entry: (top) => ({ bad: { path: path.relative(top, path.join(OUTSIDE, 'notes.txt')), oid: EMPTY } }),
    code: 'VALIDATION',
    reason: 'unsupported_repository',
    armed: true,
  },
  {
    name: 'absolute',
    entry: () => ({ bad: { path: path.join(OUTSIDE, 'notes.txt'), oid: EMPTY } }),
    code: 'VALIDATION',
    reason: 'unsupported_repository',
    armed: true,
  },
  {
    name: 'x-dotdot',
    entry: (top) => ({ bad: { path: `x/../${path.relative(top, path.join(OUTSIDE, 'notes.txt'))}`, oid: EMPTY } }),
    code: 'VALIDATION',
    reason: 'unsupported_repository',
    armed: true,
  },
  {
    name: 'v4-prefix',
    // `..a` then `../…`: the second name is built from the first by prefix compression.
    entry: (top) => ({
      bad: { path: path.relative(top, path.join(OUTSIDE, 'notes.txt')), oid: EMPTY },
      extra: [{ path: '..a', oid: EMPTY }],
      version: 4,
    }),
    code: 'VALIDATION',
    reason: 'unsupported_repository',
    armed: true,
  },
  {
    name: 'dot-git',
    entry: () => ({ bad: { path: '.git/config', oid: EMPTY } }),
    code: 'VALIDATION',
    reason: 'unsupported_repository',
    armed: false,
  },
  {
    name: 'dot-GIT',
    entry: () => ({ bad: { path: '.GIT/config', oid: EMPTY } }),
    code: 'VALIDATION',
    reason: 'unsupported_repository',
    armed: false,
  },
  {
    name: 'nul',
    // Declared length covers `y\0/../…`: a reader that trusts it and one that stops at the NUL disagree.
    entry: (top) => {
      const name = Buffer.from(`y\0/${path.relative(top, path.join(OUTSIDE, 'notes.txt'))}`);
      return { bad: { path: name, oid: EMPTY, nameLength: name.length } };
    },
    code: 'IO_ERROR',
    reason: 'corrupt_repository',
    armed: false,
  },
  {
    name: 'dir-link',
    entry: () => ({ bad: { path: 'link/notes.txt', oid: EMPTY } }),
    setup: (top) => symlinkSync(path.join(OUTSIDE, 'dir'), path.join(top, 'link')),
    code: 'NOT_ALLOWED',
    reason: 'git_location_outside_roots',
    armed: false, // git treats a path under a link as deleted; it still stats (and reads attributes) through it
  },
];

/** Every call of the acceptance list on the work tree `top`, in order. */
async function everyCall(client: TestClient, top: string): Promise<CallResult[]> {
  const status = await client.call('git_status', { path: top });
  const hash = status.isError ? `sha256:${'0'.repeat(64)}` : (status.structuredContent!.status_hash as string);
  return [
    status,
    await client.call('git_diff', { path: top }),
    await client.call('git_diff', { path: top, staged: true }),
    await client.call('git_diff', { path: top, paths: [path.join(top, 'a.txt'), path.join(top, 'x')] }),
    await client.call('git_diff', { path: top, max_bytes: 40 }),
    await client.call('write_file', {
      path: path.join(top, 'probe.txt'),
      content: 'p\n',
      expected_status_hash: hash,
      dry_run: true,
    }),
  ];
}

function assertRefused(results: CallResult[], c: Case, label: string): void {
  for (const r of results) {
    const all = JSON.stringify(r);
    expect(all, `${label}: outside content`).not.toContain(MARK);
    expect(all, `${label}: outside path`).not.toContain(OUTSIDE);
    const e = expectCode(r, c.code);
    expect(e.error.details.reason, `${label}: ${e.error.message}`).toBe(c.reason);
  }
}

describe('crafted index entries never make git read outside the roots', () => {
  let client: TestClient;
  beforeAll(async () => {
    outside(true);
    client = await connect('modern', {
      args: ['--auto-occ=off', '--state-dir', path.join(scratch.dir, 'state'), ROOT],
      env: { HOME, XDG_CONFIG_HOME: HOME },
    });
  }, 60_000);
  afterAll(async () => {
    await client.close();
    outside(true);
  });

  it.each(CASES)('hostile repository, entry $name', async (c) => {
    const top = plainRepo(path.join(ROOT, `hostile-${c.name}`));
    c.setup?.(top);
    const { bad, version, extra } = c.entry(top);
    writeFileSync(path.join(top, '.git', 'index'), craftedIndex(bad, version, extra));
    outside(true);
    if (c.armed) expect(git(top, 'diff')).toContain(MARK);
    const present = await everyCall(client, top);
    assertRefused(present, c, `${c.name} (outside present)`);
    outside(false);
    const absent = await everyCall(client, top);
    assertRefused(absent, c, `${c.name} (outside absent)`);
    // Whether the outside file exists changes nothing in any answer.
    expect(absent.map((r) => JSON.stringify(r))).toEqual(present.map((r) => JSON.stringify(r)));
    outside(true);
  });

  it('the agent writes the index of a bare repository with a linked work tree: the view refuses it', async () => {
    const bw = path.join(ROOT, 'bw');
    mkdirSync(bw);
    const seed = plainRepo(path.join(scratch.dir, 'seed'));
    git(bw, 'clone', '-q', '--bare', seed, 'repo.git');
    git(path.join(bw, 'repo.git'), 'worktree', 'add', '-q', path.join(bw, 'main'), 'main');
    const top = path.join(bw, 'main');
    const admin = path.join(bw, 'repo.git', 'worktrees', 'main');
    const c = CASES[0];
    const index = craftedIndex(c.entry(top).bad);
    // The empty blob the entry names, as a loose object (zlib of "blob 0\0").
    const emptyBlob = deflateSync(Buffer.from('blob 0\0'));
    const objectFile = path.join(bw, 'repo.git', 'objects', EMPTY.slice(0, 2), EMPTY.slice(2));
    // The agent's way: write_file. Another guard may refuse writes into a git directory; either way the bytes below
    // end up there (a hostile repository could ship them), and the view must refuse them.
    const viaTool = [
      await client.call('write_file', {
        path: path.join(admin, 'index'),
        content_base64: index.toString('base64'),
      }),
      await client.call('write_file', {
        path: objectFile,
        content_base64: emptyBlob.toString('base64'),
        create_dirs: true,
      }),
    ];
    for (const r of viaTool) if (r.isError) expectCode(r, 'FILE_POLICY_DENIED');
    writeFileSync(path.join(admin, 'index'), index);
    mkdirSync(path.dirname(objectFile), { recursive: true });
    writeFileSync(objectFile, emptyBlob);
    outside(true);
    expect(git(top, 'diff')).toContain(MARK); // armed: the user's own git prints the outside file
    const present = await everyCall(client, top);
    assertRefused(present, c, 'bare+worktree (outside present)');
    outside(false);
    const absent = await everyCall(client, top);
    assertRefused(absent, c, 'bare+worktree (outside absent)');
    expect(absent.map((r) => JSON.stringify(r))).toEqual(present.map((r) => JSON.stringify(r)));
    outside(true);
  });

  it.each(['shown', 'ignored'])(
    'an untracked nested repository whose .git names an outside git dir (%s): refused whether or not it exists',
    async (variant) => {
      const top = plainRepo(path.join(ROOT, `nested-${variant}`));
      mkdirSync(path.join(top, 'nested'));
      writeFileSync(path.join(top, 'nested', 'f'), 'f\n');
      writeFileSync(path.join(top, 'nested', '.git'), `gitdir: ${path.join(OUTSIDE, 'orepo', '.git')}\n`);
      if (variant === 'ignored') writeFileSync(path.join(top, '.gitignore'), '.git\n');
      const plainStatus = () => git(top, 'status', '--porcelain', '--untracked-files=all');
      outside(true);
      git(OUTSIDE, 'init', '-q', 'orepo');
      const withRepo = plainStatus();
      outside(true); // no orepo now
      // Armed: plain git's answer tells whether the outside directory is a repository.
      expect(plainStatus()).not.toBe(withRepo);
      const c: Case = { ...CASES[0], code: 'NOT_ALLOWED', reason: 'git_location_outside_roots' };
      const statusCalls = async () => [
        await client.call('git_status', { path: top }),
        await client.call('git_diff', { path: top, expected_status_hash: `sha256:${'0'.repeat(64)}` }),
        await client.call('write_file', {
          path: path.join(top, 'probe.txt'),
          content: 'p\n',
          expected_status_hash: `sha256:${'0'.repeat(64)}`,
          dry_run: true,
        }),
      ];
      git(OUTSIDE, 'init', '-q', 'orepo');
      const present = await statusCalls();
      assertRefused(present, c, `nested ${variant} (outside repository present)`);
      outside(true);
      const absent = await statusCalls();
      assertRefused(absent, c, `nested ${variant} (outside repository absent)`);
      expect(absent.map((r) => JSON.stringify(r))).toEqual(present.map((r) => JSON.stringify(r)));
    },
  );

  it('a legitimate neighbour still works: the same layout with the index git wrote', async () => {
    const top = plainRepo(path.join(ROOT, 'legit'));
    writeFileSync(path.join(top, 'a.txt'), 'a\nchanged\n');
    git(top, 'update-index', '--index-version', '4');
    const s = await client.callOk('git_status', { path: top });
    expect(s.entries.map((e: { path: string }) => e.path)).toEqual(['a.txt']);
    expect(s.status_hash).toBe(
      `sha256:${createHash('sha256')
        .update(
          git(
            top,
            '--no-optional-locks',
            'status',
            '--porcelain=v2',
            '--branch',
            '--untracked-files=all',
            '--ignore-submodules=all',
          ),
        )
        .digest('hex')}`,
    );
    const d = await client.callOk('git_diff', { path: top });
    expect(d.diff).toContain('+changed');
    renameSync(path.join(top, 'x'), path.join(top, 'x-moved'));
    const moved = await client.callOk('git_status', { path: top });
    expect(moved.entries.map((e: { path: string }) => e.path).sort()).toEqual(['a.txt', 'x-moved/keep', 'x/keep']);
  });
});
