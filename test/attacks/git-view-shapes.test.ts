/**
 * Attack (docs/security.md "What git may read"): repository shapes beyond crafted entry paths, each reaching a place
 * that lies outside the work tree but inside the roots and is hidden by the policy (`private/**`), so the kernel wall
 * does not stand in the way and only the view can. Real server over stdio, real git. For each shape the hidden place
 * is made present (a marker file, a file with the very bytes the crafted entries expect, a repository) and absent;
 * git_status, git_diff (work tree, staged, paths, paged) and write_file with expected_status_hash must give
 * byte-identical results with no hidden byte, and git_status the answer pinned in STATUS:
 *  - a tracked symlink (mode 120000) to the hidden file, and entries "under" a symlinked directory (`lnk/acq.txt`
 *    with work-tree `lnk` a link to `../private`, tracked as a link or not at all, or skip-worktree with
 *    core.sparseCheckout and `info/sparse-checkout`);
 *  - gitlinks (mode 160000): a submodule whose `.git` file names a repository in the hidden place, and one whose
 *    work-tree directory is a link there;
 *  - `extensions.worktreeConfig` with a `config.worktree` setting `core.worktree` to the hidden place or elsewhere;
 *  - a `.git` file naming a repository in the hidden place, and `.git` files with an embedded LF or CR;
 *  - `objects/info/alternates` naming the hidden repository's objects with a staged entry naming the hidden blob, and
 *    a linked work tree whose `commondir` is the hidden repository (both held: git_location_outside_roots).
 * Two worked before the fix: the `.git` file into the hidden place (git_status listed the hidden repository's files,
 * git_diff printed their content), and config.worktree's core.worktree (ignored: git_status described a work tree the
 * user's git does not use). Every git location must now lie inside the roots and outside what the policy withholds.
 * The file tools write into none of the git-directory shapes these layouts use.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type CallResult, type TestClient } from '../helpers/server.js';
import { runBatch } from '../helpers/git-batch.js';
import { blobId, buildIndex, type IndexEntrySpec } from '../helpers/git-index.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {}, state: {} }, 'fs-tools-view-shapes-');
const HOME = path.join(scratch.dir, 'home');
const ROOT = path.join(scratch.dir, 'root');
const PRIVATE = path.join(ROOT, 'private');
const MARK = 'HIDDEN_SHAPE_MARKER';
const SECRET = `${MARK} acquisition\n`;
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

/**
 * The hidden place: present or absent. Present, it holds `acq.txt` (the marker: read by git, it would show in a diff),
 * `same.txt` (the bytes the crafted entries expect: a content comparison would match), a repository and a directory.
 */
function hidden(present: boolean): void {
  rmSync(PRIVATE, { recursive: true, force: true });
  if (!present) return;
  if (!existsSync(HIDDEN_TEMPLATE)) {
    // Built once, outside the roots; each `hidden(true)` copies it in-process (fresh files, no child process).
    mkdirSync(HIDDEN_TEMPLATE);
    writeFileSync(path.join(HIDDEN_TEMPLATE, 'acq.txt'), SECRET);
    writeFileSync(path.join(HIDDEN_TEMPLATE, 'same.txt'), SAME);
    mkdirSync(path.join(HIDDEN_TEMPLATE, 'sub'));
    writeFileSync(path.join(HIDDEN_TEMPLATE, 'sub', 'f.txt'), SECRET);
    runBatch(path.join(HIDDEN_TEMPLATE, 'sub'), gitEnv(), [
      ['git', 'init', '-q', '-b', 'main'],
      ['git', 'add', '-A'],
      ['git', 'commit', '-q', '-m', 'i'],
    ]);
    mkdirSync(path.join(HIDDEN_TEMPLATE, 'wt'));
    writeFileSync(path.join(HIDDEN_TEMPLATE, 'wt', 'a.txt'), SECRET);
  }
  cpSync(HIDDEN_TEMPLATE, PRIVATE, { recursive: true, verbatimSymlinks: true });
}
/** Where the hidden place is built once: outside the roots. */
const HIDDEN_TEMPLATE = path.join(scratch.dir, 'hidden-template');

/** A hidden file whose bytes the repository's index and objects also hold: a content comparison would match. */
const SAME = 'same bytes\n';
const A = blobId('a\n');
const S = blobId(SAME);

/** A committed repository at ROOT/name (a.txt) holding the secret's blob, so a content comparison could match. */
function repo(name: string): string {
  const dir = path.join(ROOT, name);
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  writeFileSync(path.join(dir, 'blob'), SAME);
  // One child process for the four (test/helpers/git-batch.ts); the commit holds the index only (a.txt).
  runBatch(dir, gitEnv(), [
    ['git', 'init', '-q', '-b', 'main'],
    ['git', 'add', 'a.txt'],
    ['git', 'hash-object', '-w', 'blob'],
    ['git', 'commit', '-q', '-m', 'i'],
  ]);
  rmSync(path.join(dir, 'blob'));
  return dir;
}

/** The blob of `content` written into the repository's objects (a tracked link's target string). */
function storeBlob(dir: string, content: string): string {
  return execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: dir, env: gitEnv(), input: content })
    .toString()
    .trim();
}

