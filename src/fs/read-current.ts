/**
 * Reading a file's current state before a mutation (SPEC §5, §3.3 step 9): its bytes (up to a cap), hash and
 * identity, through the verified no-follow open. Used inside the path lock, so what the OCC check sees is what the
 * write replaces.
 */
import type { Stats } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { ToolError } from '../errors/tool-error.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { hashBytes, hashFileHandle } from './hash.js';
import { openForRead } from './open-file.js';

/** A file as it is now. */
export interface CurrentFile {
  exists: boolean;
  /** null when the file does not exist. */
  hash: string | null;
  /** The bytes, when the file exists and `wantBytes` was set (and it fits the cap). */
  bytes: Buffer | null;
  stats: Stats | null;
}

/**
 * Reads the current state of a regular file (or its absence).
 * @param wantBytes load the bytes (edits need them; a whole-file replace needs only the hash)
 * @throws ToolError VALIDATION (reason file_too_large) when bytes are wanted and the file exceeds `maxBytes`;
 *   FILE_POLICY_DENIED for special files; NOT_ALLOWED when swapped during the call
 */
export async function readCurrent(real: AllowedPath, isInside: (p: string) => boolean,
  options: { wantBytes: boolean; maxBytes: number }): Promise<CurrentFile> {
  const st = await lstat(real).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return null;
    throw e;
  });
  if (!st) return { exists: false, hash: null, bytes: null, stats: null };
  const { handle, stats } = await openForRead(real, isInside);
  try {
    if (options.wantBytes) {
      if (stats.size > options.maxBytes) {
        throw new ToolError('VALIDATION', `${real} is ${stats.size} bytes, over the ${options.maxBytes}-byte edit limit.`, {
          path: real, details: { reason: 'file_too_large', size: stats.size, limit: options.maxBytes },
          suggestion: 'Use write_file to replace it, or raise --max-edit-bytes.',
        });
      }
      const bytes = await handle.readFile();
      return { exists: true, hash: hashBytes(bytes), bytes, stats };
    }
    return { exists: true, hash: await hashFileHandle(handle), bytes: null, stats };
  } finally {
    await handle.close();
  }
}

/** True when `p` is an existing directory (not a link to one). */
export async function isDirectory(p: string): Promise<boolean> {
  return (await lstat(p).catch(() => null))?.isDirectory() ?? false;
}
