/**
 * Git acceptance tests (SPEC §7, §3.3 step 8, §5) against the real server (dist/cli.js) and the real `git` binary in
 * temporary repositories. Test git runs with an isolated HOME (no global config is read or written). Pins:
 * - status_hash: sha256 over the exact `git status --porcelain=v2 --branch --untracked-files=all` output; stable
 *   across calls without a change; changes after each of: editing a tracked file, creating an untracked file,
 *   staging, committing, switching branch, going ahead of the upstream (local commit; also a pure ahead change with
 *   HEAD unchanged), falling behind it (fetch); the structured status (branch, upstream, ahead/behind, entries with
 *   C-quoted names decoded, rename orig_path); and the documented limit of the definition (a second edit of an
 *   already-modified file leaves the porcelain output, so the hash, unchanged);
 * - STALE_GIT (both eras): edit_file, write_file, delete_path, move_path, apply_patch, create_directory with a stale
 *   expected_status_hash → STALE_GIT (retryable, read_and_rebase, details.current_status_hash = git_status's), with
 *   STALE_GIT before HASH_REQUIRED (step 8 before 9), and nothing changed on disk; with the current hash each
 *   succeeds and reports the status_hash a fresh git_status returns;
 * - git_diff: stale expected_status_hash → STALE_GIT with no diff text anywhere; paging ~20 files with a small
 *   max_bytes returns every file exactly once and the pages concatenate to the one-page diff; a cursor after the tree
 *   changed → STALE_GIT; binary files listed (binary: true) with none of their bytes, also when .gitattributes forces
 *   a text diff, also with a non-ASCII name; one file larger than max_bytes is cut and its continuation yields the
 *   rest exactly; staged vs work-tree diff; the `paths` filter (relative, a deleted file, another repository's file →
 *   VALIDATION outside_work_tree); a modified, staged or renamed-away secret (.env) is
 *   listed as omitted and its marker never appears; C-quoted names (ä, spaces) and a repository's
 *   diff.mnemonicPrefix/noprefix config still give the right paths;
 * - git_status and git_diff (staged, paged) leave every byte and mtime under .git as it was, where plain git diff and
 *   git status would rewrite the index;
 * - unmerged paths (combined `diff --cc`) are files of their own in git_diff, shown or omitted when secret;
 * - paging cuts between characters (tiny max_bytes over ä/😀/日本), and a ~600 KB CJK diff pages promptly at the
 *   default max_bytes;
 * - a hostile repository (.git/config core.fsmonitor, diff.external, core.pager, diff.<drv>.textconv and .command,
 *   filter.<drv>.clean/smudge/process via .gitattributes) proven armed against plain git: git_status, git_diff
 *   (work tree and staged) and a mutation with expected_status_hash create no marker file;
 * - failures are envelopes, never INTERNAL: a path outside the roots → NOT_ALLOWED (also a `paths` entry, also with a
 *   stale expected_status_hash: step 5 before step 8); a root that is a subdirectory of
 *   a repository → NOT_ALLOWED reason work_tree_outside_roots (also for a mutation with expected_status_hash, file
 *   unchanged); a plain directory → VALIDATION not_a_work_tree (also .git itself); git not on PATH → VALIDATION
 *   git_missing; a repository owned by another uid → VALIDATION dubious_ownership (git refuses as root too); a
 *   garbage .git/index → IO_ERROR corrupt_repository naming the index (issue 12: classified, no git stderr); an
 *   empty .git/HEAD → IO_ERROR reason corrupt_repository.
 *
 * Eras and processes: STALE_GIT on mutations runs under both eras (results and envelopes of every mutating tool as
 * each era's client parses them); every other case is the server's and git's alone (hashes, diffs, what git runs,
 * failure codes) and runs once, under the modern era. The cases share one server per era, rooted at ZONE, each
 * working in its own directory there; a case whose point is a server's roots or environment (a root inside a
 * repository, PATH) starts its own. Test-side git runs in batches (test/helpers/git-batch.ts): a spawn from the
 * test worker costs more CPU than a small git command.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { runBatch } from '../helpers/git-batch.js';
import { connect, ERAS, type CallResult, type Era, type TestClient } from '../helpers/server.js';
import { makeTree, writeTree, type TreeSpec } from '../helpers/tree.js';

const sha = (b: string | Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** Scratch space of the whole file: an isolated HOME for every git (test and server), state dirs, repositories. */
const scratch = makeTree({ home: {}, state: {} }, 'fs-tools-git-');
const HOME = path.join(scratch.dir, 'home');
afterAll(() => {
  // The dubious-ownership test chowns a repository away; as root we can still remove it.
  scratch.cleanup();
});

/** The environment of test-side git: inherited minus GIT_*, isolated HOME, no system config. */
function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return { ...env, HOME, XDG_CONFIG_HOME: HOME, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' };
}

/** Runs test-side git; returns stdout. */
function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: gitEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The status hash by the SPEC's definition, computed independently of the server. */
function expectedStatusHash(repo: string): string {
  return sha(git(repo, '--no-optional-locks', 'status', '--porcelain=v2', '--branch', '--untracked-files=all'));
}

/** A fresh directory under `parent`. */
function freshDir(parent: string, prefix: string): string {
  return mkdtempSync(path.join(parent, prefix));
}

/** Runs test-side git commands (each its arguments) one after another in one child process; returns stdout. */
function gits(cwd: string, ...commands: string[][]): string {
  return runBatch(
    cwd,
    gitEnv(),
    commands.map((args) => ['git', ...args]),
  );
}

/** A repository under `parent` holding `files`, committed on branch main (no commit when `files` is null). */
function makeRepo(parent: string, files: TreeSpec | null, prefix = 'repo-'): string {
  const repo = freshDir(parent, prefix);
  if (files) writeTree(repo, files);
  gits(
    repo,
    ['init', '-q', '-b', 'main'],
    ['config', 'user.name', 'Test'],
    ['config', 'user.email', 'test@example.invalid'],
    ['config', 'commit.gpgsign', 'false'],
    ...(files
      ? [
          ['add', '-A'],
          ['commit', '-q', '-m', 'initial'],
        ]
      : []),
  );
  return repo;
}

