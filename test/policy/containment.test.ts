/**
 * Pins the pure containment predicates (SPEC §4.1): isWithin's separator boundary (/x/proj does not contain
 * /x/proj-secret, also when reached through `..`), identical paths, trailing separators; findContainingRoot picks the
 * deepest containing root; toPosixRelative gives `/`-separated paths. The Windows rules run on Linux through
 * `path.win32` (drive-letter case, other drives, UNC shares, mixed separators), and case-insensitive POSIX (macOS).
 */
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  findContainingRoot,
  isInsideRoots,
  isWithin,
  toPosixRelative,
  type PathFlavor,
} from '../../src/policy/containment.js';

const POSIX: PathFlavor = { pathModule: path.posix, caseInsensitive: false };
const WIN: PathFlavor = { pathModule: path.win32, caseInsensitive: true };
const MAC: PathFlavor = { pathModule: path.posix, caseInsensitive: true };

describe('isWithin (posix)', () => {
  test.each([
    ['/x/proj', '/x/proj', true, 'identical'],
    ['/x/proj/', '/x/proj', true, 'trailing separator on parent'],
    ['/x/proj', '/x/proj/', true, 'trailing separator on child'],
    ['/x/proj//', '/x/proj/a//b/', true, 'doubled separators'],
    ['/x/proj', '/x/proj/a', true, 'direct child'],
    ['/x/proj', '/x/proj/a/b/c.txt', true, 'deep child'],
    ['/x/proj', '/x/proj/..foo', true, 'name starting with two dots is inside'],
    ['/x/proj', '/x/proj-secret/k', false, 'sibling with the root as prefix'],
    ['/x/proj', '/x/proj-secret', false, 'sibling dir itself'],
    ['/x/proj', '/x/projX', false, 'prefix without separator'],
    ['/x/proj', '/x/proj/../proj-secret/k', false, 'sibling reached through ..'],
    ['/x/proj', '/x/proj/a/../../proj-secret', false, 'sibling through two ..'],
    ['/x/proj', '/x/proj/a/..', true, '.. back to the root itself'],
    ['/x/proj', '/x', false, 'parent'],
    ['/x/proj', '/', false, 'filesystem root'],
    ['/', '/anything/at/all', true, 'filesystem root contains everything'],
    ['/x/proj', '/X/PROJ/a', false, 'case differs on a case-sensitive filesystem'],
  ])('isWithin(%j, %j) === %j (%s)', (parent, child, expected) => {
    expect(isWithin(parent, child, POSIX)).toBe(expected);
  });
});

describe('isWithin (case-insensitive posix, as macOS)', () => {
  test.each([
    ['/x/proj', '/X/PROJ/a', true],
    ['/x/Proj', '/x/proj', true],
    ['/x/proj', '/x/PROJ-secret/k', false],
  ])('isWithin(%j, %j) === %j', (parent, child, expected) => {
    expect(isWithin(parent, child, MAC)).toBe(expected);
  });
});

describe('isWithin (path.win32, case-insensitive)', () => {
  test.each([
    ['C:\\proj', 'C:\\proj', true, 'identical'],
    ['C:\\proj\\', 'C:\\proj', true, 'trailing separator on parent'],
    ['C:\\proj', 'C:\\proj\\', true, 'trailing separator on child'],
    ['C:\\proj', 'C:\\proj\\a\\b.txt', true, 'child'],
    ['C:\\proj', 'c:\\PROJ\\a', true, 'drive-letter and name case'],
    ['c:\\Proj', 'C:\\proj', true, 'identical up to case'],
    ['C:\\proj', 'C:\\proj-secret\\k', false, 'sibling with the root as prefix'],
    ['C:\\proj', 'C:\\proj\\..\\proj-secret\\k', false, 'sibling through ..'],
    ['C:\\proj', 'D:\\proj\\a', false, 'other drive'],
    ['C:\\proj', 'D:\\', false, 'other drive root'],
    ['C:\\', 'C:\\anything', true, 'drive root contains the drive'],
    ['\\\\server\\share\\proj', '\\\\server\\share\\proj\\a', true, 'UNC child'],
    ['\\\\server\\share\\proj', '\\\\SERVER\\Share\\PROJ\\a', true, 'UNC case'],
    ['\\\\server\\share\\proj', '\\\\server\\share\\proj2', false, 'UNC sibling with prefix'],
    ['\\\\server\\share\\proj', '\\\\server\\share\\proj2\\k', false, 'UNC sibling child'],
    ['\\\\server\\share\\proj', '\\\\server\\other\\proj', false, 'other UNC share'],
    ['\\\\server\\share\\proj', 'C:\\proj', false, 'UNC vs drive'],
    ['C:\\proj', 'C:/proj/a/b', true, 'forward slashes'],
    ['C:/proj', 'C:\\proj\\a', true, 'mixed: parent with /'],
    ['C:\\proj', 'C:/proj\\sub/../../proj-secret', false, 'mixed separators with ..'],
    ['C:\\proj', 'C:\\proj\\..foo', true, 'name starting with two dots is inside'],
  ])('isWithin(%j, %j) === %j (%s)', (parent, child, expected) => {
    expect(isWithin(parent, child, WIN)).toBe(expected);
  });
});

