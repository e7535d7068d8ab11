/**
 * The state directory is checked at start (docs/security.md "The server's own code and token files"), through the
 * real CLI: under /proc, /sys or /dev (given, or reached through a symbolic link), not a directory, writable by group
 * or others, another user's, or not creatable — exit 2 with one line naming the directory and the reason, before any
 * request is read: no file written, no lock left, no process left waiting (before, `--state-dir=/proc/x call
 * write_file` wrote the file and then hung for ever, and killing it left a lock file). The default state directory
 * gets the same check. An absent directory is created (mode 0700) and the call runs.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, coverageEnv } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ root: {}, state: {} }, 'fs-tools-state-dir-');
afterAll(() => scratch.cleanup());
const ROOT = path.join(scratch.dir, 'root');
const IS_ROOT_USER = process.getuid?.() === 0;

/** `fs-tools --state-dir=DIR call write_file` in ROOT, with at most 10 s to finish. */
function writeWith(stateArgs: string[], env: Record<string, string> = {}) {
  return spawnSync(
    process.execPath,
    [CLI, ...stateArgs, '--root', ROOT, 'call', 'write_file', JSON.stringify({ path: 'a.txt', content: 'x\n' })],
    { cwd: ROOT, encoding: 'utf8', timeout: 10_000, env: { ...process.env, ...env } },
  );
}

function expectRefused(r: ReturnType<typeof writeWith>, why: RegExp): void {
  expect(r.error).toBeUndefined(); // not killed by the timeout
  expect(r.status, r.stderr).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(why);
  // Nothing was done: no file, no lock, no temporary.
  expect(readdirSync(ROOT)).toEqual([]);
}

describe('--state-dir is checked before serving', () => {
  it.each([
    ['/proc/x', /--state-dir: \/proc\/x is under \/proc, a kernel file system/],
    ['/sys/fs-tools', /under \/sys/],
    ['/dev/fs-tools', /under \/dev/],
  ])('%s: exit 2, one line, nothing written', (dir, why) => {
    expectRefused(writeWith([`--state-dir=${dir}`]), why);
  });

  it('a symbolic link into /proc, a file, a directory under a file: exit 2', () => {
    const link = path.join(scratch.dir, 'proc-link');
    symlinkSync('/proc/self', link);
    expectRefused(writeWith(['--state-dir', path.join(link, 'x')]), /resolves under \/proc|under \/proc/);
    const file = path.join(scratch.dir, 'a-file');
    writeFileSync(file, 'not a directory\n');
    expectRefused(writeWith(['--state-dir', file]), /is not a directory|cannot be created \(EEXIST\)/);
    expectRefused(writeWith(['--state-dir', path.join(file, 'sub')]), /cannot be created \(ENOTDIR\)/);
  });

  it("writable by group or others, or another user's: exit 2 (anyone who can write it could plant a journal)", () => {
    const shared = path.join(scratch.dir, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    expectRefused(writeWith(['--state-dir', shared]), /writable by group or others \(mode 777\)/);
    chmodSync(shared, 0o1777); // sticky like /tmp: still writable by others
    expectRefused(writeWith(['--state-dir', shared]), /writable by group or others/);
    if (IS_ROOT_USER) {
      const theirs = path.join(scratch.dir, 'theirs');
      mkdirSync(theirs, { mode: 0o700 });
      chownSync(theirs, 65534, 65534);
      expectRefused(writeWith(['--state-dir', theirs]), /belongs to another user \(uid 65534\)/);
    }
  });

  it('the default state directory gets the same check', () => {
    const r = writeWith([], { XDG_STATE_HOME: '/proc/self/fdinfo' });
    expectRefused(
      r,
      /the state directory \(default; set --state-dir\): \/proc\/self\/fdinfo\/fs-tools is under \/proc/,
    );
  });

  it('serving: exit 2 before reading a request (stdin left open)', async () => {
    const child = spawn(process.execPath, [CLI, '--state-dir=/proc/x', ROOT], {
      env: { ...process.env, ...coverageEnv() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.stdin.destroy();
    expect(code).toBe(2);
    expect(stderr).toMatch(/--state-dir: \/proc\/x is under \/proc/);
  });

  it('absent: created with mode 0700 (and its missing parents), and the call runs', () => {
    const fresh = path.join(scratch.dir, 'state', 'new', 'deeper');
    const r = writeWith(['--state-dir', fresh]);
    expect(r.status, r.stderr).toBe(0);
    expect(statSync(fresh).mode & 0o777).toBe(0o700);
    expect(existsSync(path.join(ROOT, 'a.txt'))).toBe(true);
  });
});
