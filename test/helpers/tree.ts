/**
 * Temporary fixture trees from object literals (like node-tar's t.testdir). Strings are files, objects are
 * directories, `symlink(target)` makes a link, `fifo()` a named pipe. Roots are realpath'd (macOS /private/var).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

/** A fresh temporary directory (realpath'd) holding `spec`; `cleanup()` removes it. */
export function makeTree(spec: TreeSpec = {}, prefix = 'fs-tools-'): { dir: string; cleanup: () => void } {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  writeTree(dir, spec);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
