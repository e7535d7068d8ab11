/**
 * Path resolution and containment (docs/security.md "Roots" steps 4–5). The only creator of `AllowedPath`, the one path type
 * the file primitives accept, so "tools never touch a path that policy did not hand them" is enforced by the compiler.
 *
 * Order, like node-tar's [CHECKPATH] then [CHECKFS]: string checks first (NUL, empty; `~` is not expanded; relative
 * paths are relative to the first root), then the filesystem walk that follows symlinks the way the kernel does
 * (`link/..` is the link target's parent), resolving the nearest existing ancestor of a path that does not exist yet
 * and following dangling links to where they point. Containment is decided on the result with a separator boundary.
 * Existence outside the roots is never revealed: every outside path is NOT_ALLOWED, existing or not.
 */
import { lstat, readlink } from 'node:fs/promises';
import { closeSync, constants, lstatSync, openSync, readlinkSync, realpathSync, type Stats } from 'node:fs';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { refusalSource } from '../errors/to-envelope.js';
import { DESCRIPTOR_RELATIVE } from '../fs/dir-identity.js';
import { isCanonicalPosix, isEntryName, MAX_PATH_COMPONENTS, pathComponentCount } from '../fs/path-within.js';
import { findContainingRoot, isWithin } from './containment.js';
import { rejectedRootsDetails, rejectedRootsOf, rootsEmptyError, type EffectiveRoot } from './roots.js';

/** A resolved, contained, absolute path. Only this module creates one. */
export type AllowedPath = string & { readonly __brand: 'AllowedPath' };

/** What resolution found out about a requested path. */
export interface ResolvedPath {
  /** Exactly what the agent sent. */
  requested: string;
  /** The requested path made absolute (lexically normalized); used in messages and the secret check. */
  absolute: string;
  /** The resolved path: symlinks followed (except the last component when `followFinal` is false). */
  real: AllowedPath;
  /** The root that contains `real`. */
  root: EffectiveRoot;
  /** lstat of `real`, or null when it does not exist. */
  stats: Stats | null;
  /** True when the last component of the requested path was a symbolic link. */
  viaSymlink: boolean;
}

/** docs/security.md "Roots" resolution options. */
export interface ResolveOptions {
  /** Follow a symlink in the last component (read, write) or not (lstat-like: move or delete a link itself). */
  followFinal: boolean;
}

const MAX_LINKS = 40; // as Linux's MAXSYMLINKS

/**
 * Path separators of this platform: a backslash is one only on Windows. On POSIX it is an ordinary name character, so
 * splitting on it resolved the name `a\b` as `a/b`, and delete_path of a file named `a\b` deleted `a/b`.
 */
const SEPARATOR = path.sep === '\\' ? /[\\/]+/ : /\/+/;

/** PATH_MAX on Linux, in bytes with the terminating NUL: a path string must be shorter. */
export const PATH_MAX_BYTES = 4096;

/** The longest file name, in bytes (NAME_MAX on Linux and macOS; NTFS allows 255 UTF-16 units, at most this in UTF-8). */
export const NAME_MAX_BYTES = 255;

/**
 * String checks only (no IO): rejects non-strings, empty strings, NUL bytes, paths of PATH_MAX bytes or more and names
 * longer than NAME_MAX.
 * @throws ToolError VALIDATION
 */
