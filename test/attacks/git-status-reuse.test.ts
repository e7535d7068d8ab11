/**
 * git_status' reuse of the previous answer (src/vcs/git-status-watch.ts) through a real server and the real git: the
 * repository changes between calls in every way the reuse must not hide, and each answer's status_hash is the hash of
 * plain `git status --porcelain=v2` run in the repository at that moment (nothing hidden, so byte for byte git's
 * output). Two calls follow each change (the first runs git, the second may be a kept answer; both must be right).
 * The server holds its inotify descriptor while running (the reuse is in force, not skipped), and the index changed
 * through a shared mapping (no inotify event, no stamp moved) is seen by the next call: the view still reads the
 * index on every call and a kept answer is used only for the same bytes. The in-process counterpart, with the reuse
 * counted, is test/vcs/git-status-watch.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync } from 'node:fs';
import { unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUS_ARGS } from '../../src/vcs/git.js';
import { blobId } from '../helpers/git-index.js';
import { isolatedGit, isolatedGitEnv } from '../helpers/isolated-git.js';
import { connect, NATIVE_ARGS, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {}, root: {} }, 'fs-tools-status-reuse-');
const HOME = path.join(scratch.dir, 'home');
const ROOT = path.join(scratch.dir, 'root');
const TOP = path.join(ROOT, 'repo');
afterAll(() => scratch.cleanup());

const git = (...args: string[]): string => isolatedGit(TOP, HOME, ...args);
const plainHash = (): string =>
  `sha256:${createHash('sha256')
    .update(git('--no-optional-locks', ...STATUS_ARGS))
    .digest('hex')}`;
const hasPython = spawnSync('python3', ['-c', 'import mmap'], { stdio: 'ignore' }).status === 0;

/** The inotify descriptors process `pid` holds. */
const inotifyFds = (pid: number): number =>
  readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === 'anon_inode:inotify';
    } catch {
      return false;
    }
  }).length;

describe.runIf(process.platform === 'linux')('git_status answers while the repository changes between calls', () => {
  let client: TestClient;
  beforeAll(async () => {
    mkdirSync(path.join(TOP, 'd', 'e'), { recursive: true });
    git('init', '-q', '-b', 'main');
    for (const f of ['a.txt', 'b.txt', 'd/c.txt', 'd/e/f.txt']) writeFileSync(path.join(TOP, f), 'x\n');
    git('add', '-A');
    git('commit', '-q', '-m', 'i');
    git('update-ref', 'refs/remotes/origin/main', 'HEAD');
    client = await connect('modern', {
      args: ['--auto-occ=off', '--state-dir', path.join(scratch.dir, 'state'), ROOT],
      env: { HOME, XDG_CONFIG_HOME: HOME },
    });
  }, 60_000);
  afterAll(async () => {
    await client.close();
  });

  /** Two calls, each equal to plain git at that moment. */
  const twice = async (): Promise<void> => {
    for (let i = 0; i < 2; i++) {
      const answer = await client.callOk('git_status', { path: TOP });
      expect(answer.status_hash).toBe(plainHash());
    }
  };

  const changes: [string, () => void][] = [
    ['nothing changed', () => undefined],
    ['a file modified at the same size', () => writeFileSync(path.join(TOP, 'a.txt'), 'y\n')],
    ['a file created', () => writeFileSync(path.join(TOP, 'd', 'new.txt'), 'n\n')],
    ['a file deleted', () => unlinkSync(path.join(TOP, 'b.txt'))],
    ['a file renamed', () => renameSync(path.join(TOP, 'd', 'e', 'f.txt'), path.join(TOP, 'd', 'e', 'g.txt'))],
    ['a file made executable', () => chmodSync(path.join(TOP, 'd', 'c.txt'), 0o755)],
    [
      'a new directory with a file',
      () => {
        mkdirSync(path.join(TOP, 'n', 'm'), { recursive: true });
        writeFileSync(path.join(TOP, 'n', 'm', 'deep.txt'), 'z\n');
      },
    ],
    ['a file in that directory', () => writeFileSync(path.join(TOP, 'n', 'm', 'more.txt'), 'w\n')],
    ['.gitignore edited', () => writeFileSync(path.join(TOP, '.gitignore'), 'n/m/more.txt\n')],
    ['git add', () => git('add', 'a.txt', 'd/new.txt')],
    ['a commit', () => git('commit', '-q', '-m', 'two')],
    ['a branch switch', () => git('checkout', '-q', '-b', 'topic')],
    ['back to main', () => git('checkout', '-q', 'main')],
    [
      'a config change (an upstream)',
      () => {
        git('config', 'branch.main.remote', 'origin');
        git('config', 'branch.main.merge', 'refs/heads/main');
      },
    ],
    ['a ref update (the upstream moved)', () => git('update-ref', 'refs/remotes/origin/main', 'HEAD')],
    ['info/exclude', () => writeFileSync(path.join(TOP, '.git', 'info', 'exclude'), 'n/\n')],
    ['a directory removed', () => execFileSync('rm', ['-rf', path.join(TOP, 'n')])],
  ];

  it.each(changes)('%s: both calls equal plain git', async (_name, change) => {
    change();
    await twice();
  });

  it('the server holds its watches while running (the reuse is in force)', () => {
    const pid = client.pid();
    expect(pid).not.toBeNull();
    // No watches where the server runs without its addon (FS_TOOLS_NATIVE=0 runs): nothing is reused there.
    expect(inotifyFds(pid!)).toBe(NATIVE_ARGS.length === 0 ? 1 : 0);
  });

  it.runIf(hasPython)('the index rewritten through a shared mapping (no event, no stamp) is seen', async () => {
    git('add', '-A');
    git('commit', '-q', '-m', 'all');
    const other = execFileSync('git', ['hash-object', '-w', '--stdin'], {
      cwd: TOP,
      env: isolatedGitEnv(HOME),
      input: 'other\n',
      encoding: 'utf8',
    }).trim();
    expect(other).toBe(blobId('other\n'));
    await twice();
    const indexFile = path.join(TOP, '.git', 'index');
    const clean = readFileSync(indexFile);
    // The same index with its first entry's object id replaced (same size, checksum redone).
    const staged = Buffer.from(clean);
    Buffer.from(blobId('other\n'), 'hex').copy(staged, 12 + 40);
    createHash('sha1')
      .update(staged.subarray(0, staged.length - 20))
      .digest()
      .copy(staged, staged.length - 20);
    const before = await client.callOk('git_status', { path: TOP });
    execFileSync(
      'python3',
      [
        '-c',
        'import mmap, os, sys\n' +
          'fd = os.open(sys.argv[1], os.O_RDWR)\n' +
          'm = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)\n' +
          'm[:] = sys.stdin.buffer.read()\n' +
          'm.flush()\n',
        indexFile,
      ],
      { input: staged },
    );
    expect(readFileSync(indexFile).equals(staged)).toBe(true);
    const after = await client.callOk('git_status', { path: TOP });
    expect(after.status_hash).toBe(plainHash());
    expect(after.status_hash).not.toBe(before.status_hash);
  });
});