function writeIndex(dir: string, extra: IndexEntrySpec[], version: 2 | 3 = 2): void {
  const entries: IndexEntrySpec[] = [{ path: 'a.txt', oid: A, size: 2 }, ...extra];
  entries.sort((p, q) => Buffer.compare(Buffer.from(p.path), Buffer.from(q.path)));
  writeFileSync(path.join(dir, '.git', 'index'), buildIndex({ version, entries }));
}

const SHAPES: Record<string, (dir: string) => void> = {
  'tracked-symlink': (dir) => {
    symlinkSync('../private/acq.txt', path.join(dir, 'l'));
    writeIndex(dir, [{ path: 'l', oid: storeBlob(dir, '../private/acq.txt'), mode: 0o120000, size: 18 }]);
  },
  'under-untracked-link': (dir) => {
    symlinkSync('../private', path.join(dir, 'lnk'));
    writeIndex(dir, [
      { path: 'lnk/acq.txt', oid: S, size: SAME.length },
      { path: 'lnk/same.txt', oid: S, size: SAME.length },
    ]);
  },
  'under-tracked-link': (dir) => {
    symlinkSync('../private', path.join(dir, 'lnk'));
    writeIndex(dir, [
      { path: 'lnk', oid: storeBlob(dir, '../private'), mode: 0o120000, size: 10 },
      { path: 'lnk/acq.txt', oid: S, size: SAME.length },
      { path: 'lnk/same.txt', oid: S, size: SAME.length },
    ]);
  },
  'skip-worktree-under-link': (dir) => {
    symlinkSync('../private', path.join(dir, 'lnk'));
    git(dir, 'config', 'core.sparseCheckout', 'true');
    mkdirSync(path.join(dir, '.git', 'info'), { recursive: true });
    writeFileSync(path.join(dir, '.git', 'info', 'sparse-checkout'), '/a.txt\n/lnk/\n');
    writeIndex(
      dir,
      [
        { path: 'lnk/acq.txt', oid: S, size: SAME.length, extended: 0x4000 },
        { path: 'lnk/same.txt', oid: S, size: SAME.length, extended: 0x4000 },
      ],
      3,
    );
  },
  'gitlink-to-hidden': (dir) => {
    mkdirSync(path.join(dir, 'sub'));
    writeFileSync(path.join(dir, 'sub', '.git'), 'gitdir: ../../private/sub/.git\n');
    writeIndex(dir, [{ path: 'sub', oid: A, mode: 0o160000 }]);
  },
  'worktree-config': (dir) => {
    git(dir, 'config', 'core.repositoryformatversion', '1');
    git(dir, 'config', 'extensions.worktreeConfig', 'true');
    writeFileSync(path.join(dir, '.git', 'config.worktree'), '[core]\n\tworktree = ../../private/wt\n');
  },
  'worktree-config-elsewhere': (dir) => {
    mkdirSync(path.join(ROOT, 'elsewhere'), { recursive: true });
    git(dir, 'config', 'core.repositoryformatversion', '1');
    git(dir, 'config', 'extensions.worktreeConfig', 'true');
    writeFileSync(path.join(dir, '.git', 'config.worktree'), '[core]\n\tworktree = ../../elsewhere\n');
  },
  'gitfile-into-hidden': (dir) => {
    rmSync(path.join(dir, '.git'), { recursive: true });
    writeFileSync(path.join(dir, '.git'), 'gitdir: ../private/sub/.git\n');
  },
  'gitlink-at-link': (dir) => {
    symlinkSync('../private/sub', path.join(dir, 'sub'));
    writeIndex(dir, [{ path: 'sub', oid: A, mode: 0o160000 }]);
  },
  'gitfile-lf': (dir) => {
    rmSync(path.join(dir, '.git'), { recursive: true });
    writeFileSync(path.join(dir, '.git'), 'gitdir: ../private/sub/.git\n../x\n');
  },
  'gitfile-cr': (dir) => {
    rmSync(path.join(dir, '.git'), { recursive: true });
    writeFileSync(path.join(dir, '.git'), 'gitdir: ../private/sub/.git\r../x\r\n');
  },
  // Review (git-view shapes, second pass): an object store in the withheld place, with a staged entry naming the
  // hidden file's blob (git_diff staged would print it), and a linked work tree whose commondir lies there.
  'alternates-into-hidden': (dir) => {
    mkdirSync(path.join(dir, '.git', 'objects', 'info'), { recursive: true });
    writeFileSync(path.join(dir, '.git', 'objects', 'info', 'alternates'), '../../../private/sub/.git/objects\n');
    writeIndex(dir, [{ path: 'x.txt', oid: blobId(SECRET) }]);
  },
  'commondir-into-hidden': (dir) => {
    rmSync(path.join(dir, '.git'), { recursive: true });
    const gd = `${dir}-gd`;
    mkdirSync(gd);
    writeFileSync(path.join(gd, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(path.join(gd, 'commondir'), '../private/sub/.git\n');
    writeFileSync(path.join(gd, 'gitdir'), path.join(dir, '.git') + '\n');
    writeFileSync(path.join(dir, '.git'), `gitdir: ${gd}\n`);
  },
};

/** What git_status answers for each shape (the same whether or not the hidden place exists). */
const STATUS: Record<string, string> = {
  // The link itself is the entry; its target string is work-tree content, the hidden file is never opened.
  'tracked-symlink': 'A. l',
  // A work-tree directory an entry passes through that is a link into a withheld place: refused before git runs
  // (before: git ran, and only its own rule for paths under a link kept it from reading the hidden files).
  'under-untracked-link': 'git_location_outside_roots',
  'under-tracked-link': 'git_location_outside_roots',
  'skip-worktree-under-link': 'git_location_outside_roots',
  // The submodule is not entered (its .git file is never followed), whether it is a directory or a link.
  'gitlink-to-hidden': 'clean',
  'gitlink-at-link': 'clean',
  // config.worktree's core.worktree names another directory: refused like the common config's (before: ignored, and
  // git_status described a work tree the user's git does not use).
  'worktree-config': 'git_location_outside_roots',
  'worktree-config-elsewhere': 'unsupported_repository',
  // A .git file naming a repository in the withheld place (before: git_status and git_diff read the hidden
  // repository's refs, index and objects: its file names and content).
  'gitfile-into-hidden': 'git_location_outside_roots',
  'gitfile-lf': 'corrupt_repository',
  'gitfile-cr': 'corrupt_repository',
  'alternates-into-hidden': 'git_location_outside_roots',
  'commondir-into-hidden': 'git_location_outside_roots',
};

let client: TestClient;
beforeAll(async () => {
  hidden(true);
  for (const [name, shape] of Object.entries(SHAPES)) shape(repo(name));
  const policy = path.join(scratch.dir, 'policy.json');
  writeFileSync(
    policy,
    JSON.stringify({
      rules: [
        { pattern: 'private/**', access: 'hidden' },
        { pattern: 'private', access: 'hidden' },
      ],
    }),
  );
  client = await connect('modern', {
    args: ['--policy', policy, '--state-dir', path.join(scratch.dir, 'state'), ROOT],
    env: { HOME, XDG_CONFIG_HOME: HOME },
  });
}, 120_000);
afterAll(async () => {
  await client?.close();
});

/** Every git-reading call on one repository, as text (status hashes kept: they must not depend on the target). */
async function probe(dir: string): Promise<string[]> {
  const out: string[] = [];
  const text = (r: CallResult) => JSON.stringify(r.content);
  const status = await client.call('git_status', { path: dir });
  out.push(text(status));
  for (const args of [
    {},
    { staged: true },
    { paths: ['lnk', 'l', 'sub'].map((p) => path.join(dir, p)) },
    { max_bytes: 64 },
  ]) {
    out.push(text(await client.call('git_diff', { path: dir, ...args })));
  }
  out.push(
    text(
      await client.call('write_file', {
        path: path.join(dir, 'a.txt'),
        content: 'a\n',
        expected_status_hash: 'sha256:' + '0'.repeat(64),
      }),
    ),
  );
  return out;
}

describe('repository shapes that reach outside the work tree', () => {
  it.each(Object.keys(SHAPES))(
    '%s: no hidden byte, and the answers do not tell whether the target exists',
    async (name) => {
      const dir = path.join(ROOT, name);
      hidden(true);
      const present = await probe(dir);
      hidden(false);
      const absent = await probe(dir);
      hidden(true);
      expect((JSON.parse(present[0]) as { text: string }[])[0].text).toContain(STATUS[name]);
      for (const r of [...present, ...absent]) {
        expect(r).not.toContain(MARK);
        expect(r).not.toContain(PRIVATE);
      }
      expect(absent).toEqual(present);
    },
  );
});

describe('the git-directory shapes these repositories use are not written through the file tools', () => {
  it('config.worktree, a submodule .git file, and a submodule git dir stored under another name', async () => {
    // A submodule whose git dir lives in the root under a name of its own (a `--separate-git-dir` layout).
    const store = path.join(ROOT, 'store');
    mkdirSync(path.join(ROOT, 'super', 'mod'), { recursive: true });
    git(ROOT, 'init', '-q', '-b', 'main', '--separate-git-dir', store, path.join(ROOT, 'super', 'mod'));
    const targets = [
      path.join(ROOT, 'worktree-config', '.git', 'config.worktree'),
      path.join(ROOT, 'gitlink-to-hidden', 'sub', '.git'),
      path.join(store, 'config'),
      path.join(store, 'hooks', 'post-checkout'),
      path.join(store, 'info', 'sparse-checkout'),
    ];
    const before = targets.map((t) => (existsSync(t) ? readFileSync(t) : null));
    for (const t of targets) {
      const r = await client.callError('write_file', { path: t, content: '[core]\n\tfsmonitor = "touch x"\n' });
      expect(r.error.code, t).toBe('FILE_POLICY_DENIED');
      expect(r.error.details.source, t).toBe('builtin');
    }
    targets.forEach((t, i) => expect(existsSync(t) ? readFileSync(t) : null, t).toEqual(before[i]));
  });
});
