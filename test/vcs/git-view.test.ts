/**
 * Unit tests of the sanitized git view's pieces (src/vcs/git-view.ts, src/vcs/git.ts; issue 12), with the real git
 * where a view is opened:
 * - `isSafeRefName`: git's check-ref-format rules; a HEAD naming `refs/heads/../..` never names a file;
 * - `mapThroughRefspecs`: a branch's merge ref to its remote-tracking ref through fetch refspecs;
 * - private dirs are reused between calls without carrying one repository's info/exclude or shallow into the next,
 *   and one left by a dead server is swept;
 * - `throwGitFailure` never copies git's stderr (which can quote a file: "unexpected line in packed-refs: <line>")
 *   into the envelope, whatever the classification;
 * - `runGit` refuses the content-reading subcommands (they must go through a view).
 */
import type { PolicyContext } from '../../src/policy/authorize.js';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { gitStatus, runGit, throwGitFailure, withRepository } from '../../src/vcs/git.js';
import { isSafeRefName, mapThroughRefspecs } from '../../src/vcs/git-refs.js';
import type { CommandResult } from '../../src/vcs/run-command.js';

/** A policy context with one root and no rules. */
const policyOf = (real: string): PolicyContext =>
  ({
    roots: [{ given: real, real, source: 'cli' }],
    allowSecrets: false,
    policy: { rules: [] },
  }) as unknown as PolicyContext;
import { gitViewAccess } from '../../src/policy/git-access.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-gitview-test-')));
// A private dir left by a server that died (pid 999999999 cannot exist: above Linux's pid_max); swept at first use.
const STALE = path.join(realpathSync(os.tmpdir()), 'fs-tools-gitview-999999999-stale');
mkdirSync(path.join(STALE, 'refs'), { recursive: true });
afterAll(() => rmSync(base, { recursive: true, force: true }));

function git(cwd: string, ...args: string[]): string {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...env,
      HOME: base,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@e.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@e.invalid',
    },
  });
}
function repo(name: string): string {
  const dir = path.join(base, name);
  mkdirSync(dir);
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'i');
  return dir;
}

describe('isSafeRefName', () => {
  it.each([
    ['refs/heads/main', true],
    ['refs/heads/feature/x-1.2', true],
    ['refs/remotes/origin/main', true],
    ['refs/heads/ä', true],
    ['refs/heads/../../../../etc/passwd', false],
    ['refs/heads/..', false],
    ['HEAD', false],
    ['/refs/heads/x', false],
    ['refs/heads/x/', false],
    ['refs/heads/x.lock', false],
    ['refs/heads/.hidden', false],
    ['refs/heads/a b', false],
    ['refs/heads/a~1', false],
    ['refs/heads/a^', false],
    ['refs/heads/a:b', false],
    ['refs/heads/a\\b', false],
    ['refs/heads/a@{1}', false],
    ['refs//heads', false],
    ['refs/heads/x.', false],
    ['refs/heads/\u0001', false],
  ])('%s → %s', (name, ok) => expect(isSafeRefName(name)).toBe(ok));
});

describe('mapThroughRefspecs', () => {
  it('maps through the first matching refspec (glob or exact), skipping negative ones', () => {
    expect(mapThroughRefspecs('refs/heads/main', ['+refs/heads/*:refs/remotes/origin/*'])).toBe(
      'refs/remotes/origin/main',
    );
    expect(mapThroughRefspecs('refs/heads/a/b', ['^refs/heads/a/*', 'refs/heads/*:refs/remotes/o/*'])).toBe(
      'refs/remotes/o/a/b',
    );
    expect(mapThroughRefspecs('refs/heads/main', ['refs/heads/main:refs/remotes/o/trunk'])).toBe(
      'refs/remotes/o/trunk',
    );
    expect(mapThroughRefspecs('refs/heads/main', ['refs/tags/*:refs/tags/*'])).toBeNull();
    expect(mapThroughRefspecs('refs/heads/main', ['refs/heads/main'])).toBeNull();
  });
});

describe('private git dirs', () => {
  it('are reused without carrying info/exclude or shallow from one repository to the next', async () => {
    const a = repo('excluding');
    writeFileSync(path.join(a, '.git', 'info', 'exclude'), '*.log\n');
    writeFileSync(path.join(a, 'x.log'), 'x\n');
    const b = repo('plain');
    writeFileSync(path.join(b, 'x.log'), 'x\n');
    const access = gitViewAccess(policyOf(base));
    const opts = { timeoutMs: 30_000 };
    const statusOf = (dir: string) => withRepository(dir, access, opts, async (v) => (await gitStatus(v, opts)).raw);
    for (let round = 0; round < 3; round++) {
      expect(await statusOf(a)).not.toContain('x.log');
      expect(await statusOf(b)).toContain('? x.log');
    }
    // Concurrent calls each get a private dir of their own.
    const both = await Promise.all([statusOf(a), statusOf(b), statusOf(a), statusOf(b)]);
    expect(both.map((s) => s.includes('x.log'))).toEqual([false, true, false, true]);
    // The first private dir of this process swept the one a dead server left behind.
    expect(existsSync(STALE)).toBe(false);
  });
});

describe('throwGitFailure', () => {
  const result = (stderr: string, exitCode = 128): CommandResult => ({
    exitCode,
    stdout: '',
    stderr,
    timedOut: false,
    outputLimited: false,
    spawnError: null,
    durationMs: 1,
  });
  it.each([
    'fatal: unexpected line in .git/packed-refs: LEAKED_LINE_MARKER',
    "fatal: bad numeric config value 'LEAKED_LINE_MARKER' for 'core.abbrev'",
    'error: index file smaller than expected LEAKED_LINE_MARKER',
    'fatal: not a git repository: LEAKED_LINE_MARKER',
    'fatal: loose object 1234 (stored in LEAKED_LINE_MARKER) is corrupt',
    'LEAKED_LINE_MARKER',
  ])('never copies stderr: %s', async (stderr) => {
    const where = repo(`fail-${Math.random().toString(36).slice(2)}`);
    const caught: ToolError[] = [];
    try {
      throwGitFailure(result(stderr), where, 'status');
    } catch (e) {
      caught.push(e as ToolError);
    }
    await withRepository(where, gitViewAccess(policyOf(base)), { timeoutMs: 30_000 }, async (view) => {
      try {
        throwGitFailure(result(stderr), where, 'status', view);
      } catch (e) {
        caught.push(e as ToolError);
      }
    });
    expect(caught).toHaveLength(2);
    for (const e of caught) {
      expect(e).toBeInstanceOf(ToolError);
      expect(JSON.stringify({ m: e.message, d: e.details, s: e.suggestion })).not.toContain('LEAKED_LINE_MARKER');
      expect(typeof e.details.reason).toBe('string');
    }
  });
});

describe('runGit', () => {
  it('refuses status and diff (only a view may run them)', async () => {
    for (const sub of ['status', 'diff', 'diff-files', 'diff-index']) {
      await expect(runGit([sub], { cwd: base, timeoutMs: 1000, isInside: () => false })).rejects.toThrow(/GitView/);
    }
  });
});
