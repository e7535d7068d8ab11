/**
 * Pins the tolerant unified-diff parser (SPEC §6.3, src/patch/parse-unified.ts), as a pure function:
 *  - headers: with and without `---`/`+++`, `diff --git` with a/ b/ prefixes (stripped), `diff -u` headers with
 *    timestamps (kept as written), `/dev/null` for create and delete, several files, renames;
 *  - hunk headers: counts wrong or missing (`-3 +3`), no numbers at all (`@@ @@` → null starts), a section name after
 *    the closing `@@`;
 *  - a surrounding ```diff fence is removed, but a markdown code-fence line that is a *context line* of the diff
 *    (" ```") is not mistaken for a fence (regression);
 *  - `\ No newline at end of file` sets the old/new no-newline flags of the right side;
 *  - an empty line is an empty context line while the hunk continues; trailing empty lines count only while the
 *    header still expects lines, and the final newline of the patch text is never a phantom context line (regression);
 *  - refusals: Codex `*** Begin Patch … *** End Patch` and a lone `*** Update File: x` are BEGIN_PATCH with the line
 *    and the marker and a unified-diff example; a diff that *adds* `*** Begin Patch` is not; prose is PATCH_FAILED
 *    no_hunks; a context line missing its leading space is PATCH_FAILED malformed with that line; a hunk with no lines
 *    is malformed.
 * The parser is pure: a refusal throws, nothing is returned, and the input string is untouched.
 */
import { describe, expect, it, test } from 'vitest';
import { PatchFailedError, ToolError } from '../../src/errors/tool-error.js';
import { parseUnifiedDiff, UNIFIED_DIFF_EXAMPLE, type FilePatch } from '../../src/patch/parse-unified.js';

/** Parses expecting a ToolError with `code`; returns it. */
function refused(patch: string, code: string): ToolError {
  const frozen = patch;
  let caught: unknown;
  let result: FilePatch[] | undefined;
  try {
    result = parseUnifiedDiff(patch);
  } catch (error) {
    caught = error;
  }
  expect(result, 'expected a refusal, got a parse').toBeUndefined();
  expect(caught).toBeInstanceOf(ToolError);
  expect((caught as ToolError).code, (caught as Error).message).toBe(code);
  expect(patch).toBe(frozen);
  return caught as ToolError;
}

const ops = (f: FilePatch, hunk = 0) => f.hunks[hunk].lines.map((l) => `${l.op}${l.text}`);

const BODY = [' def greet(name):', "-    print('hi')", "+    print('hello')", ' '].join('\n');

