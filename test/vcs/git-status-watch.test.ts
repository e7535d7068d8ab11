/**
 * git_status' reuse of the previous answer (src/vcs/git-status-watch.ts), in-process with the real git and the built
 * addon's inotify watches: every answer, reused or not, is byte for byte plain `git status` in the repository, and
 * the reuse counter shows when git was spared. After each kind of change the next call runs git (never a kept
 * answer) and a later one reuses again: a file modified at the same size, created, deleted, renamed, made
 * executable; a new directory with a file; a .gitignore edit; `git add`; a commit; a branch switch; an upstream ref
 * update; a config change; info/exclude. Then: a change made while git runs; the watch cap exhausted (no reuse,
 * answers right); the repository's directory (and its parent) replaced by rename; a nested `.git` (no reuse); two
 * repositories; the index rewritten with no event (its bytes differ: no reuse); a change of the mount table and a
 * failed drain (no reuse); closing the watches.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { readlinkSync, realpathSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { gitViewAccess } from '../../src/policy/git-access.js';
import { gitStatus, openRepository, STATUS_ARGS } from '../../src/vcs/git.js';
import {
  closeStatusWatches,
  statusTicket,
  statusWatchCounters,
  useStatusWatchAddon,
  REUSE_MAX_MS,
  WATCH_CAPS,
} from '../../src/vcs/git-status-watch.js';
import { commandRunner, GitView, type GitRunner } from '../../src/vcs/git-view.js';
import { resolveGit } from '../../src/vcs/find-cli.js';
import { isolatedGit, isolatedGitEnv } from '../helpers/isolated-git.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const loaded = loadBuiltAddon()?.addon ?? null;
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-status-watch-')));
const home = path.join(base, 'home');
mkdirSync(home);
afterAll(() => {
  useStatusWatchAddon(undefined);
  rmSync(base, { recursive: true, force: true });
});

const access = gitViewAccess({
  roots: [{ given: base, real: base, source: 'cli' }],
  allowSecrets: false,
  policy: { rules: [] },
} as unknown as PolicyContext);
const opts = { timeoutMs: 60_000 };
const git = (cwd: string, ...args: string[]): string => isolatedGit(cwd, home, ...args);
const plain = (dir: string): string => git(dir, '--no-optional-locks', ...STATUS_ARGS);

/** A repository with one commit (a.txt, b.txt, d/c.txt, e/f/g.txt) at `base/name`. */
function repo(name: string): string {
  const dir = path.join(base, name);
  mkdirSync(path.join(dir, 'd'), { recursive: true });
  mkdirSync(path.join(dir, 'e', 'f'), { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  for (const f of ['a.txt', 'b.txt', 'd/c.txt', 'e/f/g.txt']) writeFileSync(path.join(dir, f), 'x\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'i');
  return dir;
}

/** One git_status call's status output as the tool takes it: the ticket first, then the view, then the status. */
async function status(dir: string, runner?: GitRunner): Promise<string> {
  const ticket = statusTicket();
  const view = runner ? await GitView.open(dir, access, opts, runner) : await openRepository(dir, access, opts);
  try {
    return (await gitStatus(view, { ...opts, reuse: ticket })).raw;
  } finally {
    await view.dispose();
  }
}

/** A call's answer (equal to plain git's) and whether it was a kept one. */
async function call(dir: string, runner?: GitRunner): Promise<boolean> {
  const before = statusWatchCounters().reused;
  const raw = await status(dir, runner);
  expect(raw).toBe(plain(dir));
  return statusWatchCounters().reused > before;
}

/**
 * Calls until one is a kept answer (a set is built beside the calls after the first that finds none, and keeps the
 * answer of the first call that finds it ready: a few calls); every answer checked.
 */
async function settle(dir: string): Promise<void> {
  for (let i = 0; i < 8; i++) {
    if (await call(dir)) return;
    await new Promise((r) => setTimeout(r, 25)); // the build's slices run between calls
  }
  throw new Error('no answer was reused in eight calls');
}

/** The inotify descriptors this process holds. */
const inotifyFds = (): number =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:inotify';
    } catch {
      return false;
    }
  }).length;

