/**
 * Unit tests of the git-diff output parser (src/vcs/diff-output.ts; issue 12): `splitDiff` (file chunks, paths from
 * ---/+++ lines, rename/copy lines, `diff --git` headers and combined `diff --cc` headers; binary detection; a
 * hunk line that looks like a header never names a path) and `pathOfHeader` / `pathOfFileLine` (C-quoted names,
 * names containing " b/", /dev/null). Pure: the inputs are diff texts as git prints them (the same shapes are
 * checked against real git output in test/e2e/git.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { pathOfFileLine, pathOfHeader, splitDiff } from '../../src/vcs/diff-output.js';

const modified = (name: string) =>
  [
    `diff --git a/${name} b/${name}`,
    'index 7898192..0f7bc76 100644',
    `--- a/${name}`,
    `+++ b/${name}`,
    '@@ -1 +1,2 @@',
    ' a',
    '+c',
    '',
  ].join('\n');

describe('pathOfHeader', () => {
  it('splits a plain header in its middle, also when the name contains " b/"', () => {
    expect(pathOfHeader('a/x.txt b/x.txt')).toBe('x.txt');
    expect(pathOfHeader('a/dir/sub b/file b/dir/sub b/file')).toBe('dir/sub b/file');
    expect(pathOfHeader('a/ b/ b/ b/')).toBe(' b/');
  });
  it('undoes C quoting of a quoted header (the prefix inside the quotes)', () => {
    expect(pathOfHeader('"a/\\303\\244.txt" "b/\\303\\244.txt"')).toBe('ä.txt');
    expect(pathOfHeader('"a/tab\\there" "b/tab\\there"')).toBe('tab\there');
  });
  it('falls back to the b/ side when the two sides differ, and to the text when there are no prefixes', () => {
    expect(pathOfHeader('a/old b/new')).toBe('new');
    expect(pathOfHeader('weird')).toBe('weird');
  });
});

describe('pathOfFileLine', () => {
  it('strips the prefix, the trailing tab git adds to names with spaces, and reads /dev/null as no path', () => {
    expect(pathOfFileLine('b/x.txt', 'b/')).toBe('x.txt');
    expect(pathOfFileLine('a/with space.txt\t', 'a/')).toBe('with space.txt');
    expect(pathOfFileLine('/dev/null', 'a/')).toBeNull();
    expect(pathOfFileLine('"b/\\303\\244 x.txt"', 'b/')).toBe('ä x.txt');
  });
});

describe('splitDiff', () => {
  it('one chunk per file, each holding exactly its own text', () => {
    const raw = modified('a.txt') + modified('b/c.txt');
    const chunks = splitDiff(raw);
    expect(chunks.map((c) => c.path)).toEqual(['a.txt', 'b/c.txt']);
    expect(chunks.map((c) => c.text).join('')).toBe(raw);
    expect(chunks.every((c) => !c.binary && c.oldPath === undefined)).toBe(true);
  });

  it('empty output has no chunks; text before the first header is not a file', () => {
    expect(splitDiff('')).toEqual([]);
    expect(splitDiff('warning: something\n')).toEqual([]);
  });

  it('a new and a deleted file take their path from the side that is not /dev/null', () => {
    const raw = [
      'diff --git a/new.txt b/new.txt',
      'new file mode 100644',
      'index 0000000..e69de29',
      '--- /dev/null',
      '+++ b/new.txt',
      '@@ -0,0 +1 @@',
      '+n',
      'diff --git a/gone.txt b/gone.txt',
      'deleted file mode 100644',
      'index e69de29..0000000',
      '--- a/gone.txt',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-g',
      '',
    ].join('\n');
    expect(splitDiff(raw).map((c) => c.path)).toEqual(['new.txt', 'gone.txt']);
  });

  it('renames and copies: the new path, and the old one as oldPath (quoted names decoded)', () => {
    const raw = [
      'diff --git a/old name.txt b/new name.txt',
      'similarity index 100%',
      'rename from old name.txt',
      'rename to new name.txt',
      'diff --git "a/\\303\\244" "b/\\303\\266"',
      'similarity index 90%',
      'copy from "\\303\\244"',
      'copy to "\\303\\266"',
      '--- "a/\\303\\244"',
      '+++ "b/\\303\\266"',
      '@@ -1 +1 @@',
      '-x',
      '+y',
      '',
    ].join('\n');
    const chunks = splitDiff(raw);
    expect(chunks.map((c) => [c.path, c.oldPath])).toEqual([
      ['new name.txt', 'old name.txt'],
      ['ö', 'ä'],
    ]);
  });

  it('a mode-only change or a binary file without ---/+++ lines takes its path from the header', () => {
    const raw = [
      'diff --git a/run.sh b/run.sh',
      'old mode 100644',
      'new mode 100755',
      'diff --git a/img b/x.png b/img b/x.png',
      'index 1234567..89abcde 100644',
      'Binary files a/img b/x.png and b/img b/x.png differ',
      '',
    ].join('\n');
    const chunks = splitDiff(raw);
    expect(chunks.map((c) => [c.path, c.binary])).toEqual([
      ['run.sh', false],
      ['img b/x.png', true],
    ]);
  });

  it('a GIT binary patch is binary', () => {
    const raw = [
      'diff --git a/b.bin b/b.bin',
      'index 1..2 100644',
      'GIT binary patch',
      'literal 3',
      'Kcmb=X0ssIB',
      '',
      'literal 0',
      'HcmV?d00001',
      '',
    ].join('\n');
    expect(splitDiff(raw)[0]).toMatchObject({ path: 'b.bin', binary: true });
  });

  it('a text diff holding a NUL byte is shown as binary, without its lines', () => {
    const raw = [
      'diff --git a/f.dat b/f.dat',
      'index 1..2 100644',
      '--- a/f.dat',
      '+++ b/f.dat',
      '@@ -1 +1 @@',
      '-SECRET\0x',
      '+y',
      '',
    ].join('\n');
    const [c] = splitDiff(raw);
    expect(c.binary).toBe(true);
    expect(c.text).not.toContain('SECRET');
    expect(c.text).toBe('diff --git a/f.dat b/f.dat\nindex 1..2 100644\nBinary files differ\n');
  });

  it('a hunk line that looks like a header or a rename line never names the path', () => {
    const raw = [
      'diff --git a/doc.md b/doc.md',
      'index 1..2 100644',
      '--- a/doc.md',
      '+++ b/doc.md',
      '@@ -1,3 +1,3 @@',
      '-rename to other.md',
      '+++ b/evil.md',
      '--- a/evil.md',
      '',
    ].join('\n');
    const chunks = splitDiff(raw);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toMatchObject({ path: 'doc.md' });
    expect(chunks[0].oldPath).toBeUndefined();
  });

  it('a combined diff of an unmerged path (diff --cc) is a chunk of its own, before the next file', () => {
    const raw =
      [
        'diff --cc c.txt',
        'index 1,2..0000000',
        '--- a/c.txt',
        '+++ b/c.txt',
        '@@@ -1,1 -1,1 +1,5 @@@',
        '++<<<<<<< HEAD',
        '',
      ].join('\n') + modified('d.txt');
    expect(splitDiff(raw).map((c) => c.path)).toEqual(['c.txt', 'd.txt']);
    const quoted = 'diff --cc "\\303\\244.txt"\nindex 1,2..0\n';
    expect(splitDiff(quoted)[0].path).toBe('ä.txt');
    expect(splitDiff('diff --combined x y.txt\n')[0].path).toBe('x y.txt');
  });
});
