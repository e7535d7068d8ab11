/**
 * Issue #14, the response budget's arithmetic and the final guard (src/tools/response-budget.ts):
 * - jsonStringBytes is exactly the UTF-8 length of JSON.stringify (without quotes) for ANY string — control
 *   characters, quotes, backslashes, astral characters and lone surrogates included (property test);
 * - prefixWithinJsonBytes returns the longest whole-character prefix within the limit;
 * - jsonBytesBound (issue #19: the guard's cheap first look) never undercounts jsonBytes, for any JSON value and for
 *   Dates (toJSON) and undefined members, and a result just under the limit by the bound's reckoning but over it
 *   when serialized is still caught;
 * - the guard passes a result within RESPONSE_LIMIT_BYTES unchanged and turns a larger one into a VALIDATION
 *   envelope (reason response_too_large) that itself fits, saying when a mutation was applied.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  guardResponse,
  jsonBytes,
  jsonBytesBound,
  jsonStringBytes,
  prefixWithinJsonBytes,
  RESPONSE_LIMIT_BYTES,
  ResponseBudget,
  TOOL_BUDGET_BYTES,
} from '../../src/tools/response-budget.js';

/** Any UTF-16 code unit, lone surrogates included, with the troublesome ones over-represented. */
const unit = fc.oneof(
  fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  fc.constantFrom(
    '\u0000',
    '\n',
    '\r',
    '\t',
    '"',
    '\\',
    '\u001b',
    '\u007f',
    '\u2028',
    '\ud83d',
    '\ude00',
    '😀',
    'é',
    '€',
  ),
);
const anyString = fc.array(unit, { maxLength: 60 }).map((a) => a.join(''));

describe('serialized sizes', () => {
  it('jsonStringBytes equals the UTF-8 length of JSON.stringify minus the quotes, for any string', () => {
    fc.assert(
      fc.property(anyString, (s) => {
        expect(jsonStringBytes(s)).toBe(Buffer.byteLength(JSON.stringify(s), 'utf8') - 2);
      }),
      { numRuns: 2000 },
    );
  });

  it('a NUL costs six bytes, a newline two, a quote two, an astral character four', () => {
    expect(jsonStringBytes('\u0000')).toBe(6);
    expect(jsonStringBytes('\n')).toBe(2);
    expect(jsonStringBytes('"')).toBe(2);
    expect(jsonStringBytes('😀')).toBe(4);
    expect(jsonStringBytes('\ud83d')).toBe(6);
  });

  it('prefixWithinJsonBytes: the longest whole-character prefix within the limit', () => {
    fc.assert(
      fc.property(anyString, fc.integer({ min: 0, max: 200 }), (s, max) => {
        const p = prefixWithinJsonBytes(s, max);
        expect(s.startsWith(p)).toBe(true);
        expect(jsonStringBytes(p)).toBeLessThanOrEqual(max);
        if (p.length < s.length) {
          const pair = /^[\ud800-\udbff][\udc00-\udfff]/.test(s.slice(p.length)) ? 2 : 1;
          expect(jsonStringBytes(s.slice(0, p.length + pair))).toBeGreaterThan(max);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('jsonBytesBound is never below jsonBytes, for any JSON value, Dates and undefined members', () => {
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(
        anyString,
        fc.double(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.date({ noInvalidDate: true }),
      ),
      node: fc.oneof(
        { depthSize: 'small' },
        tie('leaf'),
        fc.array(tie('node'), { maxLength: 5 }),
        fc.dictionary(anyString, fc.oneof(tie('node'), fc.constant(undefined)), { maxKeys: 5 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(jsonBytesBound(v)).toBeGreaterThanOrEqual(jsonBytes(v));
      }),
      { numRuns: 2000 },
    );
    // The longest spellings of a number: the exponent form, and the fixed form just above 1e-6 (CI's counterexample).
    for (const n of [-1.2345678901234567e-308, -0.0000010813526559002152, -0.0000012345678901234567, -1e21 + 1]) {
      expect(jsonBytesBound(n)).toBeGreaterThanOrEqual(jsonBytes(n));
    }
    expect(jsonBytes(-0.0000010813526559002152)).toBe(25);
    // Deeper than the estimate goes: the rest is measured exactly.
    let deep: unknown = 'x';
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(jsonBytesBound(deep)).toBeGreaterThanOrEqual(jsonBytes(deep));
    expect(jsonBytesBound(deep)).toBeLessThan(jsonBytes(deep) + 3 * 64);
  });

  it('the budget charges what fits and refuses what does not', () => {
    const b = new ResponseBudget(100);
    expect(b.take(60)).toBe(true);
    expect(b.take(50)).toBe(false);
    expect(b.remaining).toBe(40);
    b.charge(50);
    expect(b.remaining).toBe(0);
    expect(TOOL_BUDGET_BYTES).toBeLessThan(RESPONSE_LIMIT_BYTES);
    expect(RESPONSE_LIMIT_BYTES).toBeLessThanOrEqual((10 * 1024 * 1024) / 2);
  });
});

describe('the final guard', () => {
  it('passes a result within the limit through unchanged', () => {
    const result = { content: [{ type: 'text', text: 'x'.repeat(1000) }], structuredContent: { a: 1 } };
    expect(guardResponse(result, 'read_file', false)).toBe(result);
  });

  it('turns an oversized result into a VALIDATION envelope that fits', () => {
    const text = '\u0000'.repeat(RESPONSE_LIMIT_BYTES / 6 + 10); // under the limit raw, over it escaped
    const out = guardResponse({ content: [{ type: 'text', text }] }, 'read_files', false);
    expect((out as { isError?: boolean }).isError).toBe(true);
    expect(jsonBytes(out)).toBeLessThan(4096);
    const envelope = JSON.parse((out.content[0] as { text: string }).text);
    expect(envelope.error).toMatchObject({
      code: 'VALIDATION',
      retryable: false,
      recovery: 'fix_arguments',
      details: { reason: 'response_too_large', limit: RESPONSE_LIMIT_BYTES },
    });
    expect(envelope.error.details.bytes).toBeGreaterThan(RESPONSE_LIMIT_BYTES);
  });

  it('measures exactly a result the bound cannot clear: over the limit only when serialized is caught, under it passes', () => {
    // Plain ASCII: the bound (6 per character) is over the limit, the real size just over / just under it.
    const over = { content: [{ type: 'text', text: 'z'.repeat(RESPONSE_LIMIT_BYTES) }] };
    expect(jsonBytesBound(over)).toBeGreaterThan(RESPONSE_LIMIT_BYTES);
    expect((guardResponse(over, 'read_file', false) as { isError?: boolean }).isError).toBe(true);
    const under = { content: [{ type: 'text', text: 'z'.repeat(RESPONSE_LIMIT_BYTES - 100) }] };
    expect(jsonBytesBound(under)).toBeGreaterThan(RESPONSE_LIMIT_BYTES);
    expect(guardResponse(under, 'read_file', false)).toBe(under);
  });

  it('says a mutation was applied (check_already_applied)', () => {
    const out = guardResponse(
      { content: [{ type: 'text', text: 'y'.repeat(RESPONSE_LIMIT_BYTES + 1) }] },
      'edit_file',
      true,
    );
    const envelope = JSON.parse((out.content[0] as { text: string }).text);
    expect(envelope.error.recovery).toBe('check_already_applied');
    expect(envelope.error.message).toContain('was applied');
  });
});
