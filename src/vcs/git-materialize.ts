/**
 * The private git dir a view is materialized in (docs/security.md "What git may read"): a directory the server made
 * (mode 0700, outside the roots, reused across calls when it holds exactly what the server put there), holding a
 * config the server writes itself, HEAD, the refs it resolved, the checked exclude and shallow files, the object-store
 * mirrors and the rebuilt index.
 */

import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  futimesSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  rmSync,
  writeFileSync,
  type Dirent,
} from 'node:fs';
import { open as openAsync, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { mirrorObjects, type ObjectStore } from './git-objects.js';
import { forgetStamps, heldSince, rememberHeld, viewCaches, type FsTime } from './git-view-cache.js';
import type { ViewIndex } from './git-verify.js';
import type { Slicer } from './slicer.js';
import { processSlot } from '../process-slots.js';

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/**
 * Exclude lines the view adds to the repository's own: fs-tools' own files (src/fs/own-files.ts) — path locks,
 * temporaries and copy trees — never show in git_status.
 */
const OWN_EXCLUDES = '.fs-tools-lock-*\n.*.fs-tools-*.tmp\n.*.fs-tools-copy-*\n.*.fs-tools-link-*\n';

/** The fixed part of the private config: nothing in it names a program, a file of the repository, or an include. */
export const BASE_CONFIG = [
  '[core]',
  '\tbare = false',
  '\tfsmonitor = false',
  '\thooksPath = /dev/null',
  '\tuntrackedCache = false',
  '\tattributesFile = /dev/null',
  '\tpager = cat',
  '\tsplitIndex = false',
  '\tmultiPackIndex = false',
  '\tsshCommand = false',
  '[status]',
  '\tsubmoduleSummary = false',
  '\tshowUntrackedFiles = all',
  '[diff]',
  '\tignoreSubmodules = all',
  '\tsubmodule = short',
  '\tnoprefix = false',
  '\tmnemonicPrefix = false',
  '\tautoRefreshIndex = false',
  '[submodule]',
  '\trecurse = false',
  '[protocol]',
  '\tallow = never',
  '[color]',
  '\tui = false',
  '[gc]',
  '\tauto = 0',
  '[maintenance]',
  '\tauto = false',
  '[credential]',
  '\thelper = ',
];

/**
 * Writes the rebuilt index (mode 0600, a new file: O_EXCL after removing any old one) and gives it a modification
 * time just before the repository index's. git treats an entry whose file changed no earlier than the index as "racily
 * clean" and compares its content; an earlier index time only makes more entries racy (more comparisons, the same
 * answer), never fewer.
 */
export async function writePrivateIndex(file: string, parts: Buffer[], mtimeMs: number): Promise<void> {
  const handle = await openAsync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o600);
  try {
    await handle.writev(parts);
    const t = new Date(Math.floor(mtimeMs) - 1);
    futimesSync(handle.fd, t, t);
  } finally {
    await handle.close();
  }
}

/**
 * Private git dirs (mode 0700, created by the server), reused across calls: one per call in flight. Every file git
 * reads from one is rewritten (or removed) for each call, and a reused dir must hold exactly the entries the server
 * made (anything else — a `commondir`, `hooks`, `info/attributes` planted by someone — discards it). A private dir
 * is never inside the roots, where an agent's own file tools could reach it: the OS temporary directory, else
 * /dev/shm or /var/tmp, whichever lies outside every root. Removed when the process exits. The pool's state
 * (src/process-slots.ts): the dirs free for reuse, every dir this process made, whether the exit hook is installed,
 * and the bases swept of dead servers' dirs.
 */
const pool = processSlot('vcs/git-materialize', () => ({
  freeDirs: [] as string[],
  allDirs: new Set<string>(),
  exitHook: false,
  sweptBases: new Set<string>(),
  /** The clock file `fsTimeNow` changes (in a dir of its own, made like a private dir), open for the process's life. */
  clock: null as { dir: string; fd: number } | null,
}));

