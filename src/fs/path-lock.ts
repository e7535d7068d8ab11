/**
 * Serializes mutations of the same path (SPEC §5: no lost update) in this process and across every fs-tools process
 * that can see the file — whatever their --state-dir, HOME, XDG_STATE_HOME or TMPDIR (issue 11 item 4).
 *
 * In-process: a promise chain per path. Across processes: a lock file BESIDE the target, in the target's parent
 * directory, so every process that can write the file agrees on where the lock is (containers sharing a volume
 * included). Node has no flock, so the lock is a name created atomically:
 *   - the owner record (pid, start time, boot id, pid namespace, host: src/fs/process-identity.ts) is written to a
 *     private temporary file, then hard-linked to `.fs-tools-lock-<hash>` — link(2) fails with EEXIST when the
 *     lock is held, and a lock file is never seen half-written;
 *   - `<hash>` is SHA-256 of the target's name relative to the lock's directory, so the lock name has a fixed
 *     length (NAME_MAX holds) and does not repeat the file name;
 *   - the directory is opened with O_DIRECTORY|O_NOFOLLOW and proved (via /proc/self/fd) to be the directory we
 *     authorized; every later syscall goes through `/proc/self/fd/N/<name>`, so a parent swapped for a symlink never
 *     makes us create, read or remove a lock file elsewhere (Linux; elsewhere the path is re-checked and used);
 *   - a target whose parent does not exist yet (create_dirs, a patch creating `a/b/c.txt`) is locked in its nearest
 *     existing ancestor under its relative name; after taking a lock, the holder checks that no live process holds
 *     the same target's lock in an ancestor (taken before the directories were created), and that its own lock
 *     directory is still the nearest existing ancestor, else it releases and retries;
 *   - a lock is taken over only when its owner is proved gone (ownerState: pid gone or reused, or another boot);
 *     never because of age (a slow live holder keeps its lock, item 7). Breaking is serialized by a second lock
 *     (`<lock>.break`) and removes the stale lock only if it is still the same inode that was judged stale.
 *   - a directory in which this process cannot create an entry (EACCES, EPERM, EROFS) gets no lock file: this
 *     process cannot mutate anything there either (every mutation is a temporary file + rename, or an unlink), so
 *     the mutation proceeds unlocked and fails on its own with the OS's reason;
 * Lock files are omitted from list_directory and search_files (src/policy/builtin-guards.ts) and live only while a
 * mutation runs; one left by a crashed process is taken over (and removed) by the next writer of that path.
 * A waiter gives up after WAIT_MS with EBUSY (IO_ERROR, retryable).
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  linkSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { ownerState, parseIdentity, selfIdentity } from './process-identity.js';

const WAIT_MS = 10_000;
/** Prefix of every lock-related file name (lock, its temporary, its break lock). */
export const LOCK_FILE_PREFIX = '.fs-tools-lock-';
const LOCK_FILE_PATTERN = /^\.fs-tools-lock-[0-9a-f]{32}(?:\.break)?(?:\.[0-9a-f]{16}\.tmp)?$/;

/** True for the names this module creates (hidden from listings and searches). */
export function isLockFileName(name: string): boolean {
  return LOCK_FILE_PATTERN.test(name);
}

const chains = new Map<string, Promise<unknown>>();
const HAS_PROC_FD = process.platform === 'linux' && existsSync('/proc/self/fd');
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;

const scopes = new Set<(p: string) => boolean>();

/** True when a lock file may be created in `p`: some registered scope accepts it (all do when none is registered). */
function scope(p: string): boolean {
  if (scopes.size === 0) return true;
  for (const accepts of scopes) if (accepts(p)) return true;
  return false;
}

/**
 * Registers where lock files may be created: only in directories some registered predicate accepts (inside the
 * roots). The process state registers its roots once at start-up (tests that build several process states in one
 * process register each). Without any (unit tests) every directory is accepted.
 * @returns a function that unregisters it
 */
export function registerLockScope(isInside: (p: string) => boolean): () => void {
  scopes.add(isInside);
  return () => {
    scopes.delete(isInside);
  };
}

/** A directory opened and verified; `at(name)` names an entry of exactly that directory. */
interface VerifiedDir {
  fd: number;
  path: string;
  at(name: string): string;
}

function lockError(target: string, message: string): Error {
  return Object.assign(new Error(message), { code: 'EBUSY', path: target });
}

