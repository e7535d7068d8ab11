/**
 * Pins edit_file's engine (SPEC §6.2, src/patch/apply-edits.ts), as a pure function:
 *  - new_text is inserted literally: `$&`, `$$`, `` $` ``, `$'` (and `$1`) land as typed;
 *  - each old_text must match exactly once: two matches → PATCH_FAILED ambiguous with count and candidate lines;
 *    replace_all replaces every match;
 *  - edits apply in order, each to the previous result; a failing edit reports its edit_index and nothing of the
 *    earlier edits escapes (the input string is untouched and no result is returned);
 *  - matching tolerates trailing whitespace and CRLF-vs-LF in old_text; an indentation difference that is not one
 *    uniform shift with new_text in old_text's frame is no_match with nearest.first_difference.whitespace_only true
 *    (the re-indented matches: test/patch/edit-matching.test.ts);
 *  - already_applied: old_text gone and new_text present; insertion-style new_text (containing old_text) already there;
 *  - bytes: a CRLF file stays CRLF exactly; in a mixed file untouched lines keep their endings; the BOM is kept;
 *    no final newline stays none; non-ASCII (`Bäcker €`) round-trips.
 */
import { describe, expect, it, test } from 'vitest';
import { PatchFailedError } from '../../src/errors/tool-error.js';
import { applyEdits, type TextEdit } from '../../src/patch/apply-edits.js';

const FILE = '/r/f.txt';

/** Runs applyEdits expecting PATCH_FAILED; returns the error. */
function failing(original: string, edits: TextEdit[]): PatchFailedError {
  const frozen = original;
  let caught: unknown;
  try {
    applyEdits(original, edits, FILE);
  } catch (error) {
    caught = error;
  }
  expect(caught, 'expected PATCH_FAILED').toBeInstanceOf(PatchFailedError);
  expect(original).toBe(frozen);
  const e = caught as PatchFailedError;
  expect(e.code).toBe('PATCH_FAILED');
  expect(e.path).toBe(FILE);
  return e;
}

describe('replacement text is literal', () => {
  test.each([
    ['$&', 'x = $&;'],
    ['$$', 'cost: $$5'],
    ['$`', 'before $` after'],
    ["$'", "quote $' end"],
    ['$1 and $<name>', 'group $1 and $<name>'],
    ['all of them', "$& $$ $` $' $0"],
  ])('%s', (_label, newText) => {
    const r = applyEdits('alpha TARGET omega\n', [{ old_text: 'TARGET', new_text: newText }], FILE);
    expect(r.text).toBe(`alpha ${newText} omega\n`);
  });

  it('is literal under replace_all too', () => {
    const r = applyEdits('a X b X c\n', [{ old_text: 'X', new_text: '$&$&', replace_all: true }], FILE);
    expect(r.text).toBe('a $&$& b $&$& c\n');
  });

  it('treats regex metacharacters in old_text literally', () => {
    const r = applyEdits('f(a.b*c)+[d]\n', [{ old_text: 'a.b*c)+[d', new_text: 'Z' }], FILE);
    expect(r.text).toBe('f(Z]\n');
    failing('f(aXbbc)\n', [{ old_text: 'a.b*c', new_text: 'Z' }]);
  });
});

describe('uniqueness', () => {
  it('two matches without replace_all: ambiguous, count 2, candidate lines', () => {
    const e = failing('x = 1;\ny = 2;\nx = 1;\n', [{ old_text: 'x = 1;', new_text: 'x = 3;' }]);
    expect(e.details).toMatchObject({ reason: 'ambiguous', edit_index: 0, count: 2, candidates: [1, 3] });
  });

  it('replace_all replaces every match and reports where', () => {
    const r = applyEdits(
      'x = 1;\ny = 2;\nx = 1;\n',
      [{ old_text: 'x = 1;', new_text: 'x = 3;', replace_all: true }],
      FILE,
    );
    expect(r.text).toBe('x = 3;\ny = 2;\nx = 3;\n');
    expect(r.edits).toEqual([{ index: 0, replacements: 2, match: 'exact', lines: [1, 3] }]);
  });

  it('replace_all with a single match is fine', () => {
    expect(applyEdits('one\n', [{ old_text: 'one', new_text: 'two', replace_all: true }], FILE).text).toBe('two\n');
  });
});

