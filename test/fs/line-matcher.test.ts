/**
 * Line matching for content search (src/fs/line-matcher.ts), in-process. The regular-expression worker pool runs the
 * worker embedded in dist/cli.js and is exercised by the search e2e tests; here, the parts that run in this thread. Pins:
 *  - a literal query matches per line (0-based line, UTF-16 column of the first match; a final \r is not part of
 *    the line), case-insensitively when asked, and its prefilter needle is the query's UTF-8 bytes only when
 *    case-sensitive; regex metacharacters in a literal are literal;
 *  - a regular expression that does not compile is VALIDATION invalid_regex; a compiled one carries a needle only
 *    when a literal is provable;
 *  - matcherSpec gives the source and flags a reader thread compiles, bounded for user regular expressions only;
 *  - matchLines given a literal every matching line contains (issue #19: only lines holding it are tested) gives
 *    exactly the hits of testing every line (property test over texts built from lines with and without it, CRLF,
 *    empty lines, astral characters), and a literal absent from the text gives none;
 *  - regexTimeoutError is VALIDATION regex_timeout with the timeout;
 *  - a literal replace inserts the replacement as typed, per line, and builds nothing past maxChars;
 *  - the reader pool's regular-expression jobs (the worker's code bundled from src/, as dist/cli.js embeds it) match and replace in order, expands `$1`/`$&`,
 *    stops a catastrophic expression at the per-file limit with regex_timeout and answers the next job with a fresh
 *    worker.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { workerCode } from '../helpers/worker-code.js';
import { createLineMatcher, matcherSpec } from '../../src/fs/line-matcher.js';
import { matchLines } from '../../src/fs/match-lines.js';
import { requiredLiteral } from '../../src/fs/required-literal.js';
import { REGEX_FILE_TIMEOUT_MS, regexTimeoutError, SearchReaderPool } from '../../src/fs/search-reader.js';

/** The bundled reader worker, which runs regular-expression jobs too (built from src/ as dist/cli.js embeds it). */
const BUILT_WORKER = await workerCode('search-reader-worker');

describe('createLineMatcher (literal queries)', () => {
  it('matches per line with the first column, a final \\r removed', async () => {
    const m = createLineMatcher('a.b', { regex: false, caseSensitive: true });
    expect(await m.match('xa.b\naxb\r\n  a.b a.b\r\nA.B')).toEqual([
      [0, 1],
      [2, 2],
    ]);
    expect(m.needle?.toString()).toBe('a.b');
  });

  it('case-insensitive: matches across case and has no needle', async () => {
    const m = createLineMatcher('Straße', { regex: false, caseSensitive: false });
    expect(await m.match('STRASSE\nstraße\nSTRAßE')).toEqual([
      [1, 0],
      [2, 0],
    ]);
    expect(m.needle).toBeNull();
  });
});

describe('createLineMatcher (regular expressions)', () => {
  it('refuses a pattern that does not compile', () => {
    expect(() => createLineMatcher('(a', { regex: true, caseSensitive: true })).toThrow(
      expect.objectContaining({ code: 'VALIDATION', details: { reason: 'invalid_regex', field: 'query' } }),
    );
  });

  it('carries a needle only when a literal is provable', () => {
    expect(createLineMatcher('foo\\d+bar', { regex: true, caseSensitive: true }).needle?.toString()).toBe('foo');
    expect(createLineMatcher('a|b', { regex: true, caseSensitive: true }).needle).toBeNull();
    expect(createLineMatcher('needle', { regex: true, caseSensitive: false }).needle).toBeNull();
  });
});

