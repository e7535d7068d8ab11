/**
 * Pins the line-ending-preserving text model (SPEC §6.2, src/patch/eol-text.ts):
 *  - the LF view drops CRs of CRLFs and the BOM, and maps back to the exact original bytes when nothing changes;
 *  - a replacement takes the style of the region it replaces (CRLF file stays CRLF; in a mixed file untouched lines
 *    keep theirs), or of its line, or the file's dominant style;
 *  - BOM and final-newline state survive; toLf and lineOfOffset.
 */
import { describe, expect, it, test } from 'vitest';
import { applyToOriginal, lineOfOffset, toEolText, toLf } from '../../src/patch/eol-text.js';

describe('toEolText', () => {
  test.each<[string, string, string, number[], boolean, '\n' | '\r\n']>([
    // label, original, view, crlfAt, bom, dominant
    ['LF', 'a\nb\n', 'a\nb\n', [], false, '\n'],
    ['CRLF', 'a\r\nb\r\n', 'a\nb\n', [1, 3], false, '\r\n'],
    ['mixed', 'a\r\nb\nc\r\n', 'a\nb\nc\n', [1, 5], false, '\r\n'],
    ['mixed, mostly LF', 'a\r\nb\nc\n', 'a\nb\nc\n', [1], false, '\n'],
    ['BOM', '\uFEFFx\r\n', 'x\n', [1], true, '\r\n'],
    ['lone CR is content', 'a\rb\n', 'a\rb\n', [], false, '\n'],
    ['no final newline', 'a\r\nb', 'a\nb', [1], false, '\r\n'],
    ['empty', '', '', [], false, '\n'],
  ])('%s', (_label, original, view, crlfAt, bom, dominant) => {
    const t = toEolText(original);
    expect(t).toEqual({ view, crlfAt, bom, dominant });
  });

  test.each(['a\nb\n', 'a\r\nb\r\n', 'a\r\nb\nc\r\nd', '\uFEFFa\r\n', '\uFEFF', 'x', '\r\n\r\n\n', 'Bäcker €\r\n'])(
    'maps back unchanged with no replacements: %j',
    (original) => {
      expect(applyToOriginal(toEolText(original), [])).toBe(original);
    },
  );
});

describe('applyToOriginal', () => {
  it('keeps CRLF for a replacement inside a CRLF file', () => {
    const t = toEolText('a\r\nb\r\nc\r\n');
    const start = t.view.indexOf('b');
    expect(applyToOriginal(t, [{ start, end: start + 2, text: 'x\ny\n' }])).toBe('a\r\nx\r\ny\r\nc\r\n');
  });

  it('in a mixed file, the replaced region decides and other lines keep theirs', () => {
    const original = 'l1\r\nl2\nl3\r\nl4\n';
    const t = toEolText(original);
    const s2 = t.view.indexOf('l2');
    const s4 = t.view.indexOf('l4');
    expect(
      applyToOriginal(t, [
        { start: s4, end: s4 + 2, text: 'A\nB' },
        { start: s2, end: s2 + 2, text: 'C\nD' },
      ]),
    ).toBe('l1\r\nC\nD\nl3\r\nA\nB\n');
  });

  it('a region containing a CRLF break writes CRLF', () => {
    const t = toEolText('l1\nl2\r\nl3\n');
    const s = t.view.indexOf('l2');
    expect(applyToOriginal(t, [{ start: s, end: s + 3, text: 'x\ny\n' }])).toBe('l1\nx\r\ny\r\nl3\n');
  });

  it('a one-line file without a break uses the dominant style', () => {
    const t = toEolText('abc');
    expect(applyToOriginal(t, [{ start: 1, end: 2, text: '1\n2' }])).toBe('a1\n2c');
  });

  it('keeps the BOM and the missing final newline', () => {
    const t = toEolText('\uFEFFa\r\nb');
    const s = t.view.indexOf('b');
    expect(applyToOriginal(t, [{ start: s, end: s + 1, text: 'c' }])).toBe('\uFEFFa\r\nc');
  });

  it('round-trips non-ASCII', () => {
    const t = toEolText('Bäcker €\r\n');
    expect(applyToOriginal(t, [{ start: 0, end: 1, text: 'b' }])).toBe('bäcker €\r\n');
  });
});

describe('helpers', () => {
  test.each([
    ['a\r\nb', 'a\nb'],
    ['a\rb', 'a\rb'],
    ['\r\n\r\n', '\n\n'],
    ['x', 'x'],
  ])('toLf(%j)', (input, out) => {
    expect(toLf(input)).toBe(out);
  });

  test.each([
    [0, 1],
    [1, 1],
    [2, 2],
    [3, 2],
    [4, 3],
    [99, 3],
  ])('lineOfOffset("a\\nb\\nc", %i) = %i', (i, line) => {
    expect(lineOfOffset('a\nb\nc', i)).toBe(line);
  });
});
