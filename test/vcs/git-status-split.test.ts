/**
 * The status run as two git processes (src/vcs/git-status-run.ts: `status --untracked-files=no` beside
 * `ls-files --others --exclude-standard`, assembled) against one `git status --porcelain=v2 --branch
 * --untracked-files=all --ignore-submodules=all`, byte for byte, with the real git on real files: through the same
 * view (one process, two processes) and plain git in the repository. Cases: nested repositories shown as `dir/`,
 * ignored directories and files, negated patterns, empty directories, names needing quotes (space, tab, newline,
 * quote, backslash, non-ASCII and a byte that is not UTF-8) under core.quotePath both ways, byte order of names,
 * skip-worktree and assume-unchanged entries, intent-to-add, status.showUntrackedFiles=no in the repository's config,
 * a submodule, an unborn branch, a detached HEAD, an upstream, a conflict, a staged rename, a file where the index
 * has a directory, 3,000 untracked files. Then the failure paths: either half failing or timing out stops the other
 * and fails as the one status does; a caller's cancel stops both. When the split is taken (index size, load), and
 * that git_status' nested-repository check runs on the assembled list.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { gitViewAccess } from '../../src/policy/git-access.js';
import { ToolError } from '../../src/errors/tool-error.js';
import { gitStatus, openRepository, STATUS_ARGS, withRepository } from '../../src/vcs/git.js';
import { runFullStatus, SPLIT_MIN_ENTRIES, splitStatus } from '../../src/vcs/git-status-run.js';
import { commandRunner, GitView, type GitRunner } from '../../src/vcs/git-view.js';
import { resolveGit } from '../../src/vcs/find-cli.js';
import type { CommandResult } from '../../src/vcs/run-command.js';
import { isolatedGit } from '../helpers/isolated-git.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-status-split-')));
const home = path.join(base, 'home');
mkdirSync(home);
afterAll(() => rmSync(base, { recursive: true, force: true }));

const policyOf = (real: string): PolicyContext =>
  ({
    roots: [{ given: real, real, source: 'cli' }],
    allowSecrets: false,
    policy: { rules: [] },
  }) as unknown as PolicyContext;
const access = gitViewAccess(policyOf(base));
const opts = { timeoutMs: 60_000 };

const git = (cwd: string, ...args: string[]): string => isolatedGit(cwd, home, ...args);
const write = (file: string, text = 'x\n'): void => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
};

/** A repository with one commit of `files` (relative names) under `base/name`. */
function repo(name: string, files: string[] = ['a.txt']): string {
  const dir = path.join(base, name);
  mkdirSync(dir);
  git(dir, 'init', '-q', '-b', 'main');
  for (const f of files) write(path.join(dir, f));
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'i');
  return dir;
}

/** The three outputs: the view's one status, the view's two halves assembled, plain git's status in the repository. */
async function outputs(dir: string): Promise<{ one: string; two: string; plain: string }> {
  const { one, two } = await withRepository(dir, access, opts, async (view) => {
    const single = await runFullStatus(view, opts, false);
    const halves = await runFullStatus(view, opts, true);
    expect(single.exitCode).toBe(0);
    expect(halves.exitCode).toBe(0);
    return { one: single.stdout, two: halves.stdout };
  });
  const plain = git(dir, '--no-optional-locks', ...STATUS_ARGS);
  return { one, two, plain };
}

/** Untracked lines (`? …`) of a porcelain v2 output, in order. */
const untrackedOf = (out: string): string[] => out.split('\n').filter((l) => l.startsWith('? '));

type Case = [name: string, build: () => string, untracked: string[] | number];

