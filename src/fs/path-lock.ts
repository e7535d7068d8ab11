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
 *   - the directory is opened with O_DIRECTORY|O_NOFOLLOW and proved (via /proc/self/fd) to be the directory we
 *     authorized; every later syscall goes through `/proc/self/fd/N/<name>`, so a parent swapped for a symlink never
 *     makes us create, read or remove a lock file elsewhere (Linux; elsewhere the path is re-checked and used);
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
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  futimesSync,
  linkSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { dropOwnFile, isLockFileName, LOCK_FILE_PREFIX, noteOwnFile } from './own-files.js';
import { ownerState, parseIdentity, selfIdentity } from './process-identity.js';

export { isLockFileName, LOCK_FILE_PREFIX };

/** Longest wait (ms) for a lock its holder keeps fresh. */
const WAIT_MS = 10_000;
/** A lock not refreshed during this much of our wait (ms) fails the call with `locked` (it is not broken yet). */
export const LOCK_STUCK_MS = 700;
/** A lock not refreshed for this long (ms, by its ctime) is broken by the next writer, whoever it names. */
export const LOCK_STALE_MS = 10_000;
/** The same for a break lock, which lives for a few syscalls. */
const BREAK_STALE_MS = 1_000;
/** How often (ms) a holder refreshes its lock files. */
const HEARTBEAT_MS = 200;

const chains = new Map<string, Promise<unknown>>();
const HAS_PROC_FD = process.platform === 'linux' && existsSync('/proc/self/fd');
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

interface Scope {
  isInside: (p: string) => boolean;
  rootOf?: (p: string) => string | undefined;
}
const scopes = new Set<Scope>();

