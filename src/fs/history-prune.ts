/**
 * The undo history's bounds (src/fs/history.ts): dropping the oldest records beyond --history-max-changes and
 * --history-max-bytes, and `meta.json`, the count of changes dropped (and of changes too large to record) that the
 * listing's note reports.
 *
 * A record is published (renamed into place, its directory fsynced) before the call answers; the prune that keeps the
 * bounds runs after it, off the call's path (`schedulePrune`): the answer does not wait for the directory listing, the
 * unlinks or meta.json's durable rewrite (two fsyncs). In this process, prunes and meta.json updates of one history
 * directory run one at a time, in order (a queue per directory), and a prune asked for while one is queued and not yet
 * started joins it: that prune lists the directory after every record published so far. Across processes sharing a
 * state directory, each record is counted by the one process whose unlink removed it, and meta.json's
 * read-increment-rewrite is serialized by `meta.lock` (created with O_EXCL beside it, held for one read and one
 * durable write, broken when older than META_LOCK_STALE_MS: its holder was killed). `loadHistory` waits for this
 * process's queued work first, so a listing after a change sees the bounds applied. What a crash at each point leaves:
 * docs/security.md "The undo history's bounds after a crash".
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  statSync,
} from 'node:fs';
import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ID_PATTERN, readRecord, unlinkQuietly, writeDurably } from './history-files.js';
import { loopSlicer } from './tree-ops.js';
import { processSlot } from '../process-slots.js';

/** Bounds of the history. */
export interface HistoryLimits {
  /** Most changes kept. Default 200 (--history-max-changes). */
  maxChanges: number;
  /** Most bytes of records kept on disk. Default 64 MiB (--history-max-bytes). */
  maxBytes: number;
}

const MetaSchema = z.strictObject({
  dropped: z.number().int().min(0),
  last_dropped_id: z.string().regex(ID_PATTERN).nullable(),
  skipped: z.number().int().min(0).optional(),
});
type Meta = z.output<typeof MetaSchema>;

/** The work queued for one history directory in this process. */
interface DirQueue {
  /** The last task queued (settled: never rejects). */
  tail: Promise<void>;
  /** A prune queued and not yet started: a later change joins it instead of queueing another. */
  pending: Promise<void> | null;
  /** The bounds the next prune applies (the latest asked for). */
  limits: HistoryLimits;
}

/**
 * The state kept between calls (src/process-slots.ts): `queues`, per history directory, the work queued there;
 * `recordSizes`, per history directory (at most MAX_SIZED_DIRS), the size of each record seen, by file name. A record
 * is written once, under a fresh name (milliseconds and 48 random bits) by a rename, and never rewritten by any
 * fs-tools process, so the size seen once is its size; a name this process has not seen (another process's record, a
 * file put there) is stat'ed. A file someone rewrote in place under a record's name after it was seen counts at its
 * old size until this process restarts (whoever can do that can fill the disk directly; reading it back is validated
 * as ever, and a record over --history-max-bytes is never read).
 */
const pruneState = processSlot('fs/history-prune', () => ({
  queues: new Map<string, DirQueue>(),
  recordSizes: new Map<string, Map<string, number>>(),
}));

/** Most history directories whose record sizes are kept. */
const MAX_SIZED_DIRS = 16;

/** Age (ms, by its ctime) past which `meta.lock` is broken: its holder (one read, one durable write) was killed. */
export const META_LOCK_STALE_MS = 5_000;
/** Pause (ms) between two attempts at a `meta.lock` another process holds. */
const META_LOCK_RETRY_MS = 5;
/**
 * Longest wait (ms) for `meta.lock`: past it the one meta.json update fails (EBUSY, logged by the caller) rather than
 * waiting on a lock that some process keeps fresh, or one whose time lies ahead of the clock, for ever.
 */
export const META_LOCK_WAIT_MS = 2 * META_LOCK_STALE_MS;

/** The dropped and skipped counts in `dir`/meta.json (all zero when it is absent or invalid). */
export async function readMeta(dir: string): Promise<Meta> {
  try {
    const parsed = MetaSchema.safeParse(await readRecord(path.join(dir, 'meta.json')));
    if (parsed.success) return parsed.data;
  } catch {
    /* absent or unreadable: nothing dropped yet */
  }
  return { dropped: 0, last_dropped_id: null };
}

