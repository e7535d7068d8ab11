/**
 * The held-descriptor cache of the verified-access module (src/fs/verified-dir.ts): verified directories kept open
 * between calls, so a small read does not open its directory from the root every time. Each is re-proved at its
 * authorized path before any reuse; at most HELD_DIRS_MAX are held, and none once HELD_DIRS_IDLE_MS passed unused.
 * Process state: one cache per process (descriptors are per process).
 */
import { DESCRIPTOR_RELATIVE, locationOf } from './dir-identity.js';
import { VerifiedDir } from './verified-dir.js';
import { processSlot } from '../process-slots.js';

/** How many verified directories `withHeldDirSync` keeps open between calls (least recently used closed first). */
export const HELD_DIRS_MAX = 16;

/** A directory kept open between calls, with the containment predicate of the call using it now. */
interface HeldDir {
  dir: VerifiedDir;
  inside: { current: (p: string) => boolean };
}

/**
 * The cache's state (src/process-slots.ts): `dirs`, the held directories by authorized path, least recently used
 * first (Map order); `lastUse`, Date.now() of the last use of a held directory; `idleTimer`, the pending idle check
 * (unref'd: it never keeps the process alive), or null.
 */
const cache = processSlot('fs/held-dirs', () => ({
  dirs: new Map<string, HeldDir>(),
  lastUse: 0,
  idleTimer: null as ReturnType<typeof setTimeout> | null,
}));

/**
 * How long held directories stay open after the last `withHeldDirSync`, ms. A held descriptor keeps its filesystem
 * busy (`umount` fails with EBUSY) and a deleted directory allocated; an idle server holds none (
 * a file read on a mount kept that mount from being unmounted for as long as the server ran).
 */
export const HELD_DIRS_IDLE_MS = 1000;

/** Closes every held directory once none was used for HELD_DIRS_IDLE_MS; otherwise checks again later. */
function releaseWhenIdle(): void {
  cache.idleTimer = null;
  const idle = Date.now() - cache.lastUse;
  if (idle >= HELD_DIRS_IDLE_MS) {
    releaseHeldDirs();
    return;
  }
  cache.idleTimer = setTimeout(releaseWhenIdle, HELD_DIRS_IDLE_MS - idle);
  cache.idleTimer.unref?.();
}

/**
 * Runs `fn` synchronously on a verified descriptor of `dir` (absolute, real), reusing one an earlier call opened
 * (opening a file's directory from its root cost seven syscalls on every small read). A held descriptor is
 * used only after the one proof every verified directory gets (`assertDescriptorAt`): its /proc/self/fd location
 * equals `dir` exactly, now — a directory moved, deleted, or swapped for a link since the last call fails it and is
 * closed, and `dir` is opened afresh from its root, component by component, as `VerifiedDir.open` always does. After
 * the proof the state is what a fresh open leaves: a descriptor of the node now at `dir`, and the same window before
 * the caller's own re-check of what it opens (open-file.ts proves the opened file's location too).
 * Only where operations are descriptor-relative (Linux with /proc); elsewhere every call opens and closes `dir`.
 * `fn` must not keep the directory or use it after it returns (it stays open for the next call; it is never closed
 * under a running `fn`, because eviction happens only here, synchronously, and the idle release runs from a timer,
 * never during a synchronous `fn`). At most `HELD_DIRS_MAX` are held, and none once HELD_DIRS_IDLE_MS passed unused.
 * @throws as VerifiedDir.open, and whatever `fn` throws
 */
export function withHeldDirSync<T>(dir: string, isInside: (p: string) => boolean, fn: (d: VerifiedDir) => T): T {
  if (!DESCRIPTOR_RELATIVE) {
    const d = VerifiedDir.open(dir, isInside);
    try {
      return fn(d);
    } finally {
      d.close();
    }
  }
  let held = cache.dirs.get(dir);
  if (held) {
    cache.dirs.delete(dir);
    if (locationOf(held.dir.fd) !== dir) {
      held.dir.close();
      held = undefined;
    }
  }
  if (!held) {
    const inside = { current: isInside };
    held = { dir: VerifiedDir.open(dir, (p) => inside.current(p)), inside };
    // Held between calls: the stat of its open would be stale by the next one, so no caller may take it as fresh.
    held.dir.takeOpenStat();
  }
  held.inside.current = isInside;
  cache.dirs.set(dir, held);
  cache.lastUse = Date.now();
  if (cache.idleTimer === null) {
    cache.idleTimer = setTimeout(releaseWhenIdle, HELD_DIRS_IDLE_MS);
    cache.idleTimer.unref?.();
  }
  while (cache.dirs.size > HELD_DIRS_MAX) {
    const [oldest, entry] = cache.dirs.entries().next().value as [string, HeldDir];
    cache.dirs.delete(oldest);
    entry.dir.close();
  }
  return fn(held.dir);
}

/** Closes every held directory (after HELD_DIRS_IDLE_MS idle; tests; a process that wants its descriptors back). */
export function releaseHeldDirs(): void {
  for (const held of cache.dirs.values()) held.dir.close();
  cache.dirs.clear();
  if (cache.idleTimer !== null) clearTimeout(cache.idleTimer);
  cache.idleTimer = null;
}