/**
 * Removes private dirs that servers no longer running left behind (a process killed by a signal never runs its exit
 * hook). A dir names its creator's pid; one whose process is alive (or not ours to signal) is left alone.
 */
function sweepStaleDirs(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^fs-tools-gitview-(\d+)-/.exec(name);
    if (!m || Number(m[1]) === process.pid) continue;
    try {
      process.kill(Number(m[1]), 0);
      continue; // alive
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') continue;
    }
    try {
      rmSync(path.join(base, name), { recursive: true, force: true });
    } catch {
      /* not ours */
    }
  }
}

/** The entries of a private dir, per subdirectory; files may be absent (shallow, info/exclude). */
const PRIVATE_LAYOUT: Record<string, readonly string[] | null> = {
  '': ['HEAD', 'config', 'packed-refs', 'shallow', 'index', 'objects', 'refs', 'info', 'home', 'alt'],
  // The object-store mirrors: removed and rebuilt on every use (`mirrorObjects`), never read as left.
  alt: null,
  objects: ['info'],
  [path.join('objects', 'info')]: ['alternates'],
  refs: ['heads', 'tags'],
  [path.join('refs', 'heads')]: [],
  [path.join('refs', 'tags')]: [],
  info: ['exclude'],
  home: [],
};

/** True when `dir` holds only what the server put there (checked with lstat: no link is followed). */
function isTidy(dir: string): boolean {
  for (const [sub, allowed] of Object.entries(PRIVATE_LAYOUT)) {
    if (allowed === null) continue;
    let entries: Dirent[];
    try {
      entries = readdirSync(path.join(dir, sub), { withFileTypes: true });
    } catch {
      return false;
    }
    for (const e of entries) {
      if (!allowed.includes(e.name) || e.isSymbolicLink()) return false;
      const isDir = Object.hasOwn(PRIVATE_LAYOUT, path.join(sub, e.name));
      if (isDir ? !e.isDirectory() : !e.isFile()) return false;
    }
  }
  return true;
}

export function acquirePrivateDir(isInside: (p: string) => boolean): string {
  for (let reused = pool.freeDirs.pop(); reused; reused = pool.freeDirs.pop()) {
    if (!isInside(reused) && isTidy(reused)) return reused;
    releasePrivateDir(reused, true);
  }
  const dir = newPrivateDir(isInside);
  for (const sub of [['objects', 'info'], ['refs', 'heads'], ['refs', 'tags'], ['info'], ['home']]) {
    mkdirSync(path.join(dir, ...sub), { recursive: true, mode: 0o700 });
  }
  return dir;
}

/**
 * A new, empty directory (mode 0700) of the server's own in the first temporary directory outside the roots, removed
 * at exit (and by the next server's sweep if this one is killed).
 * @throws ToolError VALIDATION no_private_dir (every temporary directory lies inside the roots); IO errors
 */
function newPrivateDir(isInside: (p: string) => boolean): string {
  let base: string | null = null;
  for (const candidate of [os.tmpdir(), '/dev/shm', '/var/tmp']) {
    try {
      const real = realpathSync(candidate);
      if (!isInside(real) && !isInside(path.join(real, 'fs-tools-gitview-x'))) {
        base = real;
        break;
      }
    } catch {
      /* not there */
    }
  }
  if (!base) {
    throw new ToolError(
      'VALIDATION',
      'Every temporary directory lies inside the allowed roots, so the git tools have nowhere private to build their view.',
      {
        details: { reason: 'no_private_dir' },
        suggestion: 'Set TMPDIR to a directory outside the roots.',
      },
    );
  }
  if (!pool.sweptBases.has(base)) {
    pool.sweptBases.add(base);
    sweepStaleDirs(base);
  }
  const dir = mkdtempSync(path.join(base, `fs-tools-gitview-${process.pid}-`));
  if (!pool.exitHook) {
    pool.exitHook = true;
    process.once('exit', () => {
      for (const d of pool.allDirs) {
        try {
          rmSync(d, { recursive: true, force: true });
        } catch {
          /* best effort */
        }
      }
    });
  }
  pool.allDirs.add(dir);
  return dir;
}

