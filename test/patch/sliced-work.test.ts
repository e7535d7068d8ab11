/**
 * The searches edit_file and apply_patch run over a file (docs/security.md "Bounded work") are steps
 * (src/patch/steps.ts) that the server runs in slices of event-loop time:
 *  - applyEditsSliced / applyHunksSliced give exactly what applyEdits / applyHunks give: the same PATCH_FAILED
 *    (message, details with `nearest`, in-order and aligned, and `failures`), the same re-indented result;
 *  - the steps yield often: the nearest search and the re-indent search over a 10,000-line file hand control back at
 *    least every 128 starts (nearest) and every 1,024 lines (re-indent) — counted, not timed — so no slice is longer
 *    than that much work; the event-loop stall itself is measured on the real server in
 *    test/attacks/bounded-work.test.ts;
 *  - replace_in_files' literal replacement (src/fs/replace-lines.ts) yields every 1,024 lines and, sliced through
 *    createLineMatcher, gives replaceLines' exact result (count, text, tooMany);
 *  - the diffs skip the exact (Myers) diff only where it would give up: over random pairs of texts and edit-length
 *    bounds, whenever surplusLines exceeds the bound the diff package's diffLines returns nothing within it, and every
 *    edit script it finds removes and adds at least surplusLines lines.
 */
import { diffLines } from 'diff';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PatchFailedError } from '../../src/errors/tool-error.js';
import { createLineMatcher } from '../../src/fs/line-matcher.js';
import { replaceLines, replaceLinesSteps } from '../../src/fs/replace-lines.js';
import { applyEdits, applyEditsSliced, type TextEdit } from '../../src/patch/apply-edits.js';
import { applyHunks, applyHunksSliced } from '../../src/patch/locate-hunks.js';
import { findNearestRegion, nearestRegionSteps } from '../../src/patch/nearest-region.js';
import { parseUnifiedDiff } from '../../src/patch/parse-unified.js';
import { findReindented, reindentedSteps } from '../../src/patch/reindent.js';
import { runSteps, type Steps } from '../../src/patch/steps.js';
import { surplusLines } from '../../src/patch/window-diff.js';

const FILE = '/r/big.txt';
const LINES = 10_000;
const lines: string[] = [];
for (let i = 0; i < LINES; i++) lines.push(i % 5 === 0 ? `line ${i} target word here` : `line ${i} plain`);
const TEXT = `${lines.join('\n')}\n`;

/** 200 lines of the file in a scrambled order and indented: nothing matches, every line exists (the attack's shape). */
const scrambled: string[] = [];
for (let i = 1; i <= 200; i++)
  scrambled.push(`  line ${i % 2 ? i + 1 : i - 1} ${i % 5 === 0 ? 'target word here' : 'plain'}`);

/** Runs `steps` to the end; returns its value and how many times it yielded. */
function drain<T>(steps: Steps<T>): { value: T; yields: number } {
  let yields = 0;
  for (;;) {
    const r = steps.next();
    if (r.done) return { value: r.value, yields };
    yields++;
  }
}

/** What a call threw (it must throw a PatchFailedError), as plain data. */
function thrown(f: () => unknown): { message: string; details: unknown; suggestion: string | undefined } {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(PatchFailedError);
    const e = error as PatchFailedError;
    return { message: e.message, details: e.details, suggestion: e.suggestion };
  }
  throw new Error('expected a PatchFailedError');
}

