/**
 * One way to find a repository (docs/security.md "Finding the repository and continuation cursors"), against the real
 * server over stdio, real git, the real gh against the local fake GitHub and the HTTPS path against the fake GitLab:
 *
 * - reproduced attack: a work tree whose `.git/config` is a symlink to another project's config outside the roots
 *   (remote `payroll` on `git.payroll-secret.internal`). git itself follows the link (positive control). git_status
 *   refuses it (NOT_ALLOWED git_location_outside_roots naming the link); github_issues and gitlab_issues with `path`
 *   now refuse it with the same code, path and details — before, their remote lookup let git read the linked file and
 *   returned `*_REPO_UNRESOLVED … remotes: [{name: "payroll", host: "git.payroll-secret.internal"}]`. Nothing of the
 *   outside file (host, path, the outside directory) is in any envelope or on stderr, and nothing reaches either fake.
 *   The same holds for a `.git` link and a `.git` file leading to an outside git directory, and an `include.path` to
 *   the outside config adds no remote. A normal work tree resolves through the fakes (the refusal is the link's).
 * - a staged rename from a policy-hidden path (a `private` directory hidden): git_status shows neither name (the entry is left
 *   out, as git_diff leaves out the file); the same for a rename into a hidden path. Without the policy the same
 *   repository shows both renames with orig_path (positive control).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeGitHub } from '../helpers/fake-github.js';
import { FAKE_GITLAB_TOKEN, FakeGitLab } from '../helpers/fake-gitlab.js';
import { connect, type CallResult, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ root: {}, outside: {}, home: {}, bin: {} }, 'fs-tools-repolookup-');
const ROOT = path.join(scratch.dir, 'root');
const OUTSIDE = path.join(scratch.dir, 'outside');
const HOME = path.join(scratch.dir, 'home');
const BIN = path.join(scratch.dir, 'bin');
const GIT = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
// git but no glab on the GitLab server's PATH (outside the roots): the HTTPS path.
symlinkSync(GIT, path.join(BIN, 'git'));

const SECRET_HOST = 'git.payroll-secret.internal';
const SECRET_PATH = 'payroll/ledger';
const gitEnv = { ...process.env, HOME, GIT_CONFIG_NOSYSTEM: '1' };
const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' });

let gh: FakeGitHub;
let gl: FakeGitLab;
let ghServer: TestClient;
let glServer: TestClient;

/** A work tree under ROOT with these remotes. */
function workTree(name: string, remotes: Record<string, string>): string {
  const dir = path.join(ROOT, name);
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q');
  for (const [remote, url] of Object.entries(remotes)) git(dir, 'remote', 'add', remote, url);
  return dir;
}

/** The other project, outside the roots: its config names a private host and project. */
const PAYROLL = path.join(OUTSIDE, 'payroll');
mkdirSync(PAYROLL);
git(PAYROLL, 'init', '-q');
git(PAYROLL, 'remote', 'add', 'payroll', `https://${SECRET_HOST}/${SECRET_PATH}.git`);
const PAYROLL_CONFIG = path.join(PAYROLL, '.git', 'config');

beforeAll(async () => {
  gh = await FakeGitHub.start();
  gl = await FakeGitLab.start();
  ghServer = await connect('modern', { args: [ROOT], env: { HOME, XDG_CONFIG_HOME: HOME, ...gh.env() } });
  glServer = await connect('modern', {
    args: [ROOT],
    env: {
      HOME,
      XDG_CONFIG_HOME: HOME,
      PATH: BIN,
      GITLAB_TOKEN: FAKE_GITLAB_TOKEN,
      GITLAB_HOST: gl.url,
      GITLAB_PRIVATE_TOKEN: '',
      CI_JOB_TOKEN: '',
      GITLAB_REPO: 'decoy/decoy',
    },
  });
});
afterAll(async () => {
  await ghServer?.close();
  await glServer?.close();
  await gh?.close();
  await gl?.close();
  scratch.cleanup();
});
beforeEach(() => {
  gh.reset();
  gl.reset();
});

/** The error envelope of a failed call (fails the test if the call succeeded). */
function envelopeOf(r: CallResult): { code: string; path: string | null; details: Record<string, unknown> } {
  expect(r.isError, JSON.stringify(r.content)).toBe(true);
  return (JSON.parse(r.content[0].text!) as { error: { code: string; path: string | null; details: any } }).error;
}

/** Nothing of the outside project in `text`. */
function expectNoOutside(text: string): void {
  for (const s of [SECRET_HOST, 'payroll-secret', SECRET_PATH, 'ledger', OUTSIDE]) expect(text).not.toContain(s);
}

