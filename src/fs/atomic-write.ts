/**
 * Atomic, no-follow writes (SPEC §4.1, §6.2). The one place that replaces a file's bytes:
 *   1. a temporary file is created next to the target with O_CREAT|O_EXCL|O_NOFOLLOW (never an existing file);
 *   2. [defense in depth] the opened temporary file's real location is re-checked to be inside the roots
 *      (/proc/self/fd on Linux), so a directory swapped for a link after the policy check is caught before any byte
 *      is written;
 *   3. bytes are written and fsynced, the mode of the replaced file (or the given mode) is applied;
 *   4. [defense in depth] just before the rename, the target is lstat'ed again: a symlink swapped in, or a file
 *      whose identity changed since it was hashed, aborts the write;
 *   5. rename(2) replaces the directory entry (it never follows a link at the last component, and a hard link to an
 *      outside file is replaced, not written through), then the directory is fsynced.
 * A failure at any step removes the temporary file; no partial file is ever visible at the target.
 * We do not use write-file-atomic: it resolves symlinks and writes through them, and needs Node 22.
 */
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, mkdir, open, readlink, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import type { AllowedPath } from '../policy/resolve-path.js';

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/** A file's identity and version as lstat reports them; a change in any field means someone else wrote it. */
export interface FileIdentity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** The identity of a Stats. */
export function identityOf(stats: Stats): FileIdentity {
  return { dev: stats.dev, ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs };
}

/** What the target must still be at the moment of the rename. */
export interface ExpectedTarget {
  /** null: the target must not exist; otherwise its identity must be unchanged. */
  identity: FileIdentity | null;
  /**
   * Decides about a target whose identity changed: the error to throw (e.g. an OCC_MISMATCH with the current hash),
   * or null when the caller accepts it as it is now (same bytes under a new inode or mtime: an editor's identical
   * save, a touch), in which case the write proceeds after the symlink re-check.
   */
  onChanged?: () => Promise<Error | null>;
}

/** Options of `writeFileAtomic`. */
export interface AtomicWriteOptions {
  /** Containment predicate over absolute paths (from policy). */
  isInside: (p: string) => boolean;
  /** Permission bits for a new file (default 0o666 & ~umask), or null to keep the replaced file's. */
  mode?: number | null;
  /** Identity check before rename; omit to skip (e.g. the caller holds no snapshot). */
  expected?: ExpectedTarget;
  /** Test seam (fault injection, SPEC issue 7): called between the temp write and the rename. */
  beforeRename?: () => Promise<void>;
}

/** Fault-injection seam for tests: when set, called with the step name; it may throw an errno error. */
export let injectWriteFault: ((step: 'write' | 'rename', target: string) => void) | null = null;

/** Sets the fault-injection seam (tests only). */
export function setWriteFaultInjector(fn: typeof injectWriteFault): void {
  injectWriteFault = fn;
}

/**
 * Replaces (or creates) the file at `target` with `bytes`, atomically.
 * @returns the lstat of the new file
 * @throws ToolError NOT_ALLOWED (a link or directory swapped in); the `expected.onChanged` error (or NOT_ALLOWED
 *   reason changed_during_call) when the target changed; Node errno errors (ENOSPC, EIO, EACCES …) bubble
 */
export async function writeFileAtomic(target: AllowedPath, bytes: Uint8Array, options: AtomicWriteOptions): Promise<Stats> {
  const dir = path.dirname(target);
  const base = path.basename(target);
  const tmp = path.join(dir, `${temporaryPrefix(base)}${randomBytes(6).toString('hex')}.tmp`);
  const before = await lstat(target).catch(() => null);
  const mode = options.mode ?? (before && before.isFile() ? before.mode & 0o7777 : 0o666);
  const handle = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, mode)
    .catch((error: unknown) => { throw retarget(error, tmp, target); });
  let renamed = false;
  try {
    if (process.platform === 'linux') {
      const actual = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => null);
      if (actual !== null && !options.isInside(actual)) throw changedError(target, 'directory_swapped');
    }
    injectWriteFault?.('write', target);
    let written = 0;
    while (written < bytes.length) {
      const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
      written += bytesWritten;
    }
    if (options.mode === null || options.mode === undefined) {
      if (before && before.isFile()) await handle.chmod(before.mode & 0o7777);
    } else {
      await handle.chmod(options.mode);
    }
    if (before && before.isFile() && process.getuid?.() === 0) {
      await handle.chown(before.uid, before.gid).catch(() => undefined);
    }
    await handle.sync();
    await handle.close();
    await options.beforeRename?.();
    // [defense in depth] re-check the target right before the rename.
    const now = await lstat(target).catch(() => null);
    if (now?.isSymbolicLink()) throw changedError(target, 'symlink_swapped');
    if (options.expected) {
      const want = options.expected.identity;
      const changed = want === null ? now !== null
        : !now || now.dev !== want.dev || now.ino !== want.ino || now.size !== want.size || now.mtimeMs !== want.mtimeMs;
      if (changed) {
        const error = options.expected.onChanged ? await options.expected.onChanged() : changedError(target, 'changed_during_call');
        if (error) throw error;
        // [defense in depth] the caller accepted the target as it is now; it must still not be a link.
        if ((await lstat(target).catch(() => null))?.isSymbolicLink()) throw changedError(target, 'symlink_swapped');
      }
    }
    injectWriteFault?.('rename', target);
    await rename(tmp, target).catch((error: unknown) => { throw retarget(error, tmp, target); });
    renamed = true;
    await syncDirectory(dir);
    return await lstat(target);
  } catch (error) {
    throw retarget(error, tmp, target);
  } finally {
    if (!renamed) {
      await handle.close().catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
    }
  }
}

