/**
 * Moving and deleting entries of authorized paths (docs/tools.md), through verified directory descriptors
 * (src/fs/verified-dir.ts) only.
 *
 * Moves never overwrite unless asked: files and links are moved with link(2)+unlink(2), which fails atomically on an
 * existing destination (there is no renameat2 in Node); directories are checked, then renamed. Moving a symlink
 * moves the link (link(2) does not follow it).
 *
 * A recursive delete is two walks of the same tree through descriptors, holding one directory descriptor at a time
 * (down with O_NOFOLLOW, up through `..` with its identity checked), so depth and PATH_MAX do not matter:
 *  1. `inspectTree` visits every entry (the caller's verdict may refuse the whole delete) and records each
 *     directory's entries by identity; a tree it cannot read completely is refused;
 *  2. `removeTree` removes exactly what was inspected, post-order: an entry not inspected, or a directory whose
 *     identity changed, stops it at once (NOT_ALLOWED changed_during_call) with nothing further removed.
 * Links are unlinked, never followed.
 */
import type { Stats } from 'node:fs';
import { ToolError } from '../errors/tool-error.js';
import { readCurrentIn } from './read-current.js';
import {
  changedError,
  sameNode,
  sameVersion,
  type FileIdentity,
  type NodeIdentity,
  type VerifiedDir,
} from './verified-dir.js';

/** What is expected at a move's destination, decided inside the path lock. */
export interface MoveExpectation {
  /** The source entry's identity as inspected. */
  source: NodeIdentity;
  /** null: the destination must not exist; otherwise the file it must still be (it is replaced). */
  destination: FileIdentity | null;
}

/**
 * Moves entry `srcName` of `src` to `dstName` of `dst`.
 * @throws ToolError VALIDATION destination_exists (the destination appeared), NOT_ALLOWED changed_during_call (the
 *   source or destination changed since inspected); errno errors (EXDEV → IO_ERROR)
 */
export async function moveEntry(
  src: VerifiedDir,
  srcName: string,
  dst: VerifiedDir,
  dstName: string,
  expect: MoveExpectation,
): Promise<void> {
  const s = src.lstat(srcName);
  if (!s || !sameNode(s, expect.source)) throw changedError(src.pathOf(srcName));
  const d = dst.lstat(dstName);
  if (expect.destination === null) {
    if (d) throw destinationExists(dst.pathOf(dstName));
  } else if (!d || !sameVersion({ dev: d.dev, ino: d.ino, size: d.size, mtimeMs: d.mtimeMs }, expect.destination)) {
    throw changedError(dst.pathOf(dstName));
  }
  if (!d && !s.isDirectory()) {
    try {
      src.link(srcName, dst, dstName);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') throw destinationExists(dst.pathOf(dstName));
      if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
      // Filesystems without hard links: check, then rename.
      if (dst.lstat(dstName)) throw destinationExists(dst.pathOf(dstName));
      src.rename(srcName, dst, dstName);
      await syncBoth(src, dst);
      return;
    }
    try {
      src.unlink(srcName);
    } catch (error) {
      // The destination exists now: the source could not be removed (reported with what was done).
      throw afterEffect(error, `linked ${dst.pathOf(dstName)}, but ${src.pathOf(srcName)} could not be removed`);
    }
  } else {
    if (!d && dst.lstat(dstName)) throw destinationExists(dst.pathOf(dstName));
    src.rename(srcName, dst, dstName);
  }
  await syncBoth(src, dst);
}

async function syncBoth(a: VerifiedDir, b: VerifiedDir): Promise<void> {
  await b.sync();
  if (a !== b) await a.sync();
}

function destinationExists(destination: string): ToolError {
  return new ToolError('VALIDATION', `${destination} already exists; nothing was moved.`, {
    path: destination,
    details: { reason: 'destination_exists' },
    suggestion:
      "Pass overwrite: true (with the destination's expected_hash) to replace it, or choose another destination.",
  });
}

/**
 * A failure after the call already changed something: the envelope keeps the cause's code and says what was done;
 * `details.mutation_applied` makes the call count against the mutation budget (src/server/call-tool.ts).
 */
