/**
 * `details.nearest` (issue 21's first bullet, src/patch/nearest-region.ts), through edit_file's engine (applyEdits)
 * and directly, every field asserted:
 *  - a one-line old_text ending in "\n" (`    timeout = 11\n`) names line 4 (`    timeout = 10`), exactly as without the
 *    newline — the final newline is a line ending, not an empty line that matches any blank line (regression: line 1,
 *    `import os`);
 *  - blank expected lines do not count: a region of blank lines never wins;
 *  - code that exists nowhere gets no `nearest` at all (no invented region), for edit_file and for a patch hunk;
 *  - the threshold (NEAREST_THRESHOLD, 0.6 mean similarity of the content lines): a region just above it is reported,
 *    one just below is not;
 *  - a whitespace-only difference is reported as such, on the right line of a multi-line old_text;
 *  - edit_file's already_applied only on evidence: `{"old_text": "zzz", "new_text": "y"}` on a file containing `y` is
 *    no_match (regression: "the edit looks already applied"), and a short shared frame is no evidence either.
 */
import { describe, expect, it, test } from 'vitest';
import { PatchFailedError } from '../../src/errors/tool-error.js';
import { applyEdits, type TextEdit } from '../../src/patch/apply-edits.js';
import { findNearestRegion, NEAREST_THRESHOLD, similarity } from '../../src/patch/nearest-region.js';

const FILE = '/r/app.py';
const PY = 'import os\n\n\ndef f():\n    timeout = 10\n    return timeout\n';

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

describe('whole lines: a final newline is a line ending', () => {
  test.each([
    ['with the newline', '    timeout = 11\n'],
    ['without it', '    timeout = 11'],
  ])('one-line old_text %s → line 5, first difference on it', (_label, oldText) => {
    const e = failing(PY, [{ old_text: oldText, new_text: '    timeout = 12\n' }]);
    expect(e.details).toEqual({
      reason: 'no_match',
      edit_index: 0,
      nearest: {
        line: 5,
        excerpt: '    timeout = 10\n    return timeout',
        first_difference: { line: 5, expected: '    timeout = 11', actual: '    timeout = 10', whitespace_only: false },
      },
    });
  });

  it('blank expected lines do not count: a run of blank lines never wins', () => {
    const r = findNearestRegion(PY.split('\n').slice(0, -1), ['', '    timeout = 11', '']);
    // Aligned so that the content line sits on line 5; the first difference is the blank expected line on line 4.
    expect(r).toEqual({
      line: 4,
      excerpt: 'def f():\n    timeout = 10\n    return timeout',
      first_difference: { line: 4, expected: '', actual: 'def f():', whitespace_only: false },
    });
  });

  it('only blank expected lines → null', () => {
    expect(findNearestRegion(['a', '', 'b'], ['', ''])).toBeNull();
  });
});

describe('nothing rather than a guess', () => {
  it('code that exists nowhere → no nearest (edit_file)', () => {
    const e = failing(PY, [{ old_text: 'class Registry(Base):\n    items = []\n', new_text: 'x' }]);
    expect(e.details).toEqual({ reason: 'no_match', edit_index: 0 });
  });

  it(`the threshold is ${NEAREST_THRESHOLD}: just above is reported, just below is not`, () => {
    expect(NEAREST_THRESHOLD).toBe(0.6);
    // "abcdefghij" vs "abcdefgXYZ": 6 of 9 bigrams shared → Dice 0.667; vs "abcdeXYZWV": 4 of 9 → 0.444.
    expect(similarity('abcdefghij', 'abcdefgXYZ')).toBeCloseTo(6 / 9, 5);
    expect(similarity('abcdefghij', 'abcdeXYZWV')).toBeCloseTo(4 / 9, 5);
    expect(findNearestRegion(['zzz', 'abcdefgXYZ'], ['abcdefghij'])).toEqual({
      line: 2,
      excerpt: 'abcdefgXYZ',
      first_difference: { line: 2, expected: 'abcdefghij', actual: 'abcdefgXYZ', whitespace_only: false },
    });
    expect(findNearestRegion(['zzz', 'abcdeXYZWV'], ['abcdefghij'])).toBeNull();
  });

  it('a whitespace-only difference on the second line of old_text', () => {
    const e = failing(PY, [{ old_text: 'def f():\n  timeout = 10\n', new_text: 'x' }]);
    expect(e.details.nearest).toEqual({
      line: 4,
      excerpt: 'def f():\n    timeout = 10\n    return timeout',
      first_difference: { line: 5, expected: '  timeout = 10', actual: '    timeout = 10', whitespace_only: true },
    });
  });
});

describe('edit_file already_applied only on evidence', () => {
  it('{"old_text": "zzz", "new_text": "y"} on a file containing y → no_match, no nearest', () => {
    const e = failing('x = 1\ny\n', [{ old_text: 'zzz', new_text: 'y' }]);
    expect(e.details).toEqual({ reason: 'no_match', edit_index: 0 });
  });

  it('a shared frame too short to be evidence ("x = " … "") → no_match', () => {
    const e = failing('x = 2\n', [{ old_text: 'x = 1', new_text: 'x = 2' }]);
    expect(e.details.reason).toBe('no_match');
  });

  it('new_text present where the shared frame puts it → already_applied', () => {
    const e = failing('const timeout = 20;\n', [{ old_text: 'const timeout = 10;', new_text: 'const timeout = 20;' }]);
    expect(e.details).toEqual({ reason: 'already_applied', edit_index: 0 });
  });
});
