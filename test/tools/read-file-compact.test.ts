/**
 * compactRead (src/tools/read-file.ts): read_file's wire result, built field by field since issue #19, is the same
 * object — same keys, same order, same values, so the same JSON bytes — as the spread form it replaced, for any read
 * facts (link followed or not, base64, whole or a range, truncated with or without a continuation, any eol, bom).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compactRead } from '../../src/tools/read-file.js';
import type { ReadFacts } from '../../src/tools/read-one.js';

/** The spread form compactRead had before issue #19 (the reference). */
function spreadForm(f: ReadFacts): unknown {
  const bytesMatter = f.truncated || f.encoding === 'base64' || f.by_offset;
  const whole = f.range.start_byte === 0 && f.range.end_byte === f.size && !f.truncated;
  return {
    ...(f.path !== f.requested ? { path: f.path } : {}),
    content: f.content,
    ...(f.encoding === 'base64' ? { encoding: 'base64' as const } : {}),
    content_hash: f.content_hash,
    size: f.size,
    total_lines: f.total_lines,
    ...(whole
      ? {}
      : {
          range: {
            start_line: f.range.start_line,
            end_line: f.range.end_line,
            ...(bytesMatter ? { start_byte: f.range.start_byte, end_byte: f.range.end_byte } : {}),
          },
        }),
    ...(f.truncated ? { truncated: true } : {}),
    ...(f.truncated && f.continuation ? { continuation: f.continuation } : {}),
    ...(f.eol !== 'lf' ? { eol: f.eol } : {}),
    ...(f.bom ? { bom: true } : {}),
  };
}

const facts: fc.Arbitrary<ReadFacts> = fc.record({
  path: fc.constantFrom('/r/a.txt', '/r/b.txt'),
  requested: fc.constantFrom('/r/a.txt', '/r/link'),
  content: fc.string({ maxLength: 20 }),
  encoding: fc.constantFrom('utf8' as const, 'base64' as const),
  content_hash: fc.constant('sha256:00'),
  size: fc.integer({ min: 0, max: 50 }),
  total_lines: fc.integer({ min: 0, max: 9 }),
  range: fc.record({
    start_line: fc.integer({ min: 1, max: 9 }),
    end_line: fc.integer({ min: 0, max: 9 }),
    start_byte: fc.integer({ min: 0, max: 50 }),
    end_byte: fc.integer({ min: 0, max: 50 }),
  }),
  truncated: fc.boolean(),
  continuation: fc.option(fc.record({ start_line: fc.nat(9), offset: fc.nat(50), cut_mid_line: fc.boolean() }), {
    nil: null,
  }),
  eol: fc.constantFrom('lf' as const, 'crlf' as const, 'mixed' as const, 'none' as const),
  bom: fc.boolean(),
  by_offset: fc.boolean(),
});

describe('compactRead', () => {
  it('gives the spread form, key order included, for any facts', () => {
    fc.assert(
      fc.property(facts, (f) => {
        const built = compactRead(f);
        expect(built).toEqual(spreadForm(f));
        expect(JSON.stringify(built)).toBe(JSON.stringify(spreadForm(f)));
      }),
      { numRuns: 500 },
    );
  });

  it('leaves every default out of a whole plain read', () => {
    const f: ReadFacts = {
      path: '/r/a.txt',
      requested: '/r/a.txt',
      content: 'x\n',
      encoding: 'utf8',
      content_hash: 'sha256:00',
      size: 2,
      total_lines: 1,
      range: { start_line: 1, end_line: 1, start_byte: 0, end_byte: 2 },
      truncated: false,
      continuation: null,
      eol: 'lf',
      bom: false,
      by_offset: false,
    };
    expect(Object.keys(compactRead(f))).toEqual(['content', 'content_hash', 'size', 'total_lines']);
  });
});