describe('matcherSpec, matchLines, regexTimeoutError', () => {
  it('gives the escaped literal or the user pattern, with flags, bounded for regular expressions only', () => {
    expect(matcherSpec('a+b', { regex: false, caseSensitive: true })).toEqual({
      source: 'a\\+b',
      flags: 'u',
      bounded: false,
    });
    expect(matcherSpec('a+b', { regex: true, caseSensitive: false })).toEqual({
      source: 'a+b',
      flags: 'iu',
      bounded: true,
    });
  });

  it('matchLines tests each line once, an empty last line included', () => {
    expect(matchLines(/^$/u, 'x\n\ny\n')).toEqual([
      [1, 0],
      [3, 0],
    ]);
  });

  it('matchLines with a required literal tests only the lines holding it, with the same hits', () => {
    const piece = fc.constantFrom(
      'TODO(',
      'TODO(alice):',
      'TODO(bob):',
      ' x',
      'TO',
      'DO(',
      '\r',
      '\n',
      '\r\n',
      '😀',
      'é',
      '',
    );
    const text = fc.array(piece, { maxLength: 40 }).map((parts) => parts.join(''));
    const patterns = ['\\bTODO\\((alice|bob)\\):', 'TODO\\(', 'TODO\\(.*$', '^.{0,3}TODO\\(', 'TODO\\(\\r'];
    for (const source of patterns) {
      const re = new RegExp(source, 'u');
      const literal = requiredLiteral(source, 'u');
      expect(literal).toBe('TODO(');
      fc.assert(
        fc.property(text, (t) => {
          expect(matchLines(re, t, literal)).toEqual(matchLines(re, t));
        }),
        { numRuns: 300 },
      );
    }
    // A case-sensitive literal query: its own text is the literal.
    const lit = /a\.b/u;
    expect(matchLines(lit, 'x\na.b a.b\r\naxb\n\na.b', 'a.b')).toEqual([
      [1, 0],
      [4, 0],
    ]);
    expect(matchLines(lit, 'no such text\n', 'a.b')).toEqual([]);
  });

  it('regexTimeoutError names the reason and the timeout', () => {
    expect(regexTimeoutError()).toMatchObject({
      code: 'VALIDATION',
      details: { reason: 'regex_timeout', field: 'query', timeout_ms: REGEX_FILE_TIMEOUT_MS },
    });
  });
});

describe('replace (literal, in this thread)', () => {
  it('inserts the replacement as typed on every matching line and counts each match', async () => {
    const m = createLineMatcher('a.b', { regex: false, caseSensitive: true });
    expect(await m.replace('a.b x a.b\naxb\r\na.b', '$1', 1000, 3)).toEqual({ text: '$1 x $1\naxb\r\n$1', count: 3 });
  });

  it('builds nothing past maxChars: the input comes back marked tooLarge', async () => {
    const m = createLineMatcher('a', { regex: false, caseSensitive: true });
    const r = await m.replace('aaaa', 'x'.repeat(100), 50, 1000);
    expect(r.tooLarge).toBe(true);
    expect(r.text).toBe('aaaa');
  });

  it('builds nothing past maxCount matches: the input comes back marked tooMany, count 0', async () => {
    const m = createLineMatcher('a', { regex: false, caseSensitive: true });
    expect(await m.replace('aa\na', 'b', 1000, 2)).toEqual({ text: 'aa\na', count: 0, tooMany: true });
  });
});

describe('regular-expression jobs on the reader pool (the built worker)', () => {
  it('matches and replaces in order, with $1 and $& expanded', async () => {
    const pool = new SearchReaderPool(2, BUILT_WORKER);
    const [hits, replaced] = await Promise.all([
      pool.regexLines('b(\\d)', 'u', 'ab1\nno\nb2'),
      pool.regexReplace('b(\\d)', 'u', 'ab1\nno\nb2', { replacement: '[$1|$&]', maxChars: 1000, maxCount: 2 }),
    ]);
    expect(hits).toEqual([
      [0, 1],
      [2, 0],
    ]);
    expect(replaced).toEqual({ text: 'a[1|b1]\nno\n[2|b2]', count: 2 });
    const big = await pool.regexReplace('a', 'u', 'aaaa', { replacement: 'x'.repeat(100), maxChars: 50, maxCount: 10 });
    expect(big.tooLarge).toBe(true);
    const many = await pool.regexReplace('a', 'u', 'aa\na', { replacement: 'b', maxChars: 1000, maxCount: 2 });
    expect(many).toEqual({ text: 'aa\na', count: 0, tooMany: true });
  });

  it('stops a catastrophic expression at the per-file limit, then serves the next job', async () => {
    const pool = new SearchReaderPool(1, BUILT_WORKER);
    await expect(pool.regexLines('^(a+)+$', 'u', `${'a'.repeat(40)}b`)).rejects.toMatchObject({
      code: 'VALIDATION',
      details: { reason: 'regex_timeout' },
    });
    expect(await pool.regexLines('b', 'u', 'ab')).toEqual([[0, 1]]);
  }, 20_000);

  it('a build without the worker (src/ alone) fails each job instead of loading a file', async () => {
    await expect(new SearchReaderPool(1, null).regexLines('b', 'u', 'ab')).rejects.toThrow(/embeds no regex worker/);
  });
});
