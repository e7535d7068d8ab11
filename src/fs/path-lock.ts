/**
 * Serializes mutations of the same path (docs/errors.md "Optimistic concurrency": no lost update) in this process and across every fs-tools process
 * that can see the file — whatever their --state-dir, HOME, XDG_STATE_HOME or TMPDIR.
 *
 * In-process: a promise chain per path. Across processes: a lock file BESIDE the target, in the target's parent
 * directory, so every process that can write the file agrees on where the lock is (containers sharing a volume
 * included). Node has no flock, so the lock is a name created atomically:
 *   - the owner record (pid, start time, boot id, pid namespace, host: src/fs/process-identity.ts) is written to a
 *     private temporary file, then hard-linked to `.fs-tools-lock-<hash>` — link(2) fails with EEXIST when the
 *     lock is held, and a lock file is never seen half-written;
 *   - `<hash>` is SHA-256 of the target's name relative to the lock's directory, so the lock name has a fixed
 *     length (NAME_MAX holds) and does not repeat the file name;
 *   - the directory is opened through the verified-access module (src/fs/verified-dir.ts: from the root down, one
 *     O_NOFOLLOW component at a time, its location proved) and every later syscall names one entry of that
 *     descriptor, so a parent swapped for a symlink never makes us create, read or remove a lock file elsewhere;
 *   - a target whose parent does not exist yet (create_dirs, a patch creating `a/b/c.txt`) is locked in its nearest
 *     existing ancestor under its relative name; after taking a lock, the holder checks that no live process holds
 *     the same target's lock in an ancestor (taken before the directories were created), and that its own lock
 *     directory is still the nearest existing ancestor, else it releases and retries;
 *   - the holder keeps its lock fresh: it touches the lock file every HEARTBEAT_MS (futimes on a descriptor, which
 *     moves the file's ctime — a time no unprivileged process can set back);
 *   - a lock can never be forged into a denial of service (docs/security.md "Locks, temporaries and shutdown"). What
 *     stands at the lock name is judged (`judge`):
 *       · not a lock this program wrote (not a regular file, or no owner record in it): taken away at once — a
 *         file or link is unlinked, a directory is renamed aside to a visible `fs-tools-forged-lock-<hex>`;
 *       · an owner proved gone (this host, pid gone or reused, or another boot): broken at once;
 *       · otherwise the lock is waited for while it is kept fresh (a live holder, on this host or another), up to
 *         WAIT_MS; a lock NOT refreshed during STUCK_MS of waiting fails the call with IO_ERROR reason `locked`
 *         (retryable, recovery retry_later, details.lock root-relative), and a lock not refreshed for STALE_MS
 *         (by its ctime) is broken by the next writer, whoever it names — so no lock outlives its holder's
 *         heartbeat by more than STALE_MS;
 *     breaking is serialized by a second lock (`<lock>.break`, judged the same way with a STALE_MS of one second)
 *     and removes the stale lock only if it is still the same inode that was judged stale;
 *   - a directory in which this process cannot create an entry (EACCES, EPERM, EROFS) gets no lock file: this
 *     process cannot mutate anything there either (every mutation is a temporary file + rename, or an unlink), so
 *     the mutation proceeds unlocked and fails on its own with the OS's reason.
 * Lock files are of the server's own class (src/fs/own-files.ts): never listed, read, searched or created by the
 * tools, in any path component; each is noted in the in-flight register before it is created, so the start-up sweep
 * removes one a killed process left.
 *
 * Split by concern: where a lock lives and the registered scopes (src/fs/lock-site.ts), one lock file's creation,
 * judgement and removal (src/fs/lock-file.ts); here the wait, the heartbeat and the in-process order.
 */
import { closeSync, futimesSync } from 'node:fs';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import {
  breakLock,
  entryStat,
  holdOpen,
  judge,
  LOCK_STALE_MS,
  lockNameFor,
  tryCreate,
  unlinkIfSame,
} from './lock-file.js';
import type { Verdict } from './lock-file.js';
import { inLockScope, lockSite, lstatOrNull, relativeName, rootRelative } from './lock-site.js';
import { dropOwnFile, isLockFileName, LOCK_FILE_PREFIX } from './own-files.js';
import { VerifiedDir } from './verified-dir.js';
import { processSlot } from '../process-slots.js';

export { isLockFileName, LOCK_FILE_PREFIX, LOCK_STALE_MS };
export { registerLockScope } from './lock-site.js';

