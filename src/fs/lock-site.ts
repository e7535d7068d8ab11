/**
 * Where a path lock lives (src/fs/path-lock.ts): the registered lock scopes (lock files are created only inside the
 * roots in force) and, for one target, its nearest existing ancestor directory inside them with the target's name
 * relative to it. The choice is made by path (lstat): it only picks the directory to open; the lock's directory is
 * then opened through the verified-access module (src/fs/verified-dir.ts) and every lock syscall is made relative to it.
 */
import { lstatSync, type Stats } from 'node:fs';
import path from 'node:path';
import { processSlot } from '../process-slots.js';

/** One registered scope: a containment predicate and, optionally, the root of a path inside it. */
interface Scope {
  isInside: (p: string) => boolean;
  rootOf?: (p: string) => string | undefined;
}
/**
 * The scopes in force. Process state (one set per process, like the lock files themselves; src/process-slots.ts):
 * each ProcessState registers its roots at creation (src/server/process-state.ts).
 */
const scopes = processSlot('fs/lock-site', () => new Set<Scope>());

/** True when a lock file may be created in `p`: some registered scope accepts it (all do when none is registered). */
export function inLockScope(p: string): boolean {
  if (scopes.size === 0) return true;
  for (const s of scopes) if (s.isInside(p)) return true;
  return false;
}

/**
 * Registers where lock files may be created: only in directories some registered predicate accepts (inside the
 * roots). The process state registers its roots once at start-up (tests that build several process states in one
 * process register each). Without any (unit tests) every directory is accepted.
 * @param rootOf the real path of the root containing a path (for the root-relative `details.lock` of a `locked`
 *   envelope); without it the envelope names only the lock file's name
 * @returns a function that unregisters it
 */
export function registerLockScope(
  isInside: (p: string) => boolean,
  rootOf?: (p: string) => string | undefined,
): () => void {
  const s: Scope = { isInside, rootOf };
  scopes.add(s);
  return () => {
    scopes.delete(s);
  };
}

/** `lockPath` relative to the root containing it (`/`-separated), or its bare name: never a path outside the roots. */
export function rootRelative(lockPath: string): string {
  for (const s of scopes) {
    const root = s.rootOf?.(lockPath);
    if (root !== undefined) return path.relative(root, lockPath).split(path.sep).join('/');
  }
  return path.basename(lockPath);
}

/** lstat by path, or null on any error (choosing a site only; nothing is acted on through it). */
export function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/** `target` relative to `dir`, `/`-separated (the name the lock's hash is taken of). */
export function relativeName(dir: string, target: string): string {
  return path.relative(dir, target).split(path.sep).join('/');
}

/** An errno-style error: the target cannot be locked at all. */
export function lockError(target: string, message: string): Error {
  return Object.assign(new Error(message), { code: 'EBUSY', path: target });
}

/**
 * Where the lock of `target` lives: its nearest existing ancestor directory inside the scope, and the name there;
 * null when a non-directory stands where a directory of the path should be (nothing to lock).
 * @throws Error code EBUSY when no directory inside the scope can hold it
 */
export function lockSite(target: string): { dir: string; relative: string } | null {
  let dir = path.dirname(target);
  while (dir !== path.dirname(dir) && inLockScope(dir)) {
    const st = lstatOrNull(dir);
    if (st?.isDirectory()) return { dir, relative: relativeName(dir, target) };
    // A file or a link where a directory should be: no process can create or change the target at this path (an
    // authorized real path has no link in it; one swapped in since is the mutation's own check to refuse), so
    // there is nothing to exclude and the mutation fails on its own.
    if (st) return null;
    dir = path.dirname(dir);
  }
  // A root itself (its parent lies outside the roots): the lock lives inside it.
  const st = lstatOrNull(target);
  if (inLockScope(target) && st?.isDirectory()) return { dir: target, relative: '.' };
  if (inLockScope(dir) && lstatOrNull(dir)?.isDirectory()) return { dir, relative: relativeName(dir, target) };
  throw lockError(target, `Cannot lock ${target}: no directory to hold its lock inside the roots.`);
}
