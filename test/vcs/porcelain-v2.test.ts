/**
 * Unit tests of the `git status --porcelain=v2 --branch` parser (src/vcs/porcelain-v2.ts). Pins:
 * - branch headers: `(initial)` oid → null; a named head; `(detached)` → detached with head null; upstream; `ab`
 *   ahead/behind as numbers (also +0 -0); no upstream → upstream/ahead/behind null; an upstream that is gone (no
 *   `ab` line) keeps ahead/behind null;
 * - entry lines: type 1 (changed, index and work-tree letters), type 2 (rename: path, orig_path, tab separator,
 *   also when either side is C-quoted or contains spaces), type u (unmerged), `?` (untracked), `!` (ignored);
 * - C-quoted paths: `\t`, `\"`, `\\`, `\n`, and octal UTF-8 byte sequences (`"\303\244.txt"` → `ä.txt`); unquoted
 *   paths with spaces are taken verbatim;
 * - the samples are real git 2.x output (captured from `git status --porcelain=v2 --branch --untracked-files=all
 *   --ignored`), and an empty output parses to no entries;
 * - one pass with a filter (`parsePorcelainV2Kept`): the output less the lines of the entries left out, every
 *   untracked path.
 */
import { describe, expect, it } from 'vitest';
import { parsePorcelainV2, parsePorcelainV2Kept, unquote } from '../../src/vcs/porcelain-v2.js';

const OID = '477d05e90da954203c0352a9b2db8668c15464ea';
const BLOB = '587be6b4c3f93f93c489c0111bba5596147a26cb';

describe('branch headers', () => {
  it('initial commit: oid null, head named, no upstream', () => {
    const { branch, entries } = parsePorcelainV2('# branch.oid (initial)\n# branch.head main\n');
    expect(branch).toEqual({ oid: null, head: 'main', detached: false, upstream: null, ahead: null, behind: null });
    expect(entries).toEqual([]);
  });

  it('detached HEAD: head null, detached true, oid kept', () => {
    const { branch } = parsePorcelainV2(`# branch.oid ${OID}\n# branch.head (detached)\n`);
    expect(branch).toEqual({ oid: OID, head: null, detached: true, upstream: null, ahead: null, behind: null });
  });

  it('upstream with ahead/behind as numbers', () => {
    const { branch } = parsePorcelainV2(
      `# branch.oid ${OID}\n# branch.head feature/x\n# branch.upstream origin/feature/x\n# branch.ab +3 -12\n`,
    );
    expect(branch).toEqual({
      oid: OID,
      head: 'feature/x',
      detached: false,
      upstream: 'origin/feature/x',
      ahead: 3,
      behind: 12,
    });
    expect(typeof branch.ahead).toBe('number');
  });

  it('in sync: +0 -0', () => {
    const { branch } = parsePorcelainV2(
      `# branch.oid ${OID}\n# branch.head main\n# branch.upstream origin/main\n# branch.ab +0 -0\n`,
    );
    expect(branch.ahead).toBe(0);
    expect(branch.behind).toBe(0);
  });

  it('upstream gone (no ab line): ahead/behind stay null', () => {
    const { branch } = parsePorcelainV2(`# branch.oid ${OID}\n# branch.head main\n# branch.upstream origin/gone\n`);
    expect(branch.upstream).toBe('origin/gone');
    expect(branch.ahead).toBeNull();
    expect(branch.behind).toBeNull();
  });

  it('empty output: nothing', () => {
    expect(parsePorcelainV2('')).toEqual({
      branch: { oid: null, head: null, detached: false, upstream: null, ahead: null, behind: null },
      entries: [],
    });
  });
});