export function afterEffect(cause: unknown, done: string, extra: Record<string, unknown> = {}): ToolError {
  if (cause instanceof ToolError) {
    cause.details.mutation_applied = true;
    cause.details.done = done;
    Object.assign(cause.details, extra);
    return cause;
  }
  const e = cause as NodeJS.ErrnoException;
  const errno = e && typeof e.code === 'string' ? e.code : 'unknown';
  return new ToolError('IO_ERROR', `The operation failed part-way (${errno}): ${done}.`, {
    path: typeof e?.path === 'string' ? e.path : null,
    details: { errno, mutation_applied: true, done, ...extra },
    cause,
  });
}

/** One entry met by `inspectTree`. */
export interface InspectedEntry {
  /** Relative to the inspected directory, `/`-separated (built lazily by concatenation: deep trees stay cheap). */
  relative: string;
  /** Logical absolute path. */
  absolute: string;
  name: string;
  /** Levels below the inspected directory (1: one of its own entries). */
  depth: number;
  stats: Stats;
}

/** What `inspectTree` saw: each directory's entries by identity, for `removeTree`. */
export interface InspectedTree {
  top: NodeIdentity;
  entries: number;
  /** Keyed by `dev:ino` of a directory: its entries' names → identity and whether a directory. */
  dirs: Map<string, Map<string, NodeIdentity & { dir: boolean }>>;
}

const keyOf = (id: NodeIdentity): string => `${id.dev}:${id.ino}`;

/** How long a tree walk or copy runs before it lets the event loop answer other calls, ms (docs/security.md). */
export const TREE_SLICE_MS = 10;

/**
 * A slicer for a long synchronous loop: call it after each step; it returns a promise to await once the loop has held
 * the event loop for `ms` since the last yield (a macrotask: other calls' I/O and timers run), else null (nothing to
 * await on the hot path). Docs/security.md "Bounded work": no call holds the loop for more than about 100 ms.
 */
export function loopSlicer(ms = TREE_SLICE_MS): () => Promise<void> | null {
  let sliceStart = performance.now();
  return () => {
    if (performance.now() - sliceStart < ms) return null;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        sliceStart = performance.now();
        resolve();
      }),
    );
  };
}

/** A directory being walked: its identity, path, sorted names and the next one to visit. */
interface Frame {
  id: NodeIdentity;
  path: string;
  relative: string;
  name: string;
  /** Levels below the walk's top (the top is 0). */
  depth: number;
  names: string[];
  next: number;
}

/**
 * A walk over the directory `top` that holds one descriptor at a time (see the module comment). `onEntry` is called
 * for each entry of the current directory; it returns true to descend into a directory entry.
 */
async function walkDescriptors(
  top: VerifiedDir,
  onEntry: (dir: VerifiedDir, frame: Frame, name: string) => 'descend' | 'next' | Promise<'descend' | 'next'>,
  onLeave: (parent: VerifiedDir, frame: Frame) => void,
  listNames: (dir: VerifiedDir, frame: Frame) => Promise<string[]>,
): Promise<void> {
  const stack: Frame[] = [];
  const slice = loopSlicer();
  const first: Frame = { id: top.identity, path: top.path, relative: '', name: '', depth: 0, names: [], next: 0 };
  first.names = await listNames(top, first);
  stack.push(first);
  let cur = top;
  try {
    while (stack.length > 0) {
      const due = slice();
      if (due) await due;
      const f = stack[stack.length - 1];
      if (f.next >= f.names.length) {
        stack.pop();
        if (stack.length === 0) break;
        const parent = stack[stack.length - 1];
        let up: VerifiedDir;
        if (stack.length === 1) {
          // Back at the top: its descriptor is still open; '..' of the child must be it.
          const check = cur.openParent(parent.id, parent.path);
          check.close();
          up = top;
        } else {
          up = cur.openParent(parent.id, parent.path);
        }
        if (cur !== top) cur.close();
        cur = up;
        onLeave(cur, f);
        continue;
      }
      const name = f.names[f.next++];
      if ((await onEntry(cur, f, name)) === 'descend') {
        const child = cur.openDir(name);
        const frame: Frame = {
          id: child.identity,
          path: child.path,
          relative: f.relative === '' ? name : `${f.relative}/${name}`,
          name,
          depth: f.depth + 1,
          names: [],
          next: 0,
        };
        if (cur !== top) cur.close();
        cur = child;
        frame.names = await listNames(child, frame);
        stack.push(frame);
      }
    }
  } finally {
    if (cur !== top) cur.close();
  }
}

