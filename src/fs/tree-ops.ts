/**
 * Moving and deleting entries of authorized paths (SPEC §6.2). Moves never overwrite unless asked: files and links
 * are moved with link(2)+unlink(2), which fails atomically on an existing destination (there is no renameat2 in
 * Node); directories are checked, then renamed. Moving a symlink moves the link (link(2) does not follow it).
 * Deletion never follows links: fs.rm unlinks a link instead of descending into it.
 */
import type { Stats } from 'node:fs';
import { link, lstat, readdir, rename, rm, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { syncDirectory, type FileIdentity } from './atomic-write.js';

/**
 * Moves `source` to `destination`.
 * @param overwrite replace an existing destination file; its identity must still be `expectedDestination`
 * @throws ToolError VALIDATION destination_exists (no overwrite), NOT_ALLOWED (destination changed during the call);
 *   Node errno errors (EXDEV across filesystems → IO_ERROR)
 */
export async function movePath(source: AllowedPath, destination: AllowedPath, options: {
  overwrite: boolean;
  expectedDestination: FileIdentity | null;
}): Promise<void> {
  const src = await lstat(source);
  const dst = await lstat(destination).catch(() => null);
  if (dst && !options.overwrite) throw destinationExists(destination);
  if (dst && options.expectedDestination) {
    const e = options.expectedDestination;
    if (dst.dev !== e.dev || dst.ino !== e.ino || dst.size !== e.size || dst.mtimeMs !== e.mtimeMs) {
      throw new ToolError('NOT_ALLOWED', `${destination} changed during the call; nothing was moved.`, {
        path: destination, details: { reason: 'changed_during_call' },
      });
    }
  }
  if (!dst && !src.isDirectory()) {
    try {
      await link(source, destination);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') throw destinationExists(destination);
      if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
      // Filesystems without hard links: fall back to check-then-rename.
      if (await lstat(destination).catch(() => null)) throw destinationExists(destination);
      await rename(source, destination);
      await syncDirectory(path.dirname(destination));
      return;
    }
    await unlink(source);
  } else {
    if (!dst && await lstat(destination).catch(() => null)) throw destinationExists(destination);
    await rename(source, destination);
  }
  await syncDirectory(path.dirname(destination));
  if (path.dirname(source) !== path.dirname(destination)) await syncDirectory(path.dirname(source));
}

function destinationExists(destination: string): ToolError {
  return new ToolError('VALIDATION', `${destination} already exists; nothing was moved.`, {
    path: destination, details: { reason: 'destination_exists' },
    suggestion: 'Pass overwrite: true (with the destination\'s expected_hash) to replace it, or choose another destination.',
  });
}

/** Number of entries (files, links, directories) beneath a directory, stopping at `limit`. Never follows links. */
export async function countEntries(dir: string, limit: number): Promise<number> {
  let n = 0;
  const stack = [dir];
  while (stack.length && n < limit) {
    const d = stack.pop()!;
    for (const e of await readdir(d, { withFileTypes: true })) {
      n++;
      if (e.isDirectory()) stack.push(path.join(d, e.name));
    }
  }
  return n;
}

/**
 * Deletes a file, a link, or a directory (recursively when asked). Never follows links.
 * @throws ToolError VALIDATION directory_not_empty when a non-empty directory is deleted without `recursive`
 */
export async function removePath(target: AllowedPath, stats: Stats, recursive: boolean): Promise<void> {
  if (!stats.isDirectory()) {
    await unlink(target);
  } else if (recursive) {
    await rm(target, { recursive: true, force: false });
  } else {
    try {
      await rmdir(target);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') {
        throw new ToolError('VALIDATION', `${target} is a directory that is not empty.`, {
          path: target, details: { reason: 'directory_not_empty' },
          suggestion: 'Pass recursive: true to delete it with everything inside.',
        });
      }
      throw error;
    }
  }
  await syncDirectory(path.dirname(target));
}