const cases: Case[] = [
  [
    'modified, staged, deleted and untracked files in nested directories',
    () => {
      const d = repo('basic', ['a.txt', 'src/b.ts', 'src/deep/c.ts', 'gone.txt']);
      write(path.join(d, 'a.txt'), 'changed\n');
      write(path.join(d, 'src/b.ts'), 'staged\n');
      git(d, 'add', 'src/b.ts');
      rmSync(path.join(d, 'gone.txt'));
      write(path.join(d, 'src/deep/new.ts'));
      write(path.join(d, 'top.txt'));
      write(path.join(d, 'fresh/dir/x.txt'));
      return d;
    },
    ['? fresh/dir/x.txt', '? src/deep/new.ts', '? top.txt'],
  ],
  [
    'nested repositories (shown as dir/), also inside an untracked directory and under an ignored one',
    () => {
      const d = repo('nested');
      const inner = path.join(d, 'inner');
      mkdirSync(inner);
      git(inner, 'init', '-q');
      write(path.join(inner, 'f.txt'));
      const deeper = path.join(d, 'plain/sub');
      mkdirSync(deeper, { recursive: true });
      git(deeper, 'init', '-q');
      write(path.join(d, 'plain/file.txt'));
      write(path.join(d, '.gitignore'), 'ignored/\n');
      mkdirSync(path.join(d, 'ignored/repo'), { recursive: true });
      git(path.join(d, 'ignored/repo'), 'init', '-q');
      // A work tree whose .git is a file naming a git dir inside the roots.
      const linked = path.join(d, 'linked');
      mkdirSync(linked);
      writeFileSync(path.join(linked, '.git'), 'gitdir: ../inner/.git\n');
      return d;
    },
    ['? .gitignore', '? inner/', '? linked/', '? plain/file.txt', '? plain/sub/'],
  ],
  [
    'ignored directories and files, negated patterns, info/exclude, empty directories',
    () => {
      const d = repo('ignores', ['keep/tracked.log']);
      write(path.join(d, '.gitignore'), 'build/\n*.log\n!important.log\n/only-top.txt\ncache/**/deep\n');
      write(path.join(d, '.git/info/exclude'), 'excluded-by-info\n');
      write(path.join(d, 'build/out.js'));
      write(path.join(d, 'x.log'));
      write(path.join(d, 'important.log'));
      write(path.join(d, 'sub/important.log'));
      write(path.join(d, 'sub/y.log'));
      write(path.join(d, 'only-top.txt'));
      write(path.join(d, 'sub/only-top.txt'));
      write(path.join(d, 'cache/a/deep/z.txt'));
      write(path.join(d, 'cache/a/shallow.txt'));
      write(path.join(d, 'excluded-by-info'));
      write(path.join(d, 'keep/tracked.log'), 'changed\n');
      write(path.join(d, 'sub/.gitignore'), '*.tmp\n');
      write(path.join(d, 'sub/z.tmp'));
      mkdirSync(path.join(d, 'empty/deeper'), { recursive: true });
      mkdirSync(path.join(d, 'only-ignored'));
      write(path.join(d, 'only-ignored/a.log'));
      return d;
    },
    [
      '? .gitignore',
      '? cache/a/shallow.txt',
      '? important.log',
      '? sub/.gitignore',
      '? sub/important.log',
      '? sub/only-top.txt',
    ],
  ],
  ...[true, false].map((quotePath): Case => [
    `names needing quotes, core.quotePath=${quotePath}`,
    () => {
      const d = repo(`quotes-${quotePath}`, ['tracked ä.txt']);
      git(d, 'config', 'core.quotePath', String(quotePath));
      for (const n of ['sp ace', 'tab\there', 'new\nline', 'quo"te', 'back\\slash', 'ä-umlaut', '日本', 'dir ä/x y']) {
        write(path.join(d, n));
      }
      write(path.join(d, 'tracked ä.txt'), 'changed\n');
      // A name that is not UTF-8 (one byte 0xff).
      writeFileSync(Buffer.concat([Buffer.from(`${d}/bad-`), Buffer.from([0xff])]), 'x\n');
      return d;
    },
    quotePath
      ? [
          '? "back\\\\slash"',
          '? "bad-\\377"',
          '? "dir \\303\\244/x y"',
          '? "new\\nline"',
          '? "quo\\"te"',
          '? sp ace',
          '? "tab\\there"',
          '? "\\303\\244-umlaut"',
          '? "\\346\\227\\245\\346\\234\\254"',
        ]
      : [
          '? "back\\\\slash"',
          '? bad-\uFFFD',
          '? dir ä/x y',
          '? "new\\nline"',
          '? "quo\\"te"',
          '? sp ace',
          '? "tab\\there"',
          '? ä-umlaut',
          '? 日本',
        ],
  ]),
  [
    'byte order of names (punctuation, case, a directory beside its prefix, non-ASCII, a symlink)',
    () => {
      const d = repo('order');
      for (const n of ['a-b', 'a/b-c/d', 'a.b', 'A', '_', 'a0', 'a/b/c', 'a/bc', 'z', 'é', 'B']) write(path.join(d, n));
      symlinkSync('a', path.join(d, 'link-to-dir'));
      symlinkSync('/nonexistent', path.join(d, 'dangling'));
      return d;
    },
    // By the names' bytes (the quoted é sorts by its bytes 0xc3 0xa9, last).
    [
      '? A',
      '? B',
      '? _',
      '? a-b',
      '? a.b',
      '? a/b-c/d',
      '? a/b/c',
      '? a/bc',
      '? a0',
      '? dangling',
      '? link-to-dir',
      '? z',
      '? "\\303\\251"',
    ],
  ],
  [
    'skip-worktree, assume-unchanged and intent-to-add entries, showUntrackedFiles=no in the config',
    () => {
      const d = repo('flags', ['sw/absent.txt', 'sw/present.txt', 'au.txt', 'plain.txt']);
      git(d, 'update-index', '--skip-worktree', 'sw/absent.txt', 'sw/present.txt');
      rmSync(path.join(d, 'sw/absent.txt'));
      write(path.join(d, 'sw/present.txt'), 'changed\n');
      git(d, 'update-index', '--assume-unchanged', 'au.txt');
      write(path.join(d, 'au.txt'), 'changed, not seen\n');
      write(path.join(d, 'ita.txt'));
      git(d, 'add', '-N', 'ita.txt');
      git(d, 'config', 'status.showUntrackedFiles', 'no');
      write(path.join(d, 'sw/new.txt'));
      return d;
    },
    ['? sw/new.txt'],
  ],
  [
    'a submodule (ignored), an upstream with ahead/behind, a staged rename, a file where the index has a directory',
    () => {
      const up = repo('upstream-src', ['u.txt']);
      const d = path.join(base, 'clone');
      git(base, 'clone', '-q', up, d);
      write(path.join(d, 'u.txt'), 'ahead\n');
      git(d, 'commit', '-qam', 'ahead');
      write(path.join(up, 'u2.txt'));
      git(up, 'add', '-A');
      git(up, 'commit', '-qm', 'behind');
      git(d, 'fetch', '-q');
      const sub = repo('sub-src', ['s.txt']);
      git(d, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', sub, 'sub');
      git(d, 'commit', '-qm', 'sub');
      write(path.join(d, 'sub/s.txt'), 'dirty\n');
      write(path.join(d, 'sub/untracked-in-sub.txt'));
      write(path.join(d, 'dir/f.txt'));
      git(d, 'add', '-A');
      git(d, 'commit', '-qm', 'dir');
      git(d, 'mv', 'u.txt', 'moved.txt');
      rmSync(path.join(d, 'dir'), { recursive: true });
      write(path.join(d, 'dir'), 'now a file\n');
      return d;
    },
    ['? dir'],
  ],
  [
    'an unborn branch with an index',
    () => {
      const d = path.join(base, 'unborn');
      mkdirSync(d);
      git(d, 'init', '-q', '-b', 'main');
      write(path.join(d, 'staged.txt'));
      git(d, 'add', 'staged.txt');
      write(path.join(d, 'loose.txt'));
      return d;
    },
    ['? loose.txt'],
  ],
  [
    'a detached HEAD and a conflict',
    () => {
      const d = repo('conflict', ['c.txt']);
      git(d, 'checkout', '-q', '-b', 'other');
      write(path.join(d, 'c.txt'), 'other\n');
      git(d, 'commit', '-qam', 'other');
      git(d, 'checkout', '-q', 'main');
      write(path.join(d, 'c.txt'), 'main\n');
      git(d, 'commit', '-qam', 'main');
      git(d, 'checkout', '-q', '--detach');
      try {
        git(d, 'merge', '-q', 'other');
      } catch {
        // the conflict is the point
      }
      write(path.join(d, 'after.txt'));
      return d;
    },
    ['? after.txt'],
  ],
  [
    '3,000 untracked files (more than a pipe holds)',
    () => {
      const d = repo('many');
      for (let i = 0; i < 3000; i++) write(path.join(d, `u${i % 30}`, `file-${i}.txt`));
      return d;
    },
    3000,
  ],
];

describe('the status in two halves equals the one status byte for byte', () => {
  it.each(cases)('%s', async (_name, build, untracked) => {
    const dir = build();
    const { one, two, plain } = await outputs(dir);
    expect(two).toBe(one);
    expect(one).toBe(plain);
    if (typeof untracked === 'number') expect(untrackedOf(two)).toHaveLength(untracked);
    else expect(untrackedOf(two)).toEqual(untracked);
  });

  it('with nothing untracked, the tracked lines alone', async () => {
    const d = repo('clean-untracked', ['a.txt', 'b.txt']);
    write(path.join(d, 'a.txt'), 'changed\n');
    const { one, two, plain } = await outputs(d);
    expect(two).toBe(one);
    expect(one).toBe(plain);
    expect(two).toMatch(/^# branch\.oid [0-9a-f]{40}\n# branch\.head main\n1 \.M .* a\.txt\n$/);
  });
});

/** A result of a run that did not go well. */
const failedResult = (exitCode: number | null, stderr = ''): CommandResult => ({
  exitCode,
  stdout: '',
  stderr,
  timedOut: false,
  outputLimited: false,
  spawnError: null,
  durationMs: 1,
});

/**
 * A view of `dir` whose runner runs the real git for the view's own checks but answers the two halves as `half`
 * says; the signals the halves got are recorded.
 */
async function viewWith(
  dir: string,
  half: (which: 'status' | 'ls-files', signal: AbortSignal) => Promise<CommandResult>,
): Promise<{ view: GitView; signals: Map<string, AbortSignal> }> {
  const real = commandRunner(resolveGit(access.isInside));
  const signals = new Map<string, AbortSignal>();
  const runner: GitRunner = (args, env, options) => {
    const which = args.includes('ls-files') ? 'ls-files' : args.includes('status') ? 'status' : null;
    if (!which || !options.signal) return real(args, env, options);
    signals.set(which, options.signal);
    return half(which, options.signal);
  };
  return { view: await GitView.open(dir, access, opts, runner), signals };
}

/** Resolves with a stopped run's result once `signal` aborts (a half that was stopped). */
const untilStopped = (signal: AbortSignal): Promise<CommandResult> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve(failedResult(null));
    else signal.addEventListener('abort', () => resolve(failedResult(null)), { once: true });
  });