function queueOf(dir: string): DirQueue {
  let q = pruneState.queues.get(dir);
  if (!q) {
    q = { tail: Promise.resolve(), pending: null, limits: { maxChanges: Infinity, maxBytes: Infinity } };
    pruneState.queues.set(dir, q);
  }
  return q;
}

/** Runs `task` after every task queued for `dir` before it. @returns its outcome (the queue goes on either way) */
function enqueue(dir: string, task: () => Promise<void>): Promise<void> {
  const q = queueOf(dir);
  const run = q.tail.then(task);
  const settled = run.catch(() => undefined);
  q.tail = settled;
  void settled.then(() => {
    if (q.tail === settled && q.pending === null) pruneState.queues.delete(dir);
  });
  return run;
}

/**
 * Resolves once every prune and meta.json update queued for the history directory `dir` in this process has run
 * (`loadHistory` waits for it). Never rejects.
 */
export function historySettled(dir: string): Promise<void> {
  return pruneState.queues.get(dir)?.tail ?? Promise.resolve();
}

/**
 * Resolves once the work queued for every history directory in this process has run, or after `maxMs` (shutdown: a
 * prune cut off holding `meta.lock` would make the next update elsewhere wait META_LOCK_STALE_MS). Never rejects.
 */
export async function allHistoriesSettled(maxMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, maxMs);
  });
  await Promise.race([Promise.all([...pruneState.queues.values()].map((q) => q.tail)), late]);
  clearTimeout(timer);
}

/**
 * Asks for the bounds to be applied to `dir` after the record `newest` (`size` bytes) was published; the prune starts
 * after the current turn of the event loop (the call's answer goes first) and after the work queued before it. A
 * failure is logged to stderr (no path): the change and its record stand, and the next prune catches up.
 * @returns when that prune has run (never rejects)
 */
export function schedulePrune(
  dir: string,
  limits: HistoryLimits,
  newest: { name: string; size: number },
): Promise<void> {
  sizesOf(dir).set(newest.name, newest.size);
  const q = queueOf(dir);
  q.limits = limits;
  if (q.pending) return q.pending;
  const run: Promise<void> = enqueue(dir, async () => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (q.pending === run) q.pending = null;
    try {
      await prune(dir, q.limits);
    } catch (error) {
      process.stderr.write(
        `fs-tools: the undo history could not drop its oldest changes (${(error as NodeJS.ErrnoException).code ?? 'error'})\n`,
      );
    }
  });
  q.pending = run;
  return run;
}

/**
 * Counts a change that was not recorded because its record would exceed --history-max-bytes; the listing's note says
 * so. Queued after this process's prunes of `dir`.
 * @throws Node errno errors (the caller logs them)
 */
export async function recordSkippedIn(dir: string): Promise<void> {
  await enqueue(dir, () => updateMeta(dir, (meta) => ({ ...meta, skipped: (meta.skipped ?? 0) + 1 })));
}

function sizesOf(dir: string): Map<string, number> {
  let known = pruneState.recordSizes.get(dir);
  if (!known) {
    if (pruneState.recordSizes.size >= MAX_SIZED_DIRS)
      pruneState.recordSizes.delete(pruneState.recordSizes.keys().next().value!);
    known = new Map();
    pruneState.recordSizes.set(dir, known);
  }
  return known;
}

/**
 * Drops the oldest records beyond the bounds (never the newest). Sizes come from `pruneState.recordSizes`; a name not
 * seen yet gets one synchronous stat, in slices of the event loop (an asynchronous stat of every record on every change
 * was the largest cost of a small mutation under load). A record another process removed first is counted by that
 * one only; this process's drops are added to meta.json under `meta.lock`.
 */