/** Longest wait (ms) for a lock its holder keeps fresh. */
const WAIT_MS = 10_000;
/** A lock not refreshed during this much of our wait (ms) fails the call with `locked` (it is not broken yet). */
export const LOCK_STUCK_MS = 700;
/** How often (ms) a holder refreshes its lock files. */
const HEARTBEAT_MS = 200;

/**
 * The locks' state (src/process-slots.ts): `chains`, the in-process order (per path, the promise of the last caller
 * that holds or waits for it); `held`, the locks this process holds now, refreshed by one shared timer, `heartbeat`,
 * while there is any; `staleMs`, the stale time locks are judged by (LOCK_STALE_MS; `setLockStaleMs`).
 */
const locks = processSlot('fs/path-lock', () => ({
  chains: new Map<string, Promise<unknown>>(),
  held: new Set<HeldLock>(),
  heartbeat: null as NodeJS.Timeout | null,
  staleMs: LOCK_STALE_MS,
}));

/**
 * Sets the stale time this process judges locks by: LOCK_STALE_MS unless a test build shortens it
 * (`--test-seams=lock-stale:MS`, src/cli/seam-flags.ts), so that a test of what happens after the stale time does not
 * wait 10 s. It stays well above HEARTBEAT_MS, so a live holder's lock is never judged stale.
 * @param ms the stale time (ms), at least 5 × HEARTBEAT_MS
 */
export function setLockStaleMs(ms: number): void {
  locks.staleMs = Math.max(5 * HEARTBEAT_MS, ms);
}

/** Why a lock stopped this call (the `locked` envelope's details.held_by). */
type HeldBy = 'live_holder' | 'not_refreshed';

/**
 * IO_ERROR reason `locked`: names the lock (root-relative), says why it is held and how it clears.
 * @param why live_holder: a holder kept it fresh for WAIT_MS; not_refreshed: nobody refreshed it while we waited
 */
function lockedError(target: string, lockPath: string, why: HeldBy, ageMs: number): ToolError {
  const clearsInS = why === 'live_holder' ? null : Math.max(0, Math.ceil((locks.staleMs - ageMs) / 1000));
  return new ToolError(
    'IO_ERROR',
    why === 'live_holder'
      ? `Another process is still changing ${target} (it holds the write lock); nothing was written.`
      : `The write lock of ${target} is held by an owner that does not refresh it (a process that is stalled, on ` +
          `another host, or a lock file that was copied in); nothing was written. It is taken over once it has not ` +
          `been refreshed for ${locks.staleMs / 1000} s.`,
    {
      path: target,
      details: {
        reason: 'locked',
        errno: 'EBUSY',
        lock: rootRelative(lockPath),
        held_by: why,
        ...(clearsInS === null ? {} : { clears_in_s: clearsInS }),
      },
      retryable: true,
      recovery: 'retry_later',
      suggestion:
        clearsInS === null
          ? 'Retry the call in a few seconds, after re-reading the file.'
          : `Retry the call after ${clearsInS} s, after re-reading the file.`,
    },
  );
}

/** NOT_ALLOWED changed_during_call: a directory above `target` changed (a link swapped in, moved) while locking. */
function changedWhileLocking(target: string): ToolError {
  return new ToolError(
    'NOT_ALLOWED',
    `A directory above ${target} changed while it was being locked; nothing was written.`,
    {
      path: target,
      details: { reason: 'changed_during_call' },
      retryable: true,
    },
  );
}

/**
 * An error from a lock syscall, re-pointed at the target: its message and path must not name the lock file or its
 * directory's descriptor (errors are output). A verified directory's NOT_ALLOWED (a component swapped, the
 * directory moved out of the roots) becomes `changedWhileLocking`.
 */
function sanitized(error: unknown, target: string): unknown {
  if (error instanceof ToolError) {
    return error.code === 'NOT_ALLOWED' && error.path !== target ? changedWhileLocking(target) : error;
  }
  const e = error as NodeJS.ErrnoException;
  if (typeof e?.code !== 'string') return error;
  return Object.assign(new Error(`${e.code}: cannot take the write lock of ${target}`), { code: e.code, path: target });
}

/** Opens a lock's directory through the verified-access module, inside the lock scopes. */
function openLockDir(dir: string, target: string): VerifiedDir {
  try {
    return VerifiedDir.open(dir, inLockScope);
  } catch (error) {
    throw sanitized(error, target);
  }
}

/** A lock held across processes; `fd` is the lock file, refreshed by the heartbeat. */
interface HeldLock {
  dir: VerifiedDir;
  name: string;
  ino: number;
  fd: number;
}

