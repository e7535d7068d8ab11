/**
 * Pins isWithin's fast path for canonical POSIX paths (issue #19): it answers exactly what the resolve-and-relative
 * comparison answers, for canonical and non-canonical spellings alike, and isCanonicalPosix accepts exactly the
 * strings path.posix.resolve leaves unchanged.
 */
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCanonicalPosix, isWithin, type PathFlavor } from '../../src/fs/path-within.js';

const POSIX: PathFlavor = { pathModule: path.posix, caseInsensitive: false };

/** The comparison without the fast path (the definition the fast path must agree with). */
function reference(parent: string, child: string): boolean {
  const a = path.posix.resolve(parent);
  const b = path.posix.resolve(child);
  if (a === b) return true;
  const rel = path.posix.relative(a, b);
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !path.posix.isAbsolute(rel));
}

describe('isCanonicalPosix', () => {
  it.each([
    ['/', true],
    ['/a', true],
    ['/a/b.c', true],
    ['/a/.b', true],
    ['/a/..b', true],
    ['a/b', false],
    ['', false],
    ['/a/', false],
    ['//a', false],
    ['/a//b', false],
    ['/a/./b', false],
    ['/a/../b', false],
    ['/a/.', false],
    ['/a/..', false],
  ])('%j → %j', (p, expected) => {
    expect(isCanonicalPosix(p)).toBe(expected);
    if (p.startsWith('/')) expect(path.posix.resolve(p) === p).toBe(expected);
  });
});

describe('isWithin fast path', () => {
  it.each([
    ['/a/proj', '/a/proj', true],
    ['/a/proj', '/a/proj/x', true],
    ['/a/proj', '/a/proj-secret/x', false],
    ['/a/proj', '/a/pro', false],
    ['/a/proj', '/a', false],
    ['/', '/anything/at/all', true],
    ['/a/proj', '/a/proj/../proj-secret', false],
    ['/a/proj/', '/a/proj/x', true],
    ['/a/proj', '/a/proj/./x', true],
  ])('isWithin(%j, %j) === %j', (parent, child, expected) => {
    expect(isWithin(parent, child, POSIX)).toBe(expected);
    expect(reference(parent, child)).toBe(expected);
  });

  it('agrees with resolve-and-relative on generated paths', () => {
    const segment = fc.constantFrom('a', 'b', 'ab', '.', '..', '', 'a.b', '.a');
    const abs = fc.array(segment, { maxLength: 5 }).map((parts) => `/${parts.join('/')}`);
    fc.assert(
      fc.property(abs, abs, (parent, child) => {
        expect(isWithin(parent, child, POSIX)).toBe(reference(parent, child));
      }),
      { numRuns: 2000 },
    );
  });
});