describe('a half that fails', () => {
  const dir = repo('failing');

  it('ls-files failing stops the status and its result is the call’s', async () => {
    const { view, signals } = await viewWith(dir, (which, signal) =>
      which === 'ls-files' ? Promise.resolve(failedResult(128, 'fatal: index file corrupt')) : untilStopped(signal),
    );
    const r = await runFullStatus(view, opts, true);
    await view.dispose();
    expect(r.exitCode).toBe(128);
    expect(r.stderr).toBe('fatal: index file corrupt');
    expect(signals.get('status')?.aborted).toBe(true);
  });

  it('the status failing stops ls-files and its result is the call’s', async () => {
    const { view, signals } = await viewWith(dir, (which, signal) =>
      which === 'status' ? Promise.resolve(failedResult(128, 'fatal: bad object HEAD')) : untilStopped(signal),
    );
    const r = await runFullStatus(view, opts, true);
    await view.dispose();
    expect(r.exitCode).toBe(128);
    expect(r.stderr).toBe('fatal: bad object HEAD');
    expect(signals.get('ls-files')?.aborted).toBe(true);
  });

  it('a timeout of either half is the status’ timeout envelope, the other half stopped', async () => {
    for (const slow of ['status', 'ls-files'] as const) {
      const timeout = new ToolError('IO_ERROR', 'git status timed out after 5 ms.', {
        details: { errno: 'ETIMEDOUT', reason: 'git_timeout' },
      });
      const { view, signals } = await viewWith(dir, (which, signal) =>
        which === slow ? Promise.reject(timeout) : untilStopped(signal),
      );
      await expect(runFullStatus(view, opts, true)).rejects.toBe(timeout);
      await view.dispose();
      expect(signals.get(slow === 'status' ? 'ls-files' : 'status')?.aborted).toBe(true);
    }
  });

  it('the real runner names a timed-out half `git status`', async () => {
    const view = await openRepository(dir, access, opts);
    try {
      await expect(runFullStatus(view, { timeoutMs: 1 }, true)).rejects.toMatchObject({
        message: 'git status timed out after 1 ms.',
        details: { reason: 'git_timeout' },
      });
    } finally {
      await view.dispose();
    }
  });

  it('a cancel after the status finished still fails the call (never a partial untracked list)', async () => {
    const caller = new AbortController();
    const { view, signals } = await viewWith(dir, (which, signal) => {
      if (which === 'ls-files') return untilStopped(signal);
      caller.abort();
      return Promise.resolve({ ...failedResult(0), stdout: '# branch.oid (initial)\n# branch.head main\n' });
    });
    const r = await runFullStatus(view, { ...opts, signal: caller.signal }, true);
    await view.dispose();
    expect(r.exitCode).toBeNull();
    expect(r.stdout).toBe('');
    expect(signals.get('ls-files')?.aborted).toBe(true);
  });

  it('a cancel from the caller stops both halves', async () => {
    const { view, signals } = await viewWith(dir, (_which, signal) => untilStopped(signal));
    const caller = new AbortController();
    const pending = runFullStatus(view, { ...opts, signal: caller.signal }, true);
    caller.abort();
    const r = await pending;
    await view.dispose();
    expect(r.exitCode).toBeNull();
    expect(signals.get('status')?.aborted).toBe(true);
    expect(signals.get('ls-files')?.aborted).toBe(true);
  });
});