describe('entry lines', () => {
  it('type 1: changed, with index and work-tree letters; unquoted path with spaces verbatim', () => {
    const raw = [
      `1 .M N... 100644 100644 100644 ${BLOB} ${BLOB} a.txt`,
      `1 M. N... 100644 100644 100644 ${BLOB} ${BLOB} dir/sp ace.txt`,
      `1 A. N... 000000 100644 100644 0000000000000000000000000000000000000000 ${BLOB} new.txt`,
      `1 .D N... 100644 100644 000000 ${BLOB} ${BLOB} gone.txt`,
      '',
    ].join('\n');
    expect(parsePorcelainV2(raw).entries).toEqual([
      { path: 'a.txt', kind: 'changed', index: '.', worktree: 'M' },
      { path: 'dir/sp ace.txt', kind: 'changed', index: 'M', worktree: '.' },
      { path: 'new.txt', kind: 'changed', index: 'A', worktree: '.' },
      { path: 'gone.txt', kind: 'changed', index: '.', worktree: 'D' },
    ]);
  });

  it('type 2: rename with tab separator, both sides plain', () => {
    const raw = `2 R. N... 100644 100644 100644 ${BLOB} ${BLOB} R100 new name.txt\told name.txt\n`;
    expect(parsePorcelainV2(raw).entries).toEqual([
      { path: 'new name.txt', kind: 'renamed', index: 'R', worktree: '.', orig_path: 'old name.txt' },
    ]);
  });

  it('type 2: rename whose new path is C-quoted and contains a tab (real git output)', () => {
    const raw = `2 R. N... 100644 100644 100644 ${BLOB} ${BLOB} R100 "tab\\tnew.txt"\told.txt\n`;
    expect(parsePorcelainV2(raw).entries).toEqual([
      { path: 'tab\tnew.txt', kind: 'renamed', index: 'R', worktree: '.', orig_path: 'old.txt' },
    ]);
  });

  it('type 2: rename whose original path is C-quoted (octal UTF-8), copy score', () => {
    const raw = `2 C. N... 100644 100644 100644 ${BLOB} ${BLOB} C75 copy.txt\t"\\303\\244.txt"\n`;
    expect(parsePorcelainV2(raw).entries).toEqual([
      { path: 'copy.txt', kind: 'renamed', index: 'C', worktree: '.', orig_path: 'ä.txt' },
    ]);
  });

  it('type u: unmerged (real git output of a conflicting merge)', () => {
    const raw = `u UU N... 100644 100644 100644 100644 78981922613b2afb6025042ff6bd878ac1994e85 ${BLOB} 61780798228d17af2d34fce4cfbdf35556832472 f\n`;
    expect(parsePorcelainV2(raw).entries).toEqual([{ path: 'f', kind: 'unmerged', index: 'U', worktree: 'U' }]);
  });

  it('? untracked and ! ignored', () => {
    const raw = '? .gitignore\n? dir/new file.txt\n! build/out.o\n';
    expect(parsePorcelainV2(raw).entries).toEqual([
      { path: '.gitignore', kind: 'untracked', index: '?', worktree: '?' },
      { path: 'dir/new file.txt', kind: 'untracked', index: '?', worktree: '?' },
      { path: 'build/out.o', kind: 'ignored', index: '!', worktree: '!' },
    ]);
  });

  it('a whole real output: headers, rename, quoted untracked names, ignored', () => {
    const raw = [
      `# branch.oid ${OID}`,
      '# branch.head main',
      `2 R. N... 100644 100644 100644 ${BLOB} ${BLOB} R100 "tab\\tnew.txt"\told.txt`,
      '? .gitignore',
      '? "q\\"uote.txt"',
      '? "\\303\\244.txt"',
      '! ign',
      '',
    ].join('\n');
    const { branch, entries } = parsePorcelainV2(raw);
    expect(branch).toEqual({ oid: OID, head: 'main', detached: false, upstream: null, ahead: null, behind: null });
    expect(entries.map((e) => [e.kind, e.path, e.orig_path])).toEqual([
      ['renamed', 'tab\tnew.txt', 'old.txt'],
      ['untracked', '.gitignore', undefined],
      ['untracked', 'q"uote.txt', undefined],
      ['untracked', 'ä.txt', undefined],
      ['ignored', 'ign', undefined],
    ]);
  });
});

describe('unquote (C-quoted paths)', () => {
  it.each([
    ['plain.txt', 'plain.txt'],
    ['"\\303\\244.txt"', 'ä.txt'],
    ['"dir/\\346\\227\\245\\346\\234\\254.md"', 'dir/日本.md'],
    ['"\\360\\237\\230\\200"', '😀'],
    ['"a\\tb"', 'a\tb'],
    ['"line\\nbreak"', 'line\nbreak'],
    ['"q\\"uote"', 'q"uote'],
    ['"back\\\\slash"', 'back\\slash'],
    ['"\\303\\244 \\"x\\"\\t.txt"', 'ä "x"\t.txt'],
  ])('%s → %j', (quoted, plain) => {
    expect(unquote(quoted)).toBe(plain);
  });

  it('an entry line with an octal UTF-8 path', () => {
    expect(parsePorcelainV2(`1 .M N... 100644 100644 100644 ${BLOB} ${BLOB} "\\303\\244.txt"\n`).entries[0].path).toBe(
      'ä.txt',
    );
  });
});

describe('parsePorcelainV2Kept (one pass: entries, hashed text, untracked paths)', () => {
  const raw =
    `# branch.oid ${OID}\n# branch.head main\n` +
    `1 .M N... 100644 100644 100644 ${BLOB} ${BLOB} keep.txt\n` +
    `2 R. N... 100644 100644 100644 ${BLOB} ${BLOB} R100 new.txt\tsecret/old.txt\n` +
    `? secret/u.txt\n? shown/\n`;
  const hidesSecret = (p: string) => p.startsWith('secret/');

  it('keeping everything gives the output back byte for byte and the entries of parsePorcelainV2', () => {
    const all = parsePorcelainV2Kept(raw, () => true);
    expect(all.text).toBe(raw);
    expect(all.entries).toEqual(parsePorcelainV2(raw).entries);
    expect(all.branch).toEqual(parsePorcelainV2(raw).branch);
  });

  it('leaves out the lines of the entries not kept (a rename with either side hidden), lists every untracked path', () => {
    const kept = parsePorcelainV2Kept(
      raw,
      (e) => !hidesSecret(e.path) && (e.orig_path === undefined || !hidesSecret(e.orig_path)),
    );
    expect(kept.entries.map((e) => e.path)).toEqual(['keep.txt', 'shown/']);
    expect(kept.text).toBe(
      `# branch.oid ${OID}\n# branch.head main\n1 .M N... 100644 100644 100644 ${BLOB} ${BLOB} keep.txt\n? shown/\n`,
    );
    expect(kept.untracked).toEqual(['secret/u.txt', 'shown/']);
    expect(kept.branch.head).toBe('main');
  });
});