export function assertPathString(requested: unknown, field = 'path'): asserts requested is string {
  if (typeof requested !== 'string' || requested.length === 0) {
    throw new ToolError('VALIDATION', `'${field}' must be a non-empty path string.`, {
      details: { reason: 'invalid_path', field },
    });
  }
  if (requested.includes('\0')) {
    throw new ToolError('VALIDATION', `'${field}' contains a NUL byte.`, { details: { reason: 'nul_byte', field } });
  }
  // Longer than PATH_MAX, the kernel refuses the path in every syscall (ENAMETOOLONG); refusing it here also bounds the
  // walk below, whose cost grows with the square of the length (a 100 KB path held the event loop for 12 s).
  // UTF-8 takes at most 3 bytes per UTF-16 code unit: a path of fewer than PATH_MAX_BYTES / 3 units is not measured.
  if (requested.length * 3 >= PATH_MAX_BYTES && Buffer.byteLength(requested) >= PATH_MAX_BYTES) {
    throw new ToolError(
      'VALIDATION',
      `'${field}' is longer than ${PATH_MAX_BYTES - 1} bytes, the longest path the system accepts.`,
      {
        details: { reason: 'path_too_long', field, limit: PATH_MAX_BYTES - 1 },
      },
    );
  }
  // A name longer than NAME_MAX cannot exist, and below a missing directory it would reach no syscall before the write
  // (a create under a missing parent made the parent, then failed on the name part-way through a commit). UTF-8 takes
  // at most 3 bytes per UTF-16 code unit (a surrogate pair's 4 bytes are two units), so a path of at most
  // NAME_MAX_BYTES / 3 units holds no such name and is not split to look (every read_file call passed here).
  if (requested.length * 3 <= NAME_MAX_BYTES) return;
  for (const name of requested.split(SEPARATOR)) {
    if (Buffer.byteLength(name) > NAME_MAX_BYTES) {
      throw new ToolError(
        'VALIDATION',
        `'${field}' has a name longer than ${NAME_MAX_BYTES} bytes, which no filesystem here can hold.`,
        {
          details: { reason: 'name_too_long', field, limit: NAME_MAX_BYTES },
        },
      );
    }
  }
}

/** The requested path made absolute: absolute as given, else relative to the first root (docs/security.md "Roots"). */
export function toAbsolute(requested: string, roots: readonly EffectiveRoot[]): string {
  return path.isAbsolute(requested) ? path.resolve(requested) : path.resolve(roots[0].real, requested);
}

/**
 * The deepest a spelling reaches, in components from the filesystem root: a name adds one, `..` takes one away (not
 * below the root), `.` and empty components nothing. `a/b/../..` reaches 2, like the walk that follows it.
 */
function peakDepth(spelling: string): number {
  let depth = 0;
  let peak = 0;
  for (const c of spelling.split(SEPARATOR)) {
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (depth > 0) depth--;
    } else if (++depth > peak) peak = depth;
  }
  return peak;
}

/** VALIDATION `path_too_deep` (docs/errors.md): the path, or where its links lead, is deeper than MAX_PATH_COMPONENTS. */
function tooDeepError(field: string, viaLink: boolean): ToolError {
  const what = viaLink ? `'${field}' leads through a symbolic link to` : `'${field}' is`;
  return new ToolError(
    'VALIDATION',
    `${what} a path of more than ${MAX_PATH_COMPONENTS} components, deeper than this server resolves.`,
    {
      details: { reason: 'path_too_deep', field, limit: MAX_PATH_COMPONENTS },
      suggestion: `Use a path of at most ${MAX_PATH_COMPONENTS} components (counted from the filesystem root), e.g. move deep content up.`,
    },
  );
}

/**
 * Resolves `requested` against the roots and checks containment.
 * @throws ToolError VALIDATION (empty, NUL, link loop; `path_too_deep`: the path as spelled, or as its links resolve,
 *   reaches more than MAX_PATH_COMPONENTS components), ROOTS_EMPTY, NOT_ALLOWED (outside the roots, whether or not
 *   it exists)
 */