describe('findContainingRoot', () => {
  const roots = [{ real: '/x/proj' }, { real: '/x/proj/sub' }, { real: '/y' }];
  test.each([
    ['/x/proj/a', '/x/proj'],
    ['/x/proj/sub/a', '/x/proj/sub'],
    ['/x/proj/sub', '/x/proj/sub'],
    ['/y/z', '/y'],
    ['/x/proj-secret/k', undefined],
    ['/x/proj/../proj-secret/k', undefined],
    ['/z', undefined],
  ])('%j → %j (deepest containing root)', (child, expected) => {
    expect(findContainingRoot(roots, child, POSIX)?.real).toBe(expected);
  });

  test('returns the root object itself (not a copy)', () => {
    expect(findContainingRoot(roots, '/y/1', POSIX)).toBe(roots[2]);
  });

  test('empty roots contain nothing', () => {
    expect(findContainingRoot([], '/x', POSIX)).toBeUndefined();
  });

  test.each([
    ['c:\\PROJ\\a', 'C:\\proj'],
    ['\\\\server\\share\\proj\\x', '\\\\server\\share\\proj'],
    ['\\\\server\\share\\proj2\\x', undefined],
    ['D:\\proj\\a', undefined],
  ])('win32: %j → %j', (child, expected) => {
    const winRoots = [{ real: 'C:\\proj' }, { real: '\\\\server\\share\\proj' }];
    expect(findContainingRoot(winRoots, child, WIN)?.real).toBe(expected);
  });
});

describe('isInsideRoots (the one containment check)', () => {
  const roots = [{ real: '/x/proj' }, { real: '/y' }];
  test.each([
    ['/x/proj', true],
    ['/x/proj/a/b', true],
    ['/y/z', true],
    ['/x/proj-secret/k', false],
    ['/x/proj/../proj-secret', false],
    ['/x', false],
    ['/', false],
  ])('%j → %j', (p, expected) => {
    expect(isInsideRoots(roots, p, POSIX)).toBe(expected);
  });

  test('no roots: nothing is inside; win32 spellings compare case-insensitively', () => {
    expect(isInsideRoots([], '/x', POSIX)).toBe(false);
    expect(isInsideRoots([{ real: 'C:\\proj' }], 'c:\\PROJ\\a', WIN)).toBe(true);
    expect(isInsideRoots([{ real: 'C:\\proj' }], 'D:\\proj\\a', WIN)).toBe(false);
  });
});

describe('toPosixRelative', () => {
  test.each([
    ['/x/proj', '/x/proj', ''],
    ['/x/proj', '/x/proj/a', 'a'],
    ['/x/proj/', '/x/proj/a/b/c.txt', 'a/b/c.txt'],
    ['/x/proj', '/x/proj/a/', 'a'],
  ])('posix: (%j, %j) → %j', (root, child, expected) => {
    expect(toPosixRelative(root, child, POSIX)).toBe(expected);
  });

  // Canonical spellings take a shortcut (the child's tail, no normalization): the same answer as path.relative for
  // every pair, inside the root or not (a sibling with the root as prefix, a parent, the filesystem root).
  test('posix, canonical spellings: the same as path.posix.relative', () => {
    const name = fc.constantFrom('a', 'b', 'proj', 'proj-secret', '..x', '.a', 'é');
    const canonical = fc.array(name, { maxLength: 4 }).map((parts) => `/${parts.join('/')}`);
    let inside = 0;
    fc.assert(
      fc.property(canonical, canonical, fc.boolean(), (root, other, nest) => {
        const child = nest ? (root === '/' ? other : `${root}${other === '/' ? '' : other}`) : other;
        if (isWithin(root, child, POSIX)) inside++;
        expect(toPosixRelative(root, child, POSIX)).toBe(path.posix.relative(root, child));
      }),
      { numRuns: 2000 },
    );
    expect(inside).toBeGreaterThan(500);
  });

  test.each([
    ['C:\\proj', 'C:\\proj', ''],
    ['C:\\proj', 'C:\\proj\\a\\b.txt', 'a/b.txt'],
    ['C:\\proj', 'c:\\PROJ\\a\\B.txt', 'a/B.txt'],
    ['C:\\proj', 'C:/proj/a/b.txt', 'a/b.txt'],
    ['\\\\server\\share\\proj', '\\\\server\\share\\proj\\dir\\f', 'dir/f'],
  ])('win32: (%j, %j) → %j', (root, child, expected) => {
    expect(toPosixRelative(root, child, WIN)).toBe(expected);
  });

  // Case-insensitive POSIX (macOS): a child spelled in another case than its root is still inside it, so its
  // relative path must not climb out with `..` (policy globs would then miss it).
  test.each([
    ['/x/proj', '/x/PROJ/secrets/k', 'secrets/k'],
    ['/x/Proj', '/x/proj', ''],
    ['/x/proj', '/X/Proj/A/b.txt', 'A/b.txt'],
  ])('case-insensitive posix: (%j, %j) → %j', (root, child, expected) => {
    expect(toPosixRelative(root, child, MAC)).toBe(expected);
  });
});
