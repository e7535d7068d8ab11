/**
 * Near paths for NOT_FOUND: up to NEAR_LIMIT existing paths the agent probably meant, so a typo costs no
 * list_directory / search_files round trip. Policy decides what may be offered: never a secret (unless
 * --allow-secrets), never a policy-hidden or denied path, never anything under `.git`, never a symbolic link (its
 * target may lie outside the roots), never anything outside the roots. The work is bounded (NEAR_MAX_DIRS directories,
 * NEAR_MAX_MS milliseconds, NEAR_MAX_ENTRIES entries per directory); when a bound is reached the search stops and
 * offers what it found — never more than it checked.
 *
 * Where it looks, in order of the list:
 * 1. the same directory: entries whose name equals the requested name ignoring case, or lies within edit distance
 *    NEAR_MAX_DISTANCE of it (Levenshtein), closest first;
 * 2. a mistyped directory: when the parent directory is missing, the grandparent's directories within that distance
 *    of the parent's name that hold an entry of the requested name (`srcc/util.ts` → `src/util.ts`);
 * 3. the same name elsewhere: a breadth-first walk for entries of exactly the requested name (ignoring case) —
 *    under the path's nearest existing ancestor first, then its root, then the other roots — shallowest first. The walk does not read .gitignore; it skips `.git` and
 *    `node_modules` directories (bounded work, and where agents rarely mean to go), and what the policy hides.
 * Before these, on POSIX, a path spelled with `\` (`src\util.ts`, one name there) offers the same path with `/` for
 * `\` when that exists: the backslash path itself is never accepted in its place (`\` is an ordinary name character
 * on POSIX, and a file may be named so).
 *
 * For NOT_ALLOWED of a path outside the roots (`outsideNearPaths`), the inside paths whose last components match the
 * given path's: the given path's last components re-rooted on each root (longest suffix first, at most
 * NEAR_MAX_SUFFIX components), then the same-name walk of step 3 over the roots, ranked by how many trailing components
 * match. Only the given string and the inside of the roots are looked at — the outside path is never touched, so the
 * list says nothing about it. Docs: docs/errors.md, "The error envelope".
 */
import type { Dirent } from 'node:fs';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { loopSlicer } from '../fs/tree-ops.js';
import { withVerifiedDir } from '../fs/verified-dir.js';
import { processNearListings, type NearListing } from './near-listings.js';
import { classifyEntry, type PolicyContext } from './authorize.js';
import { findContainingRoot, isInsideRoots, isWithin, toPosixRelative } from './containment.js';
import { resolveInRoots, type ResolvedPath } from './resolve-path.js';

/** Most near paths offered. */
export const NEAR_LIMIT = 5;
/** Largest name edit distance (Levenshtein) offered from the same directory. */
export const NEAR_MAX_DISTANCE = 2;
/** Most directories the same-name walk reads (over all roots). */
export const NEAR_MAX_DIRS = 2000;
/** Wall-clock bound of the whole search, in milliseconds. */
export const NEAR_MAX_MS = 150;
/** Most near-named sibling directories of a missing parent that are opened (step 2). */
export const NEAR_MAX_UNCLES = 10;
/** Most entries read from one directory. */
export const NEAR_MAX_ENTRIES = 5000;
/** Most trailing components of an outside path re-rooted on a root (outsideNearPaths). */
export const NEAR_MAX_SUFFIX = 8;
/** Most same-name entries the walk of an outside path collects before ranking them. */
const NEAR_MAX_COLLECTED = 50;

const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

/**
 * Levenshtein distance of a and b, or Infinity when it exceeds `max`. Banded (only cells with |i − j| ≤ max), so a
 * comparison costs O(len · max), never O(len²): a directory of long, nearly equal names stays cheap.
 */
export function editDistance(a: string, b: string, max = NEAR_MAX_DISTANCE): number {
  if (Math.abs(a.length - b.length) > max) return Infinity;
  const INF = max + 1;
  let prev = new Int32Array(b.length + 1).fill(INF);
  let cur = new Int32Array(b.length + 1).fill(INF);
  for (let j = 0; j <= Math.min(max, b.length); j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const lo = Math.max(1, i - max);
    const hi = Math.min(b.length, i + max);
    cur[0] = i <= max ? i : INF;
    if (lo > 1) cur[lo - 1] = INF;
    let rowMin = cur[0];
    for (let j = lo; j <= hi; j++) {
      const v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1), INF);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (hi < b.length) cur[hi + 1] = INF;
    if (rowMin > max) return Infinity;
    [prev, cur] = [cur, prev];
  }
  return prev[b.length] <= max ? prev[b.length] : Infinity;
}

