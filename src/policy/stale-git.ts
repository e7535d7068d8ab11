/**
 * STALE_GIT (docs/security.md "What git may read" step 8): a mutation or git_diff that carries `expected_status_hash` proceeds only while
 * the work tree's status hash is unchanged.
 */
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { gitStatus, withRepository } from '../vcs/git.js';
import type { PolicyContext } from './authorize.js';
import { gitViewAccess, hiddenInWorkTree } from './git-access.js';

/**
 * The work tree containing `real` (a path inside the roots; for a path that does not exist yet, its nearest existing
 * directory is asked), and its status hash — through the same sanitized view as git_status (src/vcs/git-view.ts), so
 * every git location is verified inside the roots and nothing the repository names runs; the lines of the paths
 * `policy` hides are left out of the hash, as git_status leaves them out.
 * @throws ToolError VALIDATION (not a work tree, unsupported repository), NOT_ALLOWED (the work tree's root or a git
 *   metadata link outside the roots), SECRET_DENIED, IO_ERROR (corrupt repository, timeout)
 */
export async function currentStatusHash(
  real: string,
  existingDir: string,
  policy: PolicyContext,
  timeoutMs: number,
): Promise<{ workTree: string; statusHash: string }> {
  try {
    return await withRepository(existingDir, gitViewAccess(policy), { timeoutMs }, async (view) => ({
      workTree: view.workTree,
      statusHash: (await gitStatus(view, { timeoutMs }, hiddenInWorkTree(policy, view.workTree))).statusHash,
    }));
  } catch (error) {
    // The mutation's own path is what the agent named: report the refusal on it (the work tree top may be above it).
    if (
      error instanceof ToolError &&
      error.code === 'NOT_ALLOWED' &&
      error.details.reason === 'work_tree_outside_roots'
    ) {
      throw new ToolError('NOT_ALLOWED', `The git work tree of ${real} is rooted above the allowed roots.`, {
        path: real,
        details: { reason: 'work_tree_outside_roots' },
      });
    }
    throw error;
  }
}

/**
 * @throws ToolError STALE_GIT (retryable) with details.current_status_hash when the hash moved
 */
export async function assertStatusHash(
  expected: string,
  real: string,
  existingDir: string,
  policy: PolicyContext,
  timeoutMs: number,
): Promise<{ workTree: string; statusHash: string }> {
  const now = await currentStatusHash(real, existingDir, policy, timeoutMs);
  if (now.statusHash !== expected) {
    throw new ToolError(
      'STALE_GIT',
      `The git work tree ${now.workTree} changed since expected_status_hash was taken.`,
      {
        path: real,
        details: { current_status_hash: now.statusHash, work_tree: now.workTree },
      },
    );
  }
  return now;
}

/** The nearest existing directory at or above `real` (git is asked from there for a path not created yet). */
export async function existingDirOf(real: string): Promise<string> {
  let dir = real;
  for (;;) {
    const st = await lstat(dir).catch(() => null);
    if (st?.isDirectory()) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return dir;
    dir = parent;
  }
}