describe('when the status is split', () => {
  it('a large index on a machine with a core to spare', () => {
    expect(splitStatus(SPLIT_MIN_ENTRIES - 1, 0, 2)).toBe(false);
    expect(splitStatus(SPLIT_MIN_ENTRIES, 0, 2)).toBe(true);
    expect(splitStatus(SPLIT_MIN_ENTRIES, 3.9, 2)).toBe(true);
    expect(splitStatus(SPLIT_MIN_ENTRIES, 4, 2)).toBe(false);
    expect(splitStatus(10 * SPLIT_MIN_ENTRIES, 0, 1)).toBe(false);
    expect(splitStatus(SPLIT_MIN_ENTRIES, 15.5, 8)).toBe(true);
    expect(splitStatus(SPLIT_MIN_ENTRIES, 16, 8)).toBe(false);
  });

  it('the view counts the index entries it rebuilt (0 without an index)', async () => {
    const d = repo('counted', ['a', 'b/c', 'b/d']);
    const empty = path.join(base, 'no-index');
    mkdirSync(empty);
    git(empty, 'init', '-q');
    const counts = await Promise.all(
      [d, empty].map((dir) => withRepository(dir, access, opts, (view) => Promise.resolve(view.indexEntries))),
    );
    expect(counts).toEqual([3, 0]);
  });
});