export async function resolveInRoots(
  requested: string,
  roots: readonly EffectiveRoot[],
  options: ResolveOptions,
  field = 'path',
): Promise<ResolvedPath> {
  assertPathString(requested, field);
  if (roots.length === 0) {
    throw rootsEmptyError(roots); // names the actual cause and fix (docs/security.md "Roots")
  }
  const absolute = toAbsolute(requested, roots);
  // Walk the spelling as sent (not `absolute`): `link/..` must mean the link target's parent, as for the kernel.
  const unnormalized = path.isAbsolute(requested) ? requested : `${roots[0].real}${path.sep}${requested}`;
  // Before any IO: every step below costs one step per ancestor, some of them a syscall that walks every ancestor.
  if (peakDepth(unnormalized) > MAX_PATH_COMPONENTS) throw tooDeepError(field, false);
  const walked = await walk(unnormalized, options.followFinal);
  // Lexically inside a root, in its real or its given spelling (a root given through a symlink).
  const lexicallyInside =
    findContainingRoot(roots, absolute) !== undefined || roots.some((r) => isWithin(r.given, absolute));
  // details.roots: the roots in force (the agent needs no list_allowed_directories call to pick a path);
  // details.rejected_roots: the roots given but left out and why (a typo or `~/x` in a client's configuration).
  const rejected = rejectedRootsOf(roots);
  const outside = (reason: 'outside_roots' | 'symlink_target_outside') =>
    new ToolError('NOT_ALLOWED', 'Outside the roots.', {
      path: absolute,
      details: {
        reason,
        roots: roots.map((r) => r.real),
        ...rejectedRootsDetails(rejected),
      },
      suggestion:
        rejected.length > 0
          ? 'Use a path inside details.roots; details.rejected_roots were left out (fix them in the MCP configuration).'
          : 'Use a path inside details.roots.',
    });
  if (walked.loop) {
    // A loop outside the roots must look like any other outside path (its existence is never revealed).
    if (!lexicallyInside) throw outside('outside_roots');
    throw new ToolError('VALIDATION', `Too many levels of symbolic links in ${absolute}.`, {
      path: absolute,
      details: { reason: 'symlink_loop' },
    });
  }
  if (walked.tooDeep) {
    // Links led deeper than the bound; the walk stopped at `resolved`, a prefix of where they lead. Outside the roots
    // it is refused as outside (its depth is not revealed); a later `..` could have come back in: refused all the same.
    if (!findContainingRoot(roots, walked.resolved)) {
      throw outside(lexicallyInside ? 'symlink_target_outside' : 'outside_roots');
    }
    throw tooDeepError(field, true);
  }
  const root = findContainingRoot(roots, walked.resolved);
  if (!root) {
    throw outside(walked.resolved !== absolute && lexicallyInside ? 'symlink_target_outside' : 'outside_roots');
  }
  if (walked.accessDenied) {
    // Reported only now: inside the roots, an OS refusal is FILE_POLICY_DENIED (docs/security.md), outside it never shows.
    throw new ToolError('FILE_POLICY_DENIED', `The operating system denied access to ${absolute} (EACCES).`, {
      path: absolute,
      details: { source: refusalSource(absolute), errno: 'EACCES' },
    });
  }
  return {
    requested,
    absolute,
    real: walked.resolved as AllowedPath,
    root,
    stats: walked.stats,
    viaSymlink: walked.viaSymlink,
  };
}

/**
 * What `resolveInRoots(requested, roots, { followFinal: true })` answers for a regular file when `requested` is its
 * real path, decided without asking the kernel for the real path: `requested` is an absolute path in canonical
 * spelling (no `.`, `..`, doubled or trailing separator, no NUL) inside a root's real path, and `lstat` of it is a
 * regular file; then `real` is `requested` — IF no component on the way is a link, which this does not check. Null
 * otherwise (the full resolution decides). Only where an opened descriptor's location can be read (Linux with /proc):
 * a caller may use the answer only to open the file through src/fs/open-file.ts, whose proof that the opened
 * descriptor is at `real` exactly (/proc/self/fd, links resolved by the kernel) establishes that `real` was the real
 * path at that moment; when that open fails in any way, the caller must resolve in full (`resolveInRoots`) and decide
 * again. `lstat` follows a link on the way, so a link there makes this answer wrong, and the open's proof refuses it.
 */
