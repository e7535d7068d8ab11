/**
 * git_status' reuse of the previous status answer of a repository while the kernel proves nothing it depends on
 * changed (docs/security.md "git_status: reuse of the previous answer"). The server's own mechanism, nothing the
 * repository configures: git's fsmonitor stays off. Per repository one inotify instance (native/fs_tools_watch.c),
 * a watch on every directory of the work tree and of the git dir, common dir and objects directory, each added through
 * a descriptor whose /proc/self/fd location is the path walked (before its entries are read), on a file system where
 * inotify sees every change made through the kernel (FS_TYPES).
 *
 * The validity rule. A call takes a ticket before anything of the repository is read (`statusTicket`: every set's
 * queue drained, the events counted). A status git produced is kept with the count of its call's ticket, and only
 * when the set was complete and usable at that ticket; a later call reuses it when its own ticket (and a drain after
 * the view's checks) shows the same count: no event since before the producing call read anything. Any event drops
 * the answer; one that changes what is watched (a directory made, moved or deleted, a `.git` anywhere, a watch gone,
 * an unmount, an overflow) or a change of the mount table drops the whole set, rebuilt after the next call's git.
 * The view's checks (GitView.open: locate, object stores, HEAD, refs, config, index) and the nested-repository check
 * still run on every call; only git's run is spared.
 *
 * No reuse (git runs, answers unchanged) where the addon is not in the main thread, /proc/self/mountinfo cannot be
 * polled, a directory is on another file system type, a `.git` lies below the work-tree top, the objects directory
 * has alternates, or a set would pass WATCH_CAPS. What inotify does not see is in docs/security.md.
 */

