/**
 * The matching rules of docs/errors.md "already_applied only on evidence", "nearest" and "Indentation-tolerant edits"
 * as pure functions (src/patch/applied-evidence.ts, src/patch/nearest-region.ts, src/patch/reindent.ts, through
 * applyEdits and applyHunks):
 *  - appliedOnEvidence: a pure deletion is never evidence (unless anchored at the file's boundary), a short frame is
 *    not, a distinctive removed line still in the file is not; a replacement made is;
 *  - in-order nearest: a moved line gives the in-order region with where the line went; a region needs half the lines
 *    and two of them; a single differing line keeps the aligned first_difference;
 *  - uniformShift/reindentText/describeShift for each kind, and the refusals: non-uniform, mixed kinds, a prefix that
 *    new_text lacks, a new_text indented unlike old_text, a search out of budget;
 *  - applyEdits reindented: Python, YAML, Makefile (tabs kept), a CRLF file, the lines other than the targeted ones
 *    byte-identical; several regions ambiguous.
 */
import { describe, expect, it, test } from 'vitest';
import { PatchFailedError } from '../../src/errors/tool-error.js';
import { appliedOnEvidence } from '../../src/patch/applied-evidence.js';
import { applyEdits, type TextEdit } from '../../src/patch/apply-edits.js';
import { applyHunks } from '../../src/patch/locate-hunks.js';
import { findNearestRegion, IN_ORDER_THRESHOLD, similarity, similarityTo } from '../../src/patch/nearest-region.js';
import { parseUnifiedDiff } from '../../src/patch/parse-unified.js';
import {
  describeShift,
  findReindented,
  MAX_REINDENT_COMPARISONS,
  reindentText,
  sameFrame,
  uniformShift,
} from '../../src/patch/reindent.js';

const FILE = '/r/f';