describe('headers', () => {
  it('parses a git diff with a/ b/ prefixes (stripped)', () => {
    const [f] = parseUnifiedDiff(
      `diff --git a/src/F.py b/src/F.py\nindex 1234567..89abcde 100644\n--- a/src/F.py\n+++ b/src/F.py\n@@ -3,3 +3,3 @@\n${BODY}\n`,
    );
    expect(f).toMatchObject({ oldPath: 'src/F.py', newPath: 'src/F.py', headerless: false, rawOldPath: 'a/src/F.py' });
    expect(f.hunks).toHaveLength(1);
    expect(f.hunks[0]).toMatchObject({
      oldStart: 3,
      newStart: 3,
      oldNoNewline: false,
      newNoNewline: false,
      patchLine: 5,
    });
    expect(ops(f)).toEqual([' def greet(name):', "-    print('hi')", "+    print('hello')", ' ']);
  });

  it('parses diff -u headers with timestamps and no prefixes (paths as written)', () => {
    const [f] = parseUnifiedDiff(
      `--- F.py\t2024-01-01 10:00:00.000000000 +0100\n+++ F.py\t2024-01-01 10:01:00.000000000 +0100\n@@ -3,3 +3,3 @@\n${BODY}\n`,
    );
    expect(f).toMatchObject({ oldPath: 'F.py', newPath: 'F.py', headerless: false });
  });

  it('parses a headerless hunk (the target comes from the path argument)', () => {
    const [f] = parseUnifiedDiff(`@@ -3,3 +3,3 @@\n${BODY}\n`);
    expect(f).toMatchObject({ oldPath: null, newPath: null, headerless: true });
    expect(ops(f)).toHaveLength(4);
  });

  it('reads /dev/null as create and delete', () => {
    const [c] = parseUnifiedDiff('--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+a\n+b\n');
    expect(c).toMatchObject({ oldPath: null, newPath: 'new.py' });
    const [d] = parseUnifiedDiff(
      'diff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n',
    );
    expect(d).toMatchObject({ oldPath: 'old.py', newPath: null });
  });

  it('parses several files with several hunks each, and a rename', () => {
    const patch = [
      'diff --git a/one.txt b/one.txt',
      '--- a/one.txt',
      '+++ b/one.txt',
      '@@ -1,2 +1,2 @@',
      '-a',
      '+A',
      ' b',
      '@@ -9,2 +9,2 @@',
      ' y',
      '-z',
      '+Z',
      'diff --git a/old.txt b/new.txt',
      'similarity index 90%',
      'rename from old.txt',
      'rename to new.txt',
      '--- a/old.txt',
      '+++ b/new.txt',
      '@@ -1 +1 @@',
      '-x',
      '+X',
      '',
    ].join('\n');
    const files = parseUnifiedDiff(patch);
    expect(files.map((f) => [f.oldPath, f.newPath, f.hunks.length])).toEqual([
      ['one.txt', 'one.txt', 2],
      ['old.txt', 'new.txt', 1],
    ]);
    expect(ops(files[0], 1)).toEqual([' y', '-z', '+Z']);
  });

  it('in an @@ @@ hunk, a removed "-- x" and an added "++ y" are hunk lines, not a file header (regression, found by the fuzz)', () => {
    const files = parseUnifiedDiff('@@ @@\n a\n--- x\n+++ y\n a\n');
    expect(files).toHaveLength(1);
    expect(ops(files[0])).toEqual([' a', '--- x', '+++ y', ' a']);
  });

  it('a ---/+++ pair followed by @@ after an @@ @@ hunk starts the next file', () => {
    const files = parseUnifiedDiff('--- a/one\n+++ b/one\n@@ @@\n-a\n+b\n--- a/two\n+++ b/two\n@@ @@\n-c\n+d\n');
    expect(files.map((f) => [f.oldPath, ops(f)])).toEqual([
      ['one', ['-a', '+b']],
      ['two', ['-c', '+d']],
    ]);
  });

  it('keeps a pure rename (no hunks)', () => {
    const files = parseUnifiedDiff(
      'diff --git a/old.txt b/new.txt\nsimilarity index 100%\nrename from old.txt\nrename to new.txt\n',
    );
    expect(files).toHaveLength(1);
    expect(files[0]).toMatchObject({ oldPath: 'old.txt', newPath: 'new.txt', hunks: [] });
  });
});

describe('hunk headers are hints', () => {
  test.each([
    ['exact counts', '@@ -3,3 +3,3 @@', 3, 3],
    ['wrong line numbers', '@@ -40,3 +40,3 @@', 40, 40],
    ['missing counts', '@@ -3 +3 @@', 3, 3],
    ['a section name after @@', '@@ -3,3 +3,3 @@ def greet(name):', 3, 3],
    ['no numbers', '@@ @@', null, null],
    ['no numbers, no space', '@@@@', null, null],
  ])('%s', (_label, header, oldStart, newStart) => {
    const [f] = parseUnifiedDiff(`--- a/F.py\n+++ b/F.py\n${header}\n${BODY}\n`);
    expect(f.hunks[0]).toMatchObject({ oldStart, newStart });
    expect(ops(f)).toEqual([' def greet(name):', "-    print('hi')", "+    print('hello')", ' ']);
  });

  it('with counts larger than the body, the body still ends where the text ends (no phantom context from the final newline)', () => {
    // Regression: `-3,7 +3,9` on a 3/3 body. The LF that ends the patch text used to become an extra empty context
    // line (the header still "expected" lines), which then failed to match at the end of a file.
    const [f] = parseUnifiedDiff(
      `--- a/F.py\n+++ b/F.py\n@@ -8,7 +8,9 @@\n     greet('a')\n-    greet('b')\n+    greet('c')\n`,
    );
    expect(ops(f)).toEqual(["     greet('a')", "-    greet('b')", "+    greet('c')"]);
  });

  it('with counts larger than the body, an empty line before the next hunk still counts as context', () => {
    const [f] = parseUnifiedDiff('@@ -1,3 +1,3 @@\n a\n-b\n+B\n\n@@ -9,2 +9,2 @@\n-y\n+Y\n');
    expect(ops(f, 0)).toEqual([' a', '-b', '+B', ' ']);
    expect(ops(f, 1)).toEqual(['-y', '+Y']);
  });

  it('with counts smaller than the body, the hunk reads on until a line that is not a hunk line', () => {
    const [f] = parseUnifiedDiff('@@ -1,1 +1,1 @@\n a\n-b\n+B\n c\n');
    expect(ops(f)).toEqual([' a', '-b', '+B', ' c']);
  });
});

