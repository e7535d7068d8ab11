/**
 * Pins hunk location and application (SPEC §6.3, src/patch/locate-hunks.ts) on the issue's 9-line Python file F, as
 * pure functions (parseUnifiedDiff → applyHunks):
 *  - applies: with and without ---/+++ headers; header line 40 instead of 3; counts `-3,7 +3,9` on a 3/3 body;
 *    `@@ @@`; two hunks in either order (same result); a hunk inside a ```diff fence; an LF patch on the CRLF version
 *    of F (CRLF kept); context differing only by trailing spaces (the file's trailing spaces kept); a curly apostrophe
 *    in the file vs a straight one in the patch (the file's curly one kept in context); a hunk whose only context is a
 *    blank line written as an empty line; a diff that adds `*** Begin Patch` to a markdown file; `\ No newline at end
 *    of file` both ways; a hunk at the end of F under over-large counts (regression: phantom context line); an
 *    insertion-only hunk next to a modifying hunk in either order (regression: region duplicated);
 *  - refuses (PATCH_FAILED, with the details SPEC §3.1 lists): `def greet(user):` → no_match, nearest line 3 and the
 *    first difference; hunk 2 of 2 not matching → no_match hunk 2 (nothing returned, so hunk 1 is not applied
 *    either); a two-copy file (context on both sides, so no anchoring) with `@@ @@` → ambiguous with candidates
 *    [1, 4], while a correct header picks the right copy and a header on neither copy is ambiguous (never the
 *    nearest; issue 17 — placement is pinned in test/patch/placement.test.ts); the patch applied twice →
 *    already_applied; a tab-indented file vs a space-indented patch → applied re-indented (tabs kept, `reindented`),
 *    a non-uniform indentation difference → no_match with whitespace_only true; overlapping hunks → overlap.
 * The engine is pure: on a refusal it throws and returns nothing, and the input string is untouched; the file-bytes
 * side of "nothing is written" is pinned end to end in test/e2e/apply-patch.test.ts.
 */
import { describe, expect, it, test } from 'vitest';
import { PatchFailedError } from '../../src/errors/tool-error.js';
import { applyHunks } from '../../src/patch/locate-hunks.js';
import { parseUnifiedDiff } from '../../src/patch/parse-unified.js';

const FILE = '/r/F.py';

/** The F: an import, `greet` printing hi, `main` calling greet('a') and greet('b'). 9 lines. */
const F = [
  'import sys',
  '',
  'def greet(name):',
  "    print('hi')",
  '',
  '',
  'def main():',
  "    greet('a')",
  "    greet('b')",
  '',
].join('\n');

/** F with hello instead of hi. */
const F_HELLO = F.replace("print('hi')", "print('hello')");

const HUNK_BODY = " def greet(name):\n-    print('hi')\n+    print('hello')\n \n";

function apply(original: string, patch: string): string {
  const files = parseUnifiedDiff(patch);
  expect(files).toHaveLength(1);
  return applyHunks(original, files[0], FILE).text;
}

/** Applies expecting PATCH_FAILED; returns the error. */
function refused(original: string, patch: string): PatchFailedError {
  const frozen = original;
  let caught: unknown;
  let result: unknown;
  try {
    const files = parseUnifiedDiff(patch);
    result = applyHunks(original, files[0], FILE);
  } catch (error) {
    caught = error;
  }
  expect(result, 'expected a refusal, got a result').toBeUndefined();
  expect(caught).toBeInstanceOf(PatchFailedError);
  expect(original).toBe(frozen);
  const e = caught as PatchFailedError;
  expect(e.code).toBe('PATCH_FAILED');
  expect(e.path).toBe(FILE);
  return e;
}

it('F has 9 lines', () => {
  expect(F.split('\n')).toHaveLength(10);
  expect(F.split('\n')[2]).toBe('def greet(name):');
});

