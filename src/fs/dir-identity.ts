/**
 * Where a descriptor is and which node it is: the proofs the verified-access module (src/fs/verified-dir.ts, which
 * re-exports everything here) makes of every directory and file it opens. On Linux with /proc a descriptor's location
 * is read from /proc/self/fd; elsewhere its identity (dev, ino) is compared with an lstat of the expected path.
 */
import { existsSync, fstatSync, lstatSync, readlinkSync, type Stats } from 'node:fs';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { isCanonicalPosix, isEntryName } from './path-within.js';

/**
 * True where an operation can name a file relative to an open directory (`/proc/self/fd/N/name`): Linux with /proc.
 * Elsewhere the path-string fallback described above is used.
 */
export const DESCRIPTOR_RELATIVE: boolean = process.platform === 'linux' && existsSync('/proc/self/fd');

/** Which node a descriptor or directory entry is: device and inode. */
export interface NodeIdentity {
  dev: number;
  ino: number;
}

/** A file's identity and version as lstat reports them; a change in any field means someone else wrote it. */
export interface FileIdentity extends NodeIdentity {
  size: number;
  mtimeMs: number;
}

/** The identity and version of a Stats. */
export function identityOf(stats: Stats): FileIdentity {
  return { dev: stats.dev, ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs };
}

/** True when both name the same node (dev, ino). */
export function sameNode(a: NodeIdentity, b: NodeIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** True when both are the same node at the same version (dev, ino, size, mtime). */
export function sameVersion(a: FileIdentity, b: FileIdentity): boolean {
  return sameNode(a, b) && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

/**
 * NOT_ALLOWED: something on the path changed between authorization and use (a link or another directory swapped in,
 * a directory moved). Nothing was done by the operation that detected it.
 */
export function changedError(
  target: string,
  reason = 'changed_during_call',
  extra: Record<string, unknown> = {},
): ToolError {
  return new ToolError(
    'NOT_ALLOWED',
    `${target} changed during the call (${reason.replace(/_/g, ' ')}); it was not used.`,
    {
      path: target,
      details: { reason, ...extra },
    },
  );
}

/** What `locationOf` appends to the location of a deleted node (a NUL: no path holds one, so it equals none). */
export const DELETED_MARK = '\0deleted';

/**
 * The path a descriptor really refers to now (Linux: /proc/self/fd), or null where that cannot be known. A file or
 * directory deleted while open reads as "PATH (deleted)", which a live node named "PATH (deleted)" reads as too: when
 * the link ends so and the node has no link left (fstat: nlink 0), DELETED_MARK is appended, so the location of a
 * deleted node equals no path, not even one ending in " (deleted)".
 */
export function locationOf(fd: number): string | null {
  if (!DESCRIPTOR_RELATIVE) return null;
  try {
    const link = readlinkSync(`/proc/self/fd/${fd}`);
    return link.endsWith(' (deleted)') && fstatSync(fd).nlink === 0 ? link + DELETED_MARK : link;
  } catch (error) {
    // Deeper than PATH_MAX: the kernel cannot spell the path (see `assertInside`).
    if ((error as NodeJS.ErrnoException).code === 'ENAMETOOLONG') return TOO_LONG;
    return null;
  }
}

/** `locationOf` for a descriptor whose path is longer than PATH_MAX. */
export const TOO_LONG = '\0too long';

/**
 * The one proof that an opened descriptor is the authorized node (files and directories alike): on Linux its
 * /proc/self/fd location equals `expected` exactly; elsewhere its identity equals a fresh lstat of `expected`.
 * `allowDeleted`: a regular file deleted after the open (reading it reveals nothing outside) is accepted.
 * @throws ToolError NOT_ALLOWED reason changed_during_call
 */
export function assertDescriptorAt(fd: number, stats: NodeIdentity, expected: string, allowDeleted = false): void {
  const actual = locationOf(fd);
  if (actual !== null) {
    const deleted = ` (deleted)${DELETED_MARK}`;
    const clean = allowDeleted && actual.endsWith(deleted) ? actual.slice(0, -deleted.length) : actual;
    if (clean !== expected) throw changedError(expected);
    return;
  }
  const now = lstatSync(expected, { throwIfNoEntry: false });
  if (!now || !sameNode(now, stats)) throw changedError(expected);
}

/**
 * `path.join(dir, name)` for a canonical absolute directory path and one entry name, by concatenation on POSIX:
 * `path.join` re-normalizes the whole path, one string per component, which made every step of a deep walk cost
 * O(depth) allocations (docs/security.md "Bounded work"). Anything else goes through `path.join`.
 */
export function childPath(dir: string, name: string): string {
  // A canonical path (isCanonicalPosix: one scan, no allocation) is its own normalization.
  if (path.sep !== '/' || !isEntryName(name) || !isCanonicalPosix(dir)) return path.join(dir, name);
  return dir.length === 1 ? `/${name}` : `${dir}/${name}`;
}
