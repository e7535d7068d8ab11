/**
 * Attack (docs/security.md "What git may read", reuse between calls): the repository's index changed through a shared
 * writable mapping moves neither its mtime nor its ctime. The kernel updates a file's times on the first write fault
 * of a clean page only (ext4: until writeback, about 30 s; tmpfs: never), so once a process has dirtied the mapped page,
 * later writes through the mapping leave the stamp (dev, inode, size, mtime, ctime) exactly as it was. A server that
 * skips reading the index while its stamp is unchanged then keeps answering from the old bytes: git_status hides a
 * change that plain git shows, and the status hash (the STALE_GIT check) does not move.
 *
 * Real server over stdio, real git, a python3 helper holding the mapping (skipped where there is no python3):
 * - the helper maps `.git/index` and rewrites one byte with its own value (the page is dirty, the times are now);
 * - 2.1 s later (the index has settled) git_status answers clean;
 * - the helper writes, through the mapping, the index git writes for `a.txt` staged as "b\n" (same size); the stamp
 *   is shown unchanged (the attack is armed) and plain git shows `M.`;
 * - git_status must show `1 M. … a.txt` and a status hash that moved.
 */
import { execFileSync, spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { blobId } from '../helpers/git-index.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {} }, 'fs-tools-index-mapped-');
const HOME = path.join(scratch.dir, 'home');
const ROOT = path.join(scratch.dir, 'root');
mkdirSync(ROOT);
afterAll(() => scratch.cleanup());

const hasPython = spawnSync('python3', ['-c', 'import mmap'], { stdio: 'ignore' }).status === 0;

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
 * A python3 process holding `file` mapped shared and writable. Each line sent is a file whose bytes it copies into
 * the mapping from offset 0; it answers `ok` per line (the first line, `touch`, rewrites byte 0 with its own value).
 */
const MAPPER = `
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
for line in sys.stdin:
    name = line.strip()
    if name == 'touch':
        m[0:1] = m[0:1]
    else:
        data = open(name, 'rb').read()
        m[0:len(data)] = data
    sys.stdout.write('ok\\n')
    sys.stdout.flush()
`;

function mapper(file: string): { send: (line: string) => Promise<void>; child: ChildProcessWithoutNullStreams } {
  const child = spawn('python3', ['-c', MAPPER, file], { stdio: ['pipe', 'pipe', 'pipe'] });
  const waiting: Array<() => void> = [];
  child.stdout.on('data', (d: Buffer) => {
    for (let n = d.toString().split('ok\n').length - 1; n > 0; n--) waiting.shift()?.();
  });
  return {
    child,
    send: (line) =>
      new Promise<void>((resolve) => {
        waiting.push(resolve);
        child.stdin.write(`${line}\n`);
      }),
  };
}

describe.skipIf(!hasPython)('an index changed through a shared mapping (its stamp unchanged)', () => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('modern', {
      args: ['--auto-occ=off', '--state-dir', path.join(scratch.dir, 'state'), ROOT],
      env: { HOME, XDG_CONFIG_HOME: HOME },
    });
  }, 60_000);
  afterAll(async () => {
    await client.close();
  });

  it('git_status shows the staged change and its hash moves', async () => {
    const top = path.join(ROOT, 'repo');
    mkdirSync(top);
    git(top, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(top, 'a.txt'), 'a\n');
    git(top, 'add', '-A');
    git(top, 'commit', '-q', '-m', 'i');
    const indexFile = path.join(top, '.git', 'index');
    // The same index with `a.txt` (its only entry) staged as "b\n": the same size, another object id, checksum redone.
    const clean = readFileSync(indexFile);
    const staged = Buffer.from(clean);
    Buffer.from(blobId('b\n'), 'hex').copy(staged, 12 + 40);
    createHash('sha1')
      .update(staged.subarray(0, staged.length - 20))
      .digest()
      .copy(staged, staged.length - 20);
    const stagedFile = path.join(scratch.dir, 'staged.index');
    writeFileSync(stagedFile, staged);

    const map = mapper(indexFile);
    try {
      await map.send('touch'); // the page is dirty: later writes through the mapping move no time
      await new Promise((r) => setTimeout(r, 2100)); // settled: the server may tie its read to the stamp
      const before = await client.callOk('git_status', { path: top });
      expect(before.entries).toEqual([]);
      const stamp = (({ dev, ino, size, mtimeMs, ctimeMs }) => ({ dev, ino, size, mtimeMs, ctimeMs }))(
        statSync(indexFile),
      );
      writeFileSync(path.join(top, 'a.txt'), 'b\n');
      await map.send(stagedFile);
      // Armed: the index holds the staged bytes, plain git shows the change, and the stamp did not move.
      expect(readFileSync(indexFile).equals(staged)).toBe(true);
      expect(git(top, '--no-optional-locks', 'status', '--porcelain=v2')).toMatch(/^1 M\. .* a\.txt$/m);
      expect(
        (({ dev, ino, size, mtimeMs, ctimeMs }) => ({ dev, ino, size, mtimeMs, ctimeMs }))(statSync(indexFile)),
      ).toEqual(stamp);
      const after = await client.callOk('git_status', { path: top });
      expect(after.entries).toEqual([
        expect.objectContaining({ path: 'a.txt', kind: 'changed', index: 'M', worktree: '.' }),
      ]);
      expect(after.status_hash).not.toBe(before.status_hash);
    } finally {
      map.child.kill();
    }
  }, 30_000);
});