/** An errno error about our temporary file is reported as being about the target (the temp name is internal). */
function retarget(error: unknown, tmp: string, target: string): unknown {
  const e = error as NodeJS.ErrnoException;
  // FileHandle operations (write, sync, chmod) fail without a path: an ENOSPC or EIO there is about the target too
  // (issue 7: a full disk was reported with path null).
  if (e && typeof e === 'object' && typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) && e.path === undefined) e.path = target;
  if (e && typeof e === 'object' && e.path === tmp) {
    e.path = target;
    if (typeof e.message === 'string') e.message = e.message.split(tmp).join(target);
  }
  if (e && typeof e === 'object' && (e as { dest?: string }).dest === target && e.path === target) delete (e as { dest?: string }).dest;
  return error;
}

/**
 * The start of a temporary file's name for the target name `base`: `.BASE.fs-tools-`, followed by 12 hex digits and
 * `.tmp`. BASE is cut at a character boundary so the whole name fits NAME_MAX (255 bytes): with the full name, a file
 * whose name is 229-255 bytes long could not be written at all (issue 7).
 */
export function temporaryPrefix(base: string): string {
  const room = 255 - '..fs-tools-'.length - 12 - '.tmp'.length;
  let cut = base;
  while (Buffer.byteLength(cut) > room) cut = cut.slice(0, -1);
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1); // never half a surrogate pair
  return `.${cut}.fs-tools-`;
}

/** fsync a directory so a rename is durable (best effort: not every platform allows opening directories). */
export async function syncDirectory(dir: string): Promise<void> {
  try {
    const h = await open(dir, constants.O_RDONLY);
    try {
      await h.sync();
    } finally {
      await h.close();
    }
  } catch { /* best effort */ }
}

/**
 * Creates the missing directories between the nearest existing ancestor and `target` (SPEC §6.2 create_directory,
 * write_file create_dirs), one level at a time, never through a link: after each mkdir the new entry must be a real
 * directory inside the roots.
 * @returns true when at least one directory was created
 * @throws ToolError NOT_ALLOWED when a component turns out to be a link or lands outside; VALIDATION when a component
 *   exists and is not a directory
 */
export async function makeDirectories(target: AllowedPath, isInside: (p: string) => boolean): Promise<boolean> {
  const missing: string[] = [];
  let cursor: string = target;
  for (;;) {
    const st = await lstat(cursor).catch(() => null);
    if (st) {
      if (st.isSymbolicLink()) throw changedError(cursor, 'symlink_swapped');
      if (!st.isDirectory()) {
        throw new ToolError('VALIDATION', `${cursor} exists and is not a directory.`, {
          path: cursor, details: { reason: 'not_a_directory' },
        });
      }
      break;
    }
    missing.unshift(cursor);
    const parent = path.dirname(cursor);
    if (parent === cursor) break;
    cursor = parent;
  }
  for (const dir of missing) {
    if (!isInside(dir)) throw changedError(dir, 'outside_roots');
    try {
      await mkdir(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const st = await lstat(dir);
    if (!st.isDirectory()) throw changedError(dir, 'symlink_swapped');
  }
  return missing.length > 0;
}

function changedError(target: string, reason: string): ToolError {
  return new ToolError('NOT_ALLOWED', `${target} changed during the call (${reason.replace(/_/g, ' ')}); nothing was written.`, {
    path: target, details: { reason },
  });
}