async function prune(dir: string, limits: HistoryLimits): Promise<void> {
  const all = await readdir(dir);
  removeStaleStaged(dir, all);
  const names = all.filter((n) => n.endsWith('.json') && n !== 'meta.json' && ID_PATTERN.test(n.slice(0, -5))).sort();
  const known = sizesOf(dir);
  const now = new Map<string, number>();
  const sizes: number[] = [];
  const slice = loopSlicer();
  for (const n of names) {
    let size = known.get(n);
    if (size === undefined) {
      size = statSync(path.join(dir, n), { throwIfNoEntry: false })?.size;
      const due = slice();
      if (due) await due;
    }
    if (size !== undefined) now.set(n, size);
    sizes.push(size ?? 0);
  }
  let total = sizes.reduce((a, b) => a + b, 0);
  let count = names.length;
  let dropped = 0;
  let lastDropped: string | null = null;
  const failure: { error?: NodeJS.ErrnoException } = {};
  // Never drop the newest change: it was just recorded (and alone fits the byte bound).
  for (let i = 0; i < names.length - 1 && (count > limits.maxChanges || total > limits.maxBytes); i++, count--) {
    // Removed first by another server sharing the state directory: counted (and meta.json rewritten) by that one only.
    // One that cannot be removed (a directory put under a record's name: EISDIR) is passed over, not counted as a
    // change (the listing counts it invalid), and reported once the others are dropped: it must not stop every prune.
    const removed = await unlink(path.join(dir, names[i])).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') failure.error ??= error;
        return false;
      },
    );
    total -= sizes[i];
    now.delete(names[i]);
    if (!removed) continue;
    dropped++;
    lastDropped = names[i].slice(0, -5);
  }
  // Sizes of records published since the listing (their prune is queued) are kept for it.
  const newest = names.length > 0 ? names[names.length - 1] : '';
  for (const [n, s] of known) if (n > newest) now.set(n, s);
  pruneState.recordSizes.delete(dir);
  sizesOf(dir); // makes room (the least recently pruned directory goes)
  pruneState.recordSizes.set(dir, now);
  if (dropped > 0) {
    await updateMeta(dir, (meta) => ({
      ...meta,
      dropped: meta.dropped + dropped,
      last_dropped_id:
        meta.last_dropped_id !== null && meta.last_dropped_id > lastDropped! ? meta.last_dropped_id : lastDropped,
    }));
  }
  if (failure.error) throw failure.error;
}

/** Reads, changes and durably rewrites `dir`/meta.json under `meta.lock` (no other process's update is lost). */
async function updateMeta(dir: string, change: (meta: Meta) => Meta): Promise<void> {
  const lockPath = path.join(dir, 'meta.lock');
  const own = await takeMetaLock(lockPath);
  try {
    await writeDurably(path.join(dir, 'meta.json'), JSON.stringify(change(await readMeta(dir))));
  } finally {
    if (sameLock(lstatSync(lockPath, { throwIfNoEntry: false }), own)) unlinkQuietly(lockPath);
  }
}

/**
 * A lock file's identity: its inode and birth time (ms; 0 where the file system keeps none). The inode alone is not
 * enough: ext4 gives a file created right after an unlink the freed inode (100 of 100 times here), so a process that
 * saw the stale lock and renamed the lock another process had just taken in its place saw "the same inode" and removed
 * a live lock (two writers).
 */
interface LockId {
  ino: number;
  birthtimeMs: number;
}

function sameLock(st: { ino: number; birthtimeMs: number } | undefined, id: LockId): boolean {
  return st !== undefined && st.ino === id.ino && st.birthtimeMs === id.birthtimeMs;
}

/** open(2) flags of `meta.lock`: created exclusively, never through a link, never blocking (a FIFO at the name). */
const META_LOCK_FLAGS =
  constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/**
 * Creates `lockPath` (O_EXCL), waiting while another process holds it; one older than META_LOCK_STALE_MS (by its
 * ctime) is broken. @returns the lock's identity (`LockId`) @throws Node errno errors other than EEXIST (and of a failed
 * break); an Error with code EBUSY after META_LOCK_WAIT_MS of waiting
 */
