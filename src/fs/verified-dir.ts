/**
 * Verified access (docs/security.md "Roots"): the one module through which the file tools reach the filesystem after authorization.
 * Authorization proves a path string; a second process may swap any directory on that path for a symbolic link
 * between the check and the syscall, and every path-string syscall (`unlink`, `rename`, `mkdir`, `readdir`, `lstat`)
 * resolves every parent again. Here, instead:
 *
 *  1. a directory is opened from the outermost root above it (the shallowest prefix the containment predicate
 *     accepts), component by component, each with O_DIRECTORY|O_NOFOLLOW relative to the descriptor of its verified
 *     parent: a component that is a link, or no longer a directory, fails the open;
 *  2. where each descriptor really is is proven: on Linux `readlink(/proc/self/fd/N)` must equal the path that was
 *     authorized, exactly (elsewhere the descriptor's fstat identity must equal an lstat of the path);
 *  3. every later operation names a single component (never `..`, never containing a separator) relative to such a
 *     descriptor. On Linux the operation is given `/proc/self/fd/<dirfd>/<name>`: the kernel jumps to the open
 *     directory itself (a "magic link", not a path that can be re-resolved) and looks up only `name` in it — the
 *     `*at(2)` family by another name, which Node does not expose. A swapped ancestor cannot redirect it.
 *
 * Platforms without /proc (macOS, Windows, Linux without /proc mounted): steps 1–2 hold (each directory is opened
 * with O_NOFOLLOW where the platform has it, and its identity (dev, ino) compared with an lstat of its path), but the
 * operations are given the path string: before each, the directory's path is checked to still name the opened
 * directory (fstat vs lstat). An ancestor swapped between that re-check and the syscall (microseconds) is not
 * caught there; reads and writes of file contents are still re-checked on the opened descriptor.
 *
 * Every operation that changes something (unlink, rmdir, mkdir, symlink, rename, link) first re-proves that the
 * directory — the node verified at open, whatever its name is now — still lies inside the roots (`assertInside`).
 *
 * Every error thrown by an operation carries the logical path (directory path + name), never the /proc spelling.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fstat as fstatCb,
  fstatSync,
  fsync as fsyncCb,
  futimesSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
  type BigIntStats,
  type Dirent,
  type Stats,
} from 'node:fs';
import { open, opendir, readdir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import {
  assertDescriptorAt,
  changedError,
  DELETED_MARK,
  childPath,
  DESCRIPTOR_RELATIVE,
  locationOf,
  sameNode,
  TOO_LONG,
  type NodeIdentity,
} from './dir-identity.js';
import { isEntryName } from './path-within.js';

// Where a descriptor is and which node it is: src/fs/dir-identity.ts, part of this module's surface.
export {
  assertDescriptorAt,
  changedError,
  childPath,
  DESCRIPTOR_RELATIVE,
  identityOf,
  locationOf,
  sameNode,
  sameVersion,
  TOO_LONG,
  type FileIdentity,
  type NodeIdentity,
} from './dir-identity.js';

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;
const DIR_FLAGS = constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK;

/** Refuses anything but one directory-entry name. */
function assertName(name: string): void {
  if (!isEntryName(name)) {
    throw new Error(`verified-dir: not a single directory entry name: ${JSON.stringify(name)}`);
  }
}

/** Rewrites an errno error about a /proc spelling to the logical path. */
function logical(error: unknown, proc: string, real: string, procDest?: string, realDest?: string): unknown {
  const e = error as NodeJS.ErrnoException & { dest?: string };
  if (e && typeof e === 'object') {
    if (e.path === proc) e.path = real;
    if (procDest !== undefined && e.dest === procDest) e.dest = realDest;
    if (typeof e.message === 'string') {
      e.message = e.message.split(proc).join(real);
      if (procDest !== undefined && realDest !== undefined) e.message = e.message.split(procDest).join(realDest);
    }
  }
  return error;
}

/** Options of `VerifiedDir.openFile`. */
export interface OpenFileOptions {
  /** open(2) flags; O_NOFOLLOW and O_NONBLOCK are always added. */
  flags: number;
  /** Permission bits for O_CREAT. */
  mode?: number;
}

