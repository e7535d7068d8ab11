/**
 * src/patch/merge3.ts in-process: git's rule case by case (separated changes merge; overlapping, adjacent and
 * same-point insertions conflict; the very same change merges once), the conservative treatment of blocks a diff
 * could place in several ways, the work bound, and lines no diff library may see as object keys.
 */
import { describe, expect, it } from 'vitest';
import { joinLines, merge3, splitLines } from '../../src/patch/merge3.js';

const L = (...xs: string[]) => xs.map((x) => `${x}\n`).join('');
const BASE = L('a', 'b', 'c', 'd', 'e', 'f', 'g');

describe('merge3', () => {
  it('merges changes separated by at least one unchanged line, and says where theirs went', () => {
    const r = merge3(BASE, L('A', 'b', 'c', 'd', 'e', 'f', 'g', 'h'), L('a', 'b', 'c', 'D', 'e', 'f', 'g'));
    expect(r).toEqual({
      kind: 'merged',
      text: L('A', 'b', 'c', 'D', 'e', 'f', 'g', 'h'),
      theirRanges: [
        [1, 1],
        [8, 8],
      ],
    });
  });

  it.each([
    ['the same line', L('a', 'b', 'c', 'X', 'e', 'f', 'g')],
    ['the line before', L('a', 'b', 'X', 'd', 'e', 'f', 'g')],
    ['the line after', L('a', 'b', 'c', 'd', 'X', 'f', 'g')],
    ['an insertion right before', L('a', 'b', 'c', 'X', 'd', 'e', 'f', 'g')],
    ['an insertion right after', L('a', 'b', 'c', 'd', 'X', 'e', 'f', 'g')],
  ])('a change to %s as ours conflicts (git: adjacent is a conflict)', (_name, theirs) => {
    const r = merge3(BASE, theirs, L('a', 'b', 'c', 'D', 'e', 'f', 'g'));
    expect(r.kind).toBe('conflict');
    if (r.kind === 'conflict') expect(r.regions).toHaveLength(1);
  });

  it('the very same change on both sides merges once', () => {
    const same = L('a', 'b', 'c', 'D', 'e', 'f', 'g');
    expect(merge3(BASE, same, same)).toMatchObject({ kind: 'merged', text: same });
  });

  it('a block a diff could place in two ways counts with both places (never merged twice)', () => {
    // Both insert "x, }" after a "}" line; one diff may put it before, the other after, the same "x, }" pair.
    const base = L('f', 'g', '}', 'x', '}', 'end');
    const theirs = L('f', 'g', '}', 'x', '}', 'x', '}', 'end');
    const r = merge3(base, theirs, theirs);
    expect(r.kind === 'conflict' || (r.kind === 'merged' && r.text === theirs)).toBe(true);
    // One unchanged line ('g') beyond every place the block could go: merged.
    expect(merge3(base, theirs, L('F', 'g', '}', 'x', '}', 'end'))).toMatchObject({
      kind: 'merged',
      text: L('F', 'g', '}', 'x', '}', 'x', '}', 'end'),
    });
    // Next to one of its places ('g' touches the highest, 'end' the lowest): a conflict, wherever one diff put it.
    expect(merge3(base, theirs, L('f', 'G', '}', 'x', '}', 'end')).kind).toBe('conflict');
    expect(merge3(base, theirs, L('f', 'g', '}', 'x', '}', 'END')).kind).toBe('conflict');
  });

  it('keeps terminators: CRLF, no final newline, and lines named like object properties', () => {
    const base = 'a\r\n__proto__\r\nconstructor\r\nhasOwnProperty';
    const r = merge3(base, 'top\r\n' + base, base.replace('hasOwnProperty', 'toString'));
    expect(r).toMatchObject({ kind: 'merged', text: 'top\r\na\r\n__proto__\r\nconstructor\r\ntoString' });
    expect(splitLines('x\ny')).toEqual(['x', 'y\n']);
    expect(splitLines('x\ny\n')).toEqual(['x', 'y']);
    expect(splitLines('')).toEqual([]);
    for (const t of ['', 'a', 'a\n', '\n\n', 'a\r\nb', 'a\n\nb\n']) expect(joinLines(splitLines(t))).toBe(t);
    expect(merge3('a\nb', 'a\nb\n', 'a\nb').kind).toBe('merged');
    expect(merge3('a\nb', 'a\nb\n', 'a\nB').kind).toBe('conflict');
  });

  it('refuses past the work bound instead of diffing', () => {
    const base = Array.from({ length: 100 }, (_, i) => `l${i}\n`).join('');
    const theirs = base.replace(/^l(\d)\n/gm, 'L$1\n'); // lines 1-10 replaced: 20 lines of edit script
    expect(merge3(base, theirs, base + 'x\n', 15)).toEqual({ kind: 'too_large' });
    expect(merge3(base, theirs + 'x\n'.repeat(60), 'y\n' + base, 50)).toEqual({ kind: 'too_large' });
    expect(merge3(base, theirs, base + 'x\n', 20)).toMatchObject({ kind: 'merged', text: theirs + 'x\n' });
  });

  it('empty sides: both deleting everything, one creating content into an empty base', () => {
    expect(merge3(BASE, '', '')).toEqual({ kind: 'merged', text: '', theirRanges: [[1, 1]] });
    expect(merge3('', 'a\n', '').kind).toBe('merged');
    expect(merge3('', 'a\n', 'b\n').kind).toBe('conflict');
  });
});
