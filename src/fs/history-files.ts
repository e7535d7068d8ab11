/**
 * The undo history's own files in the state directory (src/fs/history.ts, src/fs/history-prune.ts): reading a record
 * back (never through a link, never blocking, bounded), and writing one durably through a private temporary. The state
 * directory is the server's own; nothing here is a tool path.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, constants, mkdirSync, openSync, renameSync, unlinkSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { fsyncDescriptor, STATE_WRITE_FLAGS, syncDirectory, writeAll } from './atomic-write.js';

/** A record's id: 15-digit milliseconds, '-', 12 hex characters (its file is `<id>.json`). */
export const ID_PATTERN = /^[0-9]{15}-[0-9a-f]{12}$/;

/** Largest record read back (bytes) without a tighter bound; a bigger file is invalid. */
export const MAX_RECORD_BYTES = 512 * 1024 * 1024;

/**
 * The parsed JSON of the file `file`, or null when it is not a regular file or is larger than `maxBytes`.
 * @throws Node errno errors (ENOENT, ELOOP for a link …), SyntaxError for text that is not JSON
 */
export async function readRecord(file: string, maxBytes = MAX_RECORD_BYTES): Promise<unknown> {
  const handle = await open(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  try {
    const st = await handle.stat();
    if (!st.isFile() || st.size > maxBytes) return null;
    return JSON.parse(await handle.readFile('utf8'));
  } finally {
    await handle.close();
  }
}

/**
 * Writes `data` to a private temporary beside `file` (never through a link, never blocking) and fsyncs it; the caller
 * renames it over `file` (`writeDurably`, a staged record's commit). A missing directory is created (0700) once the
 * first open says so — not before every record (that was a mkdir and a stat per change). Only the write and the fsync
 * go through the I/O pool; the open and close are synchronous (microseconds each). A temporary that could not be
 * written whole is removed.
 * @returns the temporary's path
 * @throws Node errno errors
 */
export async function writeTemporary(file: string, data: string | Uint8Array): Promise<string> {
  const tmp = `${file}.${randomUUID().slice(0, 8)}.tmp`;
  let fd: number;
  try {
    fd = openSync(tmp, STATE_WRITE_FLAGS, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fd = openSync(tmp, STATE_WRITE_FLAGS, 0o600);
  }
  try {
    await writeAll(fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
    await fsyncDescriptor(fd);
  } catch (error) {
    closeSync(fd);
    unlinkQuietly(tmp);
    throw error;
  }
  closeSync(fd);
  return tmp;
}

/** Removes the server's own file `p` in the state directory; errors are ignored (already gone). */
export function unlinkQuietly(p: string): void {
  try {
    unlinkSync(p);
  } catch {
    /* already gone */
  }
}

/**
 * Writes `file` durably: the temporary (`writeTemporary`: written and fsynced), renamed over `file`, then the
 * directory fsynced.
 * @throws Node errno errors
 */
export async function writeDurably(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = await writeTemporary(file, data);
  renameSync(tmp, file);
  await syncDirectory(path.dirname(file));
}