/**
 * An open, verified directory. Every method takes one entry name (never `..`, never a separator) and acts on the
 * entry of THIS directory, whatever happens to the path above it meanwhile. Close it (`close()`) when done; methods
 * throw Node errno errors with the logical path (`dirPath/name`).
 */
export class VerifiedDir {
  private closed = false;
  /** The fstat `openDir` took of the new descriptor, until `takeOpenStat` takes it (null: none, or taken). */
  private openStat: BigIntStats | null = null;

  private constructor(
    /** The descriptor (O_RDONLY|O_DIRECTORY). */
    readonly fd: number,
    /** The authorized real path this descriptor was proven to be at. */
    readonly path: string,
    /** Its identity (fstat at open). */
    readonly identity: NodeIdentity,
    /** The containment predicate it was opened under (inherited by the directories opened from it). */
    readonly isInside: (p: string) => boolean,
  ) {}

  /**
   * Opens `dir` (absolute, real: no link in it) from the outermost root above it, component by component.
   * @param isInside containment predicate over absolute paths (from policy)
   * @throws ToolError NOT_ALLOWED (outside the roots; a component is a link or changed); Node errno errors (ENOENT,
   *   ENOTDIR for a component that is missing or not a directory)
   */
  static open(dir: string, isInside: (p: string) => boolean): VerifiedDir {
    const abs = path.resolve(dir);
    const rootOfFs = path.parse(abs).root;
    const parts = abs.slice(rootOfFs.length).split(path.sep).filter(Boolean);
    let k = 0;
    let prefix = rootOfFs;
    while (!isInside(prefix)) {
      if (k >= parts.length) throw changedError(abs, 'outside_roots');
      prefix = path.join(prefix, parts[k++]);
    }
    let current = VerifiedDir.openAnchor(prefix, isInside);
    try {
      for (; k < parts.length; k++) {
        const next = current.openDir(parts[k]);
        current.close();
        current = next;
      }
      return current;
    } catch (error) {
      current.close();
      throw error;
    }
  }

