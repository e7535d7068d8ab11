/**
 * The literal prefilter of content search (src/fs/required-literal.ts `requiredLiteral`, `createLineMatcher().needle`):
 * a file without the needle is skipped unread, so the needle must be contained in every line the expression matches.
 * Pins: known expressions give the expected literal (or none); property: for random expressions over a small
 * alphabet with groups, classes, alternation, quantifiers and escapes, every random line the expression matches
 * contains the extracted literal; case-insensitive and `v` expressions never get one; a literal query's needle is the
 * query's UTF-8 bytes, and only when case-sensitive.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLineMatcher } from '../../src/fs/line-matcher.js';
import { requiredLiteral } from '../../src/fs/required-literal.js';

describe('requiredLiteral', () => {
  it.each([
    ['\\bTODO\\((alice|bob)\\):', 'TODO('],
    ['foo.*barbaz', 'barbaz'],
    ['colou?r', 'colo'],
    ['ab+cdef', 'cdef'],
    ['x{0,3}abcd', 'abcd'],
    ['abc\\.def', 'abc.def'],
    ['^import .* from', 'import '],
    ['😀😀x?yz', '😀😀'],
    ['a|bcdef', null],
    ['(?:xyz)', null],
    ['[abc]de', null],
    ['\\d+px', null],
    ['\\u0041BCD', 'BCD'],
    ['\\x41BCD', 'BCD'],
    ['\\p{L}+word', 'word'],
    ['(?<n>ab)\\k<n>cde', 'cde'],
  ])('%s → %j', (source, expected) => {
    new RegExp(source, 'u'); // every case compiles
    expect(requiredLiteral(source, 'u')).toBe(expected);
  });

  it('gives up for case-insensitive and v-mode expressions', () => {
    expect(requiredLiteral('abcdef', 'iu')).toBeNull();
    expect(requiredLiteral('abcdef', 'v')).toBeNull();
  });

  it('every matched line contains the literal (property)', () => {
    const atom = fc.oneof(
      fc.constantFrom(
        'a',
        'b',
        'c',
        'ab',
        'abc',
        'bca',
        '\\.',
        '.',
        '\\d',
        '\\w',
        '[ab]',
        '[^a]',
        '^',
        '$',
        '\\b',
        '1',
      ),
      fc.constantFrom('(a|b)', '(?:ab)', '(abc)?', '(?=a)', '(?!b)', '(?<=a)', 'c{2}', 'a{0,2}', 'b{1,}'),
    );
    const quant = fc.constantFrom('', '', '', '?', '*', '+', '{2}', '{0,1}', '??', '+?');
    const expr = fc
      .array(fc.tuple(atom, quant), { minLength: 1, maxLength: 8 })
      .chain((parts) => fc.constantFrom(parts.map(([a, q]) => a + q).join(''), `${parts.map(([a]) => a).join('')}|ab`));
    const line = fc.array(fc.constantFrom('a', 'b', 'c', '.', '1', ' '), { maxLength: 14 }).map((a) => a.join(''));
    fc.assert(
      fc.property(expr, fc.array(line, { minLength: 1, maxLength: 30 }), (source, lines) => {
        let re: RegExp;
        try {
          re = new RegExp(source, 'u');
        } catch {
          return; // not a valid expression: search refuses it before any prefilter
        }
        const literal = requiredLiteral(source, 'u');
        if (literal === null) return;
        for (const l of lines) if (re.test(l)) expect(l).toContain(literal);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('the needle of a compiled query', () => {
  it('is the query for a case-sensitive literal, none for a case-insensitive one', () => {
    expect(createLineMatcher('naïve(x', { regex: false, caseSensitive: true }).needle?.toString('utf8')).toBe(
      'naïve(x',
    );
    expect(createLineMatcher('abc', { regex: false, caseSensitive: false }).needle).toBeNull();
    expect(createLineMatcher('TODO\\(\\w+\\)', { regex: true, caseSensitive: true }).needle?.toString('utf8')).toBe(
      'TODO(',
    );
    expect(createLineMatcher('TODO\\(\\w+\\)', { regex: true, caseSensitive: false }).needle).toBeNull();
  });
});
