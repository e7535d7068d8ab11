/**
 * The state directory's check (src/fs/state-dir.ts), in-process; the CLI's exit 2 is test/e2e/state-dir.test.ts.
 * Pins: an absent directory is created 0700 with its parents and its real path returned; a symbolic link to a
 * directory is followed; each refusal is a UsageError (exit status 2) naming the directory and the reason.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors/usage-error.js';
import { prepareStateDir } from '../../src/fs/state-dir.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-state-dir-unit-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const refusal = (dir: string): UsageError => {
  try {
    prepareStateDir(dir, '--state-dir');
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(2);
    return error as UsageError;
  }
  throw new Error(`${dir} was accepted`);
};

describe('prepareStateDir', () => {
  it('creates an absent directory (0700, with its parents) and returns its real path', () => {
    const dir = path.join(base, 'a', 'b');
    expect(prepareStateDir(dir, '--state-dir')).toBe(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(base, 'a')).mode & 0o777).toBe(0o700);
    expect(prepareStateDir(dir, '--state-dir')).toBe(dir); // existing: accepted as is
  });

  it('an absent directory inside the roots is not created (made when first needed), but still not on /proc', () => {
    const dir = path.join(base, 'root', 'home', '.local', 'state', 'fs-tools');
    const inside = (real: string) => real.startsWith(path.join(base, 'root'));
    expect(prepareStateDir(dir, '--state-dir', inside)).toBe(dir);
    expect(existsSync(path.join(base, 'root'))).toBe(false);
  });

  it('follows a symbolic link to a directory and returns the target', () => {
    const target = path.join(base, 'target');
    mkdirSync(target, { mode: 0o700 });
    const link = path.join(base, 'link');
    symlinkSync(target, link);
    expect(prepareStateDir(link, '--state-dir')).toBe(target);
  });

  it('refuses kernel file systems, given or reached through a link', () => {
    expect(refusal('/proc/x').message).toBe(
      '--state-dir: /proc/x is under /proc, a kernel file system; give a directory on disk',
    );
    expect(refusal('/sys').message).toMatch(/is under \/sys/);
    expect(refusal('/dev/fs-tools-x').message).toMatch(/is under \/dev/);
    // /dev/shm is an ordinary tmpfs: a state directory there is made and accepted.
    const shm = path.join('/dev/shm', `fs-tools-state-test-${process.pid}`);
    try {
      expect(prepareStateDir(shm, '--state-dir')).toBe(shm);
      expect(statSync(shm).mode & 0o777).toBe(0o700);
    } finally {
      rmSync(shm, { recursive: true, force: true });
    }
    const link = path.join(base, 'to-proc');
    symlinkSync('/proc/self', link);
    expect(refusal(link).message).toMatch(/under \/proc/);
    expect(refusal(path.join(link, 'deeper')).message).toMatch(/under \/proc/);
  });

  it('refuses a file, a path through a file, and a directory writable by group or others', () => {
    const file = path.join(base, 'file');
    writeFileSync(file, 'x');
    expect(refusal(file).message).toMatch(/is not a directory|cannot be created/);
    expect(refusal(path.join(file, 'sub')).message).toMatch(/cannot be created \(ENOTDIR\)/);
    const shared = path.join(base, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o770);
    expect(refusal(shared).message).toMatch(/writable by group or others \(mode 770\)/);
  });
});
