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
    !name.includes(path.sep) &&
    !name.includes('\0')
  );
}