/** Starts a server on `roots` with an isolated HOME and its own state dir. */
async function startServer(
  era: Era,
  roots: string[],
  extraArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<TestClient> {
  const state = freshDir(path.join(scratch.dir, 'state'), 's-');
  return connect(era, {
    args: ['--state-dir', state, ...extraArgs, ...roots.flatMap((r) => ['--root', r])],
    env: { HOME, XDG_CONFIG_HOME: HOME, ...env },
  });
}

/**
 * Where the file's shared servers are rooted: each describe works in its own directory under it (the repositories
 * outside the roots, and the servers with other roots or another PATH, are elsewhere in `scratch`).
 */
const ZONE = path.join(scratch.dir, 'zone');
mkdirSync(ZONE);
const shared: Partial<Record<Era, Promise<TestClient>>> = {};
/** The file's server of `era` on ZONE, started on first use (a case that needs a fresh process starts its own). */
function sharedServer(era: Era): Promise<TestClient> {
  shared[era] ??= startServer(era, [ZONE]);
  return shared[era];
}
afterAll(async () => {
  for (const c of Object.values(shared)) {
    const client = await c;
    expectNoIncident(client);
    await client.close();
  }
});

/** Everything the client received, for absence checks. */
const everything = (r: CallResult) => JSON.stringify(r);

/** The server wrote no incident (an INTERNAL error logs one). */
function expectNoIncident(client: TestClient): void {
  expect(client.stderr()).not.toMatch(/incident/i);
}

// ---------------------------------------------------------------------------------------------------------------
describe('status_hash', () => {
  let client: TestClient;
  let base: string;
  beforeAll(async () => {
    base = freshDir(ZONE, 'status-');
    client = await sharedServer('modern');
  });

  const hashOf = async (repo: string) => (await client.callOk('git_status', { path: repo })).status_hash as string;

  /** Runs `event` between two status calls; the hash must move and match the SPEC's definition after. */
  async function expectMoves(repo: string, event: () => void): Promise<{ before: string; after: string }> {
    const before = await hashOf(repo);
    expect(before).toBe(expectedStatusHash(repo));
    event();
    const after = await hashOf(repo);
    expect(after).not.toBe(before);
    expect(after).toBe(expectedStatusHash(repo));
    return { before, after };
  }

  it('is sha256 over the exact porcelain v2 output and stable across calls with no change', async () => {
    const repo = makeRepo(base, { 'a.txt': 'a\n', dir: { 'b.txt': 'b\n' } });
    writeFileSync(path.join(repo, 'dirty.txt'), 'untracked\n');
    const first = await client.callOk('git_status', { path: repo });
    const second = await client.callOk('git_status', { path: path.join(repo, 'dir') });
    expect(first.status_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(second.status_hash).toBe(first.status_hash);
    expect(first.status_hash).toBe(expectedStatusHash(repo));
    expect(second.repo_root).toBe(repo);
  });

  it('changes after editing a tracked file', async () => {
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    await expectMoves(repo, () => writeFileSync(path.join(repo, 'a.txt'), 'a changed\n'));
  });

  it('changes after creating an untracked file (also in a new subdirectory)', async () => {
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    await expectMoves(repo, () => writeFileSync(path.join(repo, 'new.txt'), 'n\n'));
    await expectMoves(repo, () => writeTree(repo, { deep: { er: { 'x.txt': 'x\n' } } }));
  });

  it('changes after staging', async () => {
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    writeFileSync(path.join(repo, 'a.txt'), 'a changed\n');
    await expectMoves(repo, () => git(repo, 'add', 'a.txt'));
  });

  it('changes after committing', async () => {
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    writeFileSync(path.join(repo, 'a.txt'), 'a changed\n');
    git(repo, 'add', 'a.txt');
    await expectMoves(repo, () => git(repo, 'commit', '-q', '-m', 'second'));
    expect((await client.callOk('git_status', { path: repo })).clean).toBe(true);
  });

  it('changes after switching branch (same commit: only the branch header moves)', async () => {
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    const head = (await client.callOk('git_status', { path: repo })).head;
    await expectMoves(repo, () => git(repo, 'switch', '-q', '-c', 'other'));
    const now = await client.callOk('git_status', { path: repo });
    expect(now.branch).toBe('other');
    expect(now.head).toBe(head);
    await expectMoves(repo, () => git(repo, 'switch', '-q', '--detach'));
    expect((await client.callOk('git_status', { path: repo })).detached).toBe(true);
  });

  /** A repository tracking a bare "remote" reached by file path, pushed and in sync. */
  function repoWithUpstream(): { repo: string; remote: string } {
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    const remote = freshDir(base, 'remote-');
    gits(remote, ['init', '-q', '--bare', '-b', 'main']);
    gits(repo, ['remote', 'add', 'origin', remote], ['push', '-q', '-u', 'origin', 'main']);
    return { repo, remote };
  }

  it('changes when the branch gets ahead of its upstream (local commit; and with HEAD unchanged)', async () => {
    const { repo } = repoWithUpstream();
    const synced = await client.callOk('git_status', { path: repo });
    expect(synced).toMatchObject({ branch: 'main', upstream: 'origin/main', ahead: 0, behind: 0 });
    await expectMoves(repo, () => git(repo, 'commit', '-q', '--allow-empty', '-m', 'local'));
    expect(await client.callOk('git_status', { path: repo })).toMatchObject({ ahead: 1, behind: 0 });
    git(repo, 'push', '-q');
    const head = (await client.callOk('git_status', { path: repo })).head;
    // Only the branch.ab line moves: the remote-tracking ref goes back one commit, HEAD stays.
    await expectMoves(repo, () => git(repo, 'update-ref', 'refs/remotes/origin/main', 'HEAD~1'));
    const now = await client.callOk('git_status', { path: repo });
    expect(now).toMatchObject({ ahead: 1, behind: 0, head });
  });

  it('changes when the branch falls behind its upstream (fetch of a new remote commit)', async () => {
    const { repo, remote } = repoWithUpstream();
    const other = freshDir(base, 'clone-');
    gits(
      other,
      ['clone', '-q', remote, '.'],
      ['config', 'user.name', 'Other'],
      ['config', 'user.email', 'other@example.invalid'],
    );
    writeFileSync(path.join(other, 'b.txt'), 'b\n');
    gits(other, ['add', 'b.txt'], ['commit', '-q', '-m', 'remote work'], ['push', '-q']);
    const head = (await client.callOk('git_status', { path: repo })).head;
    await expectMoves(repo, () => git(repo, 'fetch', '-q'));
    expect(await client.callOk('git_status', { path: repo })).toMatchObject({ ahead: 0, behind: 1, head });
  });

  it('reports branch, entries with decoded C-quoted names, renames and untracked files', async () => {
    const repo = makeRepo(base, { 'old.txt': 'same content here\n', 'keep.txt': 'k\n' });
    git(repo, 'mv', 'old.txt', 'new name.txt');
    writeFileSync(path.join(repo, 'keep.txt'), 'k2\n');
    writeFileSync(path.join(repo, 'ä.txt'), 'umlaut\n');
    writeFileSync(path.join(repo, 'tab\there.txt'), 'tab\n');
    const s = await client.callOk('git_status', { path: repo });
    expect(s).toMatchObject({
      repo_root: repo,
      branch: 'main',
      detached: false,
      upstream: null,
      ahead: null,
      behind: null,
      clean: false,
    });
    expect(s.head).toMatch(/^[0-9a-f]{40}$/);
    expect(s.entries).toEqual(
      expect.arrayContaining([
        { path: 'new name.txt', kind: 'renamed', index: 'R', worktree: '.', orig_path: 'old.txt' },
        { path: 'keep.txt', kind: 'changed', index: '.', worktree: 'M' },
        { path: 'ä.txt', kind: 'untracked', index: '?', worktree: '?' },
        { path: 'tab\there.txt', kind: 'untracked', index: '?', worktree: '?' },
      ]),
    );
    expect(s.entries).toHaveLength(4);
  });

  it('an unborn branch (no commit yet) reports head null', async () => {
    const repo = makeRepo(base, null);
    const s = await client.callOk('git_status', { path: repo });
    expect(s).toMatchObject({ branch: 'main', head: null, clean: true, entries: [] });
    await expectMoves(repo, () => writeFileSync(path.join(repo, 'first.txt'), '1\n'));
  });

  it('limit of the SPEC definition: a second edit of an already-modified file leaves the hash as it was', async () => {
    // Porcelain v2 names HEAD and index objects only, not work-tree content, so a further change to a file that is
    // already " M" does not change the output the hash covers. expected_hash (content OCC) is what catches that.
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    writeFileSync(path.join(repo, 'a.txt'), 'first edit\n');
    const before = await hashOf(repo);
    writeFileSync(path.join(repo, 'a.txt'), 'second edit\n');
    expect(await hashOf(repo)).toBe(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe.each(ERAS)('STALE_GIT on mutations (%s era)', (era) => {
  let client: TestClient;
  let repo: string;
  beforeAll(async () => {
    repo = makeRepo(
      ZONE,
      {
        'a.txt': 'alpha\nbeta\n',
        'w.txt': 'write me\n',
        'd.txt': 'delete me\n',
        'm.txt': 'move me\n',
        'p.txt': 'one\ntwo\n',
      },
      `stale-${era}-`,
    );
    client = await sharedServer(era);
  });

  const currentHash = async () => (await client.callOk('git_status', { path: repo })).status_hash as string;
  const read = (name: string) => readFileSync(path.join(repo, name));

  /** Takes a status hash, then moves the tree behind the server's back; returns the now stale hash. */
  async function staleHash(): Promise<string> {
    const old = await currentHash();
    writeFileSync(path.join(repo, `external-${Math.random().toString(36).slice(2)}.txt`), 'external change\n');
    expect(await currentHash()).not.toBe(old);
    return old;
  }

  /** The envelope must be STALE_GIT carrying the hash git_status gives now. */
  async function expectStale(result: CallResult): Promise<void> {
    const envelope = expectCode(result, 'STALE_GIT');
    expect(envelope.error.retryable).toBe(true);
    expect(envelope.error.recovery).toBe('read_and_rebase');
    expect(envelope.error.details.current_status_hash).toBe(await currentHash());
  }

  it('edit_file: stale → STALE_GIT (before HASH_REQUIRED), bytes unchanged; current → edited, fresh status_hash', async () => {
    const before = read('a.txt');
    const stale = await staleHash();
    await expectStale(
      await client.call('edit_file', {
        path: path.join(repo, 'a.txt'),
        edits: [{ old_text: 'alpha', new_text: 'ALPHA' }],
        expected_status_hash: stale,
        expected_hash: sha(before),
      }),
    );
    // Step 8 comes before step 9: an unread file without expected_hash would be HASH_REQUIRED, but the tree moved.
    await expectStale(
      await client.call('edit_file', {
        path: path.join(repo, 'a.txt'),
        edits: [{ old_text: 'alpha', new_text: 'ALPHA' }],
        expected_status_hash: stale,
      }),
    );
    expect(read('a.txt')).toEqual(before);

    const ok = await client.callOk('edit_file', {
      path: path.join(repo, 'a.txt'),
      edits: [{ old_text: 'alpha', new_text: 'ALPHA' }],
      expected_status_hash: await currentHash(),
      expected_hash: sha(before),
    });
    expect(read('a.txt').toString()).toBe('ALPHA\nbeta\n');
    expect(ok.status_hash).toBe(await currentHash());
    expect(ok.status_hash).toBe(expectedStatusHash(repo));
  });

  it('write_file: stale → STALE_GIT, bytes unchanged; current → written, fresh status_hash', async () => {
    const before = read('w.txt');
    const stale = await staleHash();
    await expectStale(
      await client.call('write_file', {
        path: path.join(repo, 'w.txt'),
        content: 'replaced\n',
        expected_hash: sha(before),
        expected_status_hash: stale,
      }),
    );
    await expectStale(
      await client.call('write_file', {
        path: path.join(repo, 'created.txt'),
        content: 'new\n',
        expected_status_hash: stale,
      }),
    );
    expect(read('w.txt')).toEqual(before);
    expect(existsSync(path.join(repo, 'created.txt'))).toBe(false);

    const ok = await client.callOk('write_file', {
      path: path.join(repo, 'w.txt'),
      content: 'replaced\n',
      expected_hash: sha(before),
      expected_status_hash: await currentHash(),
    });
    expect(read('w.txt').toString()).toBe('replaced\n');
    expect(ok.status_hash).toBe(await currentHash());
  });

  it('delete_path: stale → STALE_GIT, file still there; current → deleted, fresh status_hash', async () => {
    const before = read('d.txt');
    const stale = await staleHash();
    await expectStale(
      await client.call('delete_path', {
        path: path.join(repo, 'd.txt'),
        expected_hash: sha(before),
        expected_status_hash: stale,
      }),
    );
    expect(read('d.txt')).toEqual(before);

    const ok = await client.callOk('delete_path', {
      path: path.join(repo, 'd.txt'),
      expected_hash: sha(before),
      expected_status_hash: await currentHash(),
    });
    expect(existsSync(path.join(repo, 'd.txt'))).toBe(false);
    expect(ok.status_hash).toBe(await currentHash());
  });

  it('move_path: stale → STALE_GIT, nothing moved; current → moved, fresh status_hash', async () => {
    const before = read('m.txt');
    const stale = await staleHash();
    await expectStale(
      await client.call('move_path', {
        source: path.join(repo, 'm.txt'),
        destination: path.join(repo, 'moved.txt'),
        expected_status_hash: stale,
      }),
    );
    expect(read('m.txt')).toEqual(before);
    expect(existsSync(path.join(repo, 'moved.txt'))).toBe(false);

    const ok = await client.callOk('move_path', {
      source: path.join(repo, 'm.txt'),
      destination: path.join(repo, 'moved.txt'),
      expected_status_hash: await currentHash(),
    });
    expect(read('moved.txt')).toEqual(before);
    expect(ok.status_hash).toBe(await currentHash());
  });

  it('apply_patch: stale → STALE_GIT, bytes unchanged; current → applied, fresh status_hash', async () => {
    const before = read('p.txt');
    const patch = '--- a/p.txt\n+++ b/p.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n';
    const stale = await staleHash();
    await expectStale(
      await client.call('apply_patch', {
        patch,
        path: repo,
        expected_hashes: { 'p.txt': sha(before) },
        expected_status_hash: stale,
      }),
    );
    expect(read('p.txt')).toEqual(before);

    const ok = await client.callOk('apply_patch', {
      patch,
      path: repo,
      expected_hashes: { 'p.txt': sha(before) },
      expected_status_hash: await currentHash(),
    });
    expect(read('p.txt').toString()).toBe('one\nTWO\n');
    expect(ok.status_hash).toBe(await currentHash());
  });

  it('create_directory: stale → STALE_GIT, no directory; current → created, fresh status_hash', async () => {
    const stale = await staleHash();
    await expectStale(
      await client.call('create_directory', { path: path.join(repo, 'newdir', 'sub'), expected_status_hash: stale }),
    );
    expect(existsSync(path.join(repo, 'newdir'))).toBe(false);

    const ok = await client.callOk('create_directory', {
      path: path.join(repo, 'newdir', 'sub'),
      expected_status_hash: await currentHash(),
    });
    expect(ok.created).toBe(true);
    expect(existsSync(path.join(repo, 'newdir', 'sub'))).toBe(true);
    expect(ok.status_hash).toBe(await currentHash());
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('git_diff', () => {
  let client: TestClient;
  let base: string;
  beforeAll(async () => {
    base = freshDir(ZONE, 'diff-');
    client = await sharedServer('modern');
  });

  const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} line ${i + 1}\n`).join('');

  const allPages = (args: Record<string, unknown>) => allPagesOf(client, args);

  it('stale expected_status_hash → STALE_GIT and no diff text anywhere in the result', async () => {
    const repo = makeRepo(base, { 'a.txt': 'original\n' });
    writeFileSync(path.join(repo, 'a.txt'), 'original\nDIFFBODYMARKER added\n');
    const hash = (await client.callOk('git_status', { path: repo })).status_hash;
    // With the current hash the diff is there…
    const ok = await client.callOk('git_diff', { path: repo, expected_status_hash: hash });
    expect(ok.diff).toContain('+DIFFBODYMARKER added');
    // …then the tree moves, and the same call returns only the envelope.
    writeFileSync(path.join(repo, 'b.txt'), 'untracked\n');
    const result = await client.call('git_diff', { path: repo, expected_status_hash: hash });
    const envelope = expectCode(result, 'STALE_GIT');
    expect(envelope.error).toMatchObject({ retryable: true, recovery: 'read_and_rebase' });
    expect(envelope.error.details.current_status_hash).toBe(
      (await client.callOk('git_status', { path: repo })).status_hash,
    );
    expect(everything(result)).not.toContain('DIFFBODYMARKER');
    expect(everything(result)).not.toContain('@@');
    expect(result.structuredContent).toBeUndefined();
  });

  it('pages ~20 changed files with a small max_bytes: every file exactly once, pages concatenate to the whole diff', async () => {
    const files: TreeSpec = {};
    for (let i = 0; i < 20; i++) files[`f${String(i).padStart(2, '0')}.txt`] = lines(8, `file${i}`);
    files.sub = { 'nested.txt': lines(8, 'nested') };
    const repo = makeRepo(base, files);
    for (let i = 0; i < 20; i++)
      writeFileSync(path.join(repo, `f${String(i).padStart(2, '0')}.txt`), `${lines(8, `file${i}`)}changed ${i}\n`);
    writeFileSync(path.join(repo, 'sub', 'nested.txt'), `${lines(8, 'nested')}changed nested\n`);

    const whole = await client.callOk('git_diff', { path: repo });
    expect(whole.truncated).toBe(false);
    expect(whole.files).toHaveLength(21);
    expect(whole.files_total).toBe(21);

    const pages = await allPages({ path: repo, max_bytes: 700 });
    expect(pages.length).toBeGreaterThan(3);
    for (const p of pages) expect(Buffer.byteLength(p.diff as string)).toBeLessThanOrEqual(700);
    const seen = pages.flatMap((p) => (p.files as Array<{ path: string }>).map((f) => f.path));
    expect(seen).toHaveLength(21);
    expect(new Set(seen).size).toBe(21);
    expect([...seen].sort()).toEqual([...(whole.files as Array<{ path: string }>).map((f) => f.path)].sort());
    expect(seen).toContain('sub/nested.txt');
    expect(pages.map((p) => p.diff).join('')).toBe(whole.diff);
    for (const p of pages) expect(p.status_hash).toBe(whole.status_hash);
  });

  it('a cursor taken before the tree changed → STALE_GIT, no diff', async () => {
    const files: TreeSpec = {};
    for (let i = 0; i < 6; i++) files[`g${i}.txt`] = lines(5, `g${i}`);
    const repo = makeRepo(base, files);
    for (let i = 0; i < 6; i++) writeFileSync(path.join(repo, `g${i}.txt`), `CURSORMARKER ${i}\n`);
    const first = await client.callOk('git_diff', { path: repo, max_bytes: 300 });
    expect(first.truncated).toBe(true);
    git(repo, 'add', 'g0.txt');
    const result = await client.call('git_diff', { path: repo, max_bytes: 300, cursor: first.next_cursor });
    const envelope = expectCode(result, 'STALE_GIT');
    expect(envelope.error.retryable).toBe(true);
    expect(envelope.error.details.current_status_hash).toBe(
      (await client.callOk('git_status', { path: repo })).status_hash,
    );
    expect(everything(result)).not.toContain('CURSORMARKER');
  });

  it('binary files are listed (binary: true), their bytes never dumped — also when .gitattributes forces text', async () => {
    const bin = (tag: string) =>
      Buffer.concat([Buffer.from(`${tag}BINMARKER\n`), Buffer.from([0, 1, 2, 0xff, 0xfe, 0, 10])]);
    const repo = makeRepo(base, {
      '.gitattributes': 'forced.dat diff\n',
      'plain.dat': bin('a'),
      'forced.dat': bin('b'),
      'ü.bin': bin('c'),
      'text.txt': 't\n',
    });
    writeFileSync(path.join(repo, 'plain.dat'), bin('A'));
    writeFileSync(path.join(repo, 'forced.dat'), bin('B'));
    writeFileSync(path.join(repo, 'ü.bin'), bin('C'));
    writeFileSync(path.join(repo, 'text.txt'), 't\nmore\n');
    // Sanity: with the attribute, plain git prints forced.dat as text.
    expect(git(repo, 'diff', '--', 'forced.dat')).toContain('BINMARKER');
    const result = await client.call('git_diff', { path: repo });
    expect(result.isError).toBeFalsy();
    const d = result.structuredContent!;
    expect(
      [...(d.files as Array<{ path: string; binary: boolean }>)].sort((x, y) => (x.path < y.path ? -1 : 1)),
    ).toEqual([
      { path: 'forced.dat', binary: true },
      { path: 'plain.dat', binary: true },
      { path: 'text.txt', binary: false },
      { path: 'ü.bin', binary: true },
    ]);
    expect(everything(result)).not.toContain('BINMARKER');
    expect(everything(result)).not.toContain('\\u0000');
    expect(d.diff).toContain('+more');
  });

  it('one file larger than max_bytes is cut, and following the continuation yields the rest exactly', async () => {
    const repo = makeRepo(base, { 'big.txt': lines(400, 'old ä'), 'small.txt': 's\n' });
    writeFileSync(path.join(repo, 'big.txt'), lines(400, 'new ö'));
    writeFileSync(path.join(repo, 'small.txt'), 's\nt\n');
    const whole = await client.callOk('git_diff', { path: repo });
    expect(Buffer.byteLength(whole.diff as string)).toBeGreaterThan(10_000);

    const first = await client.callOk('git_diff', { path: repo, max_bytes: 4096 });
    expect(first.truncated).toBe(true);
    expect(first.files).toEqual([{ path: 'big.txt', binary: false }]);
    expect(Buffer.byteLength(first.diff as string)).toBeLessThanOrEqual(4096);
    expect((first.diff as string).endsWith('\n')).toBe(true);
    const pages = await allPages({ path: repo, max_bytes: 4096 });
    expect(pages[0].diff).toBe(first.diff);
    for (const p of pages) expect(Buffer.byteLength(p.diff as string)).toBeLessThanOrEqual(4096);
    expect(pages.map((p) => p.diff).join('')).toBe(whole.diff);
    expect(pages.at(-1)!.files.map((f: { path: string }) => f.path)).toContain('small.txt');
  });

  it('multi-byte text is cut between characters: tiny pages, and a large CJK diff at the default max_bytes', async () => {
    const repo = makeRepo(base, { 'u.txt': 'äöü 😀 日本\n', 'cjk.txt': '' });
    writeFileSync(path.join(repo, 'u.txt'), 'ÄÖÜ 😀😀 日本語\n');
    const whole = await client.callOk('git_diff', { path: repo, paths: [path.join(repo, 'u.txt')] });
    const tiny = await allPages({ path: repo, paths: [path.join(repo, 'u.txt')], max_bytes: 4 });
    for (const p of tiny) {
      expect(Buffer.byteLength(p.diff as string)).toBeLessThanOrEqual(4);
      expect(p.diff).toBe(Buffer.from(p.diff as string, 'utf8').toString('utf8')); // no lone surrogate
    }
    expect(tiny.map((p) => p.diff).join('')).toBe(whole.diff);

    // ~600 KB of 3-byte characters: the default page must be cut in one pass, not character by character.
    const cjkLine = `${'漢字かなカナ'.repeat(30)}\n`;
    writeFileSync(path.join(repo, 'cjk.txt'), cjkLine.repeat(1100));
    const started = Date.now();
    const pages = await allPages({ path: repo, paths: [path.join(repo, 'cjk.txt')] });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(pages.length).toBeGreaterThan(1);
    for (const p of pages) expect(Buffer.byteLength(p.diff as string)).toBeLessThanOrEqual(262_144);
    const joined = pages.map((p) => p.diff).join('');
    expect(joined.split('\n').filter((l) => l.startsWith('+漢')).length).toBe(1100);
  });

  it('staged: the index against HEAD; default: the work tree against the index', async () => {
    const repo = makeRepo(base, { 's.txt': 's\n', 'u.txt': 'u\n' });
    writeFileSync(path.join(repo, 's.txt'), 's\nINDEXLINE\n');
    git(repo, 'add', 's.txt');
    writeFileSync(path.join(repo, 'u.txt'), 'u\nWORKTREELINE\n');
    const staged = await client.callOk('git_diff', { path: repo, staged: true });
    expect(staged.files).toEqual([{ path: 's.txt', binary: false }]);
    expect(staged.diff).toContain('+INDEXLINE');
    expect(staged.diff).not.toContain('WORKTREELINE');
    const work = await client.callOk('git_diff', { path: repo });
    expect(work.files).toEqual([{ path: 'u.txt', binary: false }]);
    expect(work.diff).toContain('+WORKTREELINE');
    expect(work.diff).not.toContain('INDEXLINE');
  });

  it('unmerged paths (combined diffs) are files of their own: shown, or omitted when secret', async () => {
    const repo = makeRepo(base, { 'c.txt': 'base\n', 'x.pem': 'PEMCONFLICTMARKER base\n', 'a.txt': 'a\n' });
    git(repo, 'switch', '-q', '-c', 'theirs');
    writeFileSync(path.join(repo, 'c.txt'), 'theirs\n');
    writeFileSync(path.join(repo, 'x.pem'), 'PEMCONFLICTMARKER theirs\n');
    gits(repo, ['commit', '-q', '-am', 'theirs'], ['switch', '-q', 'main']);
    writeFileSync(path.join(repo, 'c.txt'), 'ours\n');
    writeFileSync(path.join(repo, 'x.pem'), 'PEMCONFLICTMARKER ours\n');
    git(repo, 'commit', '-q', '-am', 'ours');
    expect(() => git(repo, 'merge', '-q', 'theirs')).toThrow();
    writeFileSync(path.join(repo, 'a.txt'), 'a\nunstaged\n');
    expect(git(repo, 'diff')).toMatch(/^diff --cc c\.txt$/m);

    const s = await client.callOk('git_status', { path: repo });
    expect(s.entries).toEqual(
      expect.arrayContaining([
        { path: 'c.txt', kind: 'unmerged', index: 'U', worktree: 'U' },
        { path: 'x.pem', kind: 'unmerged', index: 'U', worktree: 'U' },
      ]),
    );
    const result = await client.call('git_diff', { path: repo });
    expect(result.isError).toBeFalsy();
    const d = result.structuredContent!;
    expect([...(d.files as Array<{ path: string }>)].sort((x, y) => (x.path < y.path ? -1 : 1))).toEqual([
      { path: 'a.txt', binary: false },
      { path: 'c.txt', binary: false },
      { path: 'x.pem', binary: false, omitted: 'secret' },
    ]);
    expect(d.diff).toMatch(/^diff --cc c\.txt\n[^]*^\+\+<<<<<<< HEAD$/m);
    expect(d.diff).toContain('+unstaged');
    expect(everything(result)).not.toContain('PEMCONFLICTMARKER');
  });

  it('paths filter: only the named files and directories', async () => {
    const repo = makeRepo(base, { 'a.txt': 'a\n', 'b.txt': 'b\n', sub: { 'c.txt': 'c\n', 'd.txt': 'd\n' } });
    for (const f of ['a.txt', 'b.txt', 'sub/c.txt', 'sub/d.txt']) writeFileSync(path.join(repo, f), `${f} changed\n`);
    const d = await client.callOk('git_diff', {
      path: repo,
      paths: [path.join(repo, 'a.txt'), path.join(repo, 'sub')],
    });
    expect((d.files as Array<{ path: string }>).map((f) => f.path).sort()).toEqual(['a.txt', 'sub/c.txt', 'sub/d.txt']);
    expect(d.diff).not.toContain('b.txt');
    // Relative to the first root, and a file deleted in the work tree is a valid filter.
    rmSync(path.join(repo, 'b.txt'));
    const deleted = await client.callOk('git_diff', {
      path: repo,
      paths: [path.relative(ZONE, path.join(repo, 'b.txt'))],
    });
    expect(deleted.files).toEqual([{ path: 'b.txt', binary: false }]);
    expect(deleted.diff).toContain('deleted file mode');
    // A path of another repository (inside the roots) is not part of this diff.
    const other = makeRepo(base, { 'o.txt': 'o\n' });
    const e = expectCode(
      await client.call('git_diff', { path: repo, paths: [path.join(other, 'o.txt')] }),
      'VALIDATION',
    );
    expect(e.error.details).toMatchObject({ reason: 'outside_work_tree', field: 'paths' });
  });

  const SETTINGS = Array.from({ length: 20 }, (_, i) => `SETTING_${i}=value number ${i}\n`).join('');

  it('a secret file (.env) is listed as omitted — modified, staged, or renamed away — and its content never appears', async () => {
    const repo = makeRepo(base, {
      '.env': 'API_KEY=ENVSECRETMARKER_1\n',
      'deploy.pem': 'PEMSECRETMARKER\n',
      'ok.txt': 'ok\n',
      config: { '.env': `K=ENVSECRETMARKER_OLD\n${SETTINGS}` },
    });
    writeFileSync(path.join(repo, '.env'), 'API_KEY=ENVSECRETMARKER_2\n');
    writeFileSync(path.join(repo, 'deploy.pem'), 'PEMSECRETMARKER changed\n');
    writeFileSync(path.join(repo, 'ok.txt'), 'ok\nvisible\n');
    // Renamed away from a secret name, with the secret line removed: git shows it as a rename whose hunk has it.
    git(repo, 'mv', 'config/.env', 'config/settings.txt');
    writeFileSync(path.join(repo, 'config', 'settings.txt'), SETTINGS);
    git(repo, 'add', 'config/settings.txt');
    expect(git(repo, 'diff', '--cached', '-M', '--', 'config')).toMatch(
      /^rename from config\/\.env$[^]*ENVSECRETMARKER_OLD/m,
    );

    const work = await client.call('git_diff', { path: repo });
    expect(work.isError).toBeFalsy();
    expect(work.structuredContent!.files).toEqual(
      expect.arrayContaining([
        { path: '.env', binary: false, omitted: 'secret' },
        { path: 'deploy.pem', binary: false, omitted: 'secret' },
        { path: 'ok.txt', binary: false },
      ]),
    );
    expect(work.structuredContent!.diff).toContain('+visible');

    git(repo, 'add', '.env');
    const staged = await client.call('git_diff', { path: repo, staged: true });
    expect(staged.isError).toBeFalsy();
    expect(staged.structuredContent!.files).toEqual(
      expect.arrayContaining([
        { path: '.env', binary: false, omitted: 'secret' },
        { path: 'config/settings.txt', old_path: 'config/.env', binary: false, omitted: 'secret' },
      ]),
    );
    const paged = await allPages({ path: repo, staged: true, max_bytes: 64 });
    for (const r of [work, staged]) {
      expect(everything(r)).not.toContain('SECRETMARKER');
    }
    expect(JSON.stringify(paged)).not.toContain('SECRETMARKER');
  });

  it("C-quoted names (ä, spaces) and a repository's diff prefix config still give the right paths", async () => {
    const repo = makeRepo(base, {
      'ä.txt': 'a\n',
      'dir with space': { 'b x.txt': 'b\n' },
      'ü.bin': Buffer.from([0, 1, 2]),
    });
    writeFileSync(path.join(repo, 'ä.txt'), 'a\nb\n');
    writeFileSync(path.join(repo, 'dir with space', 'b x.txt'), 'b\nc\n');
    writeFileSync(path.join(repo, 'ü.bin'), Buffer.from([0, 1, 3]));
    const expected = [
      { path: 'dir with space/b x.txt', binary: false },
      { path: 'ä.txt', binary: false },
      { path: 'ü.bin', binary: true },
    ];
    const sorted = (d: Record<string, any>) =>
      [...d.files].sort((x: { path: string }, y: { path: string }) => (x.path < y.path ? -1 : 1));
    expect(sorted(await client.callOk('git_diff', { path: repo }))).toEqual(expected);
    git(repo, 'config', 'diff.mnemonicPrefix', 'true');
    expect(sorted(await client.callOk('git_diff', { path: repo }))).toEqual(expected);
    git(repo, 'config', 'diff.noprefix', 'true');
    expect(sorted(await client.callOk('git_diff', { path: repo }))).toEqual(expected);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('read-only git', () => {
  it('git_status and git_diff never write to the repository (no index refresh, no lock files)', async () => {
    const base = freshDir(ZONE, 'readonly-');
    const files: TreeSpec = {};
    for (let i = 0; i < 30; i++) files[`f${i}.txt`] = `file ${i}\n`;
    const repo = makeRepo(base, files);
    // Stale stat data in the index (same content, new mtimes): a plain `git status` would rewrite the index.
    const later = new Date(Date.now() + 5_000);
    for (let i = 0; i < 30; i++) utimesSync(path.join(repo, `f${i}.txt`), later, later);
    writeFileSync(path.join(repo, 'f0.txt'), 'changed\n');
    git(repo, 'add', 'f0.txt');
    writeFileSync(path.join(repo, 'f1.txt'), 'changed too\n');
    const snapshot = () => {
      const out: Record<string, string> = {};
      const walk = (dir: string) => {
        for (const e of readdirSync(dir, { withFileTypes: true })) {
          const p = path.join(dir, e.name);
          if (e.isDirectory()) walk(p);
          else out[path.relative(repo, p)] = `${statSync(p).mtimeMs} ${sha(readFileSync(p))}`;
        }
      };
      walk(path.join(repo, '.git'));
      return out;
    };
    const before = snapshot();
    const client = await sharedServer('modern');
    await client.callOk('git_status', { path: repo });
    await client.callOk('git_diff', { path: repo });
    await client.callOk('git_diff', { path: repo, staged: true });
    await allPagesOf(client, { path: repo, max_bytes: 100 });
    expect(snapshot()).toEqual(before);
    // Sanity: plain git diff does refresh (write) the index here.
    git(repo, 'diff');
    expect(snapshot()['.git/index']).not.toBe(before['.git/index']);
  });
});

/** Every page of a git_diff call, following next_cursor. */
async function allPagesOf(client: TestClient, args: Record<string, unknown>): Promise<Array<Record<string, any>>> {
  const pages: Array<Record<string, any>> = [];
  let cursor: string | undefined;
  for (let guard = 0; guard < 500; guard++) {
    const page = await client.callOk('git_diff', { ...args, ...(cursor ? { cursor } : {}) });
    pages.push(page);
    if (!page.truncated) {
      expect(page.next_cursor).toBeNull();
      return pages;
    }
    expect(page.next_cursor).toEqual(expect.any(String));
    cursor = page.next_cursor;
  }
  throw new Error('paging did not end');
}

// ---------------------------------------------------------------------------------------------------------------
describe('a hostile repository config runs nothing', () => {
  it('core.fsmonitor, diff.external, core.pager, textconv, diff command and filter drivers never run', async () => {
    const base = freshDir(ZONE, 'hostile-');
    const markers = freshDir(scratch.dir, 'markers-');
    const repo = makeRepo(base, { 'a.txt': 'a\n', 'b.cv': 'b\n', 'c.flt': 'c\n' });
    const touch = (name: string) => `touch '${path.join(markers, name)}'`;
    gits(
      repo,
      ['config', 'core.fsmonitor', `${touch('fsmonitor')}; false`],
      ['config', 'diff.external', `sh -c "${touch('external')}"`],
      ['config', 'core.pager', `${touch('pager')}; cat`],
      ['config', 'diff.cv.textconv', `sh -c '${touch('textconv')}; cat "$0"'`],
      ['config', 'diff.cv.command', `sh -c "${touch('diffcommand')}"`],
      ['config', 'filter.flt.clean', `sh -c '${touch('clean')}; cat'`],
      ['config', 'filter.flt.smudge', `sh -c '${touch('smudge')}; cat'`],
      ['config', 'filter.flt.required', 'true'],
    );
    writeFileSync(path.join(repo, '.gitattributes'), '*.cv diff=cv\n*.flt filter=flt\n');
    writeFileSync(path.join(repo, 'a.txt'), 'a\nHOSTILE a\n');
    writeFileSync(path.join(repo, 'b.cv'), 'b\nHOSTILE b\n');
    writeFileSync(path.join(repo, 'c.flt'), 'c\nHOSTILE c\n');
    git(repo, 'add', 'a.txt');

    // Armed: plain git (as a user would run it) does run them. (core.pager only runs on a terminal, so it cannot be
    // shown armed here; the server must still never page.)
    gits(repo, ['status'], ['diff'], ['diff', '--no-ext-diff', 'b.cv']);
    const armed = readdirSync(markers).sort();
    expect(armed).toEqual(expect.arrayContaining(['clean', 'external', 'fsmonitor', 'textconv']));
    for (const m of armed) rmSync(path.join(markers, m));
    // A file whose stat data is dirty but content is the same makes status run the clean filter to compare.
    writeFileSync(path.join(repo, 'same.flt'), 'same\n');
    git(repo, '-c', 'filter.flt.clean=cat', '-c', 'filter.flt.smudge=cat', 'add', 'same.flt');
    writeFileSync(path.join(repo, 'same.flt'), 'same\n');
    rmSync(markers, { recursive: true });
    mkdirSync(markers);

    // What git runs is the server's whichever client asks: one era (the file's header).
    const client = await sharedServer('modern');
    const s = await client.callOk('git_status', { path: repo });
    expect(s.entries.map((e: { path: string }) => e.path)).toEqual(expect.arrayContaining(['a.txt', 'b.cv', 'c.flt']));
    const d = await client.callOk('git_diff', { path: repo });
    expect(d.diff).toContain('+HOSTILE b');
    expect(d.diff).toContain('+HOSTILE c');
    const staged = await client.callOk('git_diff', { path: repo, staged: true });
    expect(staged.diff).toContain('+HOSTILE a');
    await client.callOk('git_diff', { path: repo, paths: [path.join(repo, 'c.flt')], context_lines: 0 });
    const made = await client.callOk('create_directory', {
      path: path.join(repo, 'newdir'),
      expected_status_hash: s.status_hash,
    });
    expect(made.created).toBe(true);
    expectNoIncident(client);
    expect(readdirSync(markers), 'a repository-configured command ran').toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('failures are clear envelopes', () => {
  let client: TestClient;
  let base: string;
  let outsideRepo: string;
  beforeAll(async () => {
    base = freshDir(ZONE, 'fail-');
    outsideRepo = makeRepo(freshDir(scratch.dir, 'outside-'), { 'o.txt': 'OUTSIDEMARKER\n' });
    writeFileSync(path.join(outsideRepo, 'o.txt'), 'OUTSIDEMARKER changed\n');
    client = await sharedServer('modern');
  });

  it('a path outside the roots → NOT_ALLOWED (git_status, git_diff, a paths entry)', async () => {
    for (const [tool, args] of [
      ['git_status', { path: outsideRepo }],
      ['git_diff', { path: outsideRepo }],
      ['git_diff', { path: path.join(outsideRepo, 'o.txt') }],
      ['git_diff', { path: makeRepo(base, { 'x.txt': 'x\n' }), paths: [path.join(outsideRepo, 'o.txt')] }],
      ['git_status', { path: path.join(path.dirname(outsideRepo), 'does-not-exist') }],
      // Step 5 (containment) before step 8 (STALE_GIT): a stale hash does not mask an outside path.
      [
        'git_diff',
        {
          path: makeRepo(base, { 'y.txt': 'y\n' }),
          paths: [path.join(outsideRepo, 'o.txt')],
          expected_status_hash: sha('stale'),
        },
      ],
      [
        'edit_file',
        {
          path: path.join(outsideRepo, 'o.txt'),
          edits: [{ old_text: 'O', new_text: 'P' }],
          expected_status_hash: sha('stale'),
        },
      ],
    ] as const) {
      const r = await client.call(tool, args);
      expectCode(r, 'NOT_ALLOWED');
      expect(everything(r)).not.toContain('OUTSIDEMARKER');
    }
    expect(readFileSync(path.join(outsideRepo, 'o.txt'), 'utf8')).toBe('OUTSIDEMARKER changed\n');
  });

  it('a root that is a subdirectory of a repository → NOT_ALLOWED work_tree_outside_roots; mutations refuse too', async () => {
    const repo = makeRepo(scratch.dir, { sub: { 'in.txt': 'in\n' }, 'top.txt': 'TOPMARKER\n' }, 'parentrepo-');
    writeFileSync(path.join(repo, 'top.txt'), 'TOPMARKER changed\n');
    const sub = path.join(repo, 'sub');
    const c = await startServer('modern', [sub]);
    try {
      for (const tool of ['git_status', 'git_diff']) {
        const r = await c.call(tool, { path: sub });
        expect(expectCode(r, 'NOT_ALLOWED').error.details.reason).toBe('work_tree_outside_roots');
        expect(everything(r)).not.toContain('TOPMARKER');
      }
      const before = readFileSync(path.join(sub, 'in.txt'));
      const r = await c.call('edit_file', {
        path: path.join(sub, 'in.txt'),
        edits: [{ old_text: 'in', new_text: 'out' }],
        expected_hash: sha(before),
        expected_status_hash: sha('anything'),
      });
      expect(expectCode(r, 'NOT_ALLOWED').error.details.reason).toBe('work_tree_outside_roots');
      expect(readFileSync(path.join(sub, 'in.txt'))).toEqual(before);
      expectNoIncident(c);
    } finally {
      await c.close();
    }
  });

  it('a plain directory (and .git itself) → VALIDATION not_a_work_tree', async () => {
    const plain = freshDir(base, 'plain-');
    writeFileSync(path.join(plain, 'p.txt'), 'p\n');
    for (const [tool, args] of [
      ['git_status', { path: plain }],
      ['git_status', { path: path.join(plain, 'p.txt') }],
      ['git_diff', { path: plain }],
      ['write_file', { path: path.join(plain, 'new.txt'), content: 'n\n', expected_status_hash: sha('x') }],
    ] as const) {
      const e = expectCode(await client.call(tool, args), 'VALIDATION');
      expect(e.error.details.reason, `${tool} ${JSON.stringify(args)}`).toBe('not_a_work_tree');
    }
    expect(existsSync(path.join(plain, 'new.txt'))).toBe(false);
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    expect(
      expectCode(await client.call('git_status', { path: path.join(repo, '.git') }), 'VALIDATION').error.details.reason,
    ).toBe('not_a_work_tree');
  });

  it('a git planted on PATH inside the roots is never run (status, diff, status hash): VALIDATION git_inside_roots', async () => {
    // Attack (review of the merged integration): gh/glab inside the roots were refused, but git ran by name from
    // PATH — a PATH entry inside the roots (node_modules/.bin under npm run, ~/bin under a root at $HOME) let the
    // agent plant an executable `git` that ran with the server's environment (forge tokens included).
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    const bin = freshDir(base, 'planted-bin-');
    const marker = path.join(scratch.dir, `planted-git-ran-${process.pid}`);
    writeFileSync(path.join(bin, 'git'), `#!/bin/sh\necho ran > '${marker}'\nexec /usr/bin/git "$@"\n`, {
      mode: 0o755,
    });
    const realGitDir = path.dirname(execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim());
    const c = await startServer('modern', [base], [], {
      PATH: `${bin}${path.delimiter}${realGitDir}${path.delimiter}${process.env.PATH ?? ''}`,
    });
    try {
      for (const [tool, args] of [
        ['git_status', { path: repo }],
        ['git_diff', { path: repo }],
        ['write_file', { path: path.join(repo, 'n.txt'), content: 'n\n', expected_status_hash: sha('x') }],
      ] as const) {
        const e = expectCode(await c.call(tool, args), 'VALIDATION');
        expect(e.error.details.reason).toBe('git_inside_roots');
      }
      expect(existsSync(marker)).toBe(false);
      expect(existsSync(path.join(repo, 'n.txt'))).toBe(false);
      await c.callOk('list_allowed_directories', {});
      expectNoIncident(c);
    } finally {
      await c.close();
      rmSync(marker, { force: true });
    }
  });

  it('git not installed (PATH without git) → VALIDATION git_missing; the server keeps serving', async () => {
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    const bin = freshDir(scratch.dir, 'nogit-bin-');
    symlinkSync(process.execPath, path.join(bin, 'node'));
    const c = await startServer('modern', [repo], [], { PATH: bin });
    try {
      for (const [tool, args] of [
        ['git_status', { path: repo }],
        ['git_diff', { path: repo }],
        ['write_file', { path: path.join(repo, 'n.txt'), content: 'n\n', expected_status_hash: sha('x') }],
      ] as const) {
        const e = expectCode(await c.call(tool, args), 'VALIDATION');
        expect(e.error.details.reason).toBe('git_missing');
        expect(e.error.message).toMatch(/git/i);
      }
      expect(existsSync(path.join(repo, 'n.txt'))).toBe(false);
      await c.callOk('list_allowed_directories', {});
      expectNoIncident(c);
    } finally {
      await c.close();
    }
  });

  it.skipIf(process.getuid?.() !== 0)('a repository owned by another user → VALIDATION dubious_ownership', async () => {
    const repo = makeRepo(base, { 'a.txt': 'a\n' });
    writeFileSync(path.join(repo, 'a.txt'), 'DUBIOUSMARKER\n');
    execFileSync('chown', ['-R', '65534:65534', repo]);
    // Git refuses here even for root (it checks the owner against the effective uid; no safe.directory in HOME).
    expect(() => git(repo, 'status')).toThrow(/dubious ownership/);
    for (const tool of ['git_status', 'git_diff']) {
      const r = await client.call(tool, { path: repo });
      const e = expectCode(r, 'VALIDATION');
      expect(e.error.details.reason).toBe('dubious_ownership');
      expect(everything(r)).not.toContain('DUBIOUSMARKER');
    }
    chownSync(repo, 0, 0);
  });

  it('a corrupt repository → IO_ERROR with a clear message, never INTERNAL', async () => {
    const badIndex = makeRepo(base, { 'a.txt': 'a\n' });
    writeFileSync(path.join(badIndex, '.git', 'index'), 'garbage garbage garbage');
    for (const tool of ['git_status', 'git_diff']) {
      const e = expectCode(await client.call(tool, { path: badIndex }), 'IO_ERROR');
      expect(e.error.message).toMatch(/index/);
      expect(e.error.details.reason).toBe('corrupt_repository');
    }
    const emptyHead = makeRepo(base, { 'a.txt': 'a\n' });
    writeFileSync(path.join(emptyHead, '.git', 'HEAD'), '');
    for (const tool of ['git_status', 'git_diff']) {
      const e = expectCode(await client.call(tool, { path: emptyHead }), 'IO_ERROR');
      expect(e.error.details.reason).toBe('corrupt_repository');
      expect(e.error.message).toContain(path.join(emptyHead, '.git'));
    }
  });
});