describe('the issue tools find a repository exactly as git_status does', () => {
  it('positive control: a normal work tree resolves through the fakes (GitHub via gh, GitLab over HTTPS)', async () => {
    const ghTree = workTree('normal-gh', { origin: 'https://github.localhost/octo/hello.git' });
    const r = await ghServer.call('github_issues', { action: 'list', path: ghTree, limit: 1 });
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ repo: 'octo/hello', host: 'github.localhost' });
    const glTree = workTree('normal-gl', { origin: `${gl.url}/a/b/c.git` });
    const s = await glServer.call('gitlab_issues', { action: 'list', path: glTree, limit: 1 });
    expect(s.isError, JSON.stringify(s.content)).toBeFalsy();
    expect(s.structuredContent).toMatchObject({ repo: 'a/b/c' });
  });

  const layouts: Array<[string, () => string]> = [
    [
      '.git/config is a symlink to the outside project config',
      () => {
        const dir = workTree('config-link', { origin: 'https://github.localhost/octo/hello.git' });
        rmSync(path.join(dir, '.git', 'config'));
        symlinkSync(PAYROLL_CONFIG, path.join(dir, '.git', 'config'));
        // Positive control: git itself follows the link and reads the outside project's remote.
        expect(git(dir, 'config', '--get', 'remote.payroll.url').trim()).toBe(
          `https://${SECRET_HOST}/${SECRET_PATH}.git`,
        );
        return dir;
      },
    ],
    [
      '.git is a symlink to the outside git directory',
      () => {
        const dir = path.join(ROOT, 'gitdir-link');
        mkdirSync(dir);
        symlinkSync(path.join(PAYROLL, '.git'), path.join(dir, '.git'));
        return dir;
      },
    ],
    [
      '.git is a file naming the outside git directory',
      () => {
        const dir = path.join(ROOT, 'gitdir-file');
        mkdirSync(dir);
        writeFileSync(path.join(dir, '.git'), `gitdir: ${path.join(PAYROLL, '.git')}\n`);
        return dir;
      },
    ],
  ];

  it.each(layouts)(
    '%s: git_status and both issue tools refuse with the same envelope, nothing outside shown or sent',
    async (_name, make) => {
      const dir = make();
      const status = await ghServer.call('git_status', { path: dir });
      const reference = envelopeOf(status);
      expect(reference).toMatchObject({ code: 'NOT_ALLOWED', details: { reason: 'git_location_outside_roots' } });
      expectNoOutside(JSON.stringify(status));
      for (const [server, tool] of [
        [ghServer, 'github_issues'],
        [glServer, 'gitlab_issues'],
      ] as const) {
        for (const action of ['list', 'create'] as const) {
          const r = await server.call(tool, {
            action,
            path: dir,
            ...(action === 'create' ? { title: 'planted', body: 'x' } : {}),
          });
          const e = envelopeOf(r);
          expect({ code: e.code, path: e.path, details: e.details }).toEqual({
            code: reference.code,
            path: reference.path,
            details: reference.details,
          });
          expectNoOutside(JSON.stringify(r));
        }
        expectNoOutside(server.stderr());
      }
      expect(gh.requests).toEqual([]);
      expect(gh.connects).toEqual([]);
      expect(gl.requests).toEqual([]);
    },
  );

  it("an include.path to the outside project's config adds no remote (the envelope lists only the repository's own)", async () => {
    const dir = workTree('include-outside', { origin: 'https://example.org/x/y.git' });
    git(dir, 'config', 'include.path', PAYROLL_CONFIG);
    // Positive control: git itself reads the included file.
    expect(git(dir, 'config', '--get', 'remote.payroll.url').trim()).toContain(SECRET_HOST);
    for (const [server, tool, code] of [
      [ghServer, 'github_issues', 'GH_REPO_UNRESOLVED'],
      [glServer, 'gitlab_issues', 'GL_REPO_UNRESOLVED'],
    ] as const) {
      const r = await server.call(tool, { action: 'list', path: dir });
      const e = envelopeOf(r);
      expect(e.code).toBe(code);
      expect(e.details.remotes).toEqual([{ name: 'origin', host: 'example.org' }]);
      expectNoOutside(JSON.stringify(r));
    }
    expect(gh.requests).toEqual([]);
    expect(gl.requests).toEqual([]);
  });
});

