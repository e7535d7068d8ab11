/**
 * The effects of copy_path (src/mutation/copy-tree.ts decides them): writing a copy so that the destination never holds
 * a partial one. A file is written to a temporary name in the destination's verified parent and renamed into place; a
 * link is made new, or at a temporary name renamed over the file it replaces; a tree is built in a temporary sibling
 * directory (`.NAME.fs-tools-copy-XXXX`, noted as the server's own before it exists: src/fs/own-files.ts) and renamed
 * into place in one rename(2) once complete. A failure part-way removes the temporary; every source entry must still be
 * the node inspected.
 */
import { constants, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { ToolError } from '../errors/tool-error.js';
import { temporaryPrefix } from '../fs/atomic-write.js';
import { createContentHasher } from '../fs/hash.js';
import { dropOwnFile, noteOwnFile, removeOwnTree } from '../fs/own-files.js';
import { loopSlicer, type SnapshotEntry } from '../fs/tree-ops.js';
import {
  changedError,
  identityOf,
  sameNode,
  sameVersion,
  type FileIdentity,
  type VerifiedDir,
} from '../fs/verified-dir.js';
import { kindOf } from '../policy/authorize.js';
import { processSlot } from '../process-slots.js';

/** One entry of a source tree, in pre-order (a directory before what it holds). */
export interface PlannedEntry {
  relative: string;
  name: string;
  depth: number;
  stats: Stats;
}

/**
 * A link that would point outside the roots at its new place (the target itself is never echoed: it may be outside).
 * @returns NOT_ALLOWED link_target_outside
 */
export const linkOutsideError = (link: string): ToolError =>
  new ToolError(
    'NOT_ALLOWED',
    `The link ${link} would point outside the roots where it is copied; nothing was copied.`,
    {
      path: link,
      details: { reason: 'link_target_outside' },
      suggestion: 'Copy what the link points to instead, or place the copy where its relative target stays inside.',
    },
  );

/** A hidden temporary name beside `name` (cut to 200 bytes), for `what` (copy, link). */
const tempName = (name: string, what: string): string => {
  let cut = name;
  while (Buffer.byteLength(cut) > 200) cut = cut.slice(0, -1);
  return `.${cut}.fs-tools-${what}-${randomBytes(6).toString('hex')}`;
};

/** Places a symlink holding `target` at `name` of `dir`: atomically new, or replacing the file `expected` by rename. */
export async function placeLink(
  dir: VerifiedDir,
  name: string,
  target: string,
  expected: FileIdentity | null,
): Promise<void> {
  dir.assertInside();
  if (expected === null) {
    try {
      dir.symlink(target, name); // EEXIST if anything appeared: never replaces
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw changedError(dir.pathOf(name));
      throw error;
    }
    await dir.sync();
    return;
  }
  const tmp = tempName(name, 'link');
  noteOwnFile(dir.pathOf(tmp), 'tree');
  dir.symlink(target, tmp);
  await commitTemporary(dir, tmp, name, () => {
    const now = dir.lstat(name);
    if (!now || !sameNode(now, expected) || now.mtimeMs !== expected.mtimeMs || now.size !== expected.size)
      throw changedError(dir.pathOf(name));
  });
}

/**
 * Renames the temporary entry `tmp` of `dir` over `name` once `prepare` (which fills or checks it) has passed; on any
 * failure the temporary entry is removed and the error rethrown. The directory is synced after the rename.
 * @throws whatever `prepare` or the rename throws
 */
async function commitTemporary(
  dir: VerifiedDir,
  tmp: string,
  name: string,
  prepare: () => Promise<void> | void,
): Promise<void> {
  try {
    await prepare();
    dir.rename(tmp, dir, name);
  } catch (error) {
    dir.unlinkOwnTemporary(tmp);
    throw error;
  } finally {
    dropOwnFile(dir.pathOf(tmp));
  }
  await dir.sync();
}

/**
 * Test seam: called before each planned entry is copied; it may throw to simulate a failure part-way.
 * Set only by tests (in-process) or by `--test-seams=copy-fault:ENTRY` (src/cli.ts); never from the environment.
 * Process state (src/process-slots.ts).
 */
const seam = processSlot('mutation/copy-write', () => ({
  copyFault: null as ((relative: string) => void | Promise<void>) | null,
}));

/** An EACCES before `entry` is copied (the `--test-seams=copy-fault:ENTRY` seam; the suite runs as root). */
export function failCopyAt(entry: string): (relative: string) => void {
  return (relative) => {
    if (relative === entry)
      throw Object.assign(new Error(`EACCES: permission denied, open '${relative}'`), { code: 'EACCES' });
  };
}

/** A pause of `ms` before each entry is copied (the `--test-seams=copy-delay:MS` seam: a copy that takes a while). */
export function delayCopy(ms: number): (relative: string) => Promise<void> {
  return () => new Promise((r) => setTimeout(r, ms));
}

/** Sets the copy fault seam (tests only). */
export function setCopyFault(fn: typeof seam.copyFault): void {
  seam.copyFault = fn;
}

/**
 * Directories as a tree copy walks them: [source, copy, mode] per level. A directory's mode is set as the walk leaves
 * it (its copy is complete then, and its parent is still being filled at 0700), through its own descriptor: each
 * directory once, so the copy stays linear in entries and depth (re-opening every directory from the top to set its
 * mode made a 1,000-level copy hold the server for half a minute).
 */
type CopyStack = Array<[VerifiedDir, VerifiedDir, number]>;

/** Leaves the deepest directory of the walk: closes both sides and sets the copy's mode. */
function leave(stack: CopyStack): void {
  const [a, b, mode] = stack.pop()!;
  a.close();
  try {
    b.chmodSelf(mode);
  } finally {
    b.close();
  }
}

/**
 * Copies one planned entry from the directory `from` to `to` (the walk's current level): it must still be the node
 * inspected. A directory is created and entered (pushed on `stack`); a link is made with its target if `linkAllowed`;
 * a file is copied with its mode.
 * @throws ToolError NOT_ALLOWED changed_during_call or link_target_outside; errno errors
 */
async function copyEntry(
  stack: CopyStack,
  e: PlannedEntry,
  copied: SnapshotEntry[],
  linkAllowed: (relative: string, target: string) => Promise<boolean>,
): Promise<void> {
  const [from, to] = stack[stack.length - 1];
  const now = from.lstat(e.name);
  if (!now || !sameNode(now, e.stats) || kindOf(now) !== kindOf(e.stats)) throw changedError(from.pathOf(e.name));
  if (now.isDirectory()) {
    to.mkdir(e.name, 0o700);
    const a = from.openDir(e.name);
    const b = to.openDir(e.name);
    stack.push([a, b, now.mode & 0o7777]);
    if (!sameNode(a.identity, e.stats)) throw changedError(a.path);
    copied.push({ relative: e.relative, state: { kind: 'directory', mode: now.mode & 0o777 } });
  } else if (now.isSymbolicLink()) {
    const target = from.readlink(e.name);
    if (!(await linkAllowed(e.relative, target))) throw linkOutsideError(from.pathOf(e.name));
    to.symlink(target, e.name);
    copied.push({ relative: e.relative, state: { kind: 'symlink', target } });
  } else {
    const hash = await copyFileIn(from, e.name, e.stats, to, e.name);
    copied.push({ relative: e.relative, state: { kind: 'file', hash, bytes: null, mode: now.mode & 0o777 } });
  }
}

/**
 * Copies every planned entry into the temporary tree whose top is on `stack`, in slices (docs/security.md "Bounded
 * work"), and leaves every directory but the top (setting its mode).
 * @throws ToolError VALIDATION cancelled (the call was cancelled), and as `copyEntry`
 */
async function copyEntries(
  stack: CopyStack,
  plan: readonly PlannedEntry[],
  copied: SnapshotEntry[],
  linkAllowed: (relative: string, target: string) => Promise<boolean>,
  signal?: AbortSignal,
): Promise<void> {
  const slice = loopSlicer();
  for (const e of plan) {
    // A cancelled call (the client's cancellation, or the shutdown grace ran out) stops here; the temporary tree
    // is removed by the caller and nothing appears at the destination.
    if (signal?.aborted)
      throw new ToolError('VALIDATION', 'The call was cancelled; nothing was copied.', {
        details: { reason: 'cancelled' },
      });
    await seam.copyFault?.(e.relative);
    const due = slice();
    if (due) await due;
    while (stack.length > e.depth) {
      leave(stack);
      const up = slice();
      if (up) await up;
    }
    await copyEntry(stack, e, copied, linkAllowed);
  }
  // Leaving the last branch sets the mode of each directory on it: as many steps as levels, sliced like the rest.
  while (stack.length > 1) {
    leave(stack);
    const due = slice();
    if (due) await due;
  }
}

/**
 * Renames the complete temporary tree `tmpName` of `dstParent` to `dstName`. There is no rename-without-replace in
 * Node, and rename(2) silently replaces an empty directory: the destination name is claimed first with an exclusive
 * mkdir (EEXIST: something appeared), and the copy then replaces only that placeholder of ours (a non-empty directory
 * put there meanwhile makes the rename fail, nothing replaced).
 * @throws ToolError VALIDATION destination_exists (it appeared); errno errors
 */
function placeTree(dstParent: VerifiedDir, tmpName: string, dstName: string): void {
  dstParent.assertInside();
  const appeared = () =>
    new ToolError('VALIDATION', `${dstParent.pathOf(dstName)} appeared during the call; nothing was copied.`, {
      path: dstParent.pathOf(dstName),
      details: { reason: 'destination_exists' },
    });
  try {
    dstParent.mkdir(dstName, 0o700);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw appeared();
    throw error;
  }
  const placeholder = dstParent.lstat(dstName);
  try {
    dstParent.rename(tmpName, dstParent, dstName);
  } catch (error) {
    const now = dstParent.lstat(dstName);
    if (now && placeholder && sameNode(now, placeholder)) {
      try {
        dstParent.rmdir(dstName);
      } catch {
        /* no longer empty: not ours to remove */
      }
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') throw appeared();
    throw error;
  }
}

/**
 * Copies the inspected tree `plan` of directory `srcName` of `srcParent` to `dstName` of `dstParent`: built in a
 * temporary sibling directory, then renamed into place. Every source entry must still be the node inspected.
 * `copied` receives each entry written (pre-order; a file with the hash of the bytes written) for the undo history.
 * `linkAllowed` decides each link's target at its new place (src/policy/link-target.ts: a link inside at its source
 * must stay inside); a link it refuses fails the copy. On failure the temporary tree is removed and nothing is at the destination.
 * @throws ToolError NOT_ALLOWED changed_during_call or link_target_outside, VALIDATION destination_exists (it
 *   appeared) or cancelled; errno errors
 */
export async function copyTree(
  srcParent: VerifiedDir,
  srcName: string,
  srcStats: Stats,
  plan: readonly PlannedEntry[],
  dstParent: VerifiedDir,
  dstName: string,
  copied: SnapshotEntry[],
  linkAllowed: (relative: string, target: string) => Promise<boolean>,
  signal?: AbortSignal,
): Promise<void> {
  const tmpName = tempName(dstName, 'copy');
  dstParent.assertInside();
  // Noted before it exists (src/fs/own-files.ts): a copy killed part-way leaves a tree the next start sweeps.
  noteOwnFile(dstParent.pathOf(tmpName), 'tree');
  dstParent.mkdir(tmpName, 0o700);
  const tmpTop = dstParent.openDir(tmpName);
  const stack: CopyStack = [];
  let placed = false;
  try {
    const srcTop = srcParent.openDir(srcName);
    stack.push([srcTop, tmpTop, srcStats.mode & 0o7777]);
    if (!sameNode(srcTop.identity, srcStats)) throw changedError(srcTop.path);
    await copyEntries(stack, plan, copied, linkAllowed, signal);
    dstParent.chmod(tmpName, srcStats.mode & 0o7777);
    placeTree(dstParent, tmpName, dstName);
    placed = true;
    await dstParent.sync();
  } finally {
    for (const [a, b] of stack) {
      a.close();
      if (b !== tmpTop) b.close();
    }
    tmpTop.close();
    if (!placed) await removeOwnTree(dstParent, tmpName);
    if (placed || !dstParent.lstat(tmpName)) dropOwnFile(dstParent.pathOf(tmpName));
  }
}

/**
 * Copies the file `name` of `from` to a temporary name beside `dstName` of `to` and renames it into place: the
 * source must still be `expected` with content hash `hash`; the destination must still be absent (`expectDst` null)
 * or the file `expectDst` (replaced). The temporary file is removed on failure.
 * @throws ToolError NOT_ALLOWED changed_during_call, VALIDATION destination_exists; errno errors
 */
export async function copyFileAtomic(
  from: VerifiedDir,
  name: string,
  expected: Stats,
  hash: string,
  to: VerifiedDir,
  dstName: string,
  expectDst: FileIdentity | null,
): Promise<void> {
  const tmp = `${temporaryPrefix(dstName)}${randomBytes(6).toString('hex')}.tmp`;
  to.assertInside();
  noteOwnFile(to.pathOf(tmp), 'temporary');
  await commitTemporary(to, tmp, dstName, async () => {
    const copied = await copyFileIn(from, name, expected, to, tmp);
    if (copied !== hash) throw changedError(from.pathOf(name));
    to.assertInside();
    const now = to.lstat(dstName);
    if (expectDst === null) {
      if (now) {
        throw new ToolError('VALIDATION', `${to.pathOf(dstName)} appeared during the call; nothing was copied.`, {
          path: to.pathOf(dstName),
          details: { reason: 'destination_exists' },
        });
      }
    } else if (!now || (!now.isFile() && !now.isSymbolicLink()) || !sameVersion(identityOf(now), expectDst)) {
      // The file or link that was decided on (a link is replaced as the link itself), at the same version.
      throw changedError(to.pathOf(dstName));
    }
  });
}

/**
 * Copies the file `name` of `from` (which must still be `expected`: same node, size and mtime) to the new file
 * `toName` of `to` (created exclusively), permission bits kept.
 * @returns the content hash of the bytes copied
 * @throws ToolError NOT_ALLOWED changed_during_call (the source changed since inspected); errno errors
 */
async function copyFileIn(
  from: VerifiedDir,
  name: string,
  expected: Stats,
  to: VerifiedDir,
  toName: string,
): Promise<string> {
  // Non-blocking (openFile adds O_NONBLOCK): a FIFO renamed over the source after the hash cannot hang the call while
  // it holds its locks; fstat then refuses anything but the regular file inspected.
  const input = await from.openFile(name, { flags: constants.O_RDONLY });
  const hasher = createContentHasher();
  try {
    const st = await input.stat();
    if (!st.isFile() || !sameNode(st, expected) || st.size !== expected.size || st.mtimeMs !== expected.mtimeMs)
      throw changedError(from.pathOf(name));
    const mode = st.mode & 0o7777;
    const output = await to.openFile(toName, {
      flags: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
      mode: 0o600,
    });
    try {
      const buffer = Buffer.allocUnsafe(1024 * 1024);
      let position = 0;
      for (;;) {
        const { bytesRead } = await input.read(buffer, 0, buffer.length, position);
        if (bytesRead === 0) break;
        if (position + bytesRead > expected.size) throw changedError(from.pathOf(name)); // it grew meanwhile
        hasher.update(buffer.subarray(0, bytesRead));
        let written = 0;
        while (written < bytesRead) written += (await output.write(buffer, written, bytesRead - written)).bytesWritten;
        position += bytesRead;
      }
      if (position !== expected.size) throw changedError(from.pathOf(name)); // it shrank meanwhile
      await output.chmod(mode);
      await output.sync();
    } finally {
      await output.close();
    }
  } finally {
    await input.close();
  }
  return hasher.digest();
}