/** How close `name` is to `wanted`: 0 for a case-only difference, else the edit distance (Infinity: not near). */
function nameScore(name: string, wanted: string): number {
  if (name === wanted) return Infinity;
  if (name.toLowerCase() === wanted.toLowerCase()) return 0;
  return editDistance(name, wanted);
}

/**
 * A reader of directory entries for one search (at most NEAR_MAX_ENTRIES per directory): each directory read through
 * a descriptor opened from the roots component by component (src/fs/verified-dir.ts), or its listing kept from an
 * earlier search when its chain of stamps shows it is the one such a read would give now (src/policy/near-listings.ts);
 * null when it cannot be read. Never by its path string: a process that swaps the directory (or a parent) for a link
 * to outside between the resolution and the read would otherwise have the outside directory's names offered under the
 * inside path (attack on the merged near paths).
 */
function entriesReader(ctx: PolicyContext): (dir: string) => Promise<NearListing | null> {
  return processNearListings.reader((p) => isInsideRoots(ctx.roots, p), NEAR_MAX_ENTRIES);
}

/** The kind tests `offer` needs: a directory entry (Dirent) or an lstat (Stats). */
interface EntryKind {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

/**
 * The near-path list of one call: `offer` adds an existing path when the policy lets it be named (see the module
 * comment), `found` is the list so far (at most NEAR_LIMIT).
 */
function nearList(ctx: PolicyContext): { found: string[]; offer: (absolute: string, entry: EntryKind) => boolean } {
  const found: string[] = [];
  const offer = (absolute: string, entry: EntryKind): boolean => {
    if (found.length >= NEAR_LIMIT || found.includes(absolute) || entry.isSymbolicLink()) return false;
    if (!entry.isFile() && !entry.isDirectory()) return false;
    const root = findContainingRoot(ctx.roots, absolute);
    if (!root) return false;
    const relative = toPosixRelative(root.real, absolute);
    if (relative.split('/').some((c) => c === '.git')) return false;
    const verdict = classifyEntry(ctx, absolute, relative);
    if (verdict.hidden || verdict.denied || verdict.secret) return false;
    // Every directory on the way must be visible too (a hidden directory hides what it holds).
    const parts = relative.split('/');
    for (let k = 1; k < parts.length; k++) {
      const dirRel = parts.slice(0, k).join('/');
      const v = classifyEntry(ctx, path.join(root.real, dirRel), dirRel);
      if (v.hidden || v.denied) return false;
    }
    found.push(absolute);
    return true;
  };
  return { found, offer };
}

/**
 * The lstat of the existing entry `absolute` inside the roots, read through its verified parent (never by the path
 * string: a parent swapped for a link fails), or null (missing, a link on the way, outside, unreadable).
 */
async function lstatVerified(absolute: string, isInside: (p: string) => boolean): Promise<EntryKind | null> {
  if (!isInside(absolute)) return null;
  try {
    return await withVerifiedDir(path.dirname(absolute), isInside, (d) => d.lstat(path.basename(absolute)));
  } catch {
    return null;
  }
}

/**
 * Step 3 of the module comment: a breadth-first walk from `starts` (each directory once) for entries named `wanted`
 * (ignoring case), other than `except`, handed to `take` in walk order until it returns false or a bound is reached
 * (NEAR_MAX_DIRS directories, `deadline`); directories read with `entriesOf` (the search's `entriesReader`). Kept
 * listings come back without I/O, so the walk yields to the event loop every few milliseconds itself (`loopSlicer`):
 * a walk over kept listings of many large directories would otherwise hold the loop for the whole NEAR_MAX_MS.
 */
async function sameNameWalk(
  ctx: PolicyContext,
  starts: readonly string[],
  wanted: string,
  except: string,
  take: (absolute: string, entry: Dirent) => boolean,
  deadline: number,
  entriesOf: (dir: string) => Promise<NearListing | null>,
): Promise<void> {
  const queue = [...starts];
  const visited = new Set<string>();
  const lower = wanted.toLowerCase();
  const slice = loopSlicer();
  let dirs = 0;
  while (queue.length > 0 && dirs < NEAR_MAX_DIRS && Date.now() < deadline) {
    await slice();
    const dir = queue.shift()!;
    if (visited.has(dir)) continue;
    visited.add(dir);
    dirs++;
    const listing = await entriesOf(dir);
    if (!listing) continue;
    for (const e of listing.sorted()) {
      const match = e.name.toLowerCase() === lower;
      const isDir = e.isDirectory() && !SKIPPED_DIRS.has(e.name);
      if (!match && !isDir) continue;
      const absolute = path.join(dir, e.name);
      if (match && absolute !== except && !take(absolute, e)) return;
      if (isDir) {
        const root = findContainingRoot(ctx.roots, absolute);
        const v = root ? classifyEntry(ctx, absolute, toPosixRelative(root.real, absolute)) : null;
        if (v && !v.hidden && !v.denied) queue.push(absolute);
      }
    }
  }
}

/**
 * Up to NEAR_LIMIT existing paths near a missing `resolved` path, as absolute real paths (see the module comment for
 * where it looks and what is never offered). Never throws: any failure just offers less.
 */
export async function nearPaths(resolved: ResolvedPath, ctx: PolicyContext): Promise<string[]> {
  const deadline = Date.now() + NEAR_MAX_MS;
  const { found, offer } = nearList(ctx);
  const isInside = (p: string): boolean => isInsideRoots(ctx.roots, p);
  const entriesOf = entriesReader(ctx);
  try {
    // 0. A `\` meant as a separator (POSIX only: on Windows it already is one).
    if (path.sep === '/' && resolved.requested.includes('\\')) {
      try {
        const slashed = await resolveInRoots(resolved.requested.replaceAll('\\', '/'), ctx.roots, {
          followFinal: false,
        });
        const entry = slashed.real !== resolved.real ? await lstatVerified(slashed.real, isInside) : null;
        if (entry) offer(slashed.real, entry);
      } catch {
        // Outside the roots, or not a path at all with `/`: nothing to offer from this step.
      }
    }
    const wanted = path.basename(resolved.real);
    const parent = path.dirname(resolved.real);
    if (!wanted) return found;
    // 1. The same directory.
    const siblings = (await entriesOf(parent))?.entries;
    if (siblings) {
      const near = siblings
        .map((e) => ({ e, s: nameScore(e.name, wanted) }))
        .filter((x) => x.s !== Infinity)
        .sort((a, b) => a.s - b.s || a.e.name.localeCompare(b.e.name));
      for (const { e } of near) offer(path.join(parent, e.name), e);
    } else {
      // 2. A mistyped parent directory.
      const grand = path.dirname(parent);
      const uncles = findContainingRoot(ctx.roots, grand) ? (await entriesOf(grand))?.entries : null;
      const parentName = path.basename(parent);
      for (const u of (uncles ?? [])
        .filter((e) => e.isDirectory() && nameScore(e.name, parentName) !== Infinity)
        .sort((a, b) => nameScore(a.name, parentName) - nameScore(b.name, parentName))
        .slice(0, NEAR_MAX_UNCLES)) {
        if (Date.now() >= deadline) break;
        const inside = await entriesOf(path.join(grand, u.name));
        const hit = inside?.entries.find((e) => e.name === wanted);
        if (hit) offer(path.join(grand, u.name, hit.name), hit);
      }
    }
    // 3. The same name elsewhere, breadth first: under the nearest existing ancestor of the path first (the closest
    // relatives), then from the path's own root, then the other roots.
    const own = findContainingRoot(ctx.roots, resolved.real) ?? resolved.root;
    let ancestor = parent;
    while (ancestor !== own.real && isWithin(own.real, ancestor) && !(await entriesOf(ancestor))) {
      ancestor = path.dirname(ancestor);
    }
    const starts = [ancestor, own.real, ...ctx.roots.filter((r) => r.real !== own.real).map((r) => r.real)];
    if (found.length < NEAR_LIMIT) {
      await sameNameWalk(
        ctx,
        starts,
        wanted,
        resolved.real,
        (absolute, e) => {
          offer(absolute, e);
          return found.length < NEAR_LIMIT;
        },
        deadline,
        entriesOf,
      );
    }
  } catch {
    // Best effort: a directory that vanished or refused just offers less.
  }
  return found;
}

/** How many trailing components `a` and `b` (component lists) have in common. */
function commonSuffix(a: readonly string[], b: readonly string[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[a.length - 1 - n] === b[b.length - 1 - n]) n++;
  return n;
}

/**
 * Up to NEAR_LIMIT existing inside paths for `absolute`, a path outside the roots (lexically normalized, as the
 * NOT_ALLOWED envelope names it): its last components re-rooted on each root, longest suffix first, then the entries
 * of its last name anywhere in the roots (the step 3 walk), most matching trailing components first. Looks only at
 * the given string and inside the roots (see the module comment). Never throws: any failure just offers less.
 */
export async function outsideNearPaths(absolute: string, ctx: PolicyContext): Promise<string[]> {
  const deadline = Date.now() + NEAR_MAX_MS;
  const { found, offer } = nearList(ctx);
  const isInside = (p: string): boolean => isInsideRoots(ctx.roots, p);
  const parts = absolute
    .slice(path.parse(absolute).root.length)
    .split(path.sep)
    .filter((c) => c !== '');
  if (parts.length === 0) return found;
  try {
    // 1. The path's tail on each root: `/home/me/proj/src/util.ts` → ROOT/src/util.ts.
    for (let k = Math.max(0, parts.length - NEAR_MAX_SUFFIX); k < parts.length && found.length < NEAR_LIMIT; k++) {
      for (const root of ctx.roots) {
        if (Date.now() >= deadline) return found;
        const candidate = path.join(root.real, ...parts.slice(k));
        const entry = await lstatVerified(candidate, isInside);
        if (entry) offer(candidate, entry);
      }
    }
    // 2. Its last name anywhere in the roots, ranked by the trailing components that match.
    if (found.length < NEAR_LIMIT) {
      const hits: Array<{ absolute: string; entry: Dirent; score: number; order: number }> = [];
      await sameNameWalk(
        ctx,
        ctx.roots.map((r) => r.real),
        parts[parts.length - 1],
        '',
        (hit, entry) => {
          const root = findContainingRoot(ctx.roots, hit);
          const tail = root ? toPosixRelative(root.real, hit).split('/') : [];
          hits.push({ absolute: hit, entry, score: commonSuffix(tail, parts), order: hits.length });
          return hits.length < NEAR_MAX_COLLECTED;
        },
        deadline,
        entriesReader(ctx),
      );
      hits.sort((a, b) => b.score - a.score || a.order - b.order);
      for (const h of hits) offer(h.absolute, h.entry);
    }
  } catch {
    // Best effort, as nearPaths.
  }
  return found;
}

/**
 * NOT_ALLOWED of a path outside the roots (`details.reason: "outside_roots"`), with `details.near` and a suggestion
 * naming the closest inside path when outsideNearPaths finds one; any other error is returned unchanged.
 */
export async function withOutsideNear(error: unknown, ctx: PolicyContext): Promise<unknown> {
  if (!(error instanceof ToolError) || error.code !== 'NOT_ALLOWED' || error.details.reason !== 'outside_roots')
    return error;
  if (!error.path) return error;
  const near = await outsideNearPaths(error.path, ctx);
  if (near.length === 0) return error;
  return new ToolError('NOT_ALLOWED', error.message, {
    path: error.path,
    details: { ...error.details, near },
    suggestion: `Did you mean ${near[0]}? (details.near lists inside paths ending like the one given.)`,
  });
}

/**
 * NOT_FOUND for a missing path inside the roots, with `details.near` and a suggestion naming the closest near path
 * when there is one (no near path: `details` stays `{}` as before). The constructor of a "missing path" NOT_FOUND in
 * src/policy.
 */
export async function notFoundError(resolved: ResolvedPath, ctx: PolicyContext): Promise<ToolError> {
  const near = await nearPaths(resolved, ctx);
  return new ToolError('NOT_FOUND', 'No such file or directory.', {
    path: resolved.absolute,
    details: near.length ? { near } : {},
    ...(near.length
      ? { suggestion: `Did you mean ${near[0]}? (details.near lists existing paths close to the one given.)` }
      : {}),
  });
}