describe('git_status: a rename with a policy-hidden side names neither side', () => {
  let hiding: TestClient;
  let plain: TestClient;
  let repo: string;
  beforeAll(async () => {
    repo = path.join(ROOT, 'renames');
    mkdirSync(path.join(repo, 'private'), { recursive: true });
    mkdirSync(path.join(repo, 'public'));
    git(repo, 'init', '-q');
    writeFileSync(path.join(repo, 'private', 'acquisition-of-acme.txt'), 'the acquisition of acme: terms\n'.repeat(20));
    writeFileSync(path.join(repo, 'public', 'a.txt'), 'an ordinary public file\n'.repeat(20));
    writeFileSync(path.join(repo, 'public', 'keep.txt'), 'kept\n');
    git(repo, 'add', '-A');
    git(repo, '-c', 'user.name=t', '-c', 'user.email=t@example.org', 'commit', '-qm', 'init');
    git(repo, 'mv', 'private/acquisition-of-acme.txt', 'public/notes.txt');
    git(repo, 'mv', 'public/a.txt', 'private/moved-here.txt');
    writeFileSync(path.join(repo, 'public', 'keep.txt'), 'kept, changed\n');
    const policy = path.join(HOME, 'policy.json');
    writeFileSync(policy, JSON.stringify({ rules: [{ pattern: 'private', access: 'hidden' }] }));
    hiding = await connect('modern', { args: [`--policy=${policy}`, ROOT] });
    plain = await connect('modern', { args: [ROOT] });
  });
  afterAll(async () => {
    await hiding?.close();
    await plain?.close();
  });

  it('positive control: without the policy both renames are entries with orig_path', async () => {
    const s = await plain.callOk('git_status', { path: repo });
    expect(s.entries).toEqual(
      expect.arrayContaining([
        {
          path: 'public/notes.txt',
          kind: 'renamed',
          index: 'R',
          worktree: '.',
          orig_path: 'private/acquisition-of-acme.txt',
        },
        { path: 'private/moved-here.txt', kind: 'renamed', index: 'R', worktree: '.', orig_path: 'public/a.txt' },
      ]),
    );
  });

  it('with private/ hidden: neither rename is shown (no hidden name, in entries or text), as in git_diff', async () => {
    const r = await hiding.call('git_status', { path: repo });
    expect(r.isError).toBeFalsy();
    const all = JSON.stringify(r);
    expect(all).not.toContain('private/');
    expect(all).not.toContain('acquisition');
    expect(all).not.toContain('moved-here');
    const s = r.structuredContent!;
    expect(s.entries).toEqual([{ path: 'public/keep.txt', kind: 'changed', index: '.', worktree: 'M' }]);
    expect(s.entries_total).toBe(1);
    // git_diff (staged) leaves out the same files, and names no hidden path either.
    const d = await hiding.call('git_diff', { path: repo, staged: true });
    expect(d.isError).toBeFalsy();
    expect(JSON.stringify(d)).not.toContain('private/');
    expect(JSON.stringify(d)).not.toContain('acquisition');
    expect(d.structuredContent!.files).toEqual([]);
    // Not even counted (the plain server counts both renames).
    expect(d.structuredContent!.files_total).toBe(0);
    expect((await plain.callOk('git_diff', { path: repo, staged: true })).files_total).toBe(2);
    // git_diff reports the same status hash as git_status; it is not the plain server's, whose covers the hidden lines.
    expect(d.structuredContent!.status_hash).toBe(s.status_hash);
    expect(s.status_hash).not.toBe((await plain.callOk('git_status', { path: repo })).status_hash);
  });

  it('status_hash: a guessed hidden name cannot be confirmed by computing the hash of the expected output', async () => {
    // Reproduced before the fix: with only untracked changes every porcelain line is `? <path>` and the headers are
    // in git_status's answer, so sha256 over the output with a guessed hidden name matched status_hash exactly when
    // the guess was right. Now the hidden lines are left out: the hash is the visible output's, whatever is hidden.
    const probe = path.join(ROOT, 'probe');
    mkdirSync(path.join(probe, 'private'), { recursive: true });
    mkdirSync(path.join(probe, 'public'));
    git(probe, 'init', '-q');
    writeFileSync(path.join(probe, 'public', 'keep.txt'), 'kept\n');
    git(probe, 'add', '-A');
    git(probe, '-c', 'user.name=t', '-c', 'user.email=t@example.org', 'commit', '-qm', 'init');
    writeFileSync(path.join(probe, 'private', 'acme-deal.txt'), 'secret\n');
    writeFileSync(path.join(probe, 'public', 'y.txt'), 'visible\n');
    const s = await hiding.callOk('git_status', { path: probe });
    expect(s.entries).toEqual([{ path: 'public/y.txt', kind: 'untracked', index: '?', worktree: '?' }]);
    const sha = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;
    const head = `# branch.oid ${s.head}\n# branch.head ${s.branch}\n`;
    expect(s.status_hash).not.toBe(sha(`${head}? private/acme-deal.txt\n? public/y.txt\n`));
    expect(s.status_hash).toBe(sha(`${head}? public/y.txt\n`));
    // Positive control: the plain server's hash is git's whole output, the hidden line included.
    expect((await plain.callOk('git_status', { path: probe })).status_hash).toBe(
      sha(`${head}? private/acme-deal.txt\n? public/y.txt\n`),
    );
    // expected_status_hash agrees with git_status under the same policy (a mutation with it is not STALE_GIT), and a
    // hidden file's change does not move it (the hidden path behaves as absent).
    writeFileSync(path.join(probe, 'private', 'acme-deal.txt'), 'secret, changed\n');
    const w = await hiding.callOk('write_file', {
      path: path.join(probe, 'public', 'z.txt'),
      content: 'new\n',
      expected_status_hash: s.status_hash,
    });
    expect(w).toMatchObject({ status_hash: sha(`${head}? public/y.txt\n? public/z.txt\n`) });
  });
});