describe.runIf(loaded !== null && process.platform === 'linux')('git_status reuse under inotify watches', () => {
  useStatusWatchAddon(loaded);
  const dir = repo('main');
  git(dir, 'update-ref', 'refs/remotes/origin/main', 'HEAD');

  const changes: [string, () => void][] = [
    ['a file modified at the same size', () => writeFileSync(path.join(dir, 'a.txt'), 'y\n')],
    ['a file created', () => writeFileSync(path.join(dir, 'd', 'new.txt'), 'n\n')],
    ['a file deleted', () => unlinkSync(path.join(dir, 'b.txt'))],
    ['a file renamed', () => renameSync(path.join(dir, 'e', 'f', 'g.txt'), path.join(dir, 'e', 'f', 'h.txt'))],
    ['a file made executable', () => chmodSync(path.join(dir, 'd', 'c.txt'), 0o755)],
    [
      'a new directory with a file',
      () => {
        mkdirSync(path.join(dir, 'n', 'm'), { recursive: true });
        writeFileSync(path.join(dir, 'n', 'm', 'deep.txt'), 'z\n');
      },
    ],
    ['a file in the new directory (watched since)', () => writeFileSync(path.join(dir, 'n', 'm', 'more.txt'), 'w\n')],
    ['.gitignore edited', () => writeFileSync(path.join(dir, '.gitignore'), 'n/m/more.txt\n')],
    ['git add', () => git(dir, 'add', 'a.txt', 'd/new.txt')],
    ['a commit', () => git(dir, 'commit', '-q', '-m', 'two')],
    ['a branch switch', () => git(dir, 'checkout', '-q', '-b', 'topic')],
    ['back to main', () => git(dir, 'checkout', '-q', 'main')],
    [
      'a config change (an upstream)',
      () => {
        git(dir, 'config', 'branch.main.remote', 'origin');
        git(dir, 'config', 'branch.main.merge', 'refs/heads/main');
      },
    ],
    ['a ref update (the upstream moved)', () => git(dir, 'update-ref', 'refs/remotes/origin/main', 'HEAD')],
    ['info/exclude', () => writeFileSync(path.join(dir, '.git', 'info', 'exclude'), 'n/\n')],
    ['a staged rename', () => git(dir, 'mv', 'd/c.txt', 'd/moved.txt')],
  ];

  it('a settled repository reuses the answer, and it is plain git status', async () => {
    await settle(dir);
    expect(await call(dir)).toBe(true);
    expect(statusWatchCounters().sets).toEqual(['ready']);
  });

  it.each(changes)('%s: the next call runs git, a later one reuses', async (_name, change) => {
    await settle(dir);
    change();
    expect(await call(dir)).toBe(false);
    await settle(dir);
  });

  it('a change made while git runs is seen by the next call', async () => {
    await settle(dir);
    const real = commandRunner(resolveGit(access.isInside));
    let late = 0;
    const runner: GitRunner = async (args, env, options) => {
      const r = await real(args, env, options);
      if (args.includes('status')) writeFileSync(path.join(dir, `late${late++}.txt`), 'l\n');
      return r;
    };
    writeFileSync(path.join(dir, 'a.txt'), 'q\n'); // so this call runs git (its ticket sees the event)
    const ticket = statusTicket();
    const view = await GitView.open(dir, access, opts, runner);
    try {
      expect((await gitStatus(view, { ...opts, reuse: ticket })).raw).not.toContain('late0.txt');
    } finally {
      await view.dispose();
    }
    expect(late).toBe(1);
    // The late file's event came after that call's ticket: the answer kept with it is not used.
    expect(await call(dir)).toBe(false);
    expect(plain(dir)).toContain('late0.txt');
    await settle(dir);
  });

  it('the watch cap exhausted: no reuse, every answer right', async () => {
    const other = repo('capped');
    const cap = WATCH_CAPS.perRepository;
    WATCH_CAPS.perRepository = 3;
    try {
      for (let i = 0; i < 4; i++) expect(await call(other)).toBe(false);
      writeFileSync(path.join(other, 'd', 'x.txt'), 'x\n');
      expect(await call(other)).toBe(false);
      expect(statusWatchCounters().sets).toContain('failed');
    } finally {
      WATCH_CAPS.perRepository = cap;
    }
  });

  it('the repository directory replaced by rename, then its parent: the answer is the new repository', async () => {
    const parent = path.join(base, 'p');
    mkdirSync(parent);
    const first = repo('p/r');
    await settle(first);
    const second = repo('second');
    writeFileSync(path.join(second, 'untracked.txt'), 'u\n');
    renameSync(first, path.join(base, 'r-old'));
    renameSync(second, first);
    expect(await call(first)).toBe(false);
    await settle(first);
    // The parent renamed away and a copy put in its place (the same index bytes, so the same inputs from the git dir),
    // one file changed in the copy: no event reaches the watched top; its identity (device, inode) tells.
    const third = path.join(base, 'q');
    execFileSync('cp', ['-a', parent, third]);
    writeFileSync(path.join(third, 'r', 'a.txt'), 'o\n');
    renameSync(parent, path.join(base, 'p-old'));
    renameSync(third, parent);
    expect(await call(first)).toBe(false);
    await settle(first);
  });

  it('a nested .git below the top: never reused, answers right', async () => {
    const outer = repo('outer');
    const inner = path.join(outer, 'd', 'inner');
    mkdirSync(inner);
    git(inner, 'init', '-q');
    for (let i = 0; i < 3; i++) expect(await call(outer)).toBe(false);
    rmSync(path.join(inner, '.git'), { recursive: true });
    await settle(outer); // its removal rebuilt the set
  });

  it('two repositories: each reuses its own answer; a change in one leaves the other reused', async () => {
    const one = repo('one');
    const two = repo('two');
    await settle(one);
    await settle(two);
    expect(await call(one)).toBe(true);
    expect(await call(two)).toBe(true);
    writeFileSync(path.join(one, 'a.txt'), 'changed\n');
    expect(await call(two)).toBe(true);
    expect(await call(one)).toBe(false);
    await settle(one);
  });

  it('the index rewritten with no event on a watched directory: its bytes differ, so no reuse', async () => {
    writeFileSync(path.join(dir, 'e', 'staged.txt'), 's\n');
    const oid = git(dir, 'hash-object', '-w', 'e/staged.txt').trim();
    await settle(dir);
    // A new index made outside the watched directories, written into .git/index through a hard link made outside
    // them: the event goes to the link's directory only (as for a write through a shared mapping, none reaches a watch).
    const alt = path.join(base, 'alt.idx');
    copyFileSync(path.join(dir, '.git', 'index'), alt);
    execFileSync('git', ['update-index', '--add', '--cacheinfo', `100644,${oid},e/staged.txt`], {
      cwd: dir,
      env: { ...isolatedGitEnv(home), GIT_INDEX_FILE: alt },
    });
    const link = path.join(base, 'index-link');
    linkSync(path.join(dir, '.git', 'index'), link);
    const ticket = statusTicket();
    writeFileSync(link, readFileSync(alt));
    const before = statusWatchCounters().reused;
    const view = await openRepository(dir, access, opts);
    try {
      const raw = (await gitStatus(view, { ...opts, reuse: ticket })).raw;
      expect(raw).toBe(plain(dir));
      expect(raw).toContain('e/staged.txt');
    } finally {
      await view.dispose();
    }
    expect(statusWatchCounters().reused).toBe(before);
    unlinkSync(link);
    await settle(dir);
  });

  it('a change of the mount table drops every set; a failed drain drops its set; answers right', async () => {
    const addon = loaded!;
    await settle(dir);
    let moved = false;
    useStatusWatchAddon({ ...addon, mountsChanged: (fd: number) => (moved ? 1 : addon.mountsChanged(fd)) });
    expect(inotifyFds()).toBe(0); // switching the addon closed the sets
    await settle(dir); // rebuilt and reused as before while the mounts do not move
    moved = true;
    expect(await call(dir)).toBe(false);
    moved = false;
    expect(await call(dir)).toBe(false); // a new set: nothing kept from before the change
    await settle(dir); // and it is reused again once rebuilt
    let failing = false;
    useStatusWatchAddon({
      ...addon,
      watchDrain: (ifd: number, out: Float64Array) => {
        if (!failing) return addon.watchDrain(ifd, out);
        out[0] = 0;
        out[1] = 0;
        return -5;
      },
    });
    await settle(dir);
    failing = true;
    expect(await call(dir)).toBe(false);
    failing = false;
    await settle(dir);
    useStatusWatchAddon(addon);
  });

  it('a write no event reports (through a hard link outside the set) shows once the kept answer is REUSE_MAX_MS old', async () => {
    const outside = path.join(base, 'outside-links');
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, 'h.txt'), 'one\n');
    linkSync(path.join(outside, 'h.txt'), path.join(dir, 'h.txt'));
    git(dir, 'add', 'h.txt');
    git(dir, 'commit', '-q', '-m', 'linked');
    await settle(dir);
    // Same size, through the directory the set does not watch: no event in the repository.
    writeFileSync(path.join(outside, 'h.txt'), 'two\n');
    const stale = await status(dir);
    expect(stale).not.toBe(plain(dir)); // the known gap: inotify reported nothing, the kept answer is used
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + REUSE_MAX_MS);
      expect(await call(dir)).toBe(false); // too old: git runs, and the answer is plain git's (call checks it)
    } finally {
      vi.useRealTimers();
    }
    git(dir, 'rm', '-q', '--cached', 'h.txt');
    unlinkSync(path.join(dir, 'h.txt'));
    git(dir, 'commit', '-q', '-m', 'unlinked');
    await settle(dir);
  });

  it('closing the watches closes every inotify descriptor', async () => {
    await settle(dir);
    expect(inotifyFds()).toBeGreaterThan(0);
    closeStatusWatches();
    expect(inotifyFds()).toBe(0);
    expect(statusWatchCounters()).toMatchObject({ sets: [], watches: 0 });
    // And the next calls build it again.
    await settle(dir);
  });
});