async function thrownAsync(
  p: Promise<unknown>,
): Promise<{ message: string; details: unknown; suggestion: string | undefined }> {
  const error = await p.then(
    () => new Error('expected a PatchFailedError'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PatchFailedError);
  const e = error as PatchFailedError;
  return { message: e.message, details: e.details, suggestion: e.suggestion };
}

describe('sliced and at once: the same answer', () => {
  it('edit_file engine: three failing edits (aligned and in-order nearest) → the same PATCH_FAILED', async () => {
    // Lines 1,000–1,019 without line 1,010: held in order, not adjacent.
    const gapped = lines.slice(1000, 1020).filter((_, k) => k !== 10);
    const edits: TextEdit[] = [
      { old_text: `${scrambled.join('\n')}\n`, new_text: 'x\n' },
      { old_text: `${gapped.join('\n')}\n`, new_text: 'y\n' },
      { old_text: 'line 101 plain\nline 102 plian\nline 103 plain\n', new_text: 'z\n' },
    ];
    const atOnce = thrown(() => applyEdits(TEXT, edits, FILE));
    const sliced = await thrownAsync(applyEditsSliced(TEXT, edits, FILE));
    expect(sliced).toEqual(atOnce);
    const failures = (atOnce.details as { failures: Array<{ nearest?: { line: number; in_order?: unknown } }> })
      .failures;
    expect(failures).toHaveLength(3);
    expect(failures[0].nearest).toMatchObject({ line: 3 });
    expect(failures[1].nearest).toMatchObject({ line: 1001, in_order: { found: 19, of: 19 } });
    expect(failures[2].nearest).toMatchObject({ line: 102, first_difference: { line: 103 } });
  });

  it('edit_file engine: a re-indented edit → the same text and report', async () => {
    const edits: TextEdit[] = [{ old_text: '  line 7 plain\n  line 8 plain\n', new_text: '  line 7 PLAIN\n' }];
    const atOnce = applyEdits(TEXT, edits, FILE);
    expect(atOnce.edits[0]).toMatchObject({ match: 'reindented', lines: [8] });
    expect(await applyEditsSliced(TEXT, edits, FILE)).toEqual(atOnce);
  });

  it('apply_patch engine: a failing hunk and an applying one → the same PATCH_FAILED; applying alone → the same text', async () => {
    const failing = [
      '--- a/big.txt',
      '+++ b/big.txt',
      '@@ -1,3 +1,3 @@',
      ...scrambled.slice(0, 60).map((l, k) => (k === 30 ? `-${l}` : ` ${l}`)),
      '+new',
      '@@ -11,2 +11,2 @@',
      ' line 10 target word here',
      '-line 11 plain',
      '+line 11 PLAIN',
    ].join('\n');
    const [file] = parseUnifiedDiff(`${failing}\n`);
    const atOnce = thrown(() => applyHunks(TEXT, file, FILE));
    expect(await thrownAsync(applyHunksSliced(TEXT, file, FILE))).toEqual(atOnce);
    expect(atOnce.details).toMatchObject({ reason: 'no_match', hunk: 1 });
    const [good] = parseUnifiedDiff(
      '--- a/big.txt\n+++ b/big.txt\n@@ -11,2 +11,2 @@\n line 10 target word here\n-line 11 plain\n+line 11 PLAIN\n',
    );
    const applied = applyHunks(TEXT, good, FILE);
    expect(applied.text).toBe(TEXT.replace('line 11 plain\n', 'line 11 PLAIN\n'));
    expect(await applyHunksSliced(TEXT, good, FILE)).toEqual(applied);
  });
});

describe('the steps yield often', () => {
  it('the nearest search over 10,000 lines yields at least every 128 starts, with the plain function’s value', () => {
    const { value, yields } = drain(nearestRegionSteps(lines, scrambled));
    expect(yields).toBeGreaterThanOrEqual(LINES / 128);
    expect(value).toEqual(findNearestRegion(lines, scrambled));
    expect(value).toMatchObject({ line: 3 });
  });

  it('the re-indent search over 10,000 lines yields at least every 1,024 lines, with the plain function’s value', () => {
    const { value, yields } = drain(reindentedSteps(lines, scrambled, 51));
    expect(yields).toBeGreaterThanOrEqual((2 * (LINES - scrambled.length)) / 1024 - 2);
    expect(value).toEqual(findReindented(lines, scrambled, 51));
    expect(value).toEqual([]);
  });
});

describe('replace_in_files: the literal replacement in slices', () => {
  it('yields every 1,024 lines; sliced through the matcher it gives replaceLines’ result', async () => {
    const re = /target/u;
    const { value, yields } = drain(replaceLinesSteps(re, TEXT, 'TARGET', true));
    expect(yields).toBeGreaterThanOrEqual(Math.floor(LINES / 1024));
    const atOnce = replaceLines(re, TEXT, 'TARGET', true);
    expect(value).toEqual(atOnce);
    expect(atOnce.count).toBe(LINES / 5);
    const matcher = createLineMatcher('target', { regex: false, caseSensitive: true });
    expect(await matcher.replace(TEXT, 'TARGET', Infinity, Infinity)).toEqual(atOnce);
    expect(await matcher.replace(TEXT, 'TARGET', Infinity, 10)).toEqual({ text: TEXT, count: 0, tooMany: true });
  });
});

describe('the exact diff is skipped only where it would give up', () => {
  /** Lines as the diff package tokenizes them: each with its `\n`, the last without when the text has none. */
  const tokens = (s: string) => s.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const line = fc.constantFrom('a', 'b', 'c', '', 'a b', 'x\r');
  const text = fc
    .tuple(fc.array(line, { maxLength: 25 }), fc.boolean())
    .map(([ls, nl]) => ls.join('\n') + (nl && ls.length ? '\n' : ''));

  it('surplus over the bound → diffLines finds nothing within it; any script it finds is at least the surplus (property)', () => {
    let skipped = 0;
    fc.assert(
      fc.property(text, text, fc.integer({ min: 1, max: 30 }), (x, y, bound) => {
        const surplus = runSteps(surplusLines(tokens(x), tokens(y)));
        const changes = diffLines(x, y)
          .filter((c) => c.added || c.removed)
          .reduce((n, c) => n + c.count, 0);
        expect(changes).toBeGreaterThanOrEqual(surplus);
        if (surplus > bound) {
          skipped++;
          expect(diffLines(x, y, { maxEditLength: bound })).toBeUndefined();
        }
      }),
      { numRuns: 5_000 },
    );
    expect(skipped).toBeGreaterThan(100);
  });
});
