/**
 * Reading a file's current state before a mutation (docs/errors.md "Optimistic concurrency" step 9): its bytes (up to a cap), hash and
 * identity, through its verified parent directory (src/fs/verified-dir.ts) and a no-follow open. Used inside the path
 * lock, so what the OCC check sees is what the write replaces.
 */
import { constants, type Stats } from 'node:fs';
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { hashBytes, hashFileHandle, readAtMost } from './hash.js';
import { assertRegularFile } from './open-file.js';
import { withVerifiedDir, type VerifiedDir } from './verified-dir.js';

const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

/** A file as it is now. */
export interface CurrentFile {
  exists: boolean;
  /** null when the file does not exist. */
  hash: string | null;
  /** The bytes, when the file exists and `wantBytes` was set (and it fits the cap). */
  bytes: Buffer | null;
  stats: Stats | null;
}

/** Options of `readCurrent`. */
export interface ReadCurrentOptions {
  /** Load the bytes (edits need them; a whole-file replace needs only the hash). */
  wantBytes: boolean;
  maxBytes: number;
  /** With wantBytes: a file over maxBytes is hashed only (bytes null) instead of refused. */
  hashOnlyWhenLarge?: boolean;
}

/**
 * Reads the current state of a regular file (or its absence).
 * @throws ToolError VALIDATION (reason file_too_large) when bytes are wanted and the file exceeds `maxBytes`;
 *   FILE_POLICY_DENIED for special files; NOT_ALLOWED when swapped during the call
 */
export async function readCurrent(
  real: AllowedPath,
  isInside: (p: string) => boolean,
  options: ReadCurrentOptions,
): Promise<CurrentFile> {
  return await withVerifiedDir(path.dirname(real), isInside, (dir) => readCurrentIn(dir, path.basename(real), options));
}

/**
 * `readCurrent` for entry `name` of a verified directory.
 * @throws as readCurrent
 */
export async function readCurrentIn(dir: VerifiedDir, name: string, options: ReadCurrentOptions): Promise<CurrentFile> {
  const real = dir.pathOf(name);
  if (!dir.lstat(name)) return { exists: false, hash: null, bytes: null, stats: null };
  let handle;
  try {
    handle = await dir.openFile(name, { flags: constants.O_RDONLY | O_NONBLOCK });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { exists: false, hash: null, bytes: null, stats: null };
    throw error;
  }
  try {
    const stats = await handle.stat();
    assertRegularFile(stats, real);
    const tooLarge = () =>
      new ToolError('VALIDATION', `${real} is ${stats.size} bytes, over the ${options.maxBytes}-byte edit limit.`, {
        path: real,
        details: { reason: 'file_too_large', size: stats.size, limit: options.maxBytes },
        suggestion: 'Use write_file to replace it, or raise --max-edit-bytes.',
      });
    if (options.wantBytes && !(options.hashOnlyWhenLarge && stats.size > options.maxBytes)) {
      if (stats.size > options.maxBytes) throw tooLarge();
      // Never to EOF: a file that reports less than it holds (procfs) is read only up to the cap.
      const bytes = await readAtMost(handle, options.maxBytes, stats.size);
      if (bytes.length <= options.maxBytes) return { exists: true, hash: hashBytes(bytes), bytes, stats };
      if (!options.hashOnlyWhenLarge) throw tooLarge();
    }
    const hash = await hashFileHandle(handle, { reportedSize: stats.size, maxBytes: options.maxBytes, path: real });
    return { exists: true, hash, bytes: null, stats };
  } finally {
    await handle.close();
  }
}

/**
 * True when `p` is an existing directory (not a link to one). A path-string lstat: only for the existence checks of
 * docs/errors.md "Order of checks" step 7, before the lock; every decision inside the lock is taken again through verified descriptors.
 */
export async function isDirectory(p: string): Promise<boolean> {
  return (await lstat(p).catch(() => null))?.isDirectory() ?? false;
}