/**
 * Reads the clock of the file system the private dirs lie on (`FsTime`, src/vcs/git-view-cache.ts): changes the mode
 * of a file of the server's own there (to the 0600 it has) and returns the change time the kernel gave that change.
 * Read before the stats of a call's checks, it lets a check tie itself to an entry's stamp as soon as the entry's last
 * change is older than this time, instead of 2 s later (`settled`): only for entries of the same file system (the same
 * device). Null when the file cannot be made or changed, or when the file system's stamps are not finer than a
 * millisecond (a step back of the system clock could then repeat a kept stamp): then only the 2 s rule applies.
 */
export function fsTimeNow(isInside: (p: string) => boolean): FsTime | null {
  try {
    if (pool.clock && isInside(pool.clock.dir)) {
      closeSync(pool.clock.fd);
      pool.clock = null;
    }
    if (!pool.clock) {
      const dir = newPrivateDir(isInside);
      const fd = openSync(
        path.join(dir, 'clock'),
        constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW | constants.O_NONBLOCK,
        0o600,
      );
      pool.clock = { dir, fd };
    }
    fchmodSync(pool.clock.fd, 0o600);
    const st = fstatSync(pool.clock.fd, { bigint: true });
    // Stamps in whole milliseconds or coarser (whole seconds: ext4 with small inodes; FAT): a step back of the
    // system clock (a leap second, an NTP step) brings the stamps just handed out round again, so a change then can
    // show a kept stamp. Only the 2 s rule, which outlasts a step back under 2 s, applies there. On a file system
    // with finer stamps this reading is whole by chance one time in a million: then this call keeps to 2 s too.
    if (st.ctimeNs % 1_000_000n === 0n) return null;
    // In ms the way node computes an entry's ctimeMs (seconds * 1e3 + nanoseconds / 1e6), so the two compare exactly.
    const ctimeMs = Number(st.ctimeNs / 1_000_000_000n) * 1e3 + Number(st.ctimeNs % 1_000_000_000n) / 1e6;
    return { dev: Number(st.dev), ctimeMs };
  } catch {
    return null;
  }
}

/** Returns a private dir to the pool (or removes it, after a failure, so no half-written state is reused). */
export function releasePrivateDir(dir: string, discard = false): void {
  if (discard) {
    pool.allDirs.delete(dir);
    viewCaches.mirrors.delete(dir);
    forgetStamps(dir);
    rm(dir, { recursive: true, force: true }).catch(() => undefined);
    return;
  }
  pool.freeDirs.push(dir);
}

/** What a view's private dir holds, all of it verified or written by the server. */
export interface ViewContents {
  /** HEAD as read and checked (a safe symbolic ref, or a detached object id). */
  head: { kind: 'symbolic'; ref: string } | { kind: 'detached'; oid: string };
  /** The private config's lines (BASE_CONFIG, the carried-over settings, HEAD's upstream). */
  config: readonly string[];
  /** The resolved refs: ref → object id (written as the private packed-refs). */
  refs: ReadonlyMap<string, string>;
  /** The verified object stores, the repository's own first. */
  stores: ObjectStore[];
  /** The repository's info/exclude (null: none); fs-tools' own file patterns are appended. */
  exclude: Buffer | null;
  /** The checked shallow file (null: none). */
  shallow: Buffer | null;
  /** The rebuilt index and the repository index's modification time (null: none). */
  index: ViewIndex | null;
}

/**
 * Writes `contents` into the private dir `privateDir` (from `acquirePrivateDir`): every file git reads there is
 * rewritten or removed, and the object-store mirrors are rebuilt (`mirrorObjects`).
 * @throws on IO errors (the caller discards the dir)
 */