/** Opens `dir` (a real path) without following a link and proves the descriptor is that directory. */
function openVerifiedDir(dir: string, target: string): VerifiedDir {
  const fd = openSync(dir, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    const where = HAS_PROC_FD ? readlinkSync(`/proc/self/fd/${fd}`) : realpathSync.native(dir);
    if (where !== dir || !fstatSync(fd).isDirectory()) {
      throw new ToolError(
        'NOT_ALLOWED',
        `A directory above ${target} changed while it was being locked; nothing was written.`,
        {
          path: target,
          details: { reason: 'changed_during_call' },
          retryable: true,
        },
      );
    }
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return { fd, path: dir, at: (name) => (HAS_PROC_FD ? `/proc/self/fd/${fd}/${name}` : path.join(dir, name)) };
}

function lockNameFor(relative: string): string {
  return `${LOCK_FILE_PREFIX}${createHash('sha256').update(relative).digest('hex').slice(0, 32)}`;
}

function lstatOrNull(p: string): import('node:fs').Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/**
 * Where the lock of `target` lives: its nearest existing ancestor directory inside the scope, and the name there;
 * null when a non-directory stands where a directory of the path should be (nothing to lock).
 */
function lockSite(target: string): { dir: string; relative: string } | null {
  let dir = path.dirname(target);
  while (dir !== path.dirname(dir) && scope(dir)) {
    const st = lstatOrNull(dir);
    if (st?.isDirectory()) return { dir, relative: path.relative(dir, target).split(path.sep).join('/') };
    // A file or a link where a directory should be: no process can create or change the target at this path (an
    // authorized real path has no link in it; one swapped in since is the mutation's own check to refuse), so
    // there is nothing to exclude and the mutation fails on its own.
    if (st) return null;
    dir = path.dirname(dir);
  }
  // A root itself (its parent lies outside the roots): the lock lives inside it.
  const st = lstatOrNull(target);
  if (scope(target) && st?.isDirectory()) return { dir: target, relative: '.' };
  if (scope(dir) && lstatOrNull(dir)?.isDirectory())
    return { dir, relative: path.relative(dir, target).split(path.sep).join('/') };
  throw lockError(target, `Cannot lock ${target}: no directory to hold its lock inside the roots.`);
}

/** Errors that say this process cannot create entries in the directory at all. */
const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS']);

/**
 * Creates `name` in `dir` holding our owner record, atomically. @returns the lock's inode, or null when taken.
 * @throws errno errors; EACCES / EPERM / EROFS mean the directory takes no new entry from this process
 */
function tryCreate(dir: VerifiedDir, name: string): number | null {
  const tmp = `${name}.${randomBytes(8).toString('hex')}.tmp`;
  const fd = openSync(dir.at(tmp), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o644);
  try {
    try {
      writeSync(fd, JSON.stringify(selfIdentity()));
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(dir.at(tmp), dir.at(name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
      throw error;
    }
    return lstatSync(dir.at(name)).ino;
  } finally {
    try {
      unlinkSync(dir.at(tmp));
    } catch {
      /* already gone */
    }
  }
}

/** Reads a lock's owner. @returns null when the lock vanished; owner null when the record is unreadable. */
function inspect(dir: VerifiedDir, name: string): { ino: number; state: 'alive' | 'gone' | 'unknown' } | null {
  let fd: number;
  try {
    fd = openSync(dir.at(name), constants.O_RDONLY | O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const st = fstatSync(fd);
    const buf = Buffer.alloc(2048);
    const n = st.isFile() ? readSync(fd, buf, 0, buf.length, 0) : 0;
    let owner = null;
    try {
      owner = parseIdentity(JSON.parse(buf.subarray(0, n).toString('utf8')));
    } catch {
      /* not ours, or damaged: cannot judge */
    }
    return { ino: st.ino, state: owner ? ownerState(owner) : 'unknown' };
  } finally {
    closeSync(fd);
  }
}

/** Removes `name` only if it is still the inode `ino` (never someone's fresh lock). */
function unlinkIfSame(dir: VerifiedDir, name: string, ino: number): void {
  if (lstatOrNull(dir.at(name))?.ino !== ino) return;
  try {
    unlinkSync(dir.at(name));
  } catch {
    /* already gone */
  }
}

/**
 * Removes a lock whose owner is proved gone. Serialized by `<lock>.break`, so two processes that judged the same
 * lock stale cannot remove the fresh lock one of them took afterwards. A break lock whose own owner is gone (a crash
 * inside these few syscalls) is removed the same inode-checked way.
 */
function breakStale(dir: VerifiedDir, name: string, staleIno: number): void {
  const breakName = `${name}.break`;
  const mine = tryCreate(dir, breakName);
  if (mine === null) {
    const holder = inspect(dir, breakName);
    if (holder?.state === 'gone') unlinkIfSame(dir, breakName, holder.ino);
    return;
  }
  try {
    const now = inspect(dir, name);
    if (now && now.ino === staleIno && now.state === 'gone') unlinkIfSame(dir, name, staleIno);
  } finally {
    unlinkIfSame(dir, breakName, mine);
  }
}

/** A lock held across processes. */
interface HeldLock {
  dir: VerifiedDir;
  name: string;
  ino: number;
}

function release(lock: HeldLock): void {
  try {
    unlinkIfSame(lock.dir, lock.name, lock.ino);
  } finally {
    closeSync(lock.dir.fd);
  }
}

/** True when a live (or unjudgeable) process holds `target`'s lock in a directory above `dir` (see the module comment). */
function heldAbove(dir: string, target: string): boolean {
  for (let a = path.dirname(dir); a !== dir && scope(a); dir = a, a = path.dirname(a)) {
    const name = lockNameFor(path.relative(a, target).split(path.sep).join('/'));
    if (!lstatOrNull(path.join(a, name))) continue;
    let ancestor: VerifiedDir;
    try {
      ancestor = openVerifiedDir(a, target);
    } catch {
      return true; // cannot tell: wait rather than risk two holders
    }
    try {
      const st = inspect(ancestor, name);
      if (st && st.state !== 'gone') return true;
    } finally {
      closeSync(ancestor.fd);
    }
  }
  return false;
}

/**
 * An errno error from a lock syscall, re-pointed at the target: its message and path must not name
 * `/proc/self/fd/N/.fs-tools-lock-…` (errors are output).
 */
function sanitized(error: unknown, target: string): unknown {
  const e = error as NodeJS.ErrnoException;
  if (error instanceof ToolError || typeof e?.code !== 'string') return error;
  return Object.assign(new Error(`${e.code}: cannot take the write lock of ${target}`), { code: e.code, path: target });
}

/**
 * @returns the lock held, or null when there is nothing to exclude: this process cannot create entries in the lock's
 *   directory (see below), or a non-directory stands in the target's path
 */
async function acquire(target: string, deadline: number): Promise<HeldLock | null> {
  let delay = 1;
  for (;;) {
    const site = lockSite(target);
    if (!site) return null;
    let dir: VerifiedDir;
    try {
      dir = openVerifiedDir(site.dir, target);
    } catch (error) {
      throw sanitized(error, target);
    }
    const name = lockNameFor(site.relative);
    let retryNow = false;
    let ino: number | null;
    try {
      try {
        ino = tryCreate(dir, name);
      } catch (error) {
        // This process cannot create an entry in the directory, so it cannot create, replace, rename or delete the
        // target either (every mutation here is a temporary file + rename, or an unlink): there is nothing to
        // exclude. The mutation goes on and fails on its own with the OS's reason (in-process order still holds).
        if (UNWRITABLE.has((error as NodeJS.ErrnoException).code ?? '')) {
          closeSync(dir.fd);
          return null;
        }
        throw error;
      }
      if (ino === null) {
        const owner = inspect(dir, name);
        if (owner === null)
          retryNow = true; // released between our link and our look
        else if (owner.state === 'gone') {
          breakStale(dir, name, owner.ino); // then retry after the first short pause
        }
      }
    } catch (error) {
      closeSync(dir.fd);
      throw sanitized(error, target);
    }
    if (ino !== null) {
      const held: HeldLock = { dir, name, ino };
      let siteMoved: boolean;
      let above: boolean;
      try {
        siteMoved = site.relative.includes('/') && lstatOrNull(dir.at(site.relative.split('/')[0])) !== null;
        above = !siteMoved && heldAbove(site.dir, target);
      } catch (error) {
        release(held);
        throw sanitized(error, target);
      }
      if (!siteMoved && !above) return held;
      release(held); // closes the directory
      if (siteMoved) continue; // the missing directory was created meanwhile: lock beside the target now
    } else {
      closeSync(dir.fd);
      if (retryNow) continue;
    }
    if (Date.now() > deadline)
      throw lockError(target, `Timed out waiting for another process's write lock of ${target}.`);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 25);
  }
}

/**
 * Runs `fn` while holding the locks of `paths` (real paths, authorized; sorted, so two callers never deadlock).
 * @param _stateDir unused: kept so callers need not change; locks no longer depend on the state directory
 * @throws Error code EBUSY (IO_ERROR) when another process holds a lock for WAIT_MS; ToolError NOT_ALLOWED when a
 *   directory above a target changed identity while its lock was being taken; whatever `fn` throws
 */
export async function withPathLock<T>(paths: readonly string[], _stateDir: string, fn: () => Promise<T>): Promise<T> {
  const keys = [...new Set(paths)].sort();
  const previous = keys.map((k) => chains.get(k) ?? Promise.resolve());
  let releaseChain!: () => void;
  const mine = new Promise<void>((r) => {
    releaseChain = r;
  });
  for (const k of keys) chains.set(k, mine);
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
    for (const k of keys) if (chains.get(k) === mine) chains.delete(k);
    releaseChain();
  }
}