describe('git_status split in two (gitStatus)', () => {
  const dir = repo('through-git-status', ['t/a.txt', 't/b.txt']);
  write(path.join(dir, 't/a.txt'), 'changed\n');
  write(path.join(dir, 'new/n.txt'));
  const inner = path.join(dir, 'inner');
  mkdirSync(inner);
  git(inner, 'init', '-q');

  it('answers as plain git, hash included', async () => {
    const plain = git(dir, '--no-optional-locks', ...STATUS_ARGS);
    const [one, two] = await Promise.all(
      [false, true].map((split) => withRepository(dir, access, opts, (view) => gitStatus(view, { ...opts, split }))),
    );
    expect(two.raw).toBe(plain);
    expect(two).toEqual(one);
    expect(untrackedOf(two.raw)).toEqual(['? inner/', '? new/n.txt']);
  });

  it('still refuses a nested repository whose .git leads out of the roots (checked on the assembled list)', async () => {
    const outside = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-status-split-out-')));
    const nested = path.join(dir, 'escape');
    try {
      git(outside, 'init', '-q');
      mkdirSync(nested);
      writeFileSync(path.join(nested, '.git'), `gitdir: ${path.join(outside, '.git')}\n`);
      await withRepository(dir, access, opts, async (view) => {
        await expect(gitStatus(view, { ...opts, split: true })).rejects.toMatchObject({
          code: 'NOT_ALLOWED',
          details: { reason: 'git_location_outside_roots' },
        });
      });
    } finally {
      rmSync(nested, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