/** True when a lock file may be created in `p`: some registered scope accepts it (all do when none is registered). */
function scope(p: string): boolean {
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
function rootRelative(lockPath: string): string {
  for (const s of scopes) {
    const root = s.rootOf?.(lockPath);
    if (root !== undefined) return path.relative(root, lockPath).split(path.sep).join('/');
  }
  return path.basename(lockPath);
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

/** Why a lock stopped this call (the `locked` envelope's details.held_by). */
type HeldBy = 'live_holder' | 'not_refreshed';

/**
 * IO_ERROR reason `locked`: names the lock (root-relative), says why it is held and how it clears.
 * @param why live_holder: a holder kept it fresh for WAIT_MS; not_refreshed: nobody refreshed it while we waited
 */
function lockedError(target: string, lockPath: string, why: HeldBy, ageMs: number): ToolError {
  const clearsInS = why === 'live_holder' ? null : Math.max(0, Math.ceil((LOCK_STALE_MS - ageMs) / 1000));
  return new ToolError(
    'IO_ERROR',
    why === 'live_holder'
      ? `Another process is still changing ${target} (it holds the write lock); nothing was written.`
      : `The write lock of ${target} is held by an owner that does not refresh it (a process that is stalled, on ` +
          `another host, or a lock file that was copied in); nothing was written. It is taken over once it has not ` +
          `been refreshed for ${LOCK_STALE_MS / 1000} s.`,
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

/** Opens `dir` (a real path) without following a link and proves the descriptor is that directory. */
function openVerifiedDir(dir: string, target: string): VerifiedDir {
  const fd = openSync(dir, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);
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
 * Creates `name` in `dir` holding our owner record, atomically; both the private temporary and the lock are noted in
 * the in-flight register first (src/fs/own-files.ts). @returns the lock's inode, or null when taken.
 * @throws errno errors; EACCES / EPERM / EROFS mean the directory takes no new entry from this process
 */
function tryCreate(dir: VerifiedDir, name: string): number | null {
  const tmp = `${name}.${randomBytes(8).toString('hex')}.tmp`;
  const tmpPath = path.join(dir.path, tmp);
  const lockPath = path.join(dir.path, name);
  noteOwnFile(tmpPath, 'lock');
  let fd: number;
  try {
    fd = openSync(
      dir.at(tmp),
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW | O_NONBLOCK,
      0o644,
    );
  } catch (error) {
    dropOwnFile(tmpPath);
    throw error;
  }
  try {
    try {
      writeSync(fd, JSON.stringify(selfIdentity()));
    } finally {
      closeSync(fd);
    }
    noteOwnFile(lockPath, 'lock');
    try {
      linkSync(dir.at(tmp), dir.at(name));
    } catch (error) {
      dropOwnFile(lockPath);
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
    dropOwnFile(tmpPath);
  }
}

/** What stands at a lock name (see the module comment). */
type Verdict =
  | { kind: 'forged'; ino: number; directory: boolean }
  | { kind: 'gone' | 'stale'; ino: number }
  | { kind: 'held'; ino: number; ctimeMs: number; ageMs: number };

/**
 * Judges the entry `name` of `dir`. @returns null when nothing is there
 * @param staleMs age (by ctime) after which a lock nobody refreshes is stale
 */
function judge(dir: VerifiedDir, name: string, staleMs: number): Verdict | null {
  const st = lstatOrNull(dir.at(name));
  if (!st) return null;
  if (!st.isFile()) return { kind: 'forged', ino: st.ino, directory: st.isDirectory() };
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO swapped in since the lstat must not hang the server.
    fd = openSync(dir.at(name), constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const now = fstatSync(fd);
    if (!now.isFile()) return { kind: 'forged', ino: now.ino, directory: false };
    const buf = Buffer.alloc(2048);
    const n = readSync(fd, buf, 0, buf.length, 0);
    let owner = null;
    try {
      owner = parseIdentity(JSON.parse(buf.subarray(0, n).toString('utf8')));
    } catch {
      /* not a record this program wrote */
    }
    // Our lock files are complete from the moment they exist (written, then linked): no record means not ours.
    if (!owner) return { kind: 'forged', ino: now.ino, directory: false };
    if (ownerState(owner) === 'gone') return { kind: 'gone', ino: now.ino };
    const ageMs = Date.now() - now.ctimeMs;
    if (ageMs >= staleMs) return { kind: 'stale', ino: now.ino };
    return { kind: 'held', ino: now.ino, ctimeMs: now.ctimeMs, ageMs };
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
 * Takes away what a judgement found removable: a forged directory is renamed aside to a visible
 * `fs-tools-forged-lock-<hex>` (its content is not ours to delete; the user sees and removes it), anything else is
 * unlinked — each only while it is still the judged inode.
 */
function takeAway(dir: VerifiedDir, name: string, verdict: Verdict): void {
  if (verdict.kind === 'forged' && verdict.directory) {
    if (lstatOrNull(dir.at(name))?.ino !== verdict.ino) return;
    const aside = `fs-tools-forged-lock-${randomBytes(6).toString('hex')}`;
    try {
      renameSync(dir.at(name), dir.at(aside));
      process.stderr.write(
        `fs-tools: a directory stood at a lock file's name in ${dir.path}; renamed aside to ${aside}\n`,
      );
    } catch {
      /* gone, or cannot be moved: the wait ends with a locked envelope naming it */
    }
    return;
  }
  unlinkIfSame(dir, name, verdict.ino);
}

/**
 * Removes a lock judged removable. Serialized by `<lock>.break`, so two processes that judged the same lock stale
 * cannot remove the fresh lock one of them took afterwards. A break lock that is itself forged, of a gone owner, or
 * older than BREAK_STALE_MS is taken away the same inode-checked way.
 */
function breakLock(dir: VerifiedDir, name: string, judged: Verdict): void {
  const breakName = `${name}.break`;
  const mine = tryCreate(dir, breakName);
  if (mine === null) {
    const holder = judge(dir, breakName, BREAK_STALE_MS);
    if (holder && holder.kind !== 'held') takeAway(dir, breakName, holder);
    return;
  }
  try {
    const now = judge(dir, name, LOCK_STALE_MS);
    if (now && now.ino === judged.ino && now.kind !== 'held') takeAway(dir, name, now);
  } finally {
    unlinkIfSame(dir, breakName, mine);
    dropOwnFile(path.join(dir.path, breakName));
  }
}

/** A lock held across processes; `fd` is the lock file, refreshed by the heartbeat. */
interface HeldLock {
  dir: VerifiedDir;
  name: string;
  ino: number;
  fd: number;
}

const heldLocks = new Set<HeldLock>();
let heartbeat: NodeJS.Timeout | null = null;

/** Starts refreshing `lock` (and the shared timer when it is the first). */
function keepFresh(lock: HeldLock): void {
  heldLocks.add(lock);
  // Synchronous on purpose: an asynchronous futimes still queued when `release` closes the descriptor could run on a
  // number the kernel has since given to another file (a user's file would get its times changed).
  heartbeat ??= setInterval(() => {
    const now = new Date();
    for (const l of heldLocks) {
      try {
        futimesSync(l.fd, now, now);
      } catch {
        /* the lock is being released */
      }
    }
  }, HEARTBEAT_MS).unref();
}

function release(lock: HeldLock): void {
  heldLocks.delete(lock);
  if (heldLocks.size === 0 && heartbeat) {
    clearInterval(heartbeat);
    heartbeat = null;
  }
  try {
    closeSync(lock.fd);
  } catch {
    /* closed */
  }
  try {
    unlinkIfSame(lock.dir, lock.name, lock.ino);
    dropOwnFile(path.join(lock.dir.path, lock.name));
  } finally {
    closeSync(lock.dir.fd);
  }
}

/** Opens the lock file just created (inode `ino`) for the heartbeat. */
function holdOpen(dir: VerifiedDir, name: string, ino: number): number {
  const fd = openSync(dir.at(name), constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (fstatSync(fd).ino !== ino) {
    closeSync(fd);
    throw lockError(dir.path, 'The lock file changed while it was being taken.');
  }
  return fd;
}

/** A lock in a directory above, held by someone live (see the module comment), or null. */
function heldAbove(dir: string, target: string): { dir: VerifiedDir; name: string; verdict: Verdict } | null {
  for (let a = path.dirname(dir); a !== dir && scope(a); dir = a, a = path.dirname(a)) {
    const name = lockNameFor(path.relative(a, target).split(path.sep).join('/'));
    if (!lstatOrNull(path.join(a, name))) continue;
    let ancestor: VerifiedDir;
    try {
      ancestor = openVerifiedDir(a, target);
    } catch {
      continue; // the ancestor changed: the mutation's own checks refuse the path
    }
    const verdict = judge(ancestor, name, LOCK_STALE_MS);
    if (verdict?.kind === 'held') return { dir: ancestor, name, verdict };
    if (verdict) breakLock(ancestor, name, verdict);
    closeSync(ancestor.fd);
  }
  return null;
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

/** How long each lock seen while waiting has gone unrefreshed: key → its ctime and when we first saw that ctime. */
type Seen = Map<string, { ctimeMs: number; since: number }>;

/**
 * Records a held lock's ctime and decides whether to keep waiting.
 * @throws ToolError IO_ERROR reason locked (see lockedError)
 */
function waitOrFail(seen: Seen, target: string, lockPath: string, v: Verdict & { kind: 'held' }, deadline: number) {
  const key = `${lockPath}\0${v.ino}`;
  const now = Date.now();
  const prev = seen.get(key);
  if (!prev || prev.ctimeMs !== v.ctimeMs) seen.set(key, { ctimeMs: v.ctimeMs, since: now });
  else if (now - prev.since >= LOCK_STUCK_MS) throw lockedError(target, lockPath, 'not_refreshed', v.ageMs);
  if (now > deadline) throw lockedError(target, lockPath, 'live_holder', v.ageMs);
}

/**
 * @returns the lock held, or null when there is nothing to exclude: this process cannot create entries in the lock's
 *   directory (see below), or a non-directory stands in the target's path
 * @throws ToolError IO_ERROR reason locked; NOT_ALLOWED changed_during_call; errno errors
 */
async function acquire(target: string, deadline: number): Promise<HeldLock | null> {
  let delay = 1;
  const seen: Seen = new Map();
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
        const verdict = judge(dir, name, LOCK_STALE_MS);
        if (verdict === null)
          retryNow = true; // released between our link and our look
        else if (verdict.kind === 'held') waitOrFail(seen, target, path.join(site.dir, name), verdict, deadline);
        else {
          breakLock(dir, name, verdict);
          const after = lstatOrNull(dir.at(name));
          if (after === null) retryNow = true;
          else if (after.ino === verdict.ino) {
            // Still there (another process is breaking it, or it cannot be taken away): counts as not refreshed.
            const stuck = { kind: 'held' as const, ino: verdict.ino, ctimeMs: -1, ageMs: 0 };
            waitOrFail(seen, target, path.join(site.dir, name), stuck, deadline);
          }
        }
      }
    } catch (error) {
      closeSync(dir.fd);
      throw sanitized(error, target);
    }
    if (ino !== null) {
      let held: HeldLock;
      try {
        held = { dir, name, ino, fd: holdOpen(dir, name, ino) };
      } catch (error) {
        unlinkIfSame(dir, name, ino);
        dropOwnFile(path.join(dir.path, name));
        closeSync(dir.fd);
        throw sanitized(error, target);
      }
      keepFresh(held);
      let siteMoved: boolean;
      let above: ReturnType<typeof heldAbove> = null;
      try {
        siteMoved = site.relative.includes('/') && lstatOrNull(dir.at(site.relative.split('/')[0])) !== null;
        if (!siteMoved) above = heldAbove(site.dir, target);
      } catch (error) {
        release(held);
        throw sanitized(error, target);
      }
      if (!siteMoved && !above) return held;
      release(held); // closes the directory
      if (above) {
        try {
          waitOrFail(
            seen,
            target,
            path.join(above.dir.path, above.name),
            above.verdict as Verdict & { kind: 'held' },
            deadline,
          );
        } finally {
          closeSync(above.dir.fd);
        }
      }
      if (siteMoved) continue; // the missing directory was created meanwhile: lock beside the target now
    } else {
      closeSync(dir.fd);
      if (retryNow) continue;
    }
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