/** Starts refreshing `lock` (and the shared timer when it is the first). */
function keepFresh(lock: HeldLock): void {
  locks.held.add(lock);
  // Synchronous on purpose: an asynchronous futimes still queued when `release` closes the descriptor could run on a
  // number the kernel has since given to another file (a user's file would get its times changed).
  locks.heartbeat ??= setInterval(() => {
    const now = new Date();
    for (const l of locks.held) {
      try {
        futimesSync(l.fd, now, now);
      } catch {
        /* the lock is being released */
      }
    }
  }, HEARTBEAT_MS).unref();
}

/** Stops refreshing `lock`, removes its file (while it is still ours) and closes its directory. */
function release(lock: HeldLock): void {
  locks.held.delete(lock);
  if (locks.held.size === 0 && locks.heartbeat) {
    clearInterval(locks.heartbeat);
    locks.heartbeat = null;
  }
  try {
    closeSync(lock.fd);
  } catch {
    /* closed */
  }
  try {
    unlinkIfSame(lock.dir, lock.name, lock.ino, true);
    dropOwnFile(lock.dir.pathOf(lock.name));
  } finally {
    lock.dir.close();
  }
}

/** A lock in a directory above, held by someone live (see the module comment), or null. */
function heldAbove(dir: string, target: string): { dir: VerifiedDir; name: string; verdict: Verdict } | null {
  for (let a = path.dirname(dir); a !== dir && inLockScope(a); dir = a, a = path.dirname(a)) {
    const name = lockNameFor(relativeName(a, target));
    // By path: only whether to look (the lock itself is judged through the verified directory below).
    if (!lstatOrNull(path.join(a, name))) continue;
    let ancestor: VerifiedDir;
    try {
      ancestor = VerifiedDir.open(a, inLockScope);
    } catch {
      continue; // the ancestor changed: the mutation's own checks refuse the path
    }
    const verdict = judge(ancestor, name, locks.staleMs);
    if (verdict?.kind === 'held') return { dir: ancestor, name, verdict };
    if (verdict) breakLock(ancestor, name, verdict, locks.staleMs);
    ancestor.close();
  }
  return null;
}

/** How long each lock seen while waiting has gone unrefreshed: key → its ctime and when we first saw that ctime. */
type Seen = Map<string, { ctimeMs: number; since: number }>;

/** One wait of one `acquire`: the target, its deadline and the locks seen so far. */
interface Wait {
  target: string;
  deadline: number;
  seen: Seen;
}

/**
 * Records a held lock's ctime and decides whether to keep waiting.
 * @throws ToolError IO_ERROR reason locked (see lockedError)
 */
function waitOrFail(wait: Wait, lockPath: string, v: Verdict & { kind: 'held' }): void {
  const key = `${lockPath}\0${v.ino}`;
  const now = Date.now();
  const prev = wait.seen.get(key);
  if (!prev || prev.ctimeMs !== v.ctimeMs) wait.seen.set(key, { ctimeMs: v.ctimeMs, since: now });
  else if (now - prev.since >= LOCK_STUCK_MS) throw lockedError(wait.target, lockPath, 'not_refreshed', v.ageMs);
  if (now > wait.deadline) throw lockedError(wait.target, lockPath, 'live_holder', v.ageMs);
}

/** Errors that say this process cannot create entries in the directory at all. */
const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS']);

/** What one attempt at a lock came to: done (the lock, or null: nothing to exclude), or try again now or later. */
type Attempt = { done: HeldLock | null } | { again: 'now' | 'later' };

/**
 * The lock name `name` in `dir` is taken: judges it, breaks it when removable, and records a held one's freshness.
 * @returns when to try again
 * @throws ToolError IO_ERROR reason locked (see waitOrFail)
 */
function whenTaken(wait: Wait, dir: VerifiedDir, name: string): 'now' | 'later' {
  const verdict = judge(dir, name, locks.staleMs);
  if (verdict === null) return 'now'; // released between our link and our look
  if (verdict.kind === 'held') {
    waitOrFail(wait, dir.pathOf(name), verdict);
    return 'later';
  }
  breakLock(dir, name, verdict, locks.staleMs);
  const after = entryStat(dir, name);
  if (after === null) return 'now';
  if (after.ino === verdict.ino) {
    // Still there (another process is breaking it, or it cannot be taken away): counts as not refreshed.
    waitOrFail(wait, dir.pathOf(name), { kind: 'held', ino: verdict.ino, ctimeMs: -1, ageMs: 0 });
  }
  return 'later';
}