/**
 * Visits every entry under `top` (not `top` itself), depth-first pre-order, names sorted; `visit` may throw to refuse,
 * or return false to keep the walk out of a directory entry (a protected one whose contents do not matter).
 * Links are reported, never followed. `visit` also gets the verified directory holding the entry (e.g. to read a
 * link's target through it); it must not keep it.
 *
 * The caps fail closed without telling the walk's order: past `limit` entries the walk stops (nothing the caller
 * decided about the entries met before is answered instead), and an entry deeper than `maxDepth` is not visited, the
 * walk goes on without descending, and `too_deep` is thrown once the walk is complete — so which refusal comes back
 * does not depend on whether a protected name sorts before or after the entry at a cap (docs/security.md
 * "Whole-tree operations").
 * @param limit most entries before refusing (VALIDATION too_many_entries)
 * @param maxDepth most levels below `top` (VALIDATION too_deep, details.limit, after the walk); none when absent
 * @throws ToolError NOT_ALLOWED changed_during_call (an entry vanished or changed under the walk), VALIDATION
 *   too_many_entries or too_deep, whatever `visit` throws; errno errors from reading a directory (the tree is then
 *   refused)
 */
export async function inspectTree(
  top: VerifiedDir,
  visit: (e: InspectedEntry, dir: VerifiedDir) => void | boolean,
  limit: number,
  signal?: AbortSignal,
  maxDepth?: number,
): Promise<InspectedTree> {
  const tree: InspectedTree = { top: top.identity, entries: 0, dirs: new Map() };
  let tooDeep = false;
  await walkDescriptors(
    top,
    (dir, frame, name) => {
      if (signal?.aborted)
        throw new ToolError('VALIDATION', 'The call was cancelled.', { details: { reason: 'cancelled' } });
      if (maxDepth !== undefined && frame.depth + 1 > maxDepth) {
        tooDeep = true;
        return 'next';
      }
      const st = dir.lstat(name);
      if (!st) throw changedError(dir.pathOf(name));
      if (++tree.entries > limit) {
        throw new ToolError(
          'VALIDATION',
          `${top.path} holds more than ${limit} entries; refusing to carry it in one call.`,
          {
            path: top.path,
            details: { reason: 'too_many_entries', limit },
          },
        );
      }
      const relative = frame.relative === '' ? name : `${frame.relative}/${name}`;
      const verdict = visit({ relative, absolute: dir.pathOf(name), name, depth: frame.depth + 1, stats: st }, dir);
      tree.dirs.get(keyOf(frame.id))!.set(name, { dev: st.dev, ino: st.ino, dir: st.isDirectory() });
      return st.isDirectory() && verdict !== false ? 'descend' : 'next';
    },
    () => undefined,
    async (dir, frame) => {
      const names = (await dir.readdir()).map((d) => d.name).sort();
      tree.dirs.set(keyOf(frame.id), new Map());
      return names;
    },
  );
  if (tooDeep) {
    throw new ToolError('VALIDATION', `${top.path} holds entries deeper than ${maxDepth} levels; nothing was done.`, {
      path: top.path,
      details: { reason: 'too_deep', limit: maxDepth },
      suggestion: 'Work on a deeper subtree per call.',
    });
  }
  return tree;
}

/**
 * Whether `after` (a later `inspectTree` of the same directory) holds nothing `before` did not: every directory of
 * `after` was seen by `before` and each of its entries is the same node under the same name. Entries gone since are
 * allowed (carrying less is never more than was authorized). Used after a tree was moved, to prove that nothing was
 * added to it between its inspection and the rename.
 */
