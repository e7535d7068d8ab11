/**
 * The windowed unified diff (src/patch/window-diff.ts). Pins, over random pairs of texts from a small pool of lines
 * (repeats, moves, several separate changes, shared prefixes and suffixes, CRLF lines, no final newline, empty texts)
 * and context 0–4:
 * - it is exact: applying it to `before` gives `after` (whenever the package's own diff applies: a lone CR before the
 *   end of a file without a final newline defeats the package's applyPatch either way);
 * - it is as short as the diff package's createTwoFilesPatch (the same numbers of removed and added lines);
 * - its text is identical to createTwoFilesPatch whenever the two texts share no suffix (only the prefix is cut, which
 *   the package's search consumes before any choice), and for one-line edits of a large file at its start, middle and
 *   end.
 * The three properties run a quarter of their full counts in `npm test` (5,000, 2,500 and 1,250 generated pairs:
 * FS_TOOLS_DIFF_RUNS, default 5,000, is the first one's); `npm run test:full-counts` (.ci/run) runs the full
 * 20,000, 10,000 and 5,000.
 */
import { applyPatch, createTwoFilesPatch } from 'diff';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundedUnifiedDiff, unifiedDiff } from '../../src/patch/window-diff.js';

/** Generated pairs of the first property; the second runs half as many, the third a quarter. */
const RUNS = Number(process.env.FS_TOOLS_DIFF_RUNS ?? 5_000);

const full = (a: string, b: string, context: number) =>
  createTwoFilesPatch('a/f', 'b/f', a, b, undefined, undefined, { context });
const counts = (d: string) => {
  const body = d.split('\n').filter((l) => !l.startsWith('---') && !l.startsWith('+++'));
  return [body.filter((l) => l.startsWith('-')).length, body.filter((l) => l.startsWith('+')).length];
};

const line = fc.constantFrom('a', 'b', 'c', '', 'a b', 'x\r');
const lines = fc.array(line, { maxLength: 30 });
const text = (ls: string[], nl: boolean) => ls.join('\n') + (nl && ls.length ? '\n' : '');
const pair = fc
  .tuple(
    lines,
    fc.array(fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.array(line, { maxLength: 4 })), { maxLength: 4 }),
    fc.boolean(),
    fc.boolean(),
    lines,
    lines,
  )
  .map(([base, edits, nl1, nl2, pre, post]) => {
    const edited = [...base];
    for (const [at, del, ins] of edits) edited.splice(at % (edited.length + 1), del, ...ins);
    return [text([...pre, ...base, ...post], nl1), text([...pre, ...edited, ...post], nl2)] as const;
  });

describe('unifiedDiff', () => {
  it('applies exactly and is as short as createTwoFilesPatch (property)', () => {
    fc.assert(
      fc.property(pair, fc.integer({ min: 0, max: 4 }), ([a, b], context) => {
        for (const [x, y] of [
          [a, b],
          [b, a],
        ]) {
          const d = unifiedDiff('a/f', 'b/f', x, y, context);
          // (The package's own diff of a lone CR at the end of a file does not apply with its applyPatch; skip those.)
          if (applyPatch(x, full(x, y, context)) === y) expect(applyPatch(x, d)).toBe(y);
          expect(counts(d)).toEqual(counts(full(x, y, context)));
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('is the text of createTwoFilesPatch when the texts share no suffix (property)', () => {
    fc.assert(
      fc.property(pair, fc.integer({ min: 0, max: 4 }), ([a, b], context) => {
        const x = `${a}END-A\n`;
        const y = `${b}END-B\n`;
        expect(unifiedDiff('a/f', 'b/f', x, y, context)).toBe(full(x, y, context));
      }),
      { numRuns: RUNS / 2 },
    );
  });

  it('is the text of createTwoFilesPatch for one-line edits of a large file', () => {
    const ls = Array.from({ length: 5000 }, (_, i) => `line ${i % 700}`);
    const before = `${ls.join('\n')}\n`;
    for (const at of [0, 1, 2500, 4998, 4999]) {
      const edited = [...ls];
      edited[at] = 'changed';
      const after = `${edited.join('\n')}\n`;
      expect(unifiedDiff('a/f', 'b/f', before, after, 3)).toBe(full(before, after, 3));
    }
    expect(unifiedDiff('a/f', 'b/f', before, before, 3)).toBe(full(before, before, 3));
    expect(unifiedDiff('a/f', 'b/f', '', before, 3)).toBe(full('', before, 3));
    expect(unifiedDiff('a/f', 'b/f', before, '', 3)).toBe(full(before, '', 3));
  });
});

describe('boundedUnifiedDiff (docs/security.md "Bounded work")', () => {
  it('the anchored diff (past the exact diff’s work bound) applies exactly (property)', () => {
    fc.assert(
      fc.property(pair, fc.integer({ min: 0, max: 4 }), ([a, b], context) => {
        for (const [x, y] of [
          [a, b],
          [b, a],
        ]) {
          const d = boundedUnifiedDiff('a/f', 'b/f', x, y, context, Infinity, 0);
          if (applyPatch(x, full(x, y, context)) === y) expect(applyPatch(x, d.text)).toBe(y);
          expect(d.truncated).toBe(false);
        }
      }),
      { numRuns: RUNS / 4 },
    );
  });

  it('10,000 changed lines of a 50,000-line file: linear (anchored), exact, and cut while produced', () => {
    const ls = Array.from({ length: 50_000 }, (_, i) => (i % 5 === 0 ? `line ${i} target word` : `line ${i} plain`));
    const before = `${ls.join('\n')}\n`;
    const after = before.replaceAll('target', 'TARGET');
    const started = performance.now();
    const whole = boundedUnifiedDiff('a/f', 'b/f', before, after, 3, Infinity);
    expect(performance.now() - started).toBeLessThan(5000); // was 30-50 s (a generous bound: no timing assertion intended)
    expect(whole.minimal).toBe(false);
    expect(applyPatch(before, whole.text)).toBe(after);
    expect(counts(whole.text)).toEqual([10_000, 10_000]);
    const cut = boundedUnifiedDiff('a/f', 'b/f', before, after, 3, 64 * 1024);
    expect(cut.truncated).toBe(true);
    expect(cut.text.length).toBeLessThan(64 * 1024 + 1024);
    expect(whole.text.startsWith(cut.text.slice(0, cut.text.lastIndexOf('\n@@ ')))).toBe(true);
  });

  it('a small change keeps the exact diff', () => {
    const before = 'a\nb\nc\n';
    const d = boundedUnifiedDiff('a/f', 'b/f', before, 'a\nB\nc\n', 3, Infinity);
    expect(d).toEqual({ text: full(before, 'a\nB\nc\n', 3), truncated: false, minimal: true });
  });
});
