/**
 * Opening files that policy authorized, with defense in depth (docs/security.md "Roots"), like node-tar's O_NOFOLLOW writes:
 * - O_NOFOLLOW: a symlink swapped into the last component after the check makes the open fail (ELOOP);
 * - O_NONBLOCK: a FIFO swapped in after the check cannot hang the open, and fstat then refuses it;
 * - after the open, the file actually opened is proven to be the authorized one by the one check of
 *   src/fs/verified-dir.ts (`assertDescriptorAt`: on Linux its /proc/self/fd location equals the authorized path
 *   exactly, elsewhere its identity equals a fresh lstat of it). Reading needs no more: every byte comes from the
 *   proven descriptor, whatever happens to the path afterwards.
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { withHeldDirSync } from './held-dirs.js';
import { assertDescriptorAt, changedError, VerifiedDir } from './verified-dir.js';

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

/** An open regular file and its fstat. Close it with `handle.close()`. */
export interface OpenedFile {
  handle: FileHandle;
  stats: Stats;
}

/**
 * Opens an authorized regular file for reading.
 * @param isInside containment predicate over an absolute path (from policy), applied to the opened file's real path
 * @throws ToolError NOT_ALLOWED (the path was swapped for a link or moved outside between check and open),
 *   FILE_POLICY_DENIED (not a regular file); Node errno errors (ENOENT → NOT_FOUND in the mapper)
 */
export async function openForRead(real: AllowedPath, isInside: (p: string) => boolean): Promise<OpenedFile> {
  let handle: FileHandle;
  const dir = verifiedParent(real, isInside);
  try {
    handle = dir
      ? await dir.openFile(path.basename(real), { flags: constants.O_RDONLY | O_NONBLOCK })
      : await open(real, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    throw loopAsSwapped(error, real);
  } finally {
    dir?.close();
  }
  try {
    const stats = await handle.stat();
    assertOpenedRegularFile(handle.fd, stats, real);
    return { handle, stats };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/**
 * The synchronous twin of `openForRead`, with the same checks (O_NOFOLLOW | O_NONBLOCK, regular files only, the opened
 * file re-checked through /proc/self/fd or by identity). For worker threads that read many small files in a row
 * (content search, src/fs/search-reader-read.ts), where each async call would cost a thread-pool round trip.
 * Close the descriptor with `closeSync`.
 * @throws ToolError NOT_ALLOWED, FILE_POLICY_DENIED as openForRead; Node errno errors
 */
export function openForReadSync(real: string, isInside: (p: string) => boolean): { fd: number; stats: Stats } {
  let fd: number;
  const parent = path.dirname(real);
  try {
    // The parent is held open between calls and proven to be at its path before each use.
    fd = isInside(parent)
      ? withHeldDirSync(parent, isInside, (dir) =>
          dir.openFileSync(path.basename(real), { flags: constants.O_RDONLY | O_NONBLOCK }),
        )
      : openSync(real, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    throw loopAsSwapped(error, real);
  }
  try {
    const stats = fstatSync(fd);
    assertOpenedRegularFile(fd, stats, real);
    return { fd, stats };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * Reads an open file from offset 0, up to `size + 1` bytes: one byte more than fstat said, so a caller sees a file
 * that grew since (the result is then longer than `size`). With `sizeFromFstat` (`size` is the regular file's fstat
 * size), a read that comes back short at exactly `size` bytes is taken as the end, as the streaming pass takes it
 * (src/fs/read-range.ts `scanFile`): one pread for a small file instead of a second one returning 0. Without it (a
 * cap rather than a size) the file is read until a read returns 0 or the buffer is full.
 * @returns the bytes read (fewer than `size` when the file shrank)
 */
export function readWholeSync(fd: number, size: number, sizeFromFstat = false): Buffer {
  const bytes = Buffer.allocUnsafe(size + 1);
  let filled = 0;
  while (filled < bytes.length) {
    const n = readSync(fd, bytes, filled, bytes.length - filled, filled);
    if (n === 0) break;
    filled += n;
    // A regular file's read comes back short only at its end: one that asked for the byte past `size` and stopped at
    // `size` is the end.
    if (sizeFromFstat && filled === size) break;
  }
  return bytes.subarray(0, filled);
}

/** An ELOOP from an O_NOFOLLOW open means a link was swapped in at the last component: NOT_ALLOWED; else unchanged. */
function loopAsSwapped(error: unknown, real: string): unknown {
  return (error as NodeJS.ErrnoException).code === 'ELOOP' ? swappedError(real) : error;
}

/**
 * Proves the opened descriptor is the authorized node, then that it is a regular file (in that order: what a
 * descriptor is — directory, FIFO, device — is never reported for a node that is not the authorized one).
 * @throws ToolError NOT_ALLOWED, FILE_POLICY_DENIED
 */
function assertOpenedRegularFile(fd: number, stats: Stats, real: string): void {
  assertDescriptorAt(fd, stats, real, true);
  assertRegularFile(stats, real);
}

/**
 * Reads a small authorized file whole, synchronously, with the checks of `openForReadSync`: four syscalls of a few µs
 * each instead of five thread-pool round trips (read_file of a few KB spent most of its own time in those). Returns
 * null, having read nothing, when the file is larger than `maxBytes` (it grew since policy looked at it): the caller
 * then reads it the usual way, so the event loop is never held for more than one small file.
 * @throws as openForReadSync
 */
export function readSmallFileSync(
  real: AllowedPath,
  isInside: (p: string) => boolean,
  maxBytes: number,
): { bytes: Buffer; stats: Stats } | null {
  const { fd, stats } = openForReadSync(real, isInside);
  try {
    // Empty by fstat: possibly a file that does not report its size (procfs; some refuse a 1-byte read), read the
    // usual way, which bounds it (src/fs/read-range.ts maxScanBytes).
    if (stats.size > maxBytes || stats.size === 0) return null;
    // One byte more than fstat's size: a file that grew since is seen (and read the usual way).
    const bytes = readWholeSync(fd, stats.size, true);
    if (bytes.length > stats.size) return null;
    return { bytes, stats };
  } finally {
    closeSync(fd);
  }
}

/**
 * FIFOs, sockets, devices and directories are never read (docs/security.md: reading a FIFO would hang the server).
 * @throws ToolError FILE_POLICY_DENIED rule special_file
 */
export function assertRegularFile(stats: Stats, real: string): void {
  if (!stats.isFile()) {
    throw new ToolError('FILE_POLICY_DENIED', `${real} is not a regular file; special files are never opened.`, {
      path: real,
      details: { source: 'builtin', rule: 'special_file' },
    });
  }
}

/**
 * The verified descriptor of `real`'s directory (src/fs/verified-dir.ts: opened from its root component by component,
 * O_NOFOLLOW each), or null for a path whose directory lies outside the roots (a root that is itself the file, opened
 * by its configured path). The file is opened relative to it: a parent another process swapped for a link to outside
 * fails the call (NOT_ALLOWED) before anything outside is opened — no open(2) of an outside node (a device opened
 * has effects), and no NOT_FOUND / special-file answer that would tell what exists outside (attack on the merge).
 * @throws ToolError NOT_ALLOWED (a component is a link or changed); errno errors (a component missing)
 */
function verifiedParent(real: string, isInside: (p: string) => boolean): VerifiedDir | null {
  const parent = path.dirname(real);
  return isInside(parent) ? VerifiedDir.open(parent, isInside) : null;
}

function swappedError(real: string): ToolError {
  return changedError(real);
}
