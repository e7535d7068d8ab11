/**
 * Atomic, no-follow writes (docs/security.md "Roots"). The one place that replaces a file's bytes, entirely through the
 * verified parent directory descriptor (src/fs/verified-dir.ts):
 *   1. a temporary file is created in the verified parent with O_CREAT|O_EXCL|O_NOFOLLOW (never an existing file);
 *      no ancestor swapped for a link can redirect it;
 *   2. bytes are written and fsynced, the mode of the replaced file (or the given mode) is applied;
 *   3. [defense in depth] just before the rename, the parent is re-proven to lie inside the roots, and the
 *      target is lstat'ed again in it: a symlink swapped in, or a file whose identity changed since it was hashed,
 *      aborts the write;
 *   4. rename(2) in the parent replaces the directory entry (it never follows a link at the last component, and a hard
 *      link to an outside file is replaced, not written through), then the directory is fsynced.
 * A failure at any step removes the temporary file (relative to the same descriptor: it is never left behind in a
 * directory that was swapped in); no partial file is ever visible at the target.
 * We do not use write-file-atomic: it resolves symlinks and writes through them, and needs Node 22.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fsync as fsyncCb,
  openSync,
  write as writeCb,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import type { AllowedPath } from '../policy/resolve-path.js';
import { dropOwnFile, noteOwnFile } from './own-files.js';
import {
  changedError,
  identityOf,
  openDirCreating,
  sameVersion,
  VerifiedDir,
  withVerifiedDir,
  type FileIdentity,
} from './verified-dir.js';
import { processSlot } from '../process-slots.js';

export { identityOf, type FileIdentity } from './verified-dir.js';

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
  /**
   * Awaited between the temporary's fsync and the last checks before the rename (a failed check still refuses the
   * write): the undo record is published here (src/mutation/pipeline.ts), and the transaction's kill seam runs here.
   */
  beforeRename?: () => Promise<void>;
}

/**
 * Whether this build carries the in-process test seams. `FS_TOOLS_TEST_SEAMS` is a build-time constant,
 * not a variable anyone can set at run time: vitest.config.ts defines it as `true` for the in-process suite;
 * scripts/bundle.mjs defines it as `false`, so esbuild folds this to `false` and the production bundle (dist/) carries
 * no setter and never calls an injector. Undefined (any other way of running src/) means off.
 */
declare const FS_TOOLS_TEST_SEAMS: boolean | undefined;
const WRITE_FAULTS_BUILT_IN = typeof FS_TOOLS_TEST_SEAMS !== 'undefined' && FS_TOOLS_TEST_SEAMS === true;

/**
 * Fault-injection seam for in-process tests (no environment variable, no CLI flag): when set, called with the step
 * name before the temporary file is written and before the rename; it may throw an errno error. Process state
 * (src/process-slots.ts).
 */
const seam = processSlot('fs/atomic-write', () => ({
  injectWriteFault: null as ((step: 'write' | 'rename', target: string) => void) | null,
}));

/**
 * Sets the fault-injection seam (in-process tests only; absent from the production bundle).
 * @throws Error when this build carries no test seams (FS_TOOLS_TEST_SEAMS not defined as true)
 */
export function setWriteFaultInjector(fn: typeof seam.injectWriteFault): void {
  if (!WRITE_FAULTS_BUILT_IN) throw new Error('setWriteFaultInjector: this build carries no test seams');
  seam.injectWriteFault = fn;
}

/** Calls the injector, in builds that carry the seam (a constant `false` in the production bundle). */
function writeFaultPoint(step: 'write' | 'rename', target: string): void {
  if (WRITE_FAULTS_BUILT_IN) seam.injectWriteFault?.(step, target);
}

/**
 * Replaces (or creates) the file at `target` with `bytes`, atomically, through its verified parent.
 * @returns the lstat of the new file (null when someone removed it right after the rename)
 * @throws ToolError NOT_ALLOWED (a link or directory swapped in); the `expected.onChanged` error (or NOT_ALLOWED
 *   reason changed_during_call) when the target changed; Node errno errors (ENOSPC, EIO, EACCES …) bubble
 */
export async function writeFileAtomic(
  target: AllowedPath,
  bytes: Uint8Array,
  options: AtomicWriteOptions,
): Promise<Stats | null> {
  return await withVerifiedDir(path.dirname(target), options.isInside, (dir) =>
    writeFileAtomicIn(dir, path.basename(target), bytes, options),
  );
}

/**
 * `writeFileAtomic` for entry `base` of an already verified directory.
 * @throws as writeFileAtomic
 */