describe('applies', () => {
  test.each([
    ['with ---/+++ headers', `--- a/F.py\n+++ b/F.py\n@@ -3,3 +3,3 @@\n${HUNK_BODY}`],
    [
      'with diff --git headers',
      `diff --git a/F.py b/F.py\nindex 0000000..1111111 100644\n--- a/F.py\n+++ b/F.py\n@@ -3,3 +3,3 @@\n${HUNK_BODY}`,
    ],
    ['without headers', `@@ -3,3 +3,3 @@\n${HUNK_BODY}`],
    ['header line 40 instead of 3', `--- a/F.py\n+++ b/F.py\n@@ -40,3 +40,3 @@\n${HUNK_BODY}`],
    ['counts -3,7 +3,9 on a 3/3 body', `--- a/F.py\n+++ b/F.py\n@@ -3,7 +3,9 @@\n${HUNK_BODY}`],
    ['@@ @@', `@@ @@\n${HUNK_BODY}`],
    [
      'inside a ```diff fence',
      `Here you go:\n\n\`\`\`diff\n--- a/F.py\n+++ b/F.py\n@@ -3,3 +3,3 @@\n${HUNK_BODY}\`\`\`\n`,
    ],
    ['a CRLF patch', `--- a/F.py\r\n+++ b/F.py\r\n@@ -3,3 +3,3 @@\r\n${HUNK_BODY.replace(/\n/g, '\r\n')}`],
  ])('%s', (_label, patch) => {
    expect(apply(F, patch)).toBe(F_HELLO);
  });

  it('reports where and how each hunk matched', () => {
    const r = applyHunks(F, parseUnifiedDiff(`@@ -40,3 +40,3 @@\n${HUNK_BODY}`)[0], FILE);
    expect(r.hunks).toEqual([{ hunk: 1, line: 3, match: 'exact', placed_by: 'content', candidates: 1, offset: -37 }]);
  });

  describe('two hunks, in either order, give the same result', () => {
    const h1 = "@@ -3,2 +3,2 @@\n def greet(name):\n-    print('hi')\n+    print('hello')\n";
    const h2 = "@@ -8,2 +8,3 @@\n     greet('a')\n-    greet('b')\n+    greet('b')\n+    greet('c')\n";
    const want = F_HELLO.replace("    greet('b')\n", "    greet('b')\n    greet('c')\n");
    test.each([
      ['in order', `--- a/F.py\n+++ b/F.py\n${h1}${h2}`],
      ['reversed', `--- a/F.py\n+++ b/F.py\n${h2}${h1}`],
      ['reversed, @@ @@', `--- a/F.py\n+++ b/F.py\n${h2.replace(/^@@.*@@/, '@@ @@')}${h1.replace(/^@@.*@@/, '@@ @@')}`],
    ])('%s', (_label, patch) => {
      expect(apply(F, patch)).toBe(want);
    });

    it('reports hunks in patch order with their original lines', () => {
      const r = applyHunks(F, parseUnifiedDiff(`${h2}${h1}`)[0], FILE);
      expect(r.hunks).toEqual([
        { hunk: 1, line: 8, match: 'exact', placed_by: 'header', candidates: 1, offset: 0 },
        { hunk: 2, line: 3, match: 'exact', placed_by: 'header', candidates: 1, offset: 0 },
      ]);
    });
  });

  it('an LF patch on the CRLF version of F keeps CRLF everywhere', () => {
    const crlf = F.replace(/\n/g, '\r\n');
    const out = apply(crlf, `--- a/F.py\n+++ b/F.py\n@@ -3,3 +3,3 @@\n${HUNK_BODY}`);
    expect(out).toBe(F_HELLO.replace(/\n/g, '\r\n'));
  });

  it("context differing only by trailing spaces applies and keeps the file's trailing spaces", () => {
    const spaced = F.replace('def greet(name):\n', 'def greet(name):   \n').replace(
      "    greet('a')\n",
      "    greet('a')\t\n",
    );
    const r = applyHunks(spaced, parseUnifiedDiff(`@@ -3,3 +3,3 @@\n${HUNK_BODY}`)[0], FILE);
    expect(r.text).toBe(spaced.replace("print('hi')", "print('hello')"));
    expect(r.text).toContain('def greet(name):   \n');
    expect(r.hunks).toEqual([
      { hunk: 1, line: 3, match: 'trailing_whitespace', placed_by: 'header', candidates: 1, offset: 0 },
    ]);
  });

  it('a curly apostrophe in the file matches a straight one in the patch (the file keeps its curly context)', () => {
    const curly = F.replace("    greet('a')", '    greet(\u2018a\u2019)');
    const patch = "@@ -7,3 +7,4 @@\n def main():\n     greet('a')\n+    greet('x')\n     greet('b')\n";
    const r = applyHunks(curly, parseUnifiedDiff(patch)[0], FILE);
    expect(r.text).toBe(curly.replace("    greet('b')", "    greet('x')\n    greet('b')"));
    expect(r.text).toContain('greet(\u2018a\u2019)');
    expect(r.hunks[0].match).toBe('typography');
  });

  it('a hunk whose only context is a blank line, written as an empty line', () => {
    // Line 5 is the first of the two blank lines between greet and main; the header places it among F's 3 blanks.
    const out = apply(F, '--- a/F.py\n+++ b/F.py\n@@ -5,1 +5,2 @@\n\n+# entry point\n');
    expect(out).toBe(F.replace("print('hi')\n\n\n", "print('hi')\n\n# entry point\n\n"));
  });

  it('an empty line inside an @@ @@ hunk is an empty context line', () => {
    const out = apply(F, "@@ @@\n     print('hi')\n\n\n-def main():\n+def main(argv):\n");
    expect(out).toBe(F.replace('def main():', 'def main(argv):'));
  });

  it('a diff that adds "*** Begin Patch" to a markdown file applies', () => {
    const md = '# Notes\n\nSome text.\n';
    const out = apply(
      md,
      '--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,6 @@\n # Notes\n \n Some text.\n+```\n+*** Begin Patch\n+```\n',
    );
    expect(out).toBe('# Notes\n\nSome text.\n```\n*** Begin Patch\n```\n');
  });

  it('a hunk at the end of F under counts larger than its body (regression: phantom trailing context)', () => {
    const out = apply(
      F,
      "--- a/F.py\n+++ b/F.py\n@@ -8,7 +8,9 @@\n     greet('a')\n-    greet('b')\n+    greet('c')\n",
    );
    expect(out).toBe(F.replace("greet('b')", "greet('c')"));
  });

  it('/dev/null → a new file from empty', () => {
    expect(apply('', '--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n')).toBe('a = 1\nb = 2\n');
  });

  describe('no newline at end of file', () => {
    const noEol = F.slice(0, -1);
    it('keeps a missing final newline when the last line changes', () => {
      const patch =
        "@@ -8,2 +8,2 @@\n     greet('a')\n-    greet('b')\n\\ No newline at end of file\n+    greet('c')\n\\ No newline at end of file\n";
      expect(apply(noEol, patch)).toBe(noEol.replace("greet('b')", "greet('c')"));
    });
    it('adds the final newline when the patch says so', () => {
      const patch = "@@ -9 +9 @@\n-    greet('b')\n\\ No newline at end of file\n+    greet('b')\n";
      expect(apply(noEol, patch)).toBe(F);
    });
    it('removes the final newline when the patch says so', () => {
      const patch = "@@ -9 +9 @@\n-    greet('b')\n+    greet('b')\n\\ No newline at end of file\n";
      expect(apply(F, patch)).toBe(noEol);
    });
    it('an edit far from the end keeps the missing final newline', () => {
      expect(apply(noEol, `@@ -3,3 +3,3 @@\n${HUNK_BODY}`)).toBe(F_HELLO.slice(0, -1));
    });
  });

  describe('an insertion-only hunk next to a modifying hunk (regression: the region was duplicated)', () => {
    const modify = "@@ -3,2 +3,2 @@\n def greet(name):\n-    print('hi')\n+    print('hello')\n";
    const insert = '@@ -2,0 +3,1 @@\n+# greeting\n';
    const want = F_HELLO.replace('def greet', '# greeting\ndef greet');
    test.each([
      ['insertion first', `${insert}${modify}`],
      ['insertion second', `${modify}${insert}`],
    ])('%s', (_label, patch) => {
      expect(apply(F, patch)).toBe(want);
    });
  });
});

