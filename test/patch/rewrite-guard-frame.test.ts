/**
 * changedRatio compares only the lines between the common whole-line prefix and suffix (src/patch/rewrite-guard.ts).
 * Pins that this never changes the answer: for random pairs of texts built from a small pool of lines (so lines repeat,
 * move, and prefixes/suffixes are shared, partly shared, or shared inside a line), with and without a final newline,
 * the result equals the plain multiset comparison of every line; and a one-line edit of a large file still counts
 * exactly one changed line.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { changedRatio } from '../../src/patch/rewrite-guard.js';

/** The straightforward definition (every line of both texts in a multiset). */
function reference(before: string, after: string): { ratio: number; lines: number } {
  const split = (t: string) => {
    if (t === '') return [];
    const l = t.split('\n');
    if (l[l.length - 1] === '') l.pop();
    return l;
  };
  const a = split(before);
  if (a.length === 0) return { ratio: 0, lines: 0 };
  const pool = new Map<string, number>();
  for (const l of split(after)) pool.set(l, (pool.get(l) ?? 0) + 1);
  let removed = 0;
  for (const l of a) {
    const n = pool.get(l) ?? 0;
    if (n > 0) pool.set(l, n - 1);
    else removed++;
  }
  return { ratio: removed / a.length, lines: a.length };
}

describe('changedRatio with the common frame', () => {
  it('equals the full multiset comparison (property)', () => {
    const line = fc.constantFrom('', 'a', 'b', 'ab', 'ba', 'aa', 'x y', 'a\r');
    const text = fc
      .tuple(fc.array(line, { maxLength: 12 }), fc.boolean())
      .map(([lines, finalNewline]) => lines.join('\n') + (finalNewline && lines.length ? '\n' : ''));
    const pair = fc.oneof(
      fc.tuple(text, text),
      // shared prefix and suffix around different middles
      fc.tuple(text, text, text, text).map(([p, m1, m2, s]) => [p + m1 + s, p + m2 + s] as [string, string]),
      // a shared run that ends or starts inside a line
      fc
        .tuple(text, fc.constantFrom('a', 'b', 'ab'), text)
        .map(([p, mid, s]) => [p + mid + s, p + s] as [string, string]),
    );
    fc.assert(
      fc.property(pair, ([before, after]) => {
        expect(changedRatio(before, after)).toEqual(reference(before, after));
        expect(changedRatio(after, before)).toEqual(reference(after, before));
      }),
      { numRuns: 20_000 },
    );
  });

  it('a one-line edit in a large file counts one line, across the 4096-character comparison blocks', () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i} ${'x'.repeat(i % 50)}`);
    const before = `${lines.join('\n')}\n`;
    for (const at of [0, 1, 9_999, 19_999]) {
      const edited = [...lines];
      edited[at] = `${edited[at]} changed`;
      const after = `${edited.join('\n')}\n`;
      expect(changedRatio(before, after)).toEqual({ ratio: 1 / 20_000, lines: 20_000 });
      expect(changedRatio(before, after)).toEqual(reference(before, after));
    }
    expect(changedRatio(before, before)).toEqual({ ratio: 0, lines: 20_000 });
  });
});
