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
import { matchLines } from '../../src/fs/match-lines.js';
import { requiredLiteral, requiredLiteralSet } from '../../src/fs/required-literal.js';
import { CompiledRegexes, matched } from '../../src/fs/search-reader-match.js';

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

describe('requiredLiteralSet', () => {
  it.each([
    ['\\bTODO\\((alice|bob)\\):', ['TODO(alice):', 'TODO(bob):']],
    ['foo|barbaz', ['barbaz', 'foo']],
    ['(?:get|set)Value', ['getValue', 'setValue']],
    ['(?<verb>get|set)Value\\(', ['getValue(', 'setValue(']],
    ['x(ab|cd)?yzw', ['yzw']],
    ['x(ab|cd)+yzw', ['yzw']],
    ['x(ab|cd)+y', ['xab', 'xcd']],
    ['(ab|cd)*', null],
    ['abc|d', null],
    ['abc|\\d+', null],
    ['(?=abc)abd', ['abd']],
    ['(?:a[bc]d|efg)hij', ['hij']],
    ['colou?r|gray', ['colo', 'gray']],
    ['a(b|c)?|grey', null],
    ['colour|grey', ['colour', 'grey']],
    ['\\.(js|ts)x?$', ['.js', '.ts']],
  ] as Array<[string, string[] | null]>)('%s → %j', (source, expected) => {
    new RegExp(source, 'u'); // every case compiles
    expect(requiredLiteralSet(source, 'u')).toEqual(expected);
  });

  it('starts a new run where the product of alternatives would pass 16 strings', () => {
    const set = requiredLiteralSet('(a|b)(c|d)(e|f)(g|h)(i|j)', 'u');
    expect(set).toHaveLength(16);
    expect(set!.every((s) => /^[ab][cd][ef][gh]$/.test(s))).toBe(true);
  });

  it('gives up for case-insensitive and v-mode expressions', () => {
    expect(requiredLiteralSet('abc|def', 'iu')).toBeNull();
    expect(requiredLiteralSet('abc|def', 'v')).toBeNull();
  });

  /** Random expressions over a small alphabet, with groups of literal alternatives where the set extends runs. */
  const atom = fc.oneof(
    { arbitrary: fc.constantFrom('a', 'b', 'c', 'ab', 'abc', 'bca', '\\.', '1'), weight: 3 },
    fc.constantFrom('.', '\\d', '\\w', '[ab]', '[^a]', '^', '$', '\\b'),
    fc.constantFrom(
      '(a|b)',
      '(ab|ca)',
      '(?:abc|b)',
      '(?<n>ca|ab|)',
      '(?:a|b|c|ab|ba)',
      '(a\\.|b)',
      '(a|[bc])',
      '(abc)?',
      '(?=a)',
      '(?!b)',
      '(?<=a)',
      'c{2}',
      'a{0,2}',
      'b{1,}',
    ),
  );
  const quant = fc.constantFrom('', '', '', '', '?', '*', '+', '{2}', '{0,1}', '??', '+?');
  const branch = fc
    .array(fc.tuple(atom, quant), { minLength: 1, maxLength: 8 })
    .map((parts) => parts.map(([a, q]) => a + q).join(''));
  const expr = fc.array(branch, { minLength: 1, maxLength: 3 }).map((bs) => bs.join('|'));
  const line = fc.array(fc.constantFrom('a', 'b', 'c', '.', '1', ' '), { maxLength: 16 }).map((a) => a.join(''));
  /** Lines built from pieces of the expressions' literals too, so that many texts hold matching lines. */
  const richLine = fc
    .array(fc.constantFrom('a', 'b', 'c', '.', '1', ' ', 'ab', 'abc', 'ca', 'bca', 'a.', 'cc', 'ba'), { maxLength: 10 })
    .map((a) => a.join(''));

  it('every matched line contains one string of the set (property)', () => {
    let proven = 0;
    fc.assert(
      fc.property(expr, fc.array(fc.oneof(line, richLine), { minLength: 1, maxLength: 30 }), (source, lines) => {
        let re: RegExp;
        try {
          re = new RegExp(source, 'u');
        } catch {
          return; // not a valid expression: search refuses it before any prefilter
        }
        const set = requiredLiteralSet(source, 'u');
        if (set === null) return;
        proven++;
        expect(set.length).toBeGreaterThan(0);
        for (const s of set) expect([...s].length).toBeGreaterThanOrEqual(3);
        for (const l of lines) if (re.test(l)) expect(set.some((s) => l.includes(s))).toBe(true);
      }),
      { numRuns: 4000 },
    );
    expect(proven).toBeGreaterThan(100); // the property is not vacuous
  });

  it('matching with the set gives the same lines as matching every line (differential)', () => {
    let withHits = 0;
    fc.assert(
      fc.property(expr, fc.array(richLine, { minLength: 1, maxLength: 40 }), fc.boolean(), (source, lines, crlf) => {
        let re: RegExp;
        try {
          re = new RegExp(source, 'u');
        } catch {
          return;
        }
        const set = requiredLiteralSet(source, 'u');
        if (set === null) return;
        const text = lines.join(crlf ? '\r\n' : '\n');
        const all = matchLines(re, text);
        if (all.length > 0) withHits++;
        expect(matchLines(re, text, set)).toEqual(all);
        // The reader threads' verdict on the file: the set's file test never drops a file with a matching line.
        const options = {
          roots: [],
          maxFileBytes: 1e6,
          keepMaxBytes: 1e6,
          needle: null,
          match: { source, flags: 'u', bounded: false },
        };
        const without = matched(Buffer.from(text), options, new CompiledRegexes());
        const withSet = matched(
          Buffer.from(text),
          { ...options, anyOf: set.map((s) => Buffer.from(s)) },
          new CompiledRegexes(),
        );
        expect(withSet).toEqual(without);
      }),
      { numRuns: 3000 },
    );
    expect(withHits).toBeGreaterThan(15); // texts with matching lines, not only files the set rules out
  });
});

describe('the required set of a compiled query', () => {
  it('is there for a regular expression with literal alternatives, not for a literal query or a single needle', () => {
    const strings = (bs: readonly Buffer[] | null) => bs?.map((b) => b.toString('utf8')) ?? null;
    expect(strings(createLineMatcher('\\bTODO\\((alice|bob)\\):', { regex: true, caseSensitive: true }).anyOf)).toEqual(
      ['TODO(alice):', 'TODO(bob):'],
    );
    expect(strings(createLineMatcher('foo|barbaz', { regex: true, caseSensitive: true }).anyOf)).toEqual([
      'barbaz',
      'foo',
    ]);
    expect(createLineMatcher('foo|barbaz', { regex: true, caseSensitive: false }).anyOf).toBeNull();
    expect(createLineMatcher('TODO\\(\\w+\\)', { regex: true, caseSensitive: true }).anyOf).toBeNull();
    expect(createLineMatcher('a|b', { regex: false, caseSensitive: true }).anyOf).toBeNull();
  });
});