export async function materializeView(
  privateDir: string,
  contents: ViewContents,
  slicer: Slicer,
  now: FsTime | null,
): Promise<void> {
  const { head, refs, exclude, index } = contents;
  const put = (rel: string, text: string | Buffer | null) => {
    const file = path.join(privateDir, rel);
    if (text === null) rmSync(file, { force: true });
    else {
      const content = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
      // A reused dir's file that already holds exactly these bytes is left as it is (rewriting costs more than
      // reading it back on a disk-backed TMPDIR).
      if (!holdsExactly(file, content)) writeFileSync(file, content, { mode: 0o600 });
    }
  };
  put('HEAD', head.kind === 'symbolic' ? `ref: ${head.ref}\n` : `${head.oid}\n`);
  put('config', `${contents.config.join('\n')}\n`);
  put(
    'packed-refs',
    [...refs]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([ref, oid]) => `${oid} ${ref}\n`)
      .join(''),
  );
  const mirrors = await mirrorObjects(privateDir, contents.stores, slicer, now);
  put(path.join('objects', 'info', 'alternates'), `${mirrors.join('\n')}\n`);
  // fs-tools' own path-lock files (src/fs/path-lock.ts) come and go beside the files being written: never part of
  // the status (a mutation's lock would otherwise change the very status hash it checks: STALE_GIT).
  put(
    path.join('info', 'exclude'),
    Buffer.concat([
      ...(exclude === null
        ? []
        : [exclude, Buffer.from(exclude.length > 0 && exclude[exclude.length - 1] !== 0x0a ? '\n' : '')]),
      Buffer.from(OWN_EXCLUDES),
    ]),
  );
  put('shallow', contents.shallow);
  const indexFile = path.join(privateDir, 'index');
  if (index && (await indexHolds(indexFile, index, slicer, now))) return;
  put('index', null);
  if (index) await writePrivateIndex(indexFile, index.parts, index.mtimeMs);
}

/** Opens `file` for reading without following a link; null when it cannot be opened (absent, a link, …). */
function openExisting(file: string): number | null {
  try {
    return openSync(file, constants.O_RDONLY | O_NOFOLLOW | (constants.O_NONBLOCK ?? 0));
  } catch {
    return null;
  }
}

/** True when `file` is a regular file (not a link) holding exactly `content`. */
function holdsExactly(file: string, content: Buffer): boolean {
  const fd = openExisting(file);
  if (fd === null) return false;
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== content.length) return false;
    const bytes = Buffer.allocUnsafe(content.length + 1);
    let filled = 0;
    for (let n = 1; n > 0 && filled < bytes.length; filled += n)
      n = readSync(fd, bytes, filled, bytes.length - filled, filled);
    return filled === content.length && bytes.subarray(0, filled).equals(content);
  } finally {
    closeSync(fd);
  }
}

/**
 * True when the private index `file` is a regular file (not a link) holding exactly the rebuilt index `index` with
 * the modification time `writePrivateIndex` gives it: then it is left as it is. Read in 1 MiB slices.
 */
async function indexHolds(file: string, index: ViewIndex, slicer: Slicer, now: FsTime | null): Promise<boolean> {
  const fd = openExisting(file);
  if (fd === null) return false;
  try {
    const st = fstatSync(fd);
    const size = index.parts.reduce((n, p) => n + p.length, 0);
    // Rounded: a time set through a Date reads back a fraction of a millisecond off about half the time (seconds as
    // a double), which made every call rewrite the index.
    if (!st.isFile() || st.size !== size || Math.round(st.mtimeMs) !== Math.floor(index.mtimeMs) - 1) return false;
    // Found to hold exactly this rebuilt index before, and unchanged since (`heldSince`): not read back again.
    if (heldSince(file, st, index.parts)) return true;
    const window = Buffer.allocUnsafe(1 << 20);
    let at = 0;
    for (const part of index.parts) {
      for (let off = 0; off < part.length;) {
        const n = readSync(fd, window, 0, Math.min(window.length, part.length - off), at);
        if (n <= 0 || part.compare(window, 0, n, off, off + n) !== 0) return false;
        off += n;
        at += n;
        const wait = slicer.check();
        if (wait) await wait;
      }
    }
    if (readSync(fd, window, 0, 1, at) !== 0) return false;
    rememberHeld(file, st, index.parts, now);
    return true;
  } finally {
    closeSync(fd);
  }
}
