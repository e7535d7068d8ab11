/**
 * src/patch/myers-diff.ts is the diff package's diffArrays (with maxEditLength) written as steps: on random pairs of
 * line arrays — a small alphabet, so repeated lines make many edit scripts of the same cost and the tie-breaks
 * matter — it finds the very same runs, and gives up (null) exactly where diffArrays gives up; and it yields while it
 * works, about every 1,024 comparisons (counted, not timed), on a diff whose repeated lines make every diagonal a long
 * snake.
 */
import { diffArrays } from 'diff';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffLinesSteps, type DiffRun } from '../../src/patch/myers-diff.js';
import { runSteps, STEP_LINES } from '../../src/patch/steps.js';

const line = fc.constantFrom('a', 'b', 'c', '', '}', 'a\n');
const lines = fc.array(line, { maxLength: 40 });

/** What diffArrays finds, as runs (null when it gives up). */
function reference(a: string[], b: string[], maxEditLength: number): DiffRun[] | null {
  const parts = diffArrays(a, b, { maxEditLength });
  if (!parts) return null;
  return parts.map((p) => ({ count: p.count, added: p.added, removed: p.removed }));
}

describe('diffLinesSteps', () => {
  it('finds the runs diffArrays finds, and gives up where it does', () => {
    fc.assert(
      fc.property(lines, lines, fc.integer({ min: 0, max: 50 }), (a, b, maxEditLength) => {
        expect(runSteps(diffLinesSteps(a, b, maxEditLength))).toEqual(reference(a, b, maxEditLength));
      }),
      { numRuns: 3000 },
    );
  });

  it('one array an edit of the other (long common runs, a few changes)', () => {
    fc.assert(
      fc.property(
        fc.array(line, { minLength: 20, maxLength: 200 }),
        fc.array(fc.record({ at: fc.nat(), del: fc.nat({ max: 3 }), ins: fc.array(line, { maxLength: 3 }) }), {
          maxLength: 6,
        }),
        (a, edits) => {
          const b = [...a];
          for (const e of edits) b.splice(e.at % (b.length + 1), e.del, ...e.ins);
          for (const bound of [5, 30]) expect(runSteps(diffLinesSteps(a, b, bound))).toEqual(reference(a, b, bound));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('yields at least every STEP_LINES comparisons on identical lines (every diagonal a long snake)', () => {
    const a = Array<string>(20_000).fill('same');
    const b = ['x', ...a.slice(2), 'y', 'z'];
    const steps = diffLinesSteps(a, b, 300);
    let yields = 0;
    let r = steps.next();
    for (; !r.done; r = steps.next()) yields++;
    expect(r.value).toEqual(reference(a, b, 300));
    // At least one snake runs along (nearly) the whole file: that alone is 20,000 comparisons.
    expect(yields).toBeGreaterThanOrEqual(Math.floor(20_000 / STEP_LINES));
  });
});
