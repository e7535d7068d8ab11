/**
 * Line-wise replacement (src/fs/replace-lines.ts), the core of replace_in_files: a pattern applies to each line on
 * its own (`^`/`$` are line bounds, a match never spans lines), CRLF and a missing final newline are kept, literal
 * replacements are inserted as typed while regex replacements expand $1/$<name>/$&/$$, and zero-length matches count.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { replaceLines } from '../../src/fs/replace-lines.js';

/** A pattern that counts its exec calls: how far a pass asked for matches, observed without timing anything. */
class CountingRegExp extends RegExp {
  execs = 0;
  override exec(s: string): RegExpExecArray | null {
    this.execs++;
    return super.exec(s);
  }
}

/**
 * The reference replaceLines is checked against: `replace` applied to each line on its own (a final `\r` kept out of
 * the line, the empty remainder after a final newline no line), and the matches of global `re` counted per line.
 */
function reference(text: string, re: RegExp, replace: (line: string) => string): { expected: string; count: number } {
  let count = 0;
  const expected = text
    .split('\n')
    .map((full, i, all) => {
      if (i === all.length - 1 && full === '') return full;
      const cr = full.endsWith('\r') ? '\r' : '';
      const line = cr ? full.slice(0, -1) : full;
      count += [...line.matchAll(re)].length;
      return replace(line) + cr;
    })
    .join('\n');
  return { expected, count };
}

const lit = (q: string) => new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'u');

