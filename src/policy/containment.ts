/**
 * Pure containment predicates (docs/security.md "Roots"): a separator boundary (`/a/proj` does not contain `/a/proj-secret`),
 * case-insensitive where the platform's filesystem is (Windows, macOS). No IO. The path module is a parameter so
 * tests run the Windows rules (`path.win32`: drive letters, UNC, `\`) on Linux.
 */

// The pure path predicates live with the primitives (src/fs/path-within.ts), which need them too without
// depending on policy; policy re-exports them so its callers keep one import.
export { HOST_FLAVOR, isWithin, type PathFlavor } from '../fs/path-within.js';
import { HOST_FLAVOR, isCanonicalPosix, isWithin, type PathFlavor } from '../fs/path-within.js';

/** The first root that contains `child`, or undefined. */
export function findContainingRoot<R extends { real: string }>(
  roots: readonly R[],
  child: string,
  flavor: PathFlavor = HOST_FLAVOR,
): R | undefined {
  // Prefer the deepest root, so relative paths in policy globs are relative to the nearest root.
  let best: R | undefined;
  for (const root of roots) {
    if (isWithin(root.real, child, flavor) && (!best || root.real.length > best.real.length)) best = root;
  }
  return best;
}

/**
 * The one containment check of policy (docs/security.md "Roots"): true when `p` (absolute) is one of `roots` (their
 * real paths) or lies beneath one, at a separator boundary. Primitives, which may not import policy, are handed it
 * as their `isInside` predicate (or use the pure `isWithin` of src/fs/path-within.ts for one known root).
 */
export function isInsideRoots(
  roots: readonly { real: string }[],
  p: string,
  flavor: PathFlavor = HOST_FLAVOR,
): boolean {
  return findContainingRoot(roots, p, flavor) !== undefined;
}

/** `child` relative to `root`, with `/` separators (for globs and listings). */
export function toPosixRelative(root: string, child: string, flavor: PathFlavor = HOST_FLAVOR): string {
  const p = flavor.pathModule;
  if (flavor.caseInsensitive && isWithin(root, child, flavor)) {
    // path.posix.relative compares case-sensitively, so on macOS `/x/proj` → `/x/PROJ/a` would give `../PROJ/a` and
    // policy globs would miss it. Inside the root, drop as many components as the root has (keeping the child's case).
    const parts = (s: string) => p.resolve(s).split(p.sep).filter(Boolean);
    return parts(child).slice(parts(root).length).join('/');
  }
  // Canonical POSIX paths, the child inside the root (every authorized path): the relative path is the child's tail —
  // what path.relative gives without normalizing both again (two resolves per authorized path).
  if (p.sep === '/' && !flavor.caseInsensitive && isCanonicalPosix(root) && isCanonicalPosix(child)) {
    if (child === root) return '';
    if (root === '/') return child.slice(1);
    if (child.startsWith(root) && child.charCodeAt(root.length) === 0x2f) return child.slice(root.length + 1);
  }
  const rel = p.relative(root, child);
  return p.sep === '\\' ? rel.split('\\').join('/') : rel;
}