describe('empty lines', () => {
  it('an empty line between hunk lines is an empty context line', () => {
    const [f] = parseUnifiedDiff('@@ @@\n a\n\n-b\n+B\n');
    expect(ops(f)).toEqual([' a', ' ', '-b', '+B']);
  });

  it('a hunk whose only context is an empty line', () => {
    const [f] = parseUnifiedDiff('@@ -5,1 +5,2 @@\n\n+# entry point\n');
    expect(ops(f)).toEqual([' ', '+# entry point']);
  });

  it('trailing empty lines of an uncounted hunk are not context (prose may follow)', () => {
    const [f] = parseUnifiedDiff('@@ @@\n a\n-b\n+B\n\n\nThat is all.\n');
    expect(ops(f)).toEqual([' a', '-b', '+B']);
  });

  it('trailing empty lines count while the header still expects lines', () => {
    const [f] = parseUnifiedDiff('@@ -1,3 +1,3 @@\n-a\n+A\n\n\n');
    expect(ops(f)).toEqual(['-a', '+A', ' ', ' ']);
  });
});

describe('fences and markers', () => {
  it('removes a surrounding ```diff fence and the prose around it', () => {
    const [f] = parseUnifiedDiff(
      `Here is the fix:\n\n\`\`\`diff\n--- a/F.py\n+++ b/F.py\n@@ -3,3 +3,3 @@\n${BODY}\n\`\`\`\n\nThis changes the greeting.\n`,
    );
    expect(f.oldPath).toBe('F.py');
    expect(ops(f)).toEqual([' def greet(name):', "-    print('hi')", "+    print('hello')", ' ']);
  });

  it('a bare ``` context line of a markdown file is not a fence (regression)', () => {
    // The fence finder used to take " ```" (a context line: space + the markdown fence) for the opening fence and
    // throw away the headers before it.
    const patch = '--- a/README.md\n+++ b/README.md\n@@ -1,4 +1,4 @@\n # Title\n ```\n-old\n+new\n ```\n';
    const [f] = parseUnifiedDiff(patch);
    expect(f).toMatchObject({ oldPath: 'README.md', newPath: 'README.md' });
    expect(ops(f)).toEqual([' # Title', ' ```', '-old', '+new', ' ```']);
  });

  it('a fenced diff of a markdown file with code fences in its context', () => {
    const patch =
      '```diff\n--- a/README.md\n+++ b/README.md\n@@ -1,4 +1,4 @@\n # Title\n ```sh\n-old\n+new\n ```\n```\n';
    const [f] = parseUnifiedDiff(patch);
    expect(ops(f)).toEqual([' # Title', ' ```sh', '-old', '+new', ' ```']);
  });

  it('"\\ No newline at end of file" marks the side of the line before it', () => {
    const [f] = parseUnifiedDiff(
      '@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n\\ No newline at end of file\n',
    );
    expect(f.hunks[0]).toMatchObject({ oldNoNewline: true, newNoNewline: true });
    expect(ops(f)).toEqual([' a', '-b', '+B']);
    const [g] = parseUnifiedDiff('@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n');
    expect(g.hunks[0]).toMatchObject({ oldNoNewline: true, newNoNewline: false });
    const [h] = parseUnifiedDiff('@@ -1,1 +1,2 @@\n+z\n a\n\\ No newline at end of file\n');
    expect(h.hunks[0]).toMatchObject({ oldNoNewline: true, newNoNewline: true });
  });

  it('accepts CRLF patch text', () => {
    const [f] = parseUnifiedDiff('--- a/F.py\r\n+++ b/F.py\r\n@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+B\r\n');
    expect(ops(f)).toEqual([' a', '-b', '+B']);
  });

  it('a diff that adds a "*** Begin Patch" line is a unified diff, not Codex format', () => {
    const [f] = parseUnifiedDiff(
      '--- a/notes.md\n+++ b/notes.md\n@@ -1,2 +1,5 @@\n # Notes\n+*** Begin Patch\n+*** Update File: x\n+*** End Patch\n \n',
    );
    expect(ops(f)).toEqual([' # Notes', '+*** Begin Patch', '+*** Update File: x', '+*** End Patch', ' ']);
  });
});

