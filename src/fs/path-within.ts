/**
 * Pure containment predicates (SPEC §4.1): a separator boundary (`/a/proj` does not contain `/a/proj-secret`),
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
  // Fast path (issue #19: a search or walk asks this several times per entry, and resolve + relative were 8 % of a
  // content search's main thread): two canonical POSIX paths compare as strings, on a separator boundary.
  if (p === path.posix && !flavor.caseInsensitive && isCanonicalPosix(parent) && isCanonicalPosix(child)) {
    if (child === parent || parent === '/') return true;
    return child.length > parent.length && child.charCodeAt(parent.length) === 47 && child.startsWith(parent);
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
 * True when `p` is what `path.posix.resolve` would return for it: absolute, and free of empty, `.` and `..`
 * components and of a trailing separator (except the root `/` itself). Pure string checks.
 */
export function isCanonicalPosix(p: string): boolean {
  if (p.charCodeAt(0) !== 47) return false;
  if (p.length === 1) return true;
  if (p.charCodeAt(p.length - 1) === 47) return false;
  if (p.includes('//') || p.includes('/./') || p.includes('/../')) return false;
  return !p.endsWith('/.') && !p.endsWith('/..');
}