export function resolveSpelledFile(requested: string, roots: readonly EffectiveRoot[]): ResolvedPath | null {
  if (!DESCRIPTOR_RELATIVE || roots.length === 0 || requested.length * 3 >= PATH_MAX_BYTES) return null;
  if (!isCanonicalPosix(requested) || requested.includes('\0')) return null;
  if (pathComponentCount(requested) > MAX_PATH_COMPONENTS) return null;
  const root = findContainingRoot(roots, requested);
  if (root === undefined) return null;
  let stats: Stats | undefined;
  try {
    stats = lstatSync(requested, { throwIfNoEntry: false });
  } catch {
    return null;
  }
  if (stats === undefined || !stats.isFile()) return null;
  return { requested, absolute: requested, real: requested as AllowedPath, root, stats, viaSymlink: false };
}

/**
 * A directory entry of an allowed directory, reached by name without following any link: allowed. The walker
 * (src/fs/walk.ts) is handed this to mint its entries' paths (it never descends into a symlink, so containment holds
 * by construction). `name` must be a single component from readdir; `directory` must be normalized (as an
 * AllowedPath is), else the result is its concatenation with `name`, not the normalized join.
 * @throws Error when `name` is not one entry name (a programming error)
 */
export function childOf(directory: AllowedPath, name: string): AllowedPath {
  if (!isEntryName(name)) {
    throw new Error(`childOf: not a directory entry name: ${JSON.stringify(name)}`);
  }
  // One call per entry of every walk: on POSIX a normalized directory and one entry name join by concatenation, as
  // path.join would; anything else goes through path.join.
  if (path.sep === '/' && directory.length > 1 && directory.charCodeAt(directory.length - 1) !== 0x2f) {
    return `${directory}/${name}` as AllowedPath;
  }
  return path.join(directory, name) as AllowedPath;
}

/**
 * The parent directory of an allowed path. Contained whenever the path is not itself a root (write authorization
 * refuses roots; openDirCreating re-checks every directory it creates).
 */
export function parentOf(real: AllowedPath): AllowedPath {
  return path.dirname(real) as AllowedPath;
}

interface Walked {
  resolved: string;
  stats: Stats | null;
  viaSymlink: boolean;
  /** A directory on the way could not be searched (EACCES); `resolved` is then lexical below it. */
  accessDenied?: boolean;
  /** Too many links (ELOOP); `resolved` is meaningless. */
  loop?: boolean;
  /** Links led deeper than MAX_PATH_COMPONENTS; `resolved` is where the walk stopped (a prefix of the target). */
  tooDeep?: boolean;
}

/**
 * Resolves like the kernel does: component by component, `..` applied to the resolved prefix, symlinks spliced in.
 * Below a missing (or unsearchable) component names are appended without IO (nearest existing ancestor rule); a `..`
 * that climbs back out of it resumes the real walk, so `missing/../link-out/x` cannot skip the link (joining the rest
 * lexically would, and a write would then create its file outside the roots).
 */
async function walk(input: string, followFinal: boolean): Promise<Walked> {
  if (followFinal) {
    const whole = await walkWhole(input);
    if (whole) return whole;
  }
  const walked = await walkComponents(input, followFinal);
  if (!walked.tooDeep || !followFinal) return walked;
  // The component walk stopped at the bound, where the kernel would have gone on (through a link past it, or down and
  // back up with `..`): had the path existed, walkWhole would have answered with the kernel's destination, outside
  // the roots or not. Answer the same way for a missing path, or whether a path outside exists would show (NOT_ALLOWED
  // vs path_too_deep): the kernel resolves the longest existing prefix, and the walk goes on from its real path.
  const rebased = rebasedOnKernelPrefix(input);
  return rebased === null ? walked : await walkComponents(rebased, followFinal);
}

