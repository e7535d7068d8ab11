/**
 * Pure pins of the "context pins one place" part of the already_applied rule (docs/errors.md "already_applied only on
 * evidence"): editFramePinned for edits (common start and end, or only a common end), the hunk rule through
 * applyHunks, and keepUnchangedLines through applyEdits (a re-indented edit keeps the lines it does not change).
 */
import { describe, expect, it } from 'vitest';
import { PatchFailedError } from '../../src/errors/tool-error.js';
import { editFramePinned } from '../../src/patch/applied-evidence.js';
import { applyEdits } from '../../src/patch/apply-edits.js';
import { applyHunks } from '../../src/patch/locate-hunks.js';
import { parseUnifiedDiff } from '../../src/patch/parse-unified.js';

function failure(run: () => unknown): PatchFailedError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(PatchFailedError);
  return caught as PatchFailedError;
}

describe('editFramePinned', () => {
  const two = 'function dev() {\n  const level = "debug";\n}\nfunction prod() {\n  const level = "warn";\n}\n';

  it('false when new_text is absent or empty', () => {
    expect(editFramePinned('abc\n', 'const x = 1;', 'const x = 2;')).toBe(false);
    expect(editFramePinned('abc\n', 'abc', '')).toBe(false);
  });

  it('false when the frame also occurs around other text', () => {
    expect(editFramePinned(two, '  const levle = "warn";', '  const level = "debug";')).toBe(false);
  });

  it('true when every place of the frame holds new_text', () => {
    const once = two.replace('"warn"', '"info"').replace('level = "info"', 'other = "info"');
    expect(editFramePinned(once, '  const levle = "warn";', '  const level = "debug";')).toBe(true);
  });

  it('a frame place further apart than the change has lines is no place of it', () => {
    const text = '  const level = "debug";\n  const level\n\n\n = "x";\n';
    expect(editFramePinned(text, '  const levle = "warn";', '  const level = "debug";')).toBe(true);
  });

  it('only a common end: every occurrence of it must end a new_text', () => {
    expect(editFramePinned('b = 2;\nc = 2;\n', 'a = 2;', 'b = 2;')).toBe(false);
    expect(editFramePinned('b = 2;\nc = 3;\n', 'a = 2;', 'b = 2;')).toBe(true);
  });
});

describe('already_applied through the engines', () => {
  it('edit: the typo whose new_text sits in another function is no_match', () => {
    const text = 'function dev() {\n  const level = "debug";\n}\nfunction prod() {\n  const level = "warn";\n}\n';
    const e = failure(() =>
      applyEdits(text, [{ old_text: '  const levle = "warn";', new_text: '  const level = "debug";' }], '/f.js'),
    );
    expect(e.details.reason).toBe('no_match');
  });

  it('hunk: context framing two places, one holding the new side, is no_match; framing one is already_applied', () => {
    const PY =
      'def a():\n    total = 0\n    y = 2\n    return total\n\ndef b():\n    total = 0\n    y = 1\n    return total\n';
    const patch = '@@ -7,3 +7,3 @@\n     total = 0\n-    y = l\n+    y = 2\n     return total\n';
    const hunks = () => parseUnifiedDiff(patch)[0];
    expect(failure(() => applyHunks(PY, hunks(), '/f.py')).details.reason).toBe('no_match');
    const once = PY.replace('total = 0\n    y = 1\n    return total', 'count = 0\n    y = 1\n    return count');
    expect(failure(() => applyHunks(once, hunks(), '/f.py')).details.reason).toBe('already_applied');
  });
});

describe('a re-indented edit keeps the lines it does not change', () => {
  it('leading and trailing shared lines keep the file text; the changed line is re-indented', () => {
    const text = 'class C:\n    def g(self):\n        a = 1   \n        \n        b = 2\n        c = 3 \n';
    const r = applyEdits(
      text,
      [
        {
          old_text: 'def g(self):\n    a = 1\n\n    b = 2\n    c = 3',
          new_text: 'def g(self):\n    a = 1\n\n    b = 20\n    c = 3',
        },
      ],
      '/f.py',
    );
    expect(r.edits[0].match).toBe('reindented');
    expect(r.text).toBe('class C:\n    def g(self):\n        a = 1   \n        \n        b = 20\n        c = 3 \n');
  });
});