/**
 * We created the lock `name` (inode `ino`) in the site's directory: holds it open and keeps it fresh, then checks
 * that the site is still the nearest existing ancestor and that no live process holds the target's lock above.
 */
function confirm(
  wait: Wait,
  site: { dir: string; relative: string },
  dir: VerifiedDir,
  name: string,
  ino: number,
): Attempt {
  let held: HeldLock;
  try {
    held = { dir, name, ino, fd: holdOpen(dir, name, ino) };
  } catch (error) {
    unlinkIfSame(dir, name, ino, true);
    dropOwnFile(dir.pathOf(name));
    dir.close();
    throw sanitized(error, wait.target);
  }
  keepFresh(held);
  let siteMoved: boolean;
  let above: ReturnType<typeof heldAbove> = null;
  try {
    siteMoved = site.relative.includes('/') && entryStat(dir, site.relative.split('/')[0]) !== null;
    if (!siteMoved) above = heldAbove(site.dir, wait.target);
  } catch (error) {
    release(held);
    throw sanitized(error, wait.target);
  }
  if (!siteMoved && !above) return { done: held };
  release(held); // closes the directory
  if (above) {
    try {
      waitOrFail(wait, above.dir.pathOf(above.name), above.verdict as Verdict & { kind: 'held' });
    } finally {
      above.dir.close();
    }
  }
  // The missing directory was created meanwhile: lock beside the target now.
  return { again: siteMoved ? 'now' : 'later' };
}

/** One attempt at the lock of `wait.target` (see `acquire`). */
function attempt(wait: Wait): Attempt {
  const site = lockSite(wait.target);
  if (!site) return { done: null };
  const dir = openLockDir(site.dir, wait.target);
  const name = lockNameFor(site.relative);
  let ino: number | null;
  try {
    ino = tryCreate(dir, name);
  } catch (error) {
    dir.close();
    // This process cannot create an entry in the directory, so it cannot create, replace, rename or delete the
    // target either (every mutation here is a temporary file + rename, or an unlink): there is nothing to
    // exclude. The mutation goes on and fails on its own with the OS's reason (in-process order still holds).
    if (UNWRITABLE.has((error as NodeJS.ErrnoException).code ?? '')) return { done: null };
    throw sanitized(error, wait.target);
  }
  if (ino !== null) return confirm(wait, site, dir, name, ino);
  try {
    return { again: whenTaken(wait, dir, name) };
  } catch (error) {
    throw sanitized(error, wait.target);
  } finally {
    dir.close();
  }
}

/**
 * @returns the lock held, or null when there is nothing to exclude: this process cannot create entries in the lock's
 *   directory, or a non-directory stands in the target's path
 * @throws ToolError IO_ERROR reason locked; NOT_ALLOWED changed_during_call; errno errors
 */
async function acquire(target: string, deadline: number): Promise<HeldLock | null> {
  let delay = 1;
  const wait: Wait = { target, deadline, seen: new Map() };
  for (;;) {
    const step = attempt(wait);
    if ('done' in step) return step.done;
    if (step.again === 'now') continue;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 25);
  }
}

/**
 * Runs `fn` while holding the locks of `paths` (real paths, authorized; sorted, so two callers never deadlock).
 * @param _stateDir unused: kept so callers need not change; locks do not depend on the state directory
 * @throws ToolError IO_ERROR reason `locked` (retryable, retry_later, details.lock) when another holder keeps a lock
 *   for WAIT_MS, or a lock is not refreshed during LOCK_STUCK_MS of waiting; ToolError NOT_ALLOWED when a directory
 *   above a target changed identity while its lock was being taken; whatever `fn` throws
 */
export async function withPathLock<T>(paths: readonly string[], _stateDir: string, fn: () => Promise<T>): Promise<T> {
  const keys = [...new Set(paths)].sort();
  const previous = keys.map((k) => locks.chains.get(k) ?? Promise.resolve());
  let releaseChain!: () => void;
  const mine = new Promise<void>((r) => {
    releaseChain = r;
  });
  for (const k of keys) locks.chains.set(k, mine);
  await Promise.all(previous.map((p) => p.catch(() => undefined)));
  const held: HeldLock[] = [];
  try {
    const deadline = Date.now() + WAIT_MS;
    for (const k of keys) {
      const lock = await acquire(k, deadline);
      if (lock) held.push(lock);
    }
    return await fn();
  } finally {
    for (const lock of held.reverse()) {
      try {
        release(lock);
      } catch {
        /* the lock file is gone already */
      }
    }
    for (const k of keys) if (locks.chains.get(k) === mine) locks.chains.delete(k);
    releaseChain();
  }
}