export function holdsOnlyInspected(before: InspectedTree, after: InspectedTree): boolean {
  if (!sameNode(before.top, after.top)) return false;
  for (const [key, names] of after.dirs) {
    const seen = before.dirs.get(key);
    if (!seen) return false;
    for (const [name, id] of names) {
      const was = seen.get(name);
      if (!was || !sameNode(was, id) || was.dir !== id.dir) return false;
    }
  }
  return true;
}

/**
 * Removes the directory `name` of `parent` and everything beneath it, exactly as `inspected` saw it.
 * @returns entries removed beneath it (the directory itself not counted)
 * @throws ToolError NOT_ALLOWED changed_during_call (nothing further removed; details.removed and
 *   details.mutation_applied when something already was); errno errors the same way
 */
export async function removeTree(parent: VerifiedDir, name: string, inspected: InspectedTree): Promise<number> {
  let removed = 0;
  try {
    const top = parent.openDir(name);
    try {
      if (!sameNode(top.identity, inspected.top)) throw changedError(top.path);
      await walkDescriptors(
        top,
        (dir, frame, entry) => {
          const seen = inspected.dirs.get(keyOf(frame.id))?.get(entry);
          const st = dir.lstat(entry);
          if (!st) return 'next'; // already gone
          if (!seen || !sameNode(st, seen) || seen.dir !== st.isDirectory())
            throw changedError(dir.pathOf(entry), 'changed_during_call');
          if (st.isDirectory()) return 'descend';
          dir.unlink(entry);
          removed++;
          return 'next';
        },
        (up, frame) => {
          rmdirExpected(up, frame.name, frame.id);
          removed++;
        },
        async (dir, frame) => {
          if (!inspected.dirs.has(keyOf(frame.id))) throw changedError(dir.path);
          return (await dir.readdir()).map((d) => d.name).sort();
        },
      );
    } finally {
      top.close();
    }
    rmdirExpected(parent, name, inspected.top);
    await parent.sync();
    return removed;
  } catch (error) {
    if (removed === 0) throw error;
    throw afterEffect(
      error,
      `${removed} entries beneath ${parent.pathOf(name)} were removed before the delete stopped`,
      { removed },
    );
  }
}

/**
 * Removes the emptied directory `name` of `parent`, which must still be the node emptied (not a link or another
 * directory swapped in under its name meanwhile).
 * @throws ToolError NOT_ALLOWED changed_during_call
 */
function rmdirExpected(parent: VerifiedDir, name: string, expected: NodeIdentity): void {
  const st = parent.lstat(name);
  if (!st || !st.isDirectory() || !sameNode(st, expected)) throw changedError(parent.pathOf(name));
  try {
    parent.rmdir(name);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR' || code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT')
      throw changedError(parent.pathOf(name));
    throw error;
  }
}

/**
 * Deletes a file or link entry, which must still be `expected` (the node that was inspected and hashed).
 * @throws ToolError NOT_ALLOWED changed_during_call; errno errors
 */
export async function removeEntry(parent: VerifiedDir, name: string, expected: NodeIdentity): Promise<void> {
  const st = parent.lstat(name);
  if (!st || !sameNode(st, expected) || st.isDirectory()) throw changedError(parent.pathOf(name));
  parent.unlink(name);
  await parent.sync();
}

/**
 * Deletes an empty directory entry, which must still be `expected`.
 * @throws ToolError VALIDATION directory_not_empty, NOT_ALLOWED changed_during_call; errno errors
 */
export async function removeEmptyDir(parent: VerifiedDir, name: string, expected: NodeIdentity): Promise<void> {
  const st = parent.lstat(name);
  if (!st || !sameNode(st, expected) || !st.isDirectory()) throw changedError(parent.pathOf(name));
  try {
    parent.rmdir(name);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') throw directoryNotEmpty(parent.pathOf(name));
    throw error;
  }
  await parent.sync();
}

/** VALIDATION directory_not_empty. */
export function directoryNotEmpty(p: string): ToolError {
  return new ToolError('VALIDATION', `${p} is a directory that is not empty.`, {
    path: p,
    details: { reason: 'directory_not_empty' },
    suggestion: 'Pass recursive: true to delete it with everything inside.',
  });
}