import { closeSync, constants, fstatSync, lstatSync, openSync, opendirSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { locationOf } from '../fs/dir-identity.js';
import { isWithin } from '../fs/path-within.js';
import { mainThreadNativeAddon } from '../fs/native-load.js';
import type { NativeAddon } from '../fs/native-reader.js';
import { processSlot } from '../process-slots.js';
import type { RepositoryLocations } from './git-locate.js';
import type { ViewInputs } from './git-view.js';
import { Slicer } from './slicer.js';

/** Caps: watches per repository and in all, repositories watched, the largest answer kept (output and inputs, units). */
export const WATCH_CAPS = { perRepository: 4096, total: 8192, repositories: 8, answerChars: 1 << 20 };

/**
 * The longest a kept answer is reused, ms after the git run that produced it: a change inotify does not report (a
 * write through a shared memory mapping, or through a hard link in a directory outside the set) shows in the answer
 * of a call at most this long after it; then git runs again and its answer is kept afresh.
 */
export const REUSE_MAX_MS = 5000;

/** How long a repository whose set could not be built (a failed watch, a directory gone) runs git without trying again, ms. */
const RETRY_MS = 30_000;
/** The same for a repository with more directories than the caps allow (it will not have fewer soon), ms. */
const TOO_BIG_RETRY_MS = 600_000;

/**
 * File systems (statfs f_type) whose every change passes the kernel's VFS and raises its inotify event: ext2/3/4,
 * xfs, btrfs, tmpfs, overlayfs. Not NFS, FUSE, 9p, CIFS (changes made by another host or a daemon raise none).
 */
const FS_TYPES = new Set([0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630]);

/** One repository's watches and its kept answer. */
interface WatchSet {
  key: string;
  /** The inotify descriptor (all the set's watches), or -1 once closed. */
  ifd: number;
  /** The directories walked from, with the identity the watch was set on (a path now naming another: no reuse). */
  roots: { path: string; dev: number; ino: number }[];
  watches: number;
  /** Events read so far. */
  seq: number;
  /** building: the walk runs; ready: usable; unusable: watched but never reused (a nested `.git`); failed: closed. */
  state: 'building' | 'ready' | 'unusable' | 'failed';
  /** The kept output, the event count of its call's ticket, and what its view handed git from the git dir. */
  answer: KeptAnswer | null;
  lastUsed: number;
  /** failed: no new build before this time (ms since the epoch). */
  retryAt: number;
}

/**
 * A kept status: git's output, the event count of its call's ticket, and its view's inputs — the index held weakly
 * (the index cache owns it, within its budget: once dropped there, the answer is not reused).
 */
interface KeptAnswer {
  raw: string;
  seq: number;
  /** When git's run ended (Date.now(), ms): reused until REUSE_MAX_MS after it. */
  at: number;
  index: WeakRef<object> | null;
  text: string;
  exclude: Buffer | null;
  shallow: Buffer | null;
}

/** True when `inputs` (this call's view) are those the kept answer's view handed git. */
function sameInputs(kept: KeptAnswer, inputs: ViewInputs): boolean {
  const same = (x: Buffer | null, y: Buffer | null): boolean => (x === null ? y === null : y !== null && x.equals(y));
  const index = kept.index === null ? null : (kept.index.deref() ?? undefined);
  return (
    index === inputs.index &&
    kept.text === inputs.text &&
    same(kept.exclude, inputs.exclude) &&
    same(kept.shallow, inputs.shallow)
  );
}

/** Each usable set's event count when a call began (`statusTicket`). */
export type StatusTicket = Map<WatchSet, number>;

const watch = processSlot('vcs/git-status-watch', () => ({
  sets: new Map<string, WatchSet>(),
  /** A descriptor of /proc/self/mountinfo (polled for mount changes); null: not available, so no reuse. */
  mounts: undefined as number | null | undefined,
  total: 0,
  out: new Float64Array(2),
  reused: 0,
  /** Tests only (`useStatusWatchAddon`): the addon to use instead of the main thread's. */
  addon: undefined as NativeAddon | null | undefined,
}));

/** The addon when it has the watches (abi 6), else null. */
function addonWithWatches(): NativeAddon | null {
  const addon = watch.addon === undefined ? mainThreadNativeAddon() : watch.addon;
  return addon && typeof addon.watchInit === 'function' ? addon : null;
}

/** The key of a repository's set: its work tree, git dir, common dir and objects directory (real paths). */
const keyOf = (loc: RepositoryLocations): string =>
  [loc.workTree, loc.gitDir, loc.commonDir, loc.objectsDir].join('\0');

/**
 * Closes a set's descriptor (all its watches) and forgets it; `keepFailed`: keeps it as failed, so no new build is
 * tried for `retryMs`.
 */
function dropSet(set: WatchSet, keepFailed = false, retryMs = RETRY_MS): void {
  if (set.ifd >= 0) {
    closeSync(set.ifd);
    set.ifd = -1;
    watch.total -= set.watches;
    set.watches = 0;
  }
  set.answer = null;
  set.state = 'failed'; // never used again, whoever still holds it (a ticket, a build in progress)
  if (keepFailed) set.retryAt = Date.now() + retryMs;
  else if (watch.sets.get(set.key) === set) watch.sets.delete(set.key);
}

/** Reads a set's queue: counts the events, drops the set on one that changes what is watched or a failed read. */
function drain(addon: NativeAddon, set: WatchSet): void {
  if (set.ifd < 0 || set.state === 'building') return;
  const r = addon.watchDrain(set.ifd, watch.out);
  set.seq += watch.out[0];
  if (r < 0 || watch.out[1] !== 0) dropSet(set);
}

/** True when the mount table may have changed since the last look (or cannot be watched): nothing is reused then. */
function mountsMoved(addon: NativeAddon): boolean {
  if (watch.mounts === undefined) {
    try {
      watch.mounts = openSync('/proc/self/mountinfo', constants.O_RDONLY | constants.O_NONBLOCK);
    } catch {
      watch.mounts = null;
    }
  }
  return watch.mounts === null || addon.mountsChanged(watch.mounts) !== 0;
}

/**
 * The ticket a git_status call takes before it reads anything of its repository: every set's queue drained, and the
 * event count of each usable one. A change of the mount table drops every set. Empty without the addon.
 */
export function statusTicket(): StatusTicket {
  const ticket: StatusTicket = new Map();
  const addon = addonWithWatches();
  if (addon === null) return ticket;
  if (mountsMoved(addon)) {
    for (const set of [...watch.sets.values()]) dropSet(set);
    return ticket;
  }
  for (const set of [...watch.sets.values()]) {
    drain(addon, set);
    if (set.state === 'ready' && set.ifd >= 0) ticket.set(set, set.seq);
  }
  return ticket;
}

/**
 * The status output kept for the repository at `loc`, when the ticket proves nothing it depends on changed since the
 * call that produced it took its own (same event count, drained again now, every root still the directory watched)
 * and this call's view handed git the same inputs from the git dir (`inputs`, read by this call), and it is younger
 * than REUSE_MAX_MS; else null (git runs).
 */
export function keptStatus(ticket: StatusTicket, loc: RepositoryLocations, inputs: ViewInputs): string | null {
  const set = watch.sets.get(keyOf(loc));
  const at = set ? ticket.get(set) : undefined;
  const addon = addonWithWatches();
  if (!set || at === undefined || addon === null || set.answer === null || set.answer.seq !== at) return null;
  if (Date.now() - set.answer.at >= REUSE_MAX_MS || !sameInputs(set.answer, inputs)) return null;
  drain(addon, set);
  const kept = set.answer;
  if (set.state !== 'ready' || kept === null || set.seq !== at || !rootsUnchanged(set)) return null;
  set.lastUsed = Date.now();
  watch.reused++;
  return kept.raw;
}

/** True when every root path still names the directory its watch was set on. */
function rootsUnchanged(set: WatchSet): boolean {
  for (const root of set.roots) {
    const st = lstatSync(root.path, { throwIfNoEntry: false });
    if (!st || !st.isDirectory() || st.dev !== root.dev || st.ino !== root.ino) {
      dropSet(set);
      return false;
    }
  }
  return true;
}

/**
 * After git ran for the call holding `ticket`: keeps `raw` (git's exit-0 output) when the repository's set was ready
 * at the ticket and the objects directory has no alternates; starts building the set when there is none (in slices,
 * beside the calls that follow: an answer is kept from the first call whose ticket finds it complete).
 */
export function rememberStatus(ticket: StatusTicket, loc: RepositoryLocations, raw: string, inputs: ViewInputs): void {
  const addon = addonWithWatches();
  if (addon === null) return;
  const key = keyOf(loc);
  const set = watch.sets.get(key);
  if (set) {
    const at = ticket.get(set);
    const size = raw.length + (inputs.exclude?.length ?? 0) + (inputs.shallow?.length ?? 0) + inputs.text.length;
    if (at !== undefined && set.state === 'ready' && size <= WATCH_CAPS.answerChars && !hasAlternates(loc)) {
      const index = inputs.index === null ? null : new WeakRef(inputs.index);
      const { text, exclude, shallow } = inputs;
      set.answer = { raw, seq: at, at: Date.now(), index, text, exclude, shallow };
    }
    if (set.state !== 'failed' || Date.now() < set.retryAt) return;
    watch.sets.delete(key);
  }
  if (watch.mounts === null || hasAlternates(loc)) return;
  // Built beside the calls that follow, not before this one answers (a large tree's walk takes a while, in slices):
  // the set is used from the first call that finds it ready.
  void buildSet(addon, loc).catch(() => {
    const built = watch.sets.get(key);
    if (built?.state === 'building') dropSet(built, true); // a throw mid-walk: closed, tried again later
  });
}

/** True when the objects directory has an `info/alternates` (objects elsewhere: no reuse). */
const hasAlternates = (loc: RepositoryLocations): boolean =>
  lstatSync(path.join(loc.objectsDir, 'info', 'alternates'), { throwIfNoEntry: false }) !== undefined;

/** Builds the set of the repository at `loc`, in slices; evicts the least recently used set past the cap. */
async function buildSet(addon: NativeAddon, loc: RepositoryLocations): Promise<void> {
  const ifd = addon.watchInit();
  if (ifd < 0) return;
  const key = keyOf(loc);
  const set: WatchSet = {
    key,
    ifd,
    roots: [],
    watches: 0,
    seq: 0,
    state: 'building',
    answer: null,
    lastUsed: Date.now(),
    retryAt: 0,
  };
  watch.sets.set(key, set);
  const others = [...watch.sets.values()].filter((s) => s !== set && s.state !== 'building');
  if (others.length >= WATCH_CAPS.repositories) dropSet(others.reduce((a, b) => (b.lastUsed < a.lastUsed ? b : a)));
  const seen = new Set<string>();
  const slicer = new Slicer();
  // The directories git reads objects, refs and the rest from: a link there (a linked `pack` or fan-out directory, a
  // linked pack or loose object, which the view's store check accepts when it stays inside the roots) leads where no
  // watch is, so such a repository is never reused.
  const gitDirs = [loc.gitDir, loc.commonDir, loc.objectsDir];
  let outcome: 'ready' | 'unusable' | 'failed' | 'too_big' = 'ready';
  for (const root of [loc.workTree, loc.gitDir, loc.commonDir, loc.objectsDir]) {
    const r = await watchTree(addon, set, root, root === loc.workTree, seen, slicer, gitDirs);
    if (r === 'failed' || r === 'too_big') {
      outcome = r;
      break;
    }
    if (r === 'unusable') outcome = r;
  }
  if (set.ifd < 0) return; // dropped meanwhile (a shutdown, a mount change)
  if (outcome === 'failed' || outcome === 'too_big')
    dropSet(set, true, outcome === 'too_big' ? TOO_BIG_RETRY_MS : RETRY_MS);
  else set.state = outcome;
}

/**
 * Watches every directory under `root` (its own included), depth first, one descriptor open at a time: each opened
 * by path without following its last component, proven at that path after its watch is added, its entries read after
 * that (so an entry made meanwhile raises an event). A directory seen already (by device and inode) is skipped.
 * `top`: `root` is the work-tree top, the one directory whose `.git` is not a nested repository. A symbolic link
 * listed in or below one of `gitDirs` (git dir, common dir, objects directory) leads where no watch is: 'unusable'.
 */
async function watchTree(
  addon: NativeAddon,
  set: WatchSet,
  root: string,
  top: boolean,
  seen: Set<string>,
  slicer: Slicer,
  gitDirs: readonly string[],
): Promise<'ok' | 'unusable' | 'failed' | 'too_big'> {
  const stack = [root];
  const typeOut = new Float64Array(1);
  let result: 'ok' | 'unusable' = 'ok';
  for (let dir = stack.pop(); dir !== undefined; dir = stack.pop()) {
    let fd: number;
    try {
      fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      return 'failed';
    }
    try {
      const st = fstatSync(fd);
      const id = `${st.dev}:${st.ino}`;
      if (seen.has(id)) continue;
      seen.add(id);
      if (set.watches >= WATCH_CAPS.perRepository || watch.total >= WATCH_CAPS.total) return 'too_big';
      const wd = addon.watchDirectory(set.ifd, fd, typeOut);
      if (wd < 0 || !FS_TYPES.has(typeOut[0]) || locationOf(fd) !== dir) return 'failed';
      set.watches++;
      watch.total++;
      if (dir === root) set.roots.push({ path: root, dev: st.dev, ino: st.ino });
      // Listed in slices (a fan-out directory may hold 200,000 entries); a kind the listing does not give fails.
      const listing = opendirSync(`/proc/self/fd/${fd}`, { bufferSize: 256 });
      try {
        for (let e = listing.readSync(); e !== null; e = listing.readSync()) {
          if (e.name === '.git' && !(top && dir === root)) result = 'unusable';
          else if (e.isSymbolicLink() && gitDirs.some((g) => isWithin(g, dir))) result = 'unusable';
          else if (e.isDirectory()) stack.push(path.join(dir, e.name));
          else if (!knownKind(e)) return 'failed';
          const pause = slicer.check();
          if (pause) await pause;
        }
      } finally {
        listing.closeSync();
      }
    } catch {
      return 'failed';
    } finally {
      closeSync(fd);
    }
    const pause = slicer.check();
    if (pause) await pause;
    if (set.ifd < 0) return 'failed';
  }
  return result;
}

/** True when the listing gave `e`'s kind (not DT_UNKNOWN: a directory must never pass for something else). */
const knownKind = (e: Dirent): boolean =>
  e.isFile() || e.isSymbolicLink() || e.isFIFO() || e.isSocket() || e.isBlockDevice() || e.isCharacterDevice();

/** Closes every set's descriptor and the mount table's (the server's shutdown). */
export function closeStatusWatches(): void {
  for (const set of [...watch.sets.values()]) dropSet(set);
  if (typeof watch.mounts === 'number') closeSync(watch.mounts);
  watch.mounts = undefined;
}

/**
 * Tests only: the addon the watches use in a process whose main thread loaded none (vitest runs src/ unbundled);
 * undefined: the main thread's again. Every set is closed first.
 */
export function useStatusWatchAddon(addon: NativeAddon | null | undefined): void {
  closeStatusWatches();
  watch.addon = addon;
}

/** Counters for tests: sets and their states, watches in all, answers reused so far. */
export function statusWatchCounters(): { sets: string[]; watches: number; reused: number } {
  return { sets: [...watch.sets.values()].map((s) => s.state), watches: watch.total, reused: watch.reused };
}
