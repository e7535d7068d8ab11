/**
 * One lock file of a path lock (src/fs/path-lock.ts), in one verified directory (src/fs/verified-dir.ts): its name,
 * its atomic creation (owner record written to a private temporary, then hard-linked to the lock name), the judgement
 * of what stands at a lock name, and the inode-checked removal of a lock judged removable. Every syscall names one
 * entry of the verified directory; the lock files and their temporaries are the server's own class
 * (src/fs/own-files.ts), noted in the in-flight register before they exist.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, readSync, type Stats, writeSync } from 'node:fs';
import { dropOwnFile, LOCK_FILE_PREFIX, noteOwnFile } from './own-files.js';
import { ownerState, parseIdentity, selfIdentity } from './process-identity.js';
import { lockError } from './lock-site.js';
import type { VerifiedDir } from './verified-dir.js';

/** A lock not refreshed for this long (ms, by its ctime) is broken by the next writer, whoever it names. */
export const LOCK_STALE_MS = 10_000;
/** The same for a break lock, which lives for a few syscalls. */
const BREAK_STALE_MS = 1_000;

/** The lock name of a target named `relative` (`/`-separated) from the lock's directory: fixed length, NAME_MAX holds. */
export function lockNameFor(relative: string): string {
  return `${LOCK_FILE_PREFIX}${createHash('sha256').update(relative).digest('hex').slice(0, 32)}`;
}

/** lstat of the entry `name` of `dir`, or null when there is none or it cannot be read. */
export function entryStat(dir: VerifiedDir, name: string): Stats | null {
  try {
    return dir.lstat(name);
  } catch {
    return null;
  }
}

/**
 * Creates `name` in `dir` holding our owner record, atomically; both the private temporary and the lock are noted in
 * the in-flight register first (src/fs/own-files.ts). @returns the lock's inode, or null when taken.
 * @throws errno errors; EACCES / EPERM / EROFS mean the directory takes no new entry from this process; ToolError
 *   NOT_ALLOWED when the directory left the roots
 */
export function tryCreate(dir: VerifiedDir, name: string): number | null {
  const tmp = `${name}.${randomBytes(8).toString('hex')}.tmp`;
  const tmpPath = dir.pathOf(tmp);
  const lockPath = dir.pathOf(name);
  noteOwnFile(tmpPath, 'lock');
  let fd: number;
  try {
    fd = dir.openFileSync(tmp, { flags: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode: 0o644 });
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
      dir.link(tmp, dir, name);
    } catch (error) {
      dropOwnFile(lockPath);
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
      throw error;
    }
    const created = dir.lstat(name);
    if (!created) throw lockError(dir.path, 'The lock file vanished while it was being taken.');
    return created.ino;
  } finally {
    dir.unlinkOwnTemporary(tmp);
    dropOwnFile(tmpPath);
  }
}

/** What stands at a lock name (see src/fs/path-lock.ts). */
export type Verdict =
  | { kind: 'forged'; ino: number; directory: boolean }
  | { kind: 'gone' | 'stale'; ino: number }
  | { kind: 'held'; ino: number; ctimeMs: number; ageMs: number };

/**
 * Judges the entry `name` of `dir`. @returns null when nothing is there
 * @param staleMs age (by ctime) after which a lock nobody refreshes is stale
 */
export function judge(dir: VerifiedDir, name: string, staleMs: number): Verdict | null {
  const st = entryStat(dir, name);
  if (!st) return null;
  if (!st.isFile()) return { kind: 'forged', ino: st.ino, directory: st.isDirectory() };
  let fd: number;
  try {
    // O_NONBLOCK (always added): a FIFO swapped in since the lstat must not hang the server.
    fd = dir.openFileSync(name, { flags: constants.O_RDONLY });
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

/**
 * Removes `name` only if it is still the inode `ino` (never someone's fresh lock).
 * @param own our own lock (its release): removed even from a directory that left the roots meanwhile, as our own
 *   temporary files are; someone else's lock is removed only while the directory is inside the roots
 */
export function unlinkIfSame(dir: VerifiedDir, name: string, ino: number, own: boolean): void {
  if (entryStat(dir, name)?.ino !== ino) return;
  if (own) {
    dir.unlinkOwnTemporary(name);
    return;
  }
  try {
    dir.unlink(name);
  } catch {
    /* already gone, or the directory left the roots */
  }
}

/**
 * Takes away what a judgement found removable: a forged directory is renamed aside to a visible
 * `fs-tools-forged-lock-<hex>` (its content is not ours to delete; the user sees and removes it), anything else is
 * unlinked — each only while it is still the judged inode.
 */
function takeAway(dir: VerifiedDir, name: string, verdict: Verdict): void {
  if (verdict.kind === 'forged' && verdict.directory) {
    if (entryStat(dir, name)?.ino !== verdict.ino) return;
    const aside = `fs-tools-forged-lock-${randomBytes(6).toString('hex')}`;
    try {
      dir.rename(name, dir, aside);
      process.stderr.write(
        `fs-tools: a directory stood at a lock file's name in ${dir.path}; renamed aside to ${aside}\n`,
      );
    } catch {
      /* gone, or cannot be moved: the wait ends with a locked envelope naming it */
    }
    return;
  }
  unlinkIfSame(dir, name, verdict.ino, false);
}

/**
 * Removes a lock judged removable. Serialized by `<lock>.break`, so two processes that judged the same lock stale
 * cannot remove the fresh lock one of them took afterwards. A break lock that is itself forged, of a gone owner, or
 * older than BREAK_STALE_MS is taken away the same inode-checked way. `staleMs` is the stale time the lock was judged
 * by (LOCK_STALE_MS, or the test build's shorter one).
 */
export function breakLock(dir: VerifiedDir, name: string, judged: Verdict, staleMs: number): void {
  const breakName = `${name}.break`;
  const mine = tryCreate(dir, breakName);
  if (mine === null) {
    const holder = judge(dir, breakName, BREAK_STALE_MS);
    if (holder && holder.kind !== 'held') takeAway(dir, breakName, holder);
    return;
  }
  try {
    const now = judge(dir, name, staleMs);
    if (now && now.ino === judged.ino && now.kind !== 'held') takeAway(dir, name, now);
  } finally {
    unlinkIfSame(dir, breakName, mine, true);
    dropOwnFile(dir.pathOf(breakName));
  }
}

/** Opens the lock file just created (inode `ino`) for the heartbeat. @throws Error code EBUSY when it changed */
export function holdOpen(dir: VerifiedDir, name: string, ino: number): number {
  const fd = dir.openFileSync(name, { flags: constants.O_RDONLY });
  if (fstatSync(fd).ino !== ino) {
    closeSync(fd);
    throw lockError(dir.path, 'The lock file changed while it was being taken.');
  }
  return fd;
}
