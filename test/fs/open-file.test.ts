/**
 * src/fs/open-file.ts under a parent-directory swap (review of the merged integration). The state at the moment of
 * the open is pinned: policy authorized `R/d/f` while `d` was a real directory; another process has since replaced
 * `d` with a link to an outside directory. Before the fix the file was opened by its path string (O_NOFOLLOW guards
 * only the last component): the outside node was opened, and the answer told what exists outside — NOT_FOUND for a
 * missing name, FILE_POLICY_DENIED special_file for an outside FIFO/directory — and an outside device would have been
 * opened (open(2) of a device has effects). Now the file is opened relative to its verified parent: NOT_ALLOWED,
 * the same answer whatever lies outside. Real files, no mocks.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { openForRead, openForReadSync } from '../../src/fs/open-file.js';
import type { AllowedPath } from '../../src/policy/resolve-path.js';

let T = '';
let R = '';
let OUT = '';
const isInside = (p: string): boolean => p === R || p.startsWith(`${R}/`);

beforeAll(() => {
  T = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'open-file-')));
  R = path.join(T, 'root');
  OUT = path.join(T, 'outside');
  mkdirSync(R);
  mkdirSync(path.join(OUT, 'adir'), { recursive: true });
  execFileSync('mkfifo', [path.join(OUT, 'fifo')]);
  writeFileSync(path.join(OUT, 'plain'), 'OUTSIDE\n');
  symlinkSync(OUT, path.join(R, 'd')); // the swapped state: d was a directory when policy looked
  mkdirSync(path.join(R, 'ok'));
  writeFileSync(path.join(R, 'ok', 'f.txt'), 'inside\n');
});
afterAll(() => rmSync(T, { recursive: true, force: true }));

const outcome = async (name: string): Promise<string> => {
  try {
    const { handle } = await openForRead(path.join(R, 'd', name) as AllowedPath, isInside);
    await handle.close();
    return 'opened';
  } catch (error) {
    return error instanceof ToolError ? error.code : String((error as NodeJS.ErrnoException).code);
  }
};
const outcomeSync = (name: string): string => {
  try {
    openForReadSync(path.join(R, 'd', name), isInside);
    return 'opened';
  } catch (error) {
    return error instanceof ToolError ? error.code : String((error as NodeJS.ErrnoException).code);
  }
};

describe('openForRead under a swapped parent', () => {
  it('answers NOT_ALLOWED alike for a missing name, a FIFO, a directory and a regular file outside', async () => {
    for (const name of ['missing', 'fifo', 'adir', 'plain']) {
      expect(await outcome(name), name).toBe('NOT_ALLOWED');
      expect(outcomeSync(name), name).toBe('NOT_ALLOWED');
    }
  });
  it('still opens a file whose parents are real directories inside the roots', async () => {
    const { handle, stats } = await openForRead(path.join(R, 'ok', 'f.txt') as AllowedPath, isInside);
    await handle.close();
    expect(stats.size).toBe(7);
  });
});