/**
 * `input` with its longest prefix the kernel resolves replaced by that prefix's real path (links followed), or null
 * when the whole resolves or the kernel cannot tell. The prefix is found by bisection: resolution fails at the first
 * missing (or unsearchable) component and every longer prefix fails with it, so log n kernel walks, each linear.
 */
function rebasedOnKernelPrefix(input: string): string | null {
  const parsed = path.parse(input);
  const parts = componentsOf(input.slice(parsed.root.length));
  const prefix = (i: number) => parsed.root + parts.slice(0, i).join(path.sep);
  let lo = 0;
  let hi = parts.length;
  let found: { at: number; real: string } | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    let real: string | null;
    try {
      real = kernelResolved(prefix(mid));
    } catch {
      hi = mid - 1;
      continue;
    }
    if (real === null) return null;
    found = { at: mid, real };
    lo = mid + 1;
  }
  if (found === null || found.at === parts.length) return null;
  return path.join(found.real, ...parts.slice(found.at));
}

/**
 * The fast path of `walk`: the whole path exists; native realpath gives the answer in one call. Null when it does not
 * apply (a component missing or unsearchable, or a link swapped in since realpath): the component walk decides.
 * @throws errno errors other than ENOENT, ENOTDIR, EACCES, EPERM (ELOOP is a result: `loop`)
 */
async function walkWhole(input: string): Promise<Walked | null> {
  try {
    // The kernel's own resolution (`realPathOf`): linear in the depth the links lead to, and it fails the same way as
    // realpath(3) (a missing component, ELOOP: handled below), which reads every prefix again (quadratic) and runs
    // only where the kernel cannot tell (not Linux, no /proc, a deleted file). Synchronous: a few syscalls of a few µs,
    // where two thread-pool round trips were most of a small read_file's own latency. Only this fast path; the
    // component walk stays asynchronous.
    const resolved = realPathOf(input);
    if (pathComponentCount(resolved) > MAX_PATH_COMPONENTS) {
      return { resolved, stats: null, viaSymlink: false, tooDeep: true };
    }
    const stats = lstatSync(resolved);
    // realpath's answer holds no link; a link there now was swapped in since: resolve again, component by component
    // (reporting it as the "special file" it is not would tell the agent the path is forbidden for good).
    if (stats.isSymbolicLink()) return null;
    let viaSymlink = false;
    // Already canonical: the lstat above was of this very path (one fewer syscall on every read).
    const spelled = stripTrailingSep(input);
    if (spelled !== resolved) {
      try {
        viaSymlink = (await lstat(spelled)).isSymbolicLink();
      } catch {
        /* raced away: treat as not a link */
      }
    }
    return { resolved, stats, viaSymlink };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return { resolved: input, stats: null, viaSymlink: false, loop: true };
    if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'EACCES' && code !== 'EPERM') throw error;
    return null;
  }
}

/** Linux's O_PATH (the same value on x86-64 and arm64): a descriptor that only names a file, opening nothing. */
const O_PATH = 0o10000000;

/**
 * Where the kernel resolves `input` to (links followed), in one linear walk: an O_PATH descriptor's name in
 * /proc/self/fd, the same canonical path realpath(3) gives; null when not on Linux or /proc cannot tell.
 * @throws the open's errno error (ENOENT, ENOTDIR, EACCES, ELOOP, …), as realpath would throw it
 */