  /** A root (or other anchor) opened by its path string and proven to be there. */
  private static openAnchor(anchor: string, isInside: (p: string) => boolean): VerifiedDir {
    const fd = openSync(anchor, DIR_FLAGS);
    try {
      const st = fstatSync(fd);
      if (!st.isDirectory()) throw changedError(anchor, 'not_a_directory');
      assertDescriptorAt(fd, st, anchor);
      return new VerifiedDir(fd, anchor, { dev: st.dev, ino: st.ino }, isInside);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /** The spelling an operation on `name` is given (see the module comment). */
  private at(name: string): string {
    assertName(name);
    if (DESCRIPTOR_RELATIVE) return `/proc/self/fd/${this.fd}/${name}`;
    this.assertStill();
    return path.join(this.path, name);
  }

  /** The logical path of an entry (for messages and results). */
  pathOf(name: string): string {
    return childPath(this.path, name);
  }

  /**
   * Fallback platforms: the directory's path must still name the opened directory. Linux: its /proc location must
   * still be the authorized path (a directory moved elsewhere since it was opened).
   * @throws ToolError NOT_ALLOWED reason changed_during_call
   */
  assertStill(): void {
    if (this.closed) throw new Error('verified-dir: used after close');
    assertDescriptorAt(this.fd, this.identity, this.path);
  }

  /**
   * Called right before an effect (a rename, unlink, mkdir in this directory): the directory — the very node that
   * was verified, whatever its name is now — must still lie inside the roots (Linux: its /proc location; a process
   * that moved it out of the roots since it was opened is caught here). Elsewhere: `assertStill`.
   * @throws ToolError NOT_ALLOWED reason changed_during_call
   */
  assertInside(): void {
    if (this.closed) throw new Error('verified-dir: used after close');
    const actual = locationOf(this.fd);
    if (actual === null) {
      this.assertStill();
      return;
    }
    // A directory deeper than PATH_MAX (a recursive delete's walk) has no path the kernel can spell: its containment
    // rests on how it was reached — O_NOFOLLOW steps down from a proven directory, identity-checked on the way up.
    if (actual === TOO_LONG) return;
    if (actual.endsWith(DELETED_MARK) || !path.isAbsolute(actual) || !this.isInside(actual))
      throw changedError(this.path);
  }

  /** Runs a sync syscall on the spelling of `name`, with errors carrying the logical path. */
  private run<T>(name: string, fn: (p: string) => T): T {
    const p = this.at(name);
    try {
      return fn(p);
    } catch (error) {
      throw logical(error, p, this.pathOf(name));
    }
  }

  /** Opens a subdirectory `name` (O_NOFOLLOW): a link there is refused. @throws ToolError NOT_ALLOWED; errno errors */
  openDir(name: string): VerifiedDir {
    const real = this.pathOf(name);
    let fd: number;
    try {
      fd = this.run(name, (p) => openSync(p, DIR_FLAGS));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') throw changedError(real, 'symlink_swapped');
      if (code === 'ENOTDIR') {
        const now = this.lstat(name);
        if (now?.isSymbolicLink()) throw changedError(real, 'symlink_swapped');
        // ENOTDIR means a non-directory (a link, under O_NOFOLLOW) stood there at the open; a directory or nothing
        // there now means it changed in between (a link flipped back by a racing process): a change, not the
        // caller's mistake, so not VALIDATION not_a_directory.
        if (!now || now.isDirectory()) throw changedError(real);
      }
      throw error;
    }
    try {
      // One fstat, in nanoseconds: its identity here, and the walk's listing identity (`takeOpenStat`).
      const st = fstatSync(fd, { bigint: true });
      const identity = { dev: Number(st.dev), ino: Number(st.ino) };
      if (!DESCRIPTOR_RELATIVE) {
        const now = lstatSync(real, { throwIfNoEntry: false });
        if (!now || !sameNode(now, identity)) throw changedError(real);
      }
      const dir = new VerifiedDir(fd, real, identity, this.isInside);
      dir.openStat = st;
      return dir;
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /**
   * The parent directory, reached through `..` of this descriptor (deep walks hold one descriptor at a time), which
   * must be `expected` (the identity the walk saw going down) at `parentPath`.
   * @throws ToolError NOT_ALLOWED reason changed_during_call when it is not
   */
  openParent(expected: NodeIdentity, parentPath: string): VerifiedDir {
    const spelling = DESCRIPTOR_RELATIVE ? `/proc/self/fd/${this.fd}/..` : parentPath;
    const fd = openSync(spelling, DIR_FLAGS);
    try {
      const st = fstatSync(fd);
      if (!sameNode(st, expected)) throw changedError(parentPath);
      return new VerifiedDir(fd, parentPath, expected, this.isInside);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /** lstat of an entry, or null when there is none. */
  lstat(name: string): Stats | null {
    return this.run(name, (p) => lstatSync(p, { throwIfNoEntry: false }) ?? null);
  }

  /** The target string of a symlink entry (never followed). */
  readlink(name: string): string {
    return this.run(name, (p) => readlinkSync(p));
  }

  /**
   * The fstat (bigint) `openDir` took right after opening this descriptor, once (null afterwards, and for a
   * directory opened otherwise): a walk reading the directory right after opening it keys its listing by this
   * identity, taken before the read as a fresh fstat would be, without a second syscall.
   */
  takeOpenStat(): BigIntStats | null {
    const st = this.openStat;
    this.openStat = null;
    return st;
  }

  /** fstat of the directory itself. */
  stat(): Stats {
    return fstatSync(this.fd);
  }

  /**
   * The entries of this directory (types from the listing; no `.`/`..`); with `max`, at most the first `max` read
   * (bounded work for best-effort readers such as near paths).
   */
  async readdir(max?: number): Promise<Dirent[]> {
    const spelling = DESCRIPTOR_RELATIVE ? `/proc/self/fd/${this.fd}` : this.path;
    if (!DESCRIPTOR_RELATIVE) this.assertStill();
    try {
      if (max === undefined) return await readdir(spelling, { withFileTypes: true });
      const out: Dirent[] = [];
      // Leaving the loop early closes the handle (the async iterator's return()).
      for await (const entry of await opendir(spelling)) {
        out.push(entry);
        if (out.length >= max) break;
      }
      return out;
    } catch (error) {
      throw logical(error, spelling, this.path);
    }
  }

  /**
   * The entries of this directory, read synchronously on the calling thread (for a small directory a
   * thread-pool round trip costs more than the read itself). Same spelling and checks as `readdir`.
   */
  readdirSync(): Dirent[] {
    const spelling = DESCRIPTOR_RELATIVE ? `/proc/self/fd/${this.fd}` : this.path;
    if (!DESCRIPTOR_RELATIVE) this.assertStill();
    try {
      return readdirSync(spelling, { withFileTypes: true });
    } catch (error) {
      throw logical(error, spelling, this.path);
    }
  }

  /**
   * Opens a file entry; O_NOFOLLOW is always added (a link there fails with ELOOP, reported as NOT_ALLOWED), and so is
   * O_NONBLOCK: a FIFO swapped in for the entry cannot hang the open (and with it a thread of the file I/O pool), the
   * caller's fstat then sees what was opened (docs/security.md "Bounded work"; test/fs/open-flags.test.ts holds every
   * open in src to this).
   * @throws ToolError NOT_ALLOWED (a link); errno errors
   */
  async openFile(name: string, options: OpenFileOptions): Promise<FileHandle> {
    const p = this.at(name);
    try {
      return await open(p, options.flags | O_NOFOLLOW | O_NONBLOCK, options.mode);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw changedError(this.pathOf(name), 'symlink_swapped');
      throw logical(error, p, this.pathOf(name));
    }
  }

  /** The synchronous twin of `openFile`, returning a descriptor. */
  openFileSync(name: string, options: OpenFileOptions): number {
    try {
      return this.run(name, (p) => openSync(p, options.flags | O_NOFOLLOW | O_NONBLOCK, options.mode));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw changedError(this.pathOf(name), 'symlink_swapped');
      throw error;
    }
  }

  /** Removes a file or link entry (never follows it). */
  unlink(name: string): void {
    this.assertInside();
    this.run(name, (p) => unlinkSync(p));
  }

  /** Removes an empty subdirectory. */
  rmdir(name: string): void {
    this.assertInside();
    this.run(name, (p) => rmdirSync(p));
  }

  /** Creates a subdirectory (EEXIST when the name is taken, by anything). */
  mkdir(name: string, mode = 0o777): void {
    this.assertInside();
    this.run(name, (p) => mkdirSync(p, { mode }));
  }

  /** Creates a symbolic link `name` holding `target` (the target is not resolved). */
  symlink(target: string, name: string): void {
    this.assertInside();
    this.run(name, (p) => symlinkSync(target, p));
  }

  /** rename(2) of `name` to `toName` in `to` (which may be this directory); replaces a file destination. */
  rename(name: string, to: VerifiedDir, toName: string): void {
    this.twoPath(name, to, toName, renameSync);
  }

  /** link(2): a new name `toName` in `to` for the entry `name` (a link is linked as a link, never followed). */
  link(name: string, to: VerifiedDir, toName: string): void {
    this.twoPath(name, to, toName, linkSync);
  }

  private twoPath(name: string, to: VerifiedDir, toName: string, fn: (a: string, b: string) => void): void {
    this.assertInside();
    if (to !== this) to.assertInside();
    const a = this.at(name);
    const b = to.at(toName);
    try {
      fn(a, b);
    } catch (error) {
      throw logical(error, a, this.pathOf(name), b, to.pathOf(toName));
    }
  }

  /** chmod of a regular file or directory entry, through a no-follow descriptor (a link is refused). */
  chmod(name: string, mode: number): void {
    this.withEntryFd(name, (fd) => fchmodSync(fd, mode));
  }

  /**
   * chmod of this directory itself, through its own descriptor (no path is resolved; a deep tree copy sets each
   * directory's mode as it leaves it instead of re-opening it from the top).
   */
  chmodSelf(mode: number): void {
    this.assertInside();
    fchmodSync(this.fd, mode);
  }

  /** utimes of an entry, through a no-follow descriptor (a link is refused); times in seconds or Dates. */
  utimes(name: string, atime: number | Date, mtime: number | Date): void {
    this.withEntryFd(name, (fd) => futimesSync(fd, atime, mtime));
  }

  /**
   * Removes this call's own temporary file `name`, even from a directory that left the roots meanwhile (it was created
   * here by us; leaving it would litter wherever the directory went). Errors are ignored.
   */
  unlinkOwnTemporary(name: string): void {
    try {
      this.run(name, (p) => unlinkSync(p));
    } catch {
      /* already gone */
    }
  }

  private withEntryFd(name: string, fn: (fd: number) => void): void {
    const fd = this.openFileSync(name, { flags: constants.O_RDONLY | O_NONBLOCK });
    try {
      fn(fd);
    } finally {
      closeSync(fd);
    }
  }

  /** fsync of the directory (a rename or unlink made durable); best effort. */
  async sync(): Promise<void> {
    if (this.closed) return;
    await new Promise<void>((resolve) => fsyncCb(this.fd, () => resolve()));
  }

  /** fstat of the directory, without blocking the loop. */
  async statAsync(): Promise<Stats> {
    return await new Promise<Stats>((resolve, reject) => fstatCb(this.fd, (e, s) => (e ? reject(e) : resolve(s))));
  }

  /** Closes the descriptor (idempotent). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      closeSync(this.fd);
    } catch {
      /* already closed */
    }
  }
}

/**
 * Runs `fn` with the verified directory `dir` open, and closes it afterwards.
 * @throws as VerifiedDir.open, and whatever `fn` throws
 */
export async function withVerifiedDir<T>(
  dir: string,
  isInside: (p: string) => boolean,
  fn: (d: VerifiedDir) => Promise<T> | T,
): Promise<T> {
  const d = VerifiedDir.open(dir, isInside);
  try {
    return await fn(d);
  } finally {
    d.close();
  }
}

/**
 * lstat of an authorized path through its verified parent (a root, whose parent lies outside, through its own verified
 * descriptor), so metadata never comes from whatever a swapped ancestor points to; null when it does not exist.
 * @throws as VerifiedDir.open
 */
export function lstatVerified(real: string, isInside: (p: string) => boolean): Stats | null {
  const parent = path.dirname(real);
  if (parent === real || !isInside(parent)) {
    const self = VerifiedDir.open(real, isInside);
    try {
      return self.stat();
    } finally {
      self.close();
    }
  }
  let dir: VerifiedDir;
  try {
    dir = VerifiedDir.open(parent, isInside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    return dir.lstat(path.basename(real));
  } finally {
    dir.close();
  }
}

/**
 * Opens `dir`, creating each missing directory below its nearest existing ancestor one level at a time (mkdir
 * relative to the verified parent, then opened with O_NOFOLLOW: a link swapped in is refused), like `mkdir -p`.
 * @returns the open directory and the paths created, outermost first
 * @throws ToolError NOT_ALLOWED (a link; outside the roots), VALIDATION not_a_directory (a non-directory in the way);
 *   errno errors. Directories created before a failure stay (they are reported in details.created_dirs).
 */
export function openDirCreating(
  dir: string,
  isInside: (p: string) => boolean,
): { dir: VerifiedDir; created: string[] } {
  const abs = path.resolve(dir);
  // The nearest existing ancestor (by path: this only chooses where to start; everything below is verified).
  let existing = abs;
  const missing: string[] = [];
  const exists = (p: string): boolean => {
    try {
      return lstatSync(p, { throwIfNoEntry: false }) !== undefined;
    } catch {
      return false; // ENOTDIR: below a file; the open below reports it
    }
  };
  while (!exists(existing)) {
    const parent = path.dirname(existing);
    if (parent === existing || !isInside(parent)) break;
    missing.unshift(path.basename(existing));
    existing = parent;
  }
  let current: VerifiedDir;
  try {
    current = VerifiedDir.open(existing, isInside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') throw notADirectory(existing);
    throw error;
  }
  const created: string[] = [];
  try {
    for (const name of missing) {
      try {
        current.mkdir(name);
        created.push(current.pathOf(name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      let next: VerifiedDir;
      try {
        next = current.openDir(name);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') throw notADirectory(current.pathOf(name));
        throw error;
      }
      current.close();
      current = next;
    }
    return { dir: current, created };
  } catch (error) {
    current.close();
    if (created.length && error instanceof ToolError) error.details.created_dirs = created;
    throw error;
  }
}

function notADirectory(p: string): ToolError {
  return new ToolError('VALIDATION', `${p} exists and is not a directory.`, {
    path: p,
    details: { reason: 'not_a_directory' },
  });
}
