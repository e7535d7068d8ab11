/**
 * Line matching for content search (src/fs/line-matcher.ts), in-process. The regular-expression worker pool runs the
 * bundled dist/regex-worker.js and is exercised by the search e2e tests; here, the parts that run in this thread. Pins:
 *  - a literal query matches per line (0-based line, UTF-16 column of the first match; a final \r is not part of
 *    the line), case-insensitively when asked, and its prefilter needle is the query's UTF-8 bytes only when
 *    case-sensitive; regex metacharacters in a literal are literal;
 *  - a regular expression that does not compile is VALIDATION invalid_regex; a compiled one carries a needle only
 *    when a literal is provable;
 *  - matcherSpec gives the source and flags a reader thread compiles, bounded for user regular expressions only;
 *  - regexTimeoutError is VALIDATION regex_timeout with the timeout.
 */
import { describe, expect, it } from 'vitest';
import {
  createLineMatcher,
  matcherSpec,
  matchLines,
  REGEX_FILE_TIMEOUT_MS,
  regexTimeoutError,
} from '../../src/fs/line-matcher.js';

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

  it('regexTimeoutError names the reason and the timeout', () => {
    expect(regexTimeoutError()).toMatchObject({
      code: 'VALIDATION',
      details: { reason: 'regex_timeout', field: 'query', timeout_ms: REGEX_FILE_TIMEOUT_MS },
    });
  });
});