describe('refuses', () => {
  it('context "def greet(user):" → no_match with nearest line 3 and the first difference', () => {
    const e = refused(
      F,
      "--- a/F.py\n+++ b/F.py\n@@ -3,3 +3,3 @@\n def greet(user):\n-    print('hi')\n+    print('hello')\n \n",
    );
    expect(e.details).toMatchObject({
      reason: 'no_match',
      hunk: 1,
      hunks: 1,
      expected: ['def greet(user):', "    print('hi')", ''],
      nearest: {
        line: 3,
        first_difference: { line: 3, expected: 'def greet(user):', actual: 'def greet(name):', whitespace_only: false },
      },
    });
    expect((e.details.nearest as { excerpt: string }).excerpt).toContain('def greet(name):');
    expect(e.suggestion).toMatch(/read/i);
  });

  it('hunk 2 of 2 not matching → no_match hunk 2, and nothing of hunk 1 comes back', () => {
    const e = refused(
      F,
      `--- a/F.py\n+++ b/F.py\n@@ -3,3 +3,3 @@\n${HUNK_BODY}@@ -8,2 +8,2 @@\n     greet('a')\n-    greet('z')\n+    greet('c')\n`,
    );
    expect(e.details).toMatchObject({
      reason: 'no_match',
      hunk: 2,
      hunks: 2,
      expected: ["    greet('a')", "    greet('z')"],
    });
    expect(e.details.nearest).toMatchObject({
      line: 8,
      first_difference: { line: 9, expected: "    greet('z')", actual: "    greet('b')", whitespace_only: false },
    });
  });

  describe('a file with two copies of the hunk (context on both sides: no anchoring)', () => {
    const two = 'x = 1\ny = 2\nend\nx = 1\ny = 2\nend\n';
    const body = ' x = 1\n-y = 2\n+y = 3\n end\n';
    it('@@ @@ → ambiguous with candidates [1, 4]', () => {
      const e = refused(two, `@@ @@\n${body}`);
      expect(e.details).toMatchObject({
        reason: 'ambiguous',
        hunk: 1,
        hunks: 1,
        count: 2,
        candidates: [1, 4],
        expected: ['x = 1', 'y = 2', 'end'],
      });
    });
    test.each([
      ['the first', 1, 'x = 1\ny = 3\nend\nx = 1\ny = 2\nend\n'],
      ['the second', 4, 'x = 1\ny = 2\nend\nx = 1\ny = 3\nend\n'],
    ])('a correct header picks %s copy', (_label, line, want) => {
      const r = applyHunks(two, parseUnifiedDiff(`@@ -${line},3 +${line},3 @@\n${body}`)[0], FILE);
      expect(r.text).toBe(want);
      expect(r.hunks).toEqual([{ hunk: 1, line, match: 'exact', placed_by: 'header', candidates: 2, offset: 0 }]);
    });
    test.each([2, 3, 8])('a header at line %i, on neither copy, is ambiguous (never the nearest)', (line) => {
      const e = refused(two, `@@ -${line},3 +${line},3 @@\n${body}`);
      expect(e.details).toMatchObject({ reason: 'ambiguous', count: 2, candidates: [1, 4] });
    });
  });

  it('the patch applied a second time → already_applied', () => {
    const patch = `--- a/F.py\n+++ b/F.py\n@@ -3,3 +3,3 @@\n${HUNK_BODY}`;
    const once = apply(F, patch);
    const e = refused(once, patch);
    expect(e.details).toMatchObject({ reason: 'already_applied', hunk: 1, hunks: 1 });
  });

  it('an append applied a second time → already_applied (its context still matches)', () => {
    const patch = "@@ -8,2 +8,3 @@\n     greet('a')\n     greet('b')\n+    greet('c')\n";
    const once = apply(F, patch);
    expect(once).toBe(`${F}    greet('c')\n`);
    expect(refused(once, patch).details).toMatchObject({ reason: 'already_applied', hunk: 1 });
  });

  it('a tab-indented file vs a space-indented patch → applied re-indented, tabs kept, reported', () => {
    const tabbed = F.replace(/^ {4}/gm, '\t');
    const files = parseUnifiedDiff(`@@ -3,3 +3,3 @@\n${HUNK_BODY}`);
    const r = applyHunks(tabbed, files[0], FILE);
    expect(r.text).toBe(F_HELLO.replace(/^ {4}/gm, '\t'));
    expect(r.hunks).toEqual([
      {
        hunk: 1,
        line: 3,
        match: 'reindented',
        placed_by: 'content',
        candidates: 1,
        offset: 0,
        indent_shift: '4 spaces=tab',
      },
    ]);
  });

  it('a non-uniform indentation difference → no_match with whitespace_only', () => {
    const tabbed = F.replace(/^ {4}/gm, '\t');
    const e = refused(tabbed, `@@ -3,3 +3,3 @@\n   def greet(name):\n-    print('hi')\n+    print('hello')\n \n`);
    expect(e.details).toMatchObject({
      reason: 'no_match',
      hunk: 1,
      nearest: {
        line: 3,
        first_difference: {
          line: 3,
          expected: '  def greet(name):',
          actual: 'def greet(name):',
          whitespace_only: true,
        },
      },
    });
  });

  it('overlapping hunks → overlap', () => {
    const patch =
      "@@ -3,3 +3,3 @@\n def greet(name):\n-    print('hi')\n+    print('hello')\n \n@@ -4,2 +4,2 @@\n     print('hi')\n-\n+# gap\n";
    const e = refused(F, patch);
    expect(e.details).toMatchObject({ reason: 'overlap', hunk: 2, hunks: 2, candidates: [3, 4] });
  });

  it('two identical hunks overlap', () => {
    const e = refused(F, `@@ -3,3 +3,3 @@\n${HUNK_BODY}@@ -3,3 +3,3 @@\n${HUNK_BODY}`);
    expect(e.details).toMatchObject({ reason: 'overlap' });
  });

  it('an insertion without context or line numbers cannot be placed', () => {
    const e = refused(F, '@@ @@\n+# new\n');
    expect(e.details).toMatchObject({ reason: 'no_match', hunk: 1, expected: [] });
  });
});