describe('refusals', () => {
  it('Codex *** Begin Patch … *** End Patch is BEGIN_PATCH with the line and a unified-diff example', () => {
    const e = refused(
      "*** Begin Patch\n*** Update File: F.py\n@@\n-    print('hi')\n+    print('hello')\n*** End Patch\n",
      'BEGIN_PATCH',
    );
    expect(e.details).toEqual({ line: 1, marker: 'Begin Patch' });
    expect(e.suggestion).toContain(UNIFIED_DIFF_EXAMPLE);
    expect(e.message).toContain('line 1');
  });

  it('a lone "*** Update File: x" is BEGIN_PATCH at its line', () => {
    const e = refused('Apply this:\n*** Update File: x\n', 'BEGIN_PATCH');
    expect(e.details).toEqual({ line: 2, marker: 'Update File' });
  });

  test.each([
    ['Add File', '*** Add File: new.py\n+print(1)\n'],
    ['Delete File', '*** Delete File: old.py\n'],
    ['End Patch', 'text\n*** End Patch\n'],
  ])('*** %s is BEGIN_PATCH', (marker, patch) => {
    expect(refused(patch, 'BEGIN_PATCH').details).toMatchObject({ marker });
  });

  test.each([
    ['prose', 'Please change the greeting in greet() to say hello instead of hi.\n'],
    ['an empty-ish text', '\n\n'],
    ['headers without hunks', '--- a/F.py\n+++ b/F.py\n'],
    ['hunk lines without a header', " def greet(name):\n-    print('hi')\n+    print('hello')\n"],
  ])('%s is PATCH_FAILED no_hunks', (_label, patch) => {
    const e = refused(patch, 'PATCH_FAILED');
    expect(e).toBeInstanceOf(PatchFailedError);
    expect(e.details).toEqual({ reason: 'no_hunks' });
    expect(e.suggestion).toContain('@@');
  });

  it('a context line missing its leading space is PATCH_FAILED malformed with the line', () => {
    const patch =
      "--- a/F.py\n+++ b/F.py\n@@ -3,3 +3,3 @@\ndef greet(name):\n-    print('hi')\n+    print('hello')\n \n";
    const e = refused(patch, 'PATCH_FAILED');
    expect(e.details).toEqual({ reason: 'malformed', line: 4, text: 'def greet(name):' });
    expect(e.message).toContain('line 4');
  });

  it('a broken line in the middle of an uncounted hunk is malformed', () => {
    const e = refused('@@ @@\n a\n-b\nc\n+B\n', 'PATCH_FAILED');
    expect(e.details).toEqual({ reason: 'malformed', line: 4, text: 'c' });
  });

  it('a hunk header with no lines is malformed', () => {
    const e = refused('--- a/F.py\n+++ b/F.py\n@@ -1,2 +1,2 @@\n@@ -5,1 +5,1 @@\n-x\n+y\n', 'PATCH_FAILED');
    expect(e.details).toEqual({ reason: 'malformed', line: 3 });
  });
});
