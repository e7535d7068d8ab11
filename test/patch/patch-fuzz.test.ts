/**
 * Property tests of the patch engine (SPEC §6.3): random files and random edits, their unified diff built by the
 * `diff` package (structuredPatch), rendered with scrambled hunk headers, parsed by parseUnifiedDiff and applied by
 * applyHunks. Pins:
 *  - unique lines, headers scrambled (exact, wrong numbers, missing counts, `@@ @@`), hunks in random order, with or
 *    without ---/+++ headers, with or without a ```diff fence, LF or CRLF file, final newline or not on either side:
 *    the engine reproduces the edited file exactly (CRLF files stay CRLF);
 *  - lines drawn from a tiny alphabet (repeats, blank lines, lines like "-- x" and "++ y"), correct headers, empty
 *    context lines written as empty lines or not: the result is exact, or the refusal is justified (ambiguous only
 *    when the old side occurs more than once; already_applied only when the new side is already in the file);
 *  - repeats and scrambled headers: never a wrong result for a patch whose every hunk matches exactly once; any
 *    refusal is PATCH_FAILED.
 * Shrunk counterexamples found while writing this file are pinned as regression cases at the bottom.
 * Sized to a few seconds (numRuns below); the engine is pure, so no file is touched.
 */
import { structuredPatch, type StructuredPatchHunk } from 'diff';
import fc from 'fast-check';
import { describe, expect, it, test } from 'vitest';
import { PatchFailedError } from '../../src/errors/tool-error.js';
import { applyHunks } from '../../src/patch/locate-hunks.js';
import { parseUnifiedDiff } from '../../src/patch/parse-unified.js';

/** Runs per property (FUZZ_RUNS raises it for a longer local hunt). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 500);

type Scramble = 'exact' | 'wrong_numbers' | 'no_counts' | 'bare';

interface Rendering {
  scrambles: Scramble[];
  offsets: number[];
  order: number[];
  headers: boolean;
  fence: boolean;
  /** Write " " (an empty context line) as an empty line (in hunks with exact headers). */
  bareEmptyContext: boolean;
}

/** Renders jsdiff hunks as unified-diff text with the given scrambles. */
function render(hunks: StructuredPatchHunk[], r: Rendering): string {
  const order = hunks.map((_, i) => i).sort((a, b) => (r.order[a] ?? a) - (r.order[b] ?? b) || a - b);
  const out: string[] = [];
  if (r.fence) out.push('Here is the change:', '', '```diff');
  if (r.headers) out.push('--- a/file.txt', '+++ b/file.txt');
  for (const i of order) {
    const h = hunks[i];
    const s = r.scrambles[i % r.scrambles.length];
    const off = r.offsets[i % r.offsets.length];
    if (s === 'exact') out.push(`@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`);
    else if (s === 'wrong_numbers')
      out.push(
        `@@ -${Math.max(0, h.oldStart + off)},${Math.max(0, h.oldLines + (off % 3))} +${Math.max(0, h.newStart - off)},${h.newLines + 2} @@`,
      );
    else if (s === 'no_counts') out.push(`@@ -${h.oldStart} +${h.newStart} @@`);
    else out.push('@@ @@');
    // An empty line for an empty context line is unambiguous only under correct counts (without them, empty lines
    // at the end of a hunk may as well be separators), so only exact headers get it.
    for (const l of h.lines) out.push(r.bareEmptyContext && s === 'exact' && l === ' ' ? '' : l);
  }
  if (r.fence) out.push('```', '', 'Let me know if it works.');
  return `${out.join('\n')}\n`;
}

const join = (lines: string[], finalNewline: boolean) =>
  lines.length === 0 ? '' : lines.join('\n') + (finalNewline ? '\n' : '');

/** Applies `edits` (one per base line, plus one for the end) to `base`. */
function edit(
  base: string[],
  ops: Array<{ op: 'keep' | 'delete' | 'replace'; ins: string[]; with: string }>,
): string[] {
  const out: string[] = [];
  for (let i = 0; i <= base.length; i++) {
    const o = ops[i % ops.length];
    out.push(...o.ins);
    if (i === base.length) break;
    if (o.op === 'keep') out.push(base[i]);
    else if (o.op === 'replace') out.push(o.with);
  }
  return out;
}

/** Runs the engine; returns the text or the PATCH_FAILED error. */
function run(original: string, patch: string): { text: string } | { error: PatchFailedError } {
  try {
    const files = parseUnifiedDiff(patch);
    expect(files).toHaveLength(1);
    return { text: applyHunks(original, files[0], '/r/file.txt').text };
  } catch (error) {
    if (error instanceof PatchFailedError) return { error };
    throw error;
  }
}

const count = (hay: string[], needle: string[]) => {
  let n = 0;
  for (let i = 0; i + needle.length <= hay.length; i++) if (needle.every((l, j) => hay[i + j] === l)) n++;
  return n;
};

const oldSideOf = (h: StructuredPatchHunk) =>
  h.lines.filter((l) => l[0] === ' ' || l[0] === '-').map((l) => l.slice(1));
const newSideOf = (h: StructuredPatchHunk) =>
  h.lines.filter((l) => l[0] === ' ' || l[0] === '+').map((l) => l.slice(1));

const chars = fc.constantFrom('a', 'b', 'c', ' ', '-', '+', "'", '\u2019', '\t', 'x', '@', '\\', '`', '*');
const wordLine = fc.string({ unit: chars, minLength: 1, maxLength: 6 });
const opArb = (line: fc.Arbitrary<string>) =>
  fc.record({
    op: fc.constantFrom<'keep' | 'delete' | 'replace'>('keep', 'keep', 'keep', 'keep', 'delete', 'replace'),
    ins: fc.oneof(
      { weight: 4, arbitrary: fc.constant([] as string[]) },
      { weight: 1, arbitrary: fc.array(line, { minLength: 1, maxLength: 3 }) },
    ),
    with: line,
  });
