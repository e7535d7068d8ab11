/**
 * Pure containment predicates (docs/security.md "Roots"): a separator boundary (`/a/proj` does not contain `/a/proj-secret`),
 * case-insensitive where the platform's filesystem is (Windows, macOS). No IO, no decisions: policy
 * (src/policy/containment.ts) decides with them, and primitives that must re-prove where a descriptor landed (the
 * search reader threads) use them without importing policy (the layering rule: test/layering.test.ts).
 */
import path from 'node:path';

/** How to compare paths on one platform. */
export interface PathFlavor {
  /** `path.posix` or `path.win32`. */
  pathModule: path.PlatformPath;
  /** Windows and macOS filesystems are case-insensitive by default. */
  caseInsensitive: boolean;
}

/** The flavor of the running platform. */
export const HOST_FLAVOR: PathFlavor = {
  pathModule: path,
  caseInsensitive: process.platform === 'win32' || process.platform === 'darwin',
};

/**
 * True when `child` is `parent` or lies beneath it. Both must be absolute; they are normalized first.
 * @example isWithin('/a/proj', '/a/proj-secret/k') === false
 */
export function isWithin(parent: string, child: string, flavor: PathFlavor = HOST_FLAVOR): boolean {
  const p = flavor.pathModule;
  if (p.sep === '/') {
    // The walks ask this for every entry with paths that are already normalized; for those, normalizing
    // again (resolve, relative) was most of a listing's policy time. Same answer: a plain absolute path is its own
    // `resolve`, and a separator boundary is a prefix followed by `/`.
    const a = flavor.caseInsensitive ? parent.toLowerCase() : parent;
    const b = flavor.caseInsensitive ? child.toLowerCase() : child;
    if (isCanonicalPosix(a) && isCanonicalPosix(b)) {
      return a === b || a === '/' || (b.startsWith(a) && b.charCodeAt(a.length) === 0x2f);
    }
  }
  let a = p.resolve(parent);
  let b = p.resolve(child);
  if (flavor.caseInsensitive) {
    a = a.toLowerCase();
    b = b.toLowerCase();
  }
  if (a === b) return true;
  const rel = p.relative(a, b);
  if (rel === '') return true;
  if (p.isAbsolute(rel)) return false; // another drive or UNC share on Windows
  return rel !== '..' && !rel.startsWith(`..${p.sep}`) && !(p.sep === '\\' && rel.startsWith('../'));
}

/**
 * True for exactly one directory-entry name: not empty, not `.` or `..`, no separator, no NUL. Pure; used where a name
 * from readdir or a caller is joined to a verified directory (src/fs/verified-dir.ts, src/fs/walk.ts).
 */
export function isEntryName(name: string): boolean {
  return (
    name !== '' &&
    name !== '.' &&
    name !== '..' &&
    !name.includes('/') &&
    (path.sep === '/' || !name.includes(path.sep)) &&
    !name.includes('\0')
  );
}

/**
 * True when `s` is an absolute POSIX path that `path.posix.resolve` returns unchanged: it starts with `/` and has no
 * empty, `.` or `..` component and no trailing `/` (except the root itself).
 */
export function isCanonicalPosix(s: string): boolean {
  if (s.charCodeAt(0) !== 0x2f) return false;
  if (s.length === 1) return true;
  // One pass from separator to separator (indexOf is native): what follows each `/` must not be `/`, `.` + (`/` or
  // the end) or `..` + (`/` or the end), and the last character must not be `/`.
  for (let i = 0; i !== -1; i = s.indexOf('/', i + 1)) {
    const c1 = s.charCodeAt(i + 1); // NaN past the end
    if (c1 !== c1 || c1 === 0x2f) return false; // trailing or doubled `/`
    if (c1 === 0x2e) {
      const c2 = s.charCodeAt(i + 2);
      if (c2 !== c2 || c2 === 0x2f) return false; // `.` component
      if (c2 === 0x2e) {
        const c3 = s.charCodeAt(i + 3);
        if (c3 !== c3 || c3 === 0x2f) return false; // `..` component
      }
    }
  }
  return true;
}

/**
 * The last `k` non-empty components of `p`, in order, split at any character of `separators`: what
 * `p.split(separator).filter(Boolean).slice(-k)` gives, read from the end in O(k + their length) whatever the depth.
 * The rules that read only a path's tail (secret names, execution-bearing configuration) use it, so judging every
 * entry of a deep tree stays linear in entries and depth (docs/security.md "Bounded work").
 */
export function lastComponents(p: string, k: number, separators = '/'): string[] {
  const out: string[] = [];
  let end = p.length;
  for (let i = p.length - 1; i >= -1 && out.length < k; i--) {
    if (i === -1 || separators.includes(p[i])) {
      if (i + 1 < end) out.push(p.slice(i + 1, end));
      end = i;
    }
  }
  return out.reverse();
}

/**
 * True when a symbolic link target names `..` after a name (`dot/..`, `/r/a/../b`). The kernel resolves such a
 * target physically — it follows the link `dot` before applying `..` — so `path.resolve` (lexical) may place it
 * inside the roots while it really points elsewhere (`dot -> .`, `up -> dot/../..` climbs out of the root). A target
 * with only leading `..` (`../sibling`) resolves from the link's own, verified, directory: lexical and physical agree.
 * `.` and empty segments are ignored. Source: the undo security review (revert_changes recreating recorded links).
 */
export function climbsAfterName(target: string): boolean {
  let named = false;
  for (const segment of target.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment !== '..') named = true;
    else if (named) return true;
  }
  return false;
}

/**
 * The most components an absolute path may have (`/a/b` has two): deeper paths are refused before any work per
 * ancestor (docs/security.md "Bounded work"). Resolving a path, locking it, and checking its ancestors for git
 * directories and .gitignore rules each cost one step per ancestor, and some of those steps are themselves a syscall
 * that walks every ancestor again: the cost grows with the square of the depth (a 1,900-level path held the event
 * loop for 0.4–2.8 s; 256 levels stayed under ~60 ms).
 */
export const MAX_PATH_COMPONENTS = 256;

/**
 * The number of components of an absolute, normalized path (`/` has none, `/a/b` two). Pure; counts separators
 * (either one on Windows) followed by a name, so a trailing separator adds nothing.
 */
export function pathComponentCount(absolute: string): number {
  let count = 0;
  for (let i = 0; i < absolute.length; i++) {
    const c = absolute.charCodeAt(i);
    if (c !== 0x2f && !(c === 0x5c && path.sep === '\\')) continue;
    const next = absolute.charCodeAt(i + 1);
    if (i + 1 < absolute.length && next !== 0x2f && !(next === 0x5c && path.sep === '\\')) count++;
  }
  return count;
}
