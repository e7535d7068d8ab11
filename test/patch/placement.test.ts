/**
 * Hunk placement (issue 17, src/patch/locate-hunks.ts), as pure functions (parseUnifiedDiff → applyHunks):
 *  - the minimal cases: a Go file with TestA at line 7 and TestB at line 12 (4 lines inserted above since the
 *    diff was made); the hunk `@@ -9,3 +9,7 @@` appending TestC after the context `\trun(t)` / `\tcheck(t)` / `}`
 *    lands at the end (line 13, offset 4, anchored_end, 2 candidates), never after TestA; the same with `@@ @@`; the
 *    deletion of the trailing blank line removes the last line, never the blank line between the tests; both with
 *    stale numbers and `@@ @@`; `git apply` gives the same bytes for the numbered cases (cross-check with real git);
 *  - applying either of them a second time is already_applied (the new side is what the file ends with), not a
 *    second TestC or a deleted closing brace;
 *  - the mirror: a hunk with fewer leading than trailing context lines starts at line 1;
 *  - anchoring and an exact header that single out different matches → ambiguous (the diff contradicts itself);
 *  - offsets carry: the second hunk of a file whose first hunk was found 4 lines down is taken 4 lines down, not at
 *    its raw header line where an identical block sits (placed_by offset);
 *  - the `@@ … @@ func TestB` section heading singles out the match inside TestB;
 *  - no guess among equals: two identical matches with a stale header between them → ambiguous with both candidates;
 *  - already_applied only on evidence: `-zzz` / `+y` on a file containing `y` is no_match; a hunk whose new side is
 *    found somewhere but whose context does not pin it there is no_match;
 *  - every success reports hunk, line, match, placed_by, candidates and offset.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, test } from 'vitest';
import { PatchFailedError } from '../../src/errors/tool-error.js';
import { applyHunks, type HunkReport } from '../../src/patch/locate-hunks.js';
import { parseUnifiedDiff } from '../../src/patch/parse-unified.js';

const FILE = '/r/x_test.go';

function apply(original: string, patch: string): { text: string; hunks: HunkReport[] } {
  const files = parseUnifiedDiff(patch);
  expect(files).toHaveLength(1);
  return applyHunks(original, files[0], FILE);
}

function refused(original: string, patch: string): PatchFailedError {
  let caught: unknown;
  let result: unknown;
  try {
    result = apply(original, patch);
  } catch (error) {
    caught = error;
  }
  expect(result, 'expected a refusal, got a result').toBeUndefined();
  expect(caught).toBeInstanceOf(PatchFailedError);
  return caught as PatchFailedError;
}

/** `git apply` of `patch` to `original` (as x_test.go) in a scratch directory; null when git refuses. */
function gitApply(original: string, patch: string): string | null {
  const dir = mkdtempSync(path.join(tmpdir(), 'fs-tools-gitapply-'));
  try {
    writeFileSync(path.join(dir, 'x_test.go'), original);
    writeFileSync(path.join(dir, 'p.diff'), patch);
    try {
      execFileSync('git', ['apply', 'p.diff'], { cwd: dir, stdio: 'ignore' });
    } catch {
      return null;
    }
    return readFileSync(path.join(dir, 'x_test.go'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The file the diff was made from: TestA at line 3, TestB at line 8; a blank line ends the file. */
const AT_DIFF_TIME = [
  'package x',
  '',
  'func TestA(t *testing.T) {',
  '\trun(t)',
  '\tcheck(t)',
  '}',
  '',
  'func TestB(t *testing.T) {',
  '\trun(t)',
  '\tcheck(t)',
  '}',
  '',
  '',
].join('\n');

/** The file now: 4 lines inserted above since, so TestA is at line 7 and TestB at line 12. */
const NOW = AT_DIFF_TIME.replace('package x\n\n', 'package x\n\nimport (\n\t"testing"\n)\n\n');

const TEST_C = '\nfunc TestC(t *testing.T) {\n\tcheck(t)\n}\n';

const APPEND =
  '--- a/x_test.go\n+++ b/x_test.go\n@@ -9,3 +9,7 @@\n \trun(t)\n \tcheck(t)\n }\n+\n+func TestC(t *testing.T) {\n+\tcheck(t)\n+}\n';
const DELETE_BLANK = '--- a/x_test.go\n+++ b/x_test.go\n@@ -9,4 +9,3 @@\n \trun(t)\n \tcheck(t)\n }\n-\n';

it("the fixture is the issue's: TestA at line 7, TestB at line 12, 4 lines inserted above", () => {
  const lines = NOW.split('\n');
  expect(lines[6]).toBe('func TestA(t *testing.T) {');
  expect(lines[11]).toBe('func TestB(t *testing.T) {');
  expect(lines.length - AT_DIFF_TIME.split('\n').length).toBe(4);
});

describe("end-of-file anchoring (the issue's minimal cases)", () => {
  // The append's context (TestB's run/check/}) ends the file only when no blank line follows: its fixture drops it.
  const nowNoBlank = NOW.replace(/\n\n$/, '\n');
  const diffTimeNoBlank = AT_DIFF_TIME.replace(/\n\n$/, '\n');
  const appended = `${nowNoBlank}${TEST_C}`;

  test.each([
    ['stale numbers', APPEND, { line: 13, offset: 4 }],
    ['@@ @@', APPEND.replace(/^@@ .* @@$/m, '@@ @@'), { line: 13, offset: null }],
  ])('append at the end, %s: TestC lands after TestB, not after TestA', (_label, patch, where) => {
    const r = apply(nowNoBlank, patch);
    expect(r.text).toBe(appended);
    expect(r.hunks).toEqual([{ hunk: 1, ...where, match: 'exact', placed_by: 'anchored_end', candidates: 2 }]);
  });

  it('git apply agrees (stale numbers), and the diff really was made from the older file', () => {
    expect(apply(diffTimeNoBlank, APPEND).text).toBe(`${diffTimeNoBlank}${TEST_C}`);
    expect(gitApply(nowNoBlank, APPEND)).toBe(appended);
  });

  const deleted = NOW.replace(/\n\n$/, '\n');
  test.each([
    ['stale numbers', DELETE_BLANK, { line: 13, offset: 4 }],
    ['@@ @@', DELETE_BLANK.replace(/^@@ .* @@$/m, '@@ @@'), { line: 13, offset: null }],
  ])(
    'delete the trailing blank line, %s: the last line goes, the blank line between the tests stays',
    (_label, patch, where) => {
      const r = apply(NOW, patch);
      expect(r.text).toBe(deleted);
      expect(r.text).toContain('}\n\nfunc TestB');
      expect(r.hunks).toEqual([{ hunk: 1, ...where, match: 'exact', placed_by: 'anchored_end', candidates: 2 }]);
    },
  );

  it('git apply agrees on the deletion (stale numbers)', () => {
    expect(gitApply(NOW, DELETE_BLANK)).toBe(deleted);
  });

  test.each([
    ['the append', nowNoBlank, APPEND],
    ['the append, @@ @@', nowNoBlank, APPEND.replace(/^@@ .* @@$/m, '@@ @@')],
    ['the deletion', NOW, DELETE_BLANK],
    ['the deletion, @@ @@', NOW, DELETE_BLANK.replace(/^@@ .* @@$/m, '@@ @@')],
  ])('%s applied a second time is already_applied (not a second TestC, not a lost line)', (_label, original, patch) => {
    const once = apply(original, patch).text;
    expect(refused(once, patch).details).toMatchObject({ reason: 'already_applied', hunk: 1, hunks: 1 });
  });

  it('empty lines after a hunk without counts might be empty context: no end anchoring when a match is followed by them', () => {
    const file = 'a\nb\nc\n\nmid\na\nb\nc\n';
    // The patch text ends with an empty line: a separator, or the empty context line " " with its space stripped.
    const e = refused(file, '@@ @@\n a\n b\n-c\n+C\n\n');
    expect(e.details).toMatchObject({ reason: 'ambiguous', count: 2, candidates: [1, 6] });
    // Where no match is followed by an empty line, the empty line cannot be context: anchored at the end.
    const r = apply('a\nb\nc\nmid\na\nb\nc\n', '@@ @@\n a\n b\n-c\n+C\n\n');
    expect(r.text).toBe('a\nb\nc\nmid\na\nb\nC\n');
    expect(r.hunks[0]).toMatchObject({ line: 5, placed_by: 'anchored_end', candidates: 2 });
  });

  it('a single match away from the end is still taken (anchoring is a preference), reported as content', () => {
    const r = apply('a\nkeep me\nb\nc\n', '@@ -1,2 +1,3 @@\n a\n keep me\n+new\n');
    expect(r.text).toBe('a\nkeep me\nnew\nb\nc\n');
    expect(r.hunks).toEqual([{ hunk: 1, line: 1, match: 'exact', placed_by: 'header', candidates: 1, offset: 0 }]);
  });
});

describe('start-of-file anchoring (the mirror)', () => {
  const file = 'x\ny\nz\nmid\nx\ny\nz\nend\n';
  test.each([
    ['@@ @@', '@@ @@\n+// top\n x\n y\n'],
    ['a stale header', '@@ -3,2 +3,3 @@\n+// top\n x\n y\n'],
  ])('fewer leading than trailing context lines, %s: the match at line 1', (_label, patch) => {
    const r = apply(file, patch);
    expect(r.text).toBe(`// top\n${file}`);
    expect(r.hunks[0]).toMatchObject({ line: 1, placed_by: 'anchored_start', candidates: 2 });
  });

  it('anchoring and an exact header that single out different matches → ambiguous', () => {
    const e = refused(file, '@@ -5,2 +5,3 @@\n+// top\n x\n y\n');
    expect(e.details).toMatchObject({
      reason: 'ambiguous',
      hunk: 1,
      count: 2,
      candidates: [1, 5],
      expected: ['x', 'y'],
    });
  });
});

describe('offsets carry between hunks of a file (as GNU patch)', () => {
  // At diff time: alpha beta gamma r1 r2 r3 q r1 r2 r3 omega. Now 4 lines sit above alpha.
  const diffTime = 'alpha\nbeta\ngamma\nr1\nr2\nr3\nq\nr1\nr2\nr3\nomega\n';
  const now = `i1\ni2\ni3\ni4\n${diffTime}`;
  const patch = '@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n@@ -8,3 +8,3 @@\n r1\n-r2\n+R2\n r3\n';

  it("the second hunk is taken at its header line plus the first hunk's offset, not at its raw header line", () => {
    const r = apply(now, patch);
    expect(r.text).toBe(now.replace('beta', 'BETA').replace('q\nr1\nr2', 'q\nr1\nR2'));
    expect(r.hunks).toEqual([
      { hunk: 1, line: 5, match: 'exact', placed_by: 'content', candidates: 1, offset: 4 },
      { hunk: 2, line: 12, match: 'exact', placed_by: 'offset', candidates: 2, offset: 4 },
    ]);
  });

  it('without the first hunk, the raw header line decides', () => {
    const r = apply(now, '@@ -8,3 +8,3 @@\n r1\n-r2\n+R2\n r3\n');
    expect(r.hunks).toEqual([{ hunk: 1, line: 8, match: 'exact', placed_by: 'header', candidates: 2, offset: 0 }]);
  });

  it('an insertion-only hunk is shifted by the carried offset too', () => {
    const r = apply(now, '@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n@@ -7,0 +8,1 @@\n+inserted\n');
    expect(r.text).toBe(now.replace('beta', 'BETA').replace('q\n', 'q\ninserted\n'));
    expect(r.hunks[1]).toEqual({ hunk: 2, line: 12, match: 'exact', placed_by: 'offset', candidates: 0, offset: 4 });
  });
});

describe('the section heading after @@ singles out a match', () => {
  const file = [
    'func TestA(t *testing.T) {',
    '\trun(t)',
    '\tcheck(t)',
    '\tdone(t)',
    '}',
    '',
    'func TestB(t *testing.T) {',
    '\trun(t)',
    '\tcheck(t)',
    '\tdone(t)',
    '}',
    '',
  ].join('\n');
  it('a stale header on neither match, with `@@ … @@ func TestB(t *testing.T) {` → the match inside TestB', () => {
    const r = apply(
      file,
      '@@ -40,3 +40,3 @@ func TestB(t *testing.T) {\n \trun(t)\n-\tcheck(t)\n+\tcheck2(t)\n \tdone(t)\n',
    );
    expect(r.text).toBe(
      file.replace('TestB(t *testing.T) {\n\trun(t)\n\tcheck(t)', 'TestB(t *testing.T) {\n\trun(t)\n\tcheck2(t)'),
    );
    expect(r.hunks).toEqual([{ hunk: 1, line: 8, match: 'exact', placed_by: 'section', candidates: 2, offset: -32 }]);
  });
  it('without it → ambiguous with both candidates (never the nearest to the stale header)', () => {
    const e = refused(file, '@@ -40,3 +40,3 @@\n \trun(t)\n-\tcheck(t)\n+\tcheck2(t)\n \tdone(t)\n');
    expect(e.details).toMatchObject({ reason: 'ambiguous', count: 2, candidates: [2, 8] });
  });
});

describe("the order of the hunks singles out a match (a diff lists a file's hunks top to bottom)", () => {
  const file = 'x\ny\nz\nalpha\nbeta\ngamma\nx\ny\nz\nomega\n';
  const unique = '@@ @@\n alpha\n-beta\n+BETA\n gamma\n';
  const twice = '@@ @@\n x\n-y\n+Y\n z\n';
  it('listed after a placed hunk: the only match below it', () => {
    const r = apply(file, `${unique}${twice}`);
    expect(r.text).toBe('x\ny\nz\nalpha\nBETA\ngamma\nx\nY\nz\nomega\n');
    expect(r.hunks).toEqual([
      { hunk: 1, line: 4, match: 'exact', placed_by: 'content', candidates: 1, offset: null },
      { hunk: 2, line: 7, match: 'exact', placed_by: 'order', candidates: 2, offset: null },
    ]);
  });
  it('listed before it: the only match above it', () => {
    const r = apply(file, `${twice}${unique}`);
    expect(r.text).toBe('x\nY\nz\nalpha\nBETA\ngamma\nx\ny\nz\nomega\n');
    expect(r.hunks[0]).toEqual({ hunk: 1, line: 1, match: 'exact', placed_by: 'order', candidates: 2, offset: null });
  });
  it('alone, nothing tells → ambiguous', () => {
    expect(refused(file, twice).details).toMatchObject({ reason: 'ambiguous', candidates: [1, 7] });
  });
});

describe('already_applied only on evidence', () => {
  it('-zzz / +y on a file containing y is no_match, with no invented nearest region', () => {
    const e = refused('x = 1\ny\nz = 3\n', '@@ -1,1 +1,1 @@\n-zzz\n+y\n');
    expect(e.details).toMatchObject({ reason: 'no_match', hunk: 1, expected: ['zzz'] });
    expect(e.details.nearest).toBeUndefined();
  });

  it('a hunk whose new side occurs, but not where its context pins it, is no_match', () => {
    // Leading context only (so end-anchored), and the new side sits in the middle of the file, not at its end.
    const e = refused(
      'function setup() {\n  init();\n}\nother();\n',
      '@@ @@\n function setup() {\n-  start();\n+  init();\n',
    );
    expect(e.details.reason).toBe('no_match');
  });

  it('a change between its context lines, already made, is already_applied', () => {
    const e = refused(
      'function setup() {\n  init();\n}\n',
      '@@ @@\n function setup() {\n-  start();\n+  init();\n }\n',
    );
    expect(e.details).toMatchObject({ reason: 'already_applied', hunk: 1 });
  });

  it('a pure insertion applied a second time, its lines at the header line → already_applied (never inserted twice)', () => {
    const patch = '@@ -1,0 +2,2 @@\n+import a\n+import b\n';
    const once = apply('package x\nfunc main() {}\n', patch).text;
    expect(once).toBe('package x\nimport a\nimport b\nfunc main() {}\n');
    expect(refused(once, patch).details).toMatchObject({ reason: 'already_applied', hunk: 1 });
  });

  it('context too short to be evidence (a lone "}") → no_match', () => {
    const e = refused('}\nnew\n}\n', '@@ @@\n }\n-old\n+new\n }\n');
    expect(e.details.reason).toBe('no_match');
  });
});

describe('bounded work on hostile input', () => {
  it('200 one-line hunks matching 20,000 places each, with section headings, in a 100,000-line file: refused fast', () => {
    const lines: string[] = [];
    for (let i = 0; i < 20_000; i++) lines.push(`func F${i}() {`, '\tx()', '}', '', `// ${i}`);
    const file = `${lines.join('\n')}\n`;
    const hunk = '@@ -1,3 +1,3 @@ func Nope() {\n \tx()\n-}\n+};\n \n';
    const started = performance.now();
    const e = refused(file, hunk.repeat(200));
    expect(e.details).toMatchObject({ reason: 'ambiguous', hunk: 1, count: 20_000 });
    expect((e.details.candidates as number[]).length).toBe(50);
    expect(performance.now() - started).toBeLessThan(20_000);
  }, 60_000);
});