const renderingArb = fc.record({
  scrambles: fc.array(fc.constantFrom<Scramble>('exact', 'wrong_numbers', 'no_counts', 'bare'), {
    minLength: 1,
    maxLength: 4,
  }),
  offsets: fc.array(fc.integer({ min: -50, max: 50 }), { minLength: 1, maxLength: 4 }),
  order: fc.array(fc.nat(20), { maxLength: 8 }),
  headers: fc.boolean(),
  fence: fc.boolean(),
  bareEmptyContext: fc.boolean(),
});

describe('fuzz', () => {
  it('unique lines, scrambled headers, any order, LF or CRLF: the edited file exactly', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.oneof({ weight: 9, arbitrary: wordLine }, { weight: 1, arbitrary: fc.constant('') }), {
          maxLength: 30,
        }),
        fc.array(opArb(wordLine), { minLength: 1, maxLength: 31 }),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 4 }),
        renderingArb,
        (base, ops, oldEol, newEol, crlf, context, rendering) => {
          const original = join(base, oldEol);
          const edited = join(edit(base, ops), newEol);
          const sp = structuredPatch('file.txt', 'file.txt', original, edited, undefined, undefined, { context });
          if (sp.hunks.length === 0) return;
          const patch = render(sp.hunks, rendering);
          const useCrlf = crlf && original.includes('\n');
          const r = run(useCrlf ? original.replace(/\n/g, '\r\n') : original, patch);
          expect(r, `${'error' in r ? JSON.stringify(r.error.details) : ''}\n${patch}`).toEqual({
            text: useCrlf ? edited.replace(/\n/g, '\r\n') : edited,
          });
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('repeated lines and blank lines, correct headers: exact, or a justified refusal', () => {
    const tiny = fc.constantFrom('', '', 'a', 'b', 'a b', '-- x', '++ y', ' ');
    fc.assert(
      fc.property(
        fc.array(tiny, { maxLength: 20 }),
        fc.array(opArb(tiny), { minLength: 1, maxLength: 21 }),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 3 }),
        fc.boolean(),
        fc.boolean(),
        (base, ops, oldEol, newEol, context, headers, bareEmptyContext) => {
          const original = join(base, oldEol);
          const edited = join(edit(base, ops), newEol);
          const sp = structuredPatch('file.txt', 'file.txt', original, edited, undefined, undefined, { context });
          if (sp.hunks.length === 0) return;
          const patch = render(sp.hunks, {
            scrambles: ['exact'],
            offsets: [0],
            order: [],
            headers,
            fence: false,
            bareEmptyContext,
          });
          const r = run(original, patch);
          if ('text' in r) {
            expect(r.text, patch).toBe(edited);
            return;
          }
          const d = r.error.details;
          const hunk = sp.hunks[(d.hunk as number) - 1];
          const lines = original === '' ? [] : original.replace(/\n$/, '').split('\n');
          if (d.reason === 'already_applied') {
            expect(
              count(lines, newSideOf(hunk)),
              `already_applied without the new side present\n${patch}`,
            ).toBeGreaterThan(0);
          } else {
            expect.fail(`refused ${JSON.stringify(d)}\n${patch}`);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('repeated lines, scrambled headers: never a wrong result when every hunk matches once', () => {
    const small = fc.constantFrom('a', 'b', 'c', 'd', 'a b', 'x', '-- x', '++ y');
    fc.assert(
      fc.property(
        fc.array(small, { maxLength: 20 }),
        fc.array(opArb(small), { minLength: 1, maxLength: 21 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 3 }),
        renderingArb,
        (base, ops, eol, context, rendering) => {
          const original = join(base, eol);
          const edited = join(edit(base, ops), eol);
          const sp = structuredPatch('file.txt', 'file.txt', original, edited, undefined, undefined, { context });
          if (sp.hunks.length === 0) return;
          const patch = render(sp.hunks, rendering);
          const r = run(original, patch);
          const lines = original === '' ? [] : original.replace(/\n$/, '').split('\n');
          const unique = sp.hunks.every((h) => oldSideOf(h).length > 0 && count(lines, oldSideOf(h)) === 1);
          if ('text' in r) {
            if (unique) expect(r.text, patch).toBe(edited);
          } else {
            expect(['ambiguous', 'already_applied', 'no_match', 'overlap']).toContain(r.error.details.reason);
            if (unique)
              expect.fail(`refused ${JSON.stringify(r.error.details)} although every hunk matches once\n${patch}`);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('regressions found by the fuzz', () => {
  test.each<[string, string, string, string]>([
    // label, original, patch, expected
    [
      'wrong counts, no final newline: the LF ending the patch is no context line',
      'a',
      '@@ -1,1 +1,3 @@\n-a\n\\ No newline at end of file\n+a\n',
      'a\n',
    ],
    [
      '@@ @@: removing "-- x" and adding "++ y" is no ---/+++ file header',
      'a\n-- x\n',
      '@@ @@\n a\n--- x\n+++ y\n',
      'a\n++ y\n',
    ],
    [
      'a fenced hunk whose last line is an empty context line (the empty line before the closing fence is a line)',
      '\n',
      'Here:\n\n```diff\n@@ -1,1 +1,2 @@\n+a\n\n```\n\nDone.\n',
      'a\n\n',
    ],
  ])('%s', (_label, original, patch, expected) => {
    expect(run(original, patch)).toEqual({ text: expected });
  });
});
