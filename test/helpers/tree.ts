/**
 * Temporary fixture trees from object literals (like node-tar's t.testdir). Strings are files, objects are
 * directories, `symlink(target)` makes a link, `fifo()` a named pipe. Roots are realpath'd (macOS /private/var).
 */
import { execFileSync } from 'node:child_process';
import {
  accessSync,
  constants,
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

export interface SymlinkSpec {
  kind: 'symlink';
  target: string;
}
export interface FifoSpec {
  kind: 'fifo';
}
export type TreeSpec = { [name: string]: string | Buffer | TreeSpec | SymlinkSpec | FifoSpec };

export const symlink = (target: string): SymlinkSpec => ({ kind: 'symlink', target });
export const fifo = (): FifoSpec => ({ kind: 'fifo' });

/** Writes `spec` under `dir` (which must exist). */
export function writeTree(dir: string, spec: TreeSpec): void {
  for (const [name, value] of Object.entries(spec)) {
    const p = path.join(dir, name);
    if (typeof value === 'string' || Buffer.isBuffer(value)) {
      mkdirSync(path.dirname(p), { recursive: true });
      writeFileSync(p, value);
    } else if ((value as SymlinkSpec).kind === 'symlink') {
      mkdirSync(path.dirname(p), { recursive: true });
      symlinkSync((value as SymlinkSpec).target, p);
    } else if ((value as FifoSpec).kind === 'fifo') {
      execFileSync('mkfifo', [p]);
    } else {
      mkdirSync(p, { recursive: true });
      writeTree(p, value as TreeSpec);
    }
  }
}

/**
 * Where a test that creates tens of thousands of files makes its tree: /dev/shm when it is a writable directory (a
 * tmpfs on Linux), else the system's temporary directory. On the shared ext4 disk of the CI machines creating a file
 * costs 0.3-1 ms of CPU when other jobs write too (5,000 files: 1.4-5.2 s, against 0.1 s on tmpfs); a test whose point
 * is the server's work over many entries, not the disk, need not pay that.
 */
export function manyFilesTmpdir(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return statSync('/dev/shm').isDirectory() ? '/dev/shm' : os.tmpdir();
  } catch {
    return os.tmpdir();
  }
}

/**
 * A fresh temporary directory (realpath'd) holding `spec`, made under `base` (default: the system's temporary
 * directory); `cleanup()` removes it.
 */
export function makeTree(
  spec: TreeSpec = {},
  prefix = 'fs-tools-',
  base = os.tmpdir(),
): { dir: string; cleanup: () => void } {
  const dir = realpathSync(mkdtempSync(path.join(base, prefix)));
  writeTree(dir, spec);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