describe('order and atomicity', () => {
  it('applies edits in order, each to the previous result', () => {
    const r = applyEdits(
      'a\n',
      [
        { old_text: 'a', new_text: 'b' },
        { old_text: 'b', new_text: 'c' },
        { old_text: 'c', new_text: 'd' },
      ],
      FILE,
    );
    expect(r.text).toBe('d\n');
    expect(r.edits.map((e) => e.index)).toEqual([0, 1, 2]);
  });

  it('edit 3 of 3 failing reports edit_index 2 and returns nothing of edits 1 and 2', () => {
    const original = 'one\ntwo\nthree\n';
    const e = failing(original, [
      { old_text: 'one', new_text: 'ONE' },
      { old_text: 'two', new_text: 'TWO' },
      { old_text: 'four', new_text: 'FOUR' },
    ]);
    expect(e.details.reason).toBe('no_match');
    expect(e.details.edit_index).toBe(2);
    expect(e.message).toContain('3 of 3');
    expect(original).toBe('one\ntwo\nthree\n');
  });

  it('a later edit can be ambiguous only because of an earlier one (index reported)', () => {
    const e = failing('a\nb\n', [
      { old_text: 'a', new_text: 'b' },
      { old_text: 'b', new_text: 'c' },
    ]);
    expect(e.details).toMatchObject({ reason: 'ambiguous', edit_index: 1, count: 2 });
  });
});

describe('tolerant matching', () => {
  test.each<[string, string, string, string, string]>([
    // label, file, old_text, new_text, expected file
    [
      'file has trailing spaces, old_text none',
      'if (x) {  \n  go();\n}\n',
      'if (x) {\n  go();',
      'if (y) {\n  go();',
      'if (y) {\n  go();\n}\n',
    ],
    [
      'old_text has trailing spaces, file none',
      'if (x) {\n  go();\n}\n',
      'if (x) {   \n  go();',
      'if (y) {\n  go();',
      'if (y) {\n  go();\n}\n',
    ],
    ['trailing tab vs spaces', 'a\t\nb\n', 'a  \nb', 'A\nB', 'A\nB\n'],
    ['old_text with CRLF, file LF', 'a\nb\nc\n', 'a\r\nb\r\n', 'X\r\nY\r\n', 'X\nY\nc\n'],
    ['old_text with LF, file CRLF', 'a\r\nb\r\nc\r\n', 'a\nb\n', 'X\nY\n', 'X\r\nY\r\nc\r\n'],
  ])('%s', (_label, file, oldText, newText, expected) => {
    expect(applyEdits(file, [{ old_text: oldText, new_text: newText }], FILE).text).toBe(expected);
  });

  // Regression: the tolerant matcher's trailing-blank allowance after old_text's last line used to consume the blanks
  // that follow mid-line, so `x = 1;  y = 2;` became `x = 3;y = 2;`.
  test.each<[string, string, string, string, string]>([
    [
      'old_text ends mid-line',
      'if (a) {  \n  x = 1;  y = 2;\n}\n',
      'if (a) {\n  x = 1;',
      'if (b) {\n  x = 3;',
      'if (b) {\n  x = 3;  y = 2;\n}\n',
    ],
    ['old_text ends mid-line (short)', 'a  \nb  c\n', 'a\nb', 'X\nY', 'X\nY  c\n'],
    ['old_text ends mid-line with its own blank', 'a  \nb c\n', 'a\nb ', 'X\nY ', 'X\nY c\n'],
    ['old_text ends at a line end with blanks', 'a  \nb  \nc\n', 'a\nb', 'X\nY', 'X\nY\nc\n'],
    ['old_text ends at end of file with blanks', 'a  \nb  ', 'a\nb', 'X\nY', 'X\nY'],
  ])('trailing blanks are only tolerated at line ends: %s', (_label, file, oldText, newText, expected) => {
    expect(applyEdits(file, [{ old_text: oldText, new_text: newText }], FILE).text).toBe(expected);
  });

  it('reports the tolerant match kind', () => {
    const r = applyEdits('a  \nb\n', [{ old_text: 'a\nb', new_text: 'c' }], FILE);
    expect(r.edits[0].match).toBe('trailing_whitespace');
  });

  test.each<[string, string, string]>([
    ['more indentation in old_text', '  foo();\n  bar();\n', '    foo();\n    bar();'],
    ['less indentation in old_text', '    foo();\n    bar();\n', 'foo();\n  bar();'],
    ['tabs for spaces', '  foo();\n  bar();\n', '\tfoo();\n\tbar();'],
  ])('indentation difference does not match: %s', (_label, file, oldText) => {
    const e = failing(file, [{ old_text: oldText, new_text: 'X' }]);
    expect(e.details.reason).toBe('no_match');
    const nearest = e.details.nearest as { line: number; first_difference: { whitespace_only: boolean } };
    expect(nearest.line).toBe(1);
    expect(nearest.first_difference.whitespace_only).toBe(true);
  });
});