function kernelResolved(input: string): string | null {
  if (process.platform !== 'linux') return null;
  // O_NONBLOCK as every open here (an O_PATH open does not open the file: a FIFO cannot block it in any case).
  const fd = openSync(input, O_PATH | constants.O_NONBLOCK);
  try {
    const name = readlinkSync(`/proc/self/fd/${fd}`);
    // Not a usable path: deleted since the open (" (deleted)" appended), or not reachable from this root.
    return name.startsWith('/') && !name.endsWith(' (deleted)') ? name : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * The real path of an existing `p` (links followed): the kernel's answer where it has one (Linux: linear in the depth
 * the links lead to), else realpath(3), which reads every prefix again (quadratic in that depth).
 * @throws errno errors of the resolution (ENOENT, ENOTDIR, EACCES, ELOOP, …)
 */
export function realPathOf(p: string): string {
  return kernelResolved(p) ?? realpathSync.native(p);
}

/** The components of a path or link target, without empty and `.` ones. */
function componentsOf(s: string): string[] {
  return s.split(SEPARATOR).filter((c) => c !== '' && c !== '.');
}

/** Splices a link's `target` into the walk's queue; returns the walk's new position (the root for an absolute one). */
function spliceLink(queue: string[], current: string, target: string): string {
  if (!path.isAbsolute(target)) {
    queue.unshift(...componentsOf(target));
    return current;
  }
  const t = path.parse(target);
  queue.unshift(...componentsOf(target.slice(t.root.length)));
  return t.root;
}

/** The component walk of `walk` (see there). */
async function walkComponents(input: string, followFinal: boolean): Promise<Walked> {
  const parsed = path.parse(input);
  let current = parsed.root;
  const queue = componentsOf(input.slice(parsed.root.length));
  /** Components of `current`: a spliced link target can make it deeper than the spelling (MAX_PATH_COMPONENTS). */
  let depth = 0;
  let links = 0;
  let viaSymlink = false;
  let accessDenied = false;
  /** How many components of `current` lie at or below the first missing one (0: `current` exists). */
  let missingDepth = 0;
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (name === '..') {
      current = path.dirname(current);
      if (depth > 0) depth--;
      if (missingDepth > 0) missingDepth--;
      continue;
    }
    const next = path.join(current, name);
    if (++depth > MAX_PATH_COMPONENTS) return { resolved: next, stats: null, viaSymlink, tooDeep: true };
    const isLast = queue.length === 0;
    if (missingDepth > 0) {
      missingDepth++;
      current = next;
      continue;
    }
    let stats: Stats;
    try {
      stats = await lstat(next);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') accessDenied = true;
      else if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      missingDepth = 1;
      current = next;
      continue;
    }
    if (stats.isSymbolicLink() && (!isLast || followFinal)) {
      if (++links > MAX_LINKS) return { resolved: input, stats: null, viaSymlink, loop: true };
      let target: string;
      try {
        target = await readlink(next);
      } catch (error) {
        // Swapped for a non-link (EINVAL) or removed (ENOENT) since the lstat: look at this component again
        // (each retry counts towards MAX_LINKS, so a swap loop ends as symlink_loop, never as a crash).
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'EINVAL' && code !== 'ENOENT') throw error;
        depth--;
        queue.unshift(name);
        continue;
      }
      if (isLast) viaSymlink = true;
      depth--; // the link itself is replaced by its target
      current = spliceLink(queue, current, target);
      if (path.isAbsolute(target)) depth = 0;
      continue;
    }
    if (isLast) return { resolved: next, stats, viaSymlink: viaSymlink || stats.isSymbolicLink(), accessDenied };
    current = next;
  }
  // The walk ended below a missing component, or on the root or a `..` step (an existing, resolved directory).
  const stats = missingDepth > 0 ? null : await lstat(current).catch(() => null);
  return { resolved: current, stats, viaSymlink, accessDenied };
}

/** `p` without its trailing separators (a root keeps its own). */
function stripTrailingSep(p: string): string {
  // Most paths end in a name: nothing to strip, and no parse (path.parse and the regular expression were about 3 % of a
  // warming server's CPU per read_file).
  const last = p.charCodeAt(p.length - 1);
  if (last !== 0x2f && last !== 0x5c) return p;
  const root = path.parse(p).root;
  let out = p;
  while (out.length > root.length && /[\\/]$/.test(out)) out = out.slice(0, -1);
  return out;
}