describe('replaceLines', () => {
  it.each([
    ['a foo b foo\nfoo\n', 'foo', 'bar', 'a bar b bar\nbar\n', 3],
    ['x\r\nfoo\r\n', 'foo', 'bar', 'x\r\nbar\r\n', 1],
    ['foo', 'foo', 'bar', 'bar', 1],
    ['no match\n', 'foo', 'bar', 'no match\n', 0],
    ['a.b a-b\n', '.', '$&$$', 'a$&$$b a-b\n', 1],
    ['', 'foo', 'bar', '', 0],
  ])('literal %j: %s → %s', (text, query, replacement, expected, count) => {
    expect(replaceLines(lit(query), text, replacement, true)).toEqual({ text: expected, count });
  });

  it.each([
    ['v1 v22\nv3\n', 'v(\\d+)', 'w$1', 'w1 w22\nw3\n', 3],
    ['key=val\n', '(?<k>\\w+)=(?<v>\\w+)', '$<v>=$<k>', 'val=key\n', 1],
    ['a\r\nb\r\n', '$', ';', 'a;\r\nb;\r\n', 2], // $ is before the CR; the CR stays
    ['a\nb\n', '^', '> ', '> a\n> b\n', 2], // nothing after the final newline
    ['a\n\nb', '^', '> ', '> a\n> \n> b', 3], // an empty line inside is a line
    ['a\nb\n', 'a\\nb', 'x', 'a\nb\n', 0], // never spans lines
    ['price 5\n', '\\d', '$$$&', 'price $5\n', 1],
  ])('regex %j: /%s/ → %s', (text, source, replacement, expected, count) => {
    expect(replaceLines(new RegExp(source, 'u'), text, replacement, false)).toEqual({ text: expected, count });
  });

  it('keeps a global pattern usable and case-insensitive flags', () => {
    const re = /foo/giu;
    expect(replaceLines(re, 'FOO foo\n', 'x', true)).toEqual({ text: 'x x\n', count: 2 });
    expect(replaceLines(re, 'Foo\n', 'y', true)).toEqual({ text: 'y\n', count: 1 });
  });

  it('leaves a global pattern at lastIndex 0 when a line stops the pass early (tooLarge), as replace would', () => {
    // The exec loop of the counting pass moves the caller's own global pattern; stopped mid-line it left lastIndex
    // there (2 here), and the caller's next re.test('ab') started past the 'a' and said false.
    const re = /a/gu;
    expect(replaceLines(re, 'aaaa\nbaaa', 'xyz', true, 5)).toEqual({ text: 'aaaa\nbaaa', count: 0, tooLarge: true });
    expect(re.lastIndex).toBe(0);
    expect(re.test('ab')).toBe(true);
    const regex = /(a)/gu;
    expect(replaceLines(regex, 'aaaa', '$1$1', false, 6)).toEqual({ text: 'aaaa', count: 0, tooLarge: true });
    expect(regex.lastIndex).toBe(0);
  });

  it('never builds a result over maxChars (a replacement bomb): tooLarge, the input returned', () => {
    const text = 'aaaa\nbb\n';
    expect(replaceLines(lit('a'), text, 'xyz', true, text.length + 8)).toEqual({
      text: 'xyzxyzxyzxyz\nbb\n',
      count: 4,
    });
    expect(replaceLines(lit('a'), text, 'xyz', true, text.length + 7)).toEqual({ text, count: 0, tooLarge: true });
    // A pattern: a bound, each $ counted as the longest of the match and its groups, or the line with $` / $'.
    // (a)a on aaaa: 2 matches, each at most 4 + 2 × 2 - 2 longer: 4 + 12 + 1.
    expect(replaceLines(/(a)a/u, 'aaaa\n', '$1$&', false, 17)).toEqual({ text: 'aaaaaa\n', count: 2 });
    expect(replaceLines(/(a)a/u, 'aaaa\n', '$1$&', false, 16)).toEqual({ text: 'aaaa\n', count: 0, tooLarge: true });
    // A group captured by a lookahead lies outside the match (3 here, the match 1): 4 + (2 + 3 - 1) + 1.
    expect(replaceLines(/b(?=(a+))/u, 'baaa\n', '$1', false, 9)).toEqual({ text: 'aaaaaa\n', count: 1 });
    expect(replaceLines(/b(?=(a+))/u, 'baaa\n', '$1', false, 8)).toEqual({
      text: 'baaa\n',
      count: 0,
      tooLarge: true,
    });
    expect(replaceLines(/b/u, 'abc\n', "$`$'", false, 13)).toEqual({ text: 'aacc\n', count: 1 });
    expect(replaceLines(/b/u, 'abc\n', "$`$'", false, 12)).toEqual({ text: 'abc\n', count: 0, tooLarge: true });
  });

  it('stops a line early only when nothing after it could bring the result back under maxChars', () => {
    // 'a' grows by 2, then 'bbbbbb' shrinks by 3: the line's bound is its own length, 7 + 1. After the first match
    // alone it is 9, but the rest of the line (6 characters) may still shrink it, so the pass goes on.
    expect(replaceLines(/a|b{6}/u, 'abbbbbb\n', 'xxx', false, 8)).toEqual({ text: 'xxxxxx\n', count: 2 });
    expect(replaceLines(/a|b{6}/u, 'abbbbbb\n', 'xxx', false, 7)).toEqual({
      text: 'abbbbbb\n',
      count: 0,
      tooLarge: true,
    });
    // The bomb of test/attacks/replace-in-files-attacks.test.ts: one 3,000,000-character line, every character a
    // match that grows by 199. It stops after about maxChars / 199 matches instead of counting all 3,000,000.
    const bomb = 'a'.repeat(3_000_000);
    expect(replaceLines(/a/u, bomb, '$&'.repeat(100), false, 4_000_000)).toEqual({
      text: bomb,
      count: 0,
      tooLarge: true,
    });
  });

  it('counts a bomb lazily: the pass asks the pattern for about maxChars / growth matches, not every match', () => {
    // String.prototype.replace with a callback (the pass before) made V8 collect all 3,000,000 matches before the
    // first callback could stop it: hundreds of milliseconds idle, past the 1 s regex bound under CI load. Counting
    // the pattern's exec calls shows the laziness without timing anything.
    const counting = new CountingRegExp('a', 'gu');
    const bomb = 'a'.repeat(3_000_000);
    const r = replaceLines(counting, bomb, '$&'.repeat(100), false, 4_000_000);
    expect(r).toEqual({ text: bomb, count: 0, tooLarge: true });
    // 4,000,000 / 299 (200 typed characters + 100 × the 1-character match − the match) ≈ 13,378 matches.
    expect(counting.execs).toBeGreaterThan(3_000);
    expect(counting.execs).toBeLessThan(20_000);
  });

  it('agrees with String.prototype.replace line by line, zero-length and astral matches included (property)', () => {
    const patterns: Array<[string, string]> = [
      ['a', 'u'],
      ['^', 'u'],
      ['$', 'u'],
      ['x*', 'u'],
      ['\\b', 'u'],
      ['(?:)', 'u'],
      ['.', 'u'],
      ['(a)|(b)', 'u'],
      ['(?<w>\\w+)', 'iu'],
      ['[\\p{L}]*', 'v'],
      ['(?=a)', 'u'],
    ];
    const replacements = ['', 'x', '$&$&', '[$1]', '$$', '$`', '<$<w>>'];
    const chars = fc.constantFrom('a', 'b', 'x', ' ', '\n', '\r', '😀', 'é', '\uD800');
    fc.assert(
      fc.property(
        fc.array(chars, { maxLength: 24 }).map((cs) => cs.join('')),
        fc.constantFrom(...patterns),
        fc.constantFrom(...replacements),
        (text, [source, flags], replacement) => {
          const re = new RegExp(source, `${flags}g`);
          const { expected, count } = reference(text, re, (line) => line.replace(re, replacement));
          const got = replaceLines(new RegExp(source, flags), text, replacement, false);
          expect(got).toEqual(count === 0 ? { text, count } : { text: expected, count });
        },
      ),
      { numRuns: 400 },
    );
  });

  it('bounds the result both ways under maxChars, for sticky, global, non-unicode and reused patterns too (property)', () => {
    // The reviewer's differential fuzz of the exec-loop pass against the callback pass before it and against
    // String.prototype.replace line by line, kept small: lone surrogates and lookarounds at pair halves (code-unit
    // stepping without the u flag), empty alternatives, sticky and global input patterns, a global pattern reused after
    // a pass stopped early, literal and expanding replacements, and a maxChars anywhere around the result's length.
    const patterns: Array<[string, string]> = [
      ['(?<=\\uD83D)', ''],
      ['(?=\\uDE00)', ''],
      ['(?<=\\uD83D)', 'u'],
      ['\\uD800', 'u'],
      ['(?:)', ''],
      ['\\B', 'u'],
      ['|a', 'u'],
      ['(?<!a)', 'u'],
      ['.??', 'u'],
      ['a*', 'y'],
      ['a', 'gy'],
      ['(?:)', 'giu'],
      ['(?<n>a)|(?<m>b)', 'u'],
      ['(a)?', 'u'],
      ['ſ', 'iu'],
      ['K', 'iu'],
    ];
    const replacements = ['', 'x', 'xyz', '$&$&', '[$1]', "$'", '$<n>', '$10', '$'];
    const chars = fc.constantFrom('a', 'b', ' ', '\n', '\r', '😀', '\uD800', '\uDE00', '\uD83D', 's', 'ſ', 'k', 'K');
    fc.assert(
      fc.property(
        fc.array(chars, { maxLength: 40 }).map((cs) => cs.join('')),
        fc.constantFrom(...patterns),
        fc.constantFrom(...replacements),
        fc.boolean(),
        fc.integer({ min: 0, max: 160 }),
        (text, [source, flags], replacement, literal, maxChars) => {
          const re = new RegExp(source, flags.includes('g') ? flags : `${flags}g`);
          const { expected, count } = reference(text, re, (line) =>
            literal ? line.replace(re, () => replacement) : line.replace(re, replacement),
          );
          const pattern = new RegExp(source, flags);
          // A global pattern is the caller's own object: stop one pass early on it first.
          if (pattern.global) replaceLines(pattern, 'aaaa😀aaaa', '$&'.repeat(50), false, 10);
          const got = replaceLines(pattern, text, replacement, literal, maxChars);
          if (got.tooLarge) {
            expect(got).toEqual({ text, count: 0, tooLarge: true });
            // A literal's bound is exact for a text within maxChars (as every file this tool reads is).
            if (literal && text.length <= maxChars) expect(expected.length).toBeGreaterThan(maxChars);
          } else {
            expect(got).toEqual(count === 0 ? { text, count } : { text: expected, count });
            expect(expected.length <= maxChars || count === 0).toBe(true);
          }
          expect(pattern.lastIndex).toBe(0);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('stops counting at the match after maxCount: tooMany, the input returned, nothing built', () => {
    expect(replaceLines(/a/u, 'aa\na\n', 'b', false, Infinity, 3)).toEqual({ text: 'bb\nb\n', count: 3 });
    expect(replaceLines(/a/u, 'aa\naa\n', 'b', false, Infinity, 3)).toEqual({
      text: 'aa\naa\n',
      count: 0,
      tooMany: true,
    });
    expect(replaceLines(/a/u, 'aaaa', 'b', true, Infinity, 3)).toEqual({ text: 'aaaa', count: 0, tooMany: true });
    // Zero-length matches count as well: `^` on 4 lines is 4 matches.
    expect(replaceLines(/^/u, 'a\nb\nc\nd\n', '> ', false, Infinity, 3)).toMatchObject({ tooMany: true });
    // Whichever bound is crossed first is said: here the size (2 matches of +9 each) before the count (3).
    expect(replaceLines(/a/u, 'aaaa\n', 'x'.repeat(10), true, 20, 3)).toMatchObject({ tooLarge: true });
    expect(replaceLines(/a/u, 'aaaa\n', 'xx', true, 20, 3)).toMatchObject({ tooMany: true });
    // A caller's global pattern is left at lastIndex 0 here too.
    const re = /a/gu;
    replaceLines(re, 'aaaa', 'b', false, Infinity, 2);
    expect(re.lastIndex).toBe(0);
  });

  it('counts a file of millions of matches only to maxCount + 1 (replace_in_files passes max_replacements)', () => {
    const counting = new CountingRegExp('a', 'gu');
    const text = 'a'.repeat(10_000_000);
    expect(replaceLines(counting, text, 'b', false, 20_000_000, 10_000)).toEqual({
      text,
      count: 0,
      tooMany: true,
    });
    expect(counting.execs).toBe(10_001);
  });
});