export async function writeFileAtomicIn(
  dir: VerifiedDir,
  base: string,
  bytes: Uint8Array,
  options: Omit<AtomicWriteOptions, 'isInside'>,
): Promise<Stats | null> {
  const target = dir.pathOf(base);
  const tmpName = `${temporaryPrefix(base)}${randomBytes(6).toString('hex')}.tmp`;
  const tmp = dir.pathOf(tmpName);
  const before = dir.lstat(base);
  const mode = options.mode ?? (before && before.isFile() ? before.mode & 0o7777 : 0o666);
  // Noted before it exists: a process killed from here on leaves a temporary the start-up sweep removes
  // (src/fs/own-files.ts); its name is of the class no tool reads, whatever it holds.
  noteOwnFile(tmp, 'temporary');
  // The descriptor's own syscalls are synchronous (microseconds each) except the write and the fsync: every round
  // trip through the I/O pool costs a thread hand-off twice, which on a loaded machine is most of a small write.
  let fd: number | null;
  try {
    fd = dir.openFileSync(tmpName, { flags: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode });
  } catch (error) {
    dropOwnFile(tmp);
    throw retarget(error, tmp, target);
  }
  let renamed = false;
  try {
    writeFaultPoint('write', target);
    await writeAll(fd, bytes);
    if (options.mode === null || options.mode === undefined) {
      if (before && before.isFile()) fchmodSync(fd, before.mode & 0o7777);
    } else {
      fchmodSync(fd, options.mode);
    }
    if (before && before.isFile() && process.getuid?.() === 0) {
      try {
        fchownSync(fd, before.uid, before.gid);
      } catch {
        /* best effort, as root only */
      }
    }
    await fsyncDescriptor(fd);
    closeSync(fd);
    fd = null;
    await options.beforeRename?.();
    // [defense in depth] the parent is still inside the roots, and the target is what was hashed.
    dir.assertInside();
    const now = dir.lstat(base);
    if (now?.isSymbolicLink()) throw changedError(target, 'symlink_swapped');
    if (options.expected) {
      const want = options.expected.identity;
      const changed = want === null ? now !== null : !now || !sameVersion(identityOf(now), want);
      if (changed) {
        const error = options.expected.onChanged
          ? await options.expected.onChanged()
          : changedError(target, 'changed_during_call');
        if (error) throw error;
        // [defense in depth] the caller accepted the target as it is now; it must still not be a link.
        if (dir.lstat(base)?.isSymbolicLink()) throw changedError(target, 'symlink_swapped');
      }
    }
    writeFaultPoint('rename', target);
    try {
      dir.rename(tmpName, dir, base);
    } catch (error) {
      throw retarget(error, tmp, target);
    }
    renamed = true;
    dropOwnFile(tmp);
    await dir.sync();
    return dir.lstat(base);
  } catch (error) {
    throw retarget(error, tmp, target);
  } finally {
    if (!renamed) {
      // Closed here only if still open (never twice: the number may belong to another file by then); no write or
      // fsync on it is pending, each was awaited.
      if (fd !== null) closeQuietly(fd);
      dir.unlinkOwnTemporary(tmpName);
      dropOwnFile(tmp);
    }
  }
}

/** Closes `fd` on a failure path; an error of the close is dropped (the error being thrown says more). */
function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* see above */
  }
}

/**
 * Writes all of `bytes` to the descriptor `fd` from its current offset, in the I/O pool (one round trip unless the
 * kernel takes less than all at once).
 * @throws Node errno errors (ENOSPC, EIO …; without a path: the caller names the file)
 */
export async function writeAll(fd: number, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) {
    written += await new Promise<number>((resolve, reject) =>
      writeCb(fd, bytes, written, bytes.length - written, null, (error, n) => (error ? reject(error) : resolve(n))),
    );
  }
}

/**
 * fsync(2) of the descriptor `fd`, in the I/O pool.
 * @throws Node errno errors (EIO …)
 */
export async function fsyncDescriptor(fd: number): Promise<void> {
  await new Promise<void>((resolve, reject) => fsyncCb(fd, (error) => (error ? reject(error) : resolve())));
}

/** An errno error about our temporary file is reported as being about the target (the temp name is internal). */
function retarget(error: unknown, tmp: string, target: string): unknown {
  const e = error as NodeJS.ErrnoException;
  // FileHandle operations (write, sync, chmod) fail without a path: an ENOSPC or EIO there is about the target too
  // (a full disk was reported with path null).
  if (e && typeof e === 'object' && typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) && e.path === undefined)
    e.path = target;
  if (e && typeof e === 'object' && e.path === tmp) {
    e.path = target;
    if (typeof e.message === 'string') e.message = e.message.split(tmp).join(target);
  }
  if (e && typeof e === 'object' && (e as { dest?: string }).dest === target && e.path === target)
    delete (e as { dest?: string }).dest;
  return error;
}

/**
 * The start of a temporary file's name for the target name `base`: `.BASE.fs-tools-`, followed by 12 hex digits and
 * `.tmp`. BASE is cut at a character boundary so the whole name fits NAME_MAX (255 bytes): with the full name, a file
 * whose name is 229-255 bytes long could not be written at all.
 */
export function temporaryPrefix(base: string): string {
  const room = 255 - '..fs-tools-'.length - 12 - '.tmp'.length;
  let cut = base;
  while (Buffer.byteLength(cut) > room) cut = cut.slice(0, -1);
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1); // never half a surrogate pair
  return `.${cut}.fs-tools-`;
}

/**
 * open(2) flags for the server's own state files (journal entries, undo records) written through a temporary name:
 * created or truncated, never through a link, never blocking (a FIFO put at the name cannot hang the write).
 */
export const STATE_WRITE_FLAGS =
  constants.O_WRONLY |
  constants.O_CREAT |
  constants.O_TRUNC |
  (constants.O_NOFOLLOW ?? 0) |
  (constants.O_NONBLOCK ?? 0);

/** fsync a directory by path so a rename is durable (best effort; the journal's own directory, not a tool path). */
export async function syncDirectory(dir: string): Promise<void> {
  try {
    const fd = openSync(dir, constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NONBLOCK ?? 0));
    try {
      await fsyncDescriptor(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    /* best effort */
  }
}

/**
 * Creates the missing parent directories of the authorized file `file` (docs/tools.md: a change that creates
 * `a/b/c.txt`, as `git apply` does), from the nearest existing ancestor down, one level at a time, each relative to
 * its verified parent and opened with O_NOFOLLOW (src/fs/verified-dir.ts openDirCreating, which proves containment
 * itself).
 * @returns the directories created, outermost first
 * @throws ToolError NOT_ALLOWED when a component is a link or lands outside; VALIDATION when a component exists and is
 *   not a directory
 */
export function makeParentDirectories(file: AllowedPath, isInside: (p: string) => boolean): string[] {
  const { dir, created } = openDirCreating(path.dirname(file), isInside);
  dir.close();
  return created;
}