function failing(original: string, edits: TextEdit[]): PatchFailedError {
  let caught: unknown;
  try {
    applyEdits(original, edits, FILE);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(PatchFailedError);
  return caught as PatchFailedError;
}

describe('appliedOnEvidence', () => {
  const base = { contextChars: 20, foundPinned: true, anchored: false };
  it('a pure deletion (new side inside the old side) is never evidence', () => {
    const view = 'const a = 1;\nconst b = 2;\n';
    expect(
      appliedOnEvidence(view, {
        ...base,
        oldText: 'const a = 1;\nconst debugLog = true;\n',
        newText: 'const a = 1;\n',
      }),
    ).toBe(false);
  });
  it('… unless a hunk is anchored at the file boundary', () => {
    const view = 'x\nconst a = 1;\n';
    expect(
      appliedOnEvidence(view, {
        ...base,
        anchored: true,
        oldText: 'const a = 1;\nconst debugLog = true;',
        newText: 'const a = 1;',
      }),
    ).toBe(true);
  });
  it('not found, or a frame under 8 characters: no evidence', () => {
    expect(appliedOnEvidence('y = 2;\n', { ...base, foundPinned: false, oldText: 'y = 1;', newText: 'y = 2;' })).toBe(
      false,
    );
    expect(appliedOnEvidence('y = 2;\n', { ...base, contextChars: 7, oldText: 'y = 1;', newText: 'y = 2;' })).toBe(
      false,
    );
  });
  it('a distinctive removed line still in the file: no evidence; gone: evidence', () => {
    const change = { ...base, oldText: 'const a = 1;\nlog(true);', newText: 'const a = 1;\nlog(false);' };
    expect(appliedOnEvidence('const a = 1;\nlog(false);\n', change)).toBe(true);
    expect(appliedOnEvidence('const a = 1;\nlog(false);\nf() { log(true); }\n', change)).toBe(false);
    // A short removed line (`}`) is no evidence either way.
    expect(
      appliedOnEvidence('a = 1;\nb = 2;\n}\n', { ...base, oldText: 'a = 1;\n}\nb = 2;', newText: 'a = 1;\nb = 2;' }),
    ).toBe(true);
  });
  it('a pure-deletion hunk with a typo in its removed line is no_match (not already_applied)', () => {
    const file = 'const a = 1;\nconst debugLog = true;\nconst b = 2;\nconst c = 3;\n';
    const [fp] = parseUnifiedDiff('@@ -1,2 +1,1 @@\n const a = 1;\n-const debuglog = true;\n');
    let caught: unknown;
    try {
      applyHunks(file, fp, FILE);
    } catch (error) {
      caught = error;
    }
    expect((caught as PatchFailedError).details.reason).toBe('no_match');
  });
});

describe('in-order nearest', () => {
  it('similarityTo (the prepared form the first scan uses) equals similarity', () => {
    const words = ['', 'a', 'ab', 'abab', '    timeout = 10', 'timeout = 11', 'Bäcker €', '😀😀x', 'aaaa', 'aa'];
    for (const a of words) for (const b of words) expect(similarityTo(b)(a)).toBe(similarity(a, b));
  });
  const lines = ['def f():', '    a = 1', '    c = 3', '    d = 4', '    return a', '', 'def g():', '    b = 2'];
  it('a moved line: the in-order region, first_difference null, where the moved line is now', () => {
    expect(findNearestRegion(lines, ['def f():', '    a = 1', '    b = 2', '    c = 3', '    d = 4'])).toEqual({
      line: 1,
      excerpt: 'def f():\n    a = 1\n    c = 3\n    d = 4',
      first_difference: null,
      in_order: { found: 4, of: 5, missing: [{ expected: '    b = 2', line: 8 }] },
    });
  });
  it(`below ${IN_ORDER_THRESHOLD} of the lines, or one line only: nothing`, () => {
    expect(findNearestRegion(lines, ['def f():', 'zzz1', 'zzz2', 'zzz3', 'zzz4'])).toBeNull();
    expect(findNearestRegion(['a line', 'other'], ['a line', 'qqqqqqqqqqqq'])).toBeNull();
  });
  it('one differing line keeps the aligned region and its first_difference', () => {
    const r = findNearestRegion(lines, ['def f():', '    a = 2', '    c = 3', '    d = 4']);
    expect(r?.in_order).toBeUndefined();
    expect(r?.first_difference).toEqual({
      line: 2,
      expected: '    a = 2',
      actual: '    a = 1',
      whitespace_only: false,
    });
  });
  it('a line found only far away (past twice the old_text length) is no part of the region', () => {
    const far = ['def f():', '    a = 1', '    c = 3', ...Array<string>(40).fill('pass'), '    b = 2'];
    const r = findNearestRegion(far, ['def f():', '    b = 2', '    a = 1', '    c = 3']);
    expect(r?.line).toBe(1);
    expect(r?.in_order).toEqual({ found: 3, of: 4, missing: [{ expected: '    b = 2', line: 44 }] });
  });
});

describe('uniform indentation shifts', () => {
  test.each([
    [
      'prefix added',
      [
        { from: '', to: '    ' },
        { from: '  ', to: '      ' },
      ],
      '+4 spaces',
    ],
    [
      'prefix removed',
      [
        { from: '\t\t', to: '\t' },
        { from: '\t', to: '' },
      ],
      '-1 tab',
    ],
    [
      'tabs to spaces',
      [
        { from: '\t', to: '    ' },
        { from: '\t\t  ', to: '          ' },
        { from: '', to: '' },
      ],
      'tab=4 spaces',
    ],
    [
      'spaces to tabs',
      [
        { from: '    ', to: '\t' },
        { from: '        ', to: '\t\t' },
      ],
      '4 spaces=tab',
    ],
    ['mixed prefix', [{ from: '', to: '\t  ' }], '+1 tab 2 spaces'],
  ])('%s', (_label, pairs, described) => {
    const shift = uniformShift(pairs);
    expect(shift).not.toBeNull();
    expect(describeShift(shift!)).toBe(described);
  });
  test.each([
    ['no change', [{ from: '  ', to: '  ' }]],
    [
      'non-uniform prefix',
      [
        { from: '', to: '    ' },
        { from: '  ', to: '    ' },
      ],
    ],
    [
      'inconsistent tab width',
      [
        { from: '\t', to: '    ' },
        { from: '\t\t', to: '      ' },
      ],
    ],
    ['tabs after spaces', [{ from: ' \t', to: '      ' }]],
    ['nothing to compare', []],
  ])('none: %s', (_label, pairs) => {
    expect(uniformShift(pairs)).toBeNull();
  });
  it('reindentText shifts non-blank lines, keeps blank ones, refuses a line that cannot take the shift', () => {
    expect(reindentText('a\n\n  b', { kind: 'add', prefix: '\t' })).toBe('\ta\n\n\t  b');
    expect(reindentText('    a\n  b', { kind: 'remove', prefix: '    ' })).toBeNull();
    expect(reindentText('      a', { kind: 'spaces_to_tabs', width: 4 })).toBe('\t  a');
    expect(reindentText('\ta', { kind: 'spaces_to_tabs', width: 4 })).toBeNull();
  });
  it('sameFrame compares the first non-blank lines', () => {
    expect(sameFrame('\n  a\n', '  b')).toBe(true);
    expect(sameFrame('  a', '    b')).toBe(false);
    expect(sameFrame('  a', '')).toBe(true);
  });
  it('a search past its comparison budget is null (fail closed)', () => {
    // 10,000 starts of a 200-line old_text: 2 million comparisons, past the budget of 1 million.
    expect(MAX_REINDENT_COMPARISONS).toBeLessThan(2_000_000);
    const file = Array<string>(10_000).fill('x');
    const expected = [...Array<string>(199).fill('  x'), '  y'];
    expect(findReindented(file, expected, 51)).toBeNull();
    expect(findReindented(['a', '  b'], ['  a', '    b'], 51)).toEqual([
      { at: 0, shift: { kind: 'remove', prefix: '  ' } },
    ]);
  });
});

describe('applyEdits re-indented', () => {
  it('Python: +4 spaces, new_text shifted, other lines byte-identical', () => {
    const py = 'class A:\n    def f(self):\n        x = 1\n        return x\n';
    const r = applyEdits(
      py,
      [{ old_text: 'def f(self):\n    x = 1\n', new_text: 'def f(self):\n    x = 2\n    y = 3\n' }],
      FILE,
    );
    expect(r.text).toBe('class A:\n    def f(self):\n        x = 2\n        y = 3\n        return x\n');
    expect(r.edits).toEqual([
      { index: 0, replacements: 1, match: 'reindented', indent_shift: '+4 spaces', lines: [2] },
    ]);
  });
  it('a Makefile recipe: tabs stay tabs; a CRLF file stays CRLF', () => {
    const mk = 'all:\r\n\tcc -o x x.c\r\n\techo ok\r\n';
    const r = applyEdits(
      mk,
      [{ old_text: '    cc -o x x.c\n    echo ok\n', new_text: '    cc -O2 -o x x.c\n    echo ok\n' }],
      FILE,
    );
    expect(r.text).toBe('all:\r\n\tcc -O2 -o x x.c\r\n\techo ok\r\n');
    expect(r.edits[0]).toMatchObject({ match: 'reindented', indent_shift: '4 spaces=tab', lines: [2] });
  });
  it('removed prefix: old_text quoted deeper than the file', () => {
    const r = applyEdits(
      'a:\n  b: 1\n  c: 2\n',
      [{ old_text: '    b: 1\n    c: 2', new_text: '    b: 5\n    c: 2' }],
      FILE,
    );
    expect(r.text).toBe('a:\n  b: 5\n  c: 2\n');
    expect(r.edits[0]).toMatchObject({ indent_shift: '-2 spaces' });
  });
  it('new_text that lacks the prefix to remove: no_match, the message says why', () => {
    const e = failing('a:\n  b: 1\n', [{ old_text: '    b: 1', new_text: '    b: 1\nc: 2' }]);
    expect(e.details.reason).toBe('no_match');
    expect(e.message).toMatch(/re-indenting it would be a guess/);
  });
  it('several regions: ambiguous with match reindented and candidate context', () => {
    const text = 'if a:\n  x = 1\n  y = 2\nif b:\n    x = 1\n    y = 2\n';
    const e = failing(text, [{ old_text: 'x = 1\ny = 2\n', new_text: 'x = 1\ny = 3\n' }]);
    expect(e.details).toMatchObject({ reason: 'ambiguous', match: 'reindented', count: 2, candidates: [2, 5] });
    expect((e.details.candidate_context as Array<{ line: number }>).map((c) => c.line)).toEqual([2, 5]);
  });
});