async function takeMetaLock(lockPath: string): Promise<LockId> {
  const giveUpAt = Date.now() + META_LOCK_WAIT_MS;
  for (;;) {
    if (Date.now() > giveUpAt)
      throw Object.assign(new Error('meta.lock stayed taken: the undo history count was not updated'), {
        code: 'EBUSY',
      });
    let fd: number;
    try {
      fd = openSync(lockPath, META_LOCK_FLAGS, 0o600);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        mkdirSync(path.dirname(lockPath), { recursive: true, mode: 0o700 });
        continue;
      }
      if (code !== 'EEXIST') throw error;
      const st = lstatSync(lockPath, { throwIfNoEntry: false });
      if (st && Date.now() - st.ctimeMs >= META_LOCK_STALE_MS) breakStale(lockPath, st);
      else if (st) await new Promise((resolve) => setTimeout(resolve, META_LOCK_RETRY_MS));
      continue;
    }
    try {
      const st = fstatSync(fd);
      return { ino: st.ino, birthtimeMs: st.birthtimeMs };
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * Removes the stale lock `lockPath` (identity `stale`): renamed aside, then unlinked if it is still that file; a lock
 * another process took in between is linked back (unless yet another was taken since).
 * @throws Node errno errors of the rename other than ENOENT (a directory this process cannot write in: retrying at
 *   once would spin for ever)
 */
function breakStale(lockPath: string, stale: LockId): void {
  const aside = `${lockPath}.${randomBytes(6).toString('hex')}.stale`;
  try {
    renameSync(lockPath, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // broken by another process first
    throw error;
  }
  if (!sameLock(lstatSync(aside, { throwIfNoEntry: false }), stale)) {
    try {
      linkSync(aside, lockPath);
    } catch {
      /* a newer lock stands there */
    }
  }
  unlinkQuietly(aside);
}

/** A staged record's temporary (src/fs/history.ts `stageChange`): `<id>.json.<8 hex>.tmp`. */
const STAGED_PATTERN = /^([0-9]{15})-[0-9a-f]{12}\.json\.[0-9a-f]{8}\.tmp$/;

/**
 * Age (ms, by its id) past which `prune` removes a staged record's temporary: one lives for one write's effect; an
 * older one was left by a process killed before publishing it, and nothing else reads, counts or removes it.
 */
export const STALE_STAGED_MS = 60 * 60 * 1000;

/**
 * What meta.json's updates leave when their process is killed: meta.json's temporary (`writeDurably`:
 * `meta.json.<8 hex>.tmp`, alive for one write under `meta.lock`) and a stale lock renamed aside to be removed
 * (`breakStale`: `meta.lock.<12 hex>.stale`, alive for a few syscalls).
 */
const META_LEFTOVER_PATTERN = /^meta\.(?:json\.[0-9a-f]{8}\.tmp|lock\.[0-9a-f]{12}\.stale)$/;
/** Most meta.json leftovers one prune examines (one lstat each, on the event loop); the rest wait for the next. */
const MAX_META_LEFTOVERS = 64;

/**
 * Removes the leftovers among `names` (entries of the history directory `dir`) older than STALE_STAGED_MS: staged
 * record temporaries by the time in their id, meta.json's leftovers (`META_LEFTOVER_PATTERN`, at most
 * MAX_META_LEFTOVERS a call) by their last change (the later of mtime and ctime; ctime cannot be set back), regular
 * files only (a directory planted under such a name stays).
 */
function removeStaleStaged(dir: string, names: readonly string[]): void {
  const now = Date.now();
  const before = now - STALE_STAGED_MS;
  let examined = 0;
  for (const n of names) {
    const m = STAGED_PATTERN.exec(n);
    if (m && Number(m[1]) < before) unlinkQuietly(path.join(dir, n));
    else if (!m && examined < MAX_META_LEFTOVERS && META_LEFTOVER_PATTERN.test(n)) {
      examined++;
      let st;
      try {
        st = lstatSync(path.join(dir, n), { throwIfNoEntry: false });
      } catch {
        continue; // unreadable: left for a later prune
      }
      if (st?.isFile() && now - Math.max(st.mtimeMs, st.ctimeMs) >= STALE_STAGED_MS) unlinkQuietly(path.join(dir, n));
    }
  }
}