/** One entry of a tree as `snapshotTree` recorded it (relative `/`-separated, pre-order: a directory first). */
export interface SnapshotEntry {
  /** Relative to the top, `/`-separated entry names as the walk read them (never `.`, `..` or empty). */
  relative: string;
  /** A file (its hash, and its bytes when asked for), a directory (its permission bits) or a link (its target). */
  state:
    | { kind: 'file'; hash: string; bytes: Buffer | null; mode: number }
    | { kind: 'directory'; mode: number }
    | { kind: 'symlink'; target: string };
}

/**
 * What `snapshotTree` recorded, or why it stopped: a tree too large for the undo history, or one holding an
 * entry it may not record (a special file — FIFO, socket, device — which a revert could not recreate, or an entry the
 * caller's `recordable` refuses).
 */
export type TreeSnapshot = { entries: SnapshotEntry[] } | { tooLarge: true } | { unrecordable: true };

/**
 * Records every entry under `top` (not `top` itself) for the undo history of a tree operation: each
 * file's hash (and bytes with `wantBytes`), each directory's mode, each link's target, read through the verified
 * descriptors of the walk (no path is followed). Stops as soon as the record would exceed `maxBytes` (file bytes
 * counted base64, plus a per-entry overhead) or `maxEntries`, and returns `{ tooLarge: true }`; at a special file, or
 * an entry `recordable` refuses (the undo history's visibility rule: a secret, hidden or denied entry), it returns
 * `{ unrecordable: true }` without opening it.
 * @throws ToolError NOT_ALLOWED changed_during_call (an entry vanished or changed under the walk); errno errors from
 *   reading
 */
export async function snapshotTree(
  top: VerifiedDir,
  options: {
    wantBytes: boolean;
    maxBytes: number;
    maxEntries: number;
    recordable?: (absolute: string) => boolean;
  },
): Promise<TreeSnapshot> {
  const entries: SnapshotEntry[] = [];
  let bytes = 0;
  const stop = new Error('too large');
  const special = new Error('unrecordable');
  try {
    await walkDescriptors(
      top,
      async (dir, frame, name) => {
        const st = dir.lstat(name);
        if (!st) throw changedError(dir.pathOf(name));
        const relative = frame.relative === '' ? name : `${frame.relative}/${name}`;
        // Roughly what the JSON record of the entry costs: its path and fields (the bytes are counted below).
        bytes += Buffer.byteLength(dir.pathOf(name)) + 160;
        if (entries.length >= options.maxEntries || bytes > options.maxBytes) throw stop;
        if (options.recordable && !options.recordable(dir.pathOf(name))) throw special;
        if (st.isDirectory()) {
          entries.push({ relative, state: { kind: 'directory', mode: st.mode & 0o777 } });
          return 'descend';
        }
        if (st.isSymbolicLink()) {
          const target = dir.readlink(name);
          bytes += Buffer.byteLength(target);
          entries.push({ relative, state: { kind: 'symlink', target } });
          return 'next';
        }
        if (!st.isFile()) throw special;
        if (options.wantBytes && Math.ceil(st.size / 3) * 4 + bytes > options.maxBytes) throw stop;
        const file = await readCurrentIn(dir, name, { wantBytes: options.wantBytes, maxBytes: options.maxBytes });
        if (!file.exists || !file.stats || !sameNode(file.stats, st)) throw changedError(dir.pathOf(name));
        bytes += file.bytes ? Math.ceil(file.bytes.length / 3) * 4 : 0;
        if (bytes > options.maxBytes) throw stop;
        entries.push({
          relative,
          state: { kind: 'file', hash: file.hash!, bytes: file.bytes, mode: file.stats.mode & 0o777 },
        });
        return 'next';
      },
      () => undefined,
      async (dir) => (await dir.readdir()).map((d) => d.name).sort(),
    );
  } catch (error) {
    if (error === stop) return { tooLarge: true };
    if (error === special) return { unrecordable: true };
    throw error;
  }
  return { entries };
}
