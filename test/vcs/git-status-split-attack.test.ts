/**
 * Attacks on the status run as two git processes (src/vcs/git-status-run.ts), with the real git on real files: the
 * assembled output against one `git status` where the halves' output is not UTF-8 (core.quotePath=false and names of
 * bytes that are not UTF-8, which the runner decodes to U+FFFD: 1 byte on the pipe, 3 in the string). The one status'
 * output cap counts the bytes git wrote; the assembled result must count the same bytes.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { gitViewAccess } from '../../src/policy/git-access.js';
import { STATUS_ARGS, withRepository } from '../../src/vcs/git.js';
import { runFullStatus } from '../../src/vcs/git-status-run.js';
import { execFileSync } from 'node:child_process';
import { isolatedGit, isolatedGitEnv } from '../helpers/isolated-git.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-status-split-attack-')));
const home = path.join(base, 'home');
mkdirSync(home);
afterAll(() => rmSync(base, { recursive: true, force: true }));

const access = gitViewAccess({
  roots: [{ given: base, real: base, source: 'cli' }],
  allowSecrets: false,
  policy: { rules: [] },
} as unknown as PolicyContext);
const opts = { timeoutMs: 120_000 };
const git = (cwd: string, ...args: string[]): string => isolatedGit(cwd, home, ...args);

/** A name of `length` bytes 0x80-0xBF (lone continuation bytes: each one U+FFFD once decoded) encoding `n`. */
function invalidName(n: number, length: number): Buffer {
  const name = Buffer.alloc(length, 0x80);
  for (let i = 0; i < 4; i++) name[length - 1 - i] = 0x80 + ((n >> (6 * i)) & 0x3f);
  return name;
}

describe('the split status under the output cap, output not UTF-8', () => {
  it('gives the one status’ answer for untracked names of non-UTF-8 bytes (about 24 MB, under the 64 MiB cap)', async () => {
    const dir = path.join(base, 'not-utf8');
    mkdirSync(dir);
    git(dir, 'init', '-q', '-b', 'main');
    git(dir, 'config', 'core.quotePath', 'false');
    writeFileSync(path.join(dir, 'a.txt'), 'x\n');
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', 'i');
    // 14 directories of 200 such bytes (a path under PATH_MAX), 7,500 files of 200 in the deepest: each `? ` line is
    // about 3,000 bytes on the pipe and 9,000 in the decoded string.
    let deep = Buffer.from(dir);
    for (let level = 0; level < 14; level++) deep = Buffer.concat([deep, Buffer.from('/'), invalidName(level, 200)]);
    mkdirSync(deep, { recursive: true });
    for (let i = 0; i < 7500; i++) writeFileSync(Buffer.concat([deep, Buffer.from('/'), invalidName(i, 200)]), '');
    const plain = execFileSync('git', ['--no-optional-locks', ...STATUS_ARGS], {
      cwd: dir,
      env: isolatedGitEnv(home),
      maxBuffer: 256 * 1024 * 1024,
    });
    expect(plain.length).toBeLessThan(32 * 1024 * 1024);
    const { one, two } = await withRepository(dir, access, opts, async (view) => ({
      one: await runFullStatus(view, opts, false),
      two: await runFullStatus(view, opts, true),
    }));
    expect(one.exitCode).toBe(0);
    expect(one.outputLimited).toBe(false);
    expect(one.stdout).toBe(plain.toString('utf8'));
    expect(one.stdout.split('\n').filter((l) => l.startsWith('? '))).toHaveLength(7500);
    expect(two.outputLimited).toBe(false);
    expect(two.exitCode).toBe(0);
    expect(two.stdout).toBe(one.stdout);
  }, 120_000);
});

describe("the split status under a caller's output cap", () => {
  it('caps the assembled output at the cap the caller names, as the one status is capped', async () => {
    const dir = path.join(base, 'small-cap');
    mkdirSync(dir);
    git(dir, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(dir, 'a.txt'), 'x\n');
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', 'i');
    for (let i = 0; i < 200; i++) writeFileSync(path.join(dir, `untracked-${String(i).padStart(4, '0')}.txt`), '');
    const { full, one, two, cap } = await withRepository(dir, access, opts, async (view) => {
      const whole = await runFullStatus(view, opts, false);
      // 100 bytes under the whole: each half alone fits (ls-files' lines are 200 × 19 bytes, the status' a few branch
      // lines), the assembled output does not, so only its own count can catch it.
      const limit = Buffer.byteLength(whole.stdout) - 100;
      const capped = { ...opts, maxOutputBytes: limit };
      return {
        full: whole,
        cap: limit,
        one: await runFullStatus(view, capped, false),
        two: await runFullStatus(view, capped, true),
      };
    });
    expect(full.exitCode).toBe(0);
    expect(full.stdout.split('\n').filter((l) => l.startsWith('? '))).toHaveLength(200);
    expect(200 * 19).toBeLessThan(cap);
    expect(full.stdout.length - 200 * 21).toBeLessThan(cap);
    expect([one.outputLimited, one.exitCode]).toEqual([true, null]);
    expect([two.outputLimited, two.exitCode, two.stdout]).toEqual([true, null, '']);
  }, 60_000);
});
