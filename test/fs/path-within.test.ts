/**
 * src/fs/path-within.ts `isWithin` (SPEC §4.1 containment on a separator boundary). Issue #19 gave it a fast path for
 * paths that are already normalized; this pins that the fast path and the normalizing path agree:
 * - for any pair of POSIX paths built from tricky components (`.`, `..`, empty, a prefix of a sibling, case
 *   variants, names starting with dots), case-sensitive and case-insensitive, the answer equals the reference
 *   (resolve both, compare with `path.relative`);
 * - the boundary cases by name: a sibling with the same prefix is outside, the root contains everything, a
 *   trailing slash or a `..` component is normalized first.
 */
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isWithin, pathComponentCount, type PathFlavor } from '../../src/fs/path-within.js';

const POSIX: PathFlavor = { pathModule: path.posix, caseInsensitive: false };
const POSIX_NOCASE: PathFlavor = { pathModule: path.posix, caseInsensitive: true };

/** The definition before the fast path: normalize both, then a relative path that does not climb. */
function reference(parent: string, child: string, flavor: PathFlavor): boolean {
  const p = flavor.pathModule;
  let a = p.resolve(parent);
  let b = p.resolve(child);
  if (flavor.caseInsensitive) {
    a = a.toLowerCase();
    b = b.toLowerCase();
  }
  if (a === b) return true;
  const rel = p.relative(a, b);
  return rel === '' || (rel !== '..' && !rel.startsWith('../'));
}

const component = fc.constantFrom('', '.', '..', 'a', 'A', 'ab', 'a.b', '..x', '.x', 'b', 'proj', 'proj-secret', 'İ');
const absolute = fc
  .tuple(fc.array(component, { maxLength: 5 }), fc.boolean())
  .map(([parts, trailing]) => `/${parts.join('/')}${trailing ? '/' : ''}`);

describe('isWithin', () => {
  it('agrees with the normalizing reference for any POSIX pair, case-sensitive and not', () => {
    fc.assert(
      fc.property(absolute, absolute, (a, b) => {
        expect(isWithin(a, b, POSIX)).toBe(reference(a, b, POSIX));
        expect(isWithin(a, b, POSIX_NOCASE)).toBe(reference(a, b, POSIX_NOCASE));
        // A child spelled as a prefix-extension of the parent, the likeliest way to fool a prefix test.
        expect(isWithin(a, `${a}x`, POSIX)).toBe(reference(a, `${a}x`, POSIX));
        expect(isWithin(a, `${a}/c`, POSIX)).toBe(reference(a, `${a}/c`, POSIX));
      }),
      { numRuns: 3000 },
    );
  });

  it.each([
    ['/a/proj', '/a/proj', true],
    ['/a/proj', '/a/proj/k', true],
    ['/a/proj', '/a/proj-secret/k', false],
    ['/a/proj', '/a/pro', false],
    ['/', '/anything/at/all', true],
    ['/a/proj/', '/a/proj/k', true],
    ['/a/proj', '/a/proj/../proj-secret', false],
    ['/a/proj', '/a/proj/./k', true],
    ['/a/proj', '/a/proj/..x', true],
  ])('isWithin(%s, %s) is %s', (parent, child, expected) => {
    expect(isWithin(parent, child, POSIX)).toBe(expected);
  });

  it('case-insensitive flavors compare case-folded', () => {
    expect(isWithin('/A/Proj', '/a/proj/K', POSIX_NOCASE)).toBe(true);
    expect(isWithin('/A/Proj', '/a/proj/K', POSIX)).toBe(false);
  });

  it('Windows flavors keep the normalizing path', () => {
    const win: PathFlavor = { pathModule: path.win32, caseInsensitive: true };
    expect(isWithin('C:\\proj', 'c:\\PROJ\\a', win)).toBe(true);
    expect(isWithin('C:\\proj', 'D:\\proj\\a', win)).toBe(false);
    expect(isWithin('C:\\proj', 'C:\\proj-secret', win)).toBe(false);
  });
});

describe('pathComponentCount', () => {
  it('counts names after separators; on POSIX a backslash is a name character', () => {
    expect(pathComponentCount('/')).toBe(0);
    expect(pathComponentCount('/a//b/')).toBe(2);
    expect(pathComponentCount('/a\\b')).toBe(1);
    expect(pathComponentCount('/a/\\b')).toBe(2);
  });
});