describe('already_applied', () => {
  it('old_text gone and new_text present', () => {
    const e = failing('const limit = 20;\n', [{ old_text: 'const limit = 10;', new_text: 'const limit = 20;' }]);
    expect(e.details).toMatchObject({ reason: 'already_applied', edit_index: 0 });
  });

  it('insertion-style new_text (containing old_text) already present', () => {
    const e = failing('import a;\nimport b;\n\nmain();\n', [
      { old_text: 'import a;\n', new_text: 'import a;\nimport b;\n' },
    ]);
    expect(e.details).toMatchObject({ reason: 'already_applied', edit_index: 0 });
  });

  it('insertion where only the old text is present applies', () => {
    const r = applyEdits(
      'import a;\n\nmain();\n',
      [{ old_text: 'import a;\n', new_text: 'import a;\nimport b;\n' }],
      FILE,
    );
    expect(r.text).toBe('import a;\nimport b;\n\nmain();\n');
  });

  it('neither present is no_match, not already_applied', () => {
    expect(failing('x\n', [{ old_text: 'y', new_text: 'z' }]).details.reason).toBe('no_match');
  });
});

describe('bytes are kept', () => {
  test.each<[string, string, TextEdit[], string]>([
    ['CRLF file stays CRLF', 'a\r\nb\r\nc\r\n', [{ old_text: 'b', new_text: 'B1\nB2' }], 'a\r\nB1\r\nB2\r\nc\r\n'],
    [
      'CRLF multi-line replacement',
      'one\r\ntwo\r\nthree\r\n',
      [{ old_text: 'one\ntwo\n', new_text: '1\n2\n2.5\n' }],
      '1\r\n2\r\n2.5\r\nthree\r\n',
    ],
    [
      'mixed: untouched lines keep theirs',
      'l1\r\nl2\nl3\r\nl4\n',
      [{ old_text: 'l3', new_text: 'L3' }],
      'l1\r\nl2\nL3\r\nl4\n',
    ],
    [
      'mixed: an LF line edited stays LF',
      'l1\r\nl2\nl3\r\n',
      [{ old_text: 'l2', new_text: 'X\nY' }],
      'l1\r\nX\nY\nl3\r\n',
    ],
    [
      'mixed: a CRLF line edited stays CRLF',
      'l1\r\nl2\nl3\r\n',
      [{ old_text: 'l1', new_text: 'X\nY' }],
      'X\r\nY\r\nl2\nl3\r\n',
    ],
    ['BOM kept', '\uFEFFfirst\nsecond\n', [{ old_text: 'first', new_text: 'FIRST' }], '\uFEFFFIRST\nsecond\n'],
    [
      'BOM kept when editing at the very start',
      '\uFEFFfirst\n',
      [{ old_text: 'first\n', new_text: 'zero\nfirst\n' }],
      '\uFEFFzero\nfirst\n',
    ],
    ['no final newline stays none', 'a\nb', [{ old_text: 'b', new_text: 'B' }], 'a\nB'],
    ['CRLF without final newline', 'a\r\nb', [{ old_text: 'a\nb', new_text: 'x\ny' }], 'x\r\ny'],
    [
      'non-ASCII round-trips',
      'Bäcker €\nMüller\n',
      [{ old_text: 'Müller', new_text: 'Bäcker € Straße' }],
      'Bäcker €\nBäcker € Straße\n',
    ],
    ['non-ASCII in old_text', 'Bäcker €\n', [{ old_text: 'Bäcker €', new_text: '€ Bäcker' }], '€ Bäcker\n'],
  ])('%s', (_label, original, edits, expected) => {
    expect(applyEdits(original, edits, FILE).text).toBe(expected);
    expect(Buffer.from(applyEdits(original, edits, FILE).text, 'utf8')).toEqual(Buffer.from(expected, 'utf8'));
  });
});
