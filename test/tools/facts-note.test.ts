/**
 * read_file's facts line (issue #15; src/tools/read-file.ts factsNote): every fact the next call needs, and the
 * defaults left out — the byte range only when the read was cut or is base64, eol only when not lf/none, bom only
 * when present.
 */
import { describe, expect, it } from 'vitest';
import { factsNote, type ReadResult } from '../../src/tools/read-file.js';

const HASH = `sha256:${'a'.repeat(64)}`;
const base: ReadResult = {
  path: '/r/a.txt',
  content: 'x\n',
  encoding: 'utf8',
  content_hash: HASH,
  size: 10,
  total_lines: 5,
  range: { start_line: 1, end_line: 5, start_byte: 0, end_byte: 10 },
  truncated: false,
  continuation: null,
  eol: 'lf',
  bom: false,
};

describe('factsNote', () => {
  it('a whole lf file: the hash and the lines, nothing else', () => {
    expect(factsNote(base)).toBe(`[fs-tools: content_hash ${HASH}; lines 1-5 of 5]`);
  });

  it('names eol when not lf (crlf, mixed) and a bom; not for none', () => {
    expect(factsNote({ ...base, eol: 'crlf', bom: true })).toBe(
      `[fs-tools: content_hash ${HASH}; lines 1-5 of 5; eol crlf; bom]`,
    );
    expect(factsNote({ ...base, eol: 'mixed' })).toContain('; eol mixed');
    expect(factsNote({ ...base, eol: 'none' })).not.toContain('eol');
  });

  it('a cut read: the byte range and where to continue (line, or offset when cut mid-line)', () => {
    const cut = {
      ...base,
      range: { start_line: 1, end_line: 2, start_byte: 0, end_byte: 4 },
      truncated: true,
      continuation: { start_line: 3, offset: 4, cut_mid_line: false },
    };
    expect(factsNote(cut)).toBe(
      `[fs-tools: content_hash ${HASH}; lines 1-2 of 5; bytes 0-4 of 10; truncated, continue with start_line: 3]`,
    );
    expect(factsNote({ ...cut, continuation: { start_line: 2, offset: 3, cut_mid_line: true } })).toContain(
      'continue with offset: 3',
    );
  });

  it('base64: the byte range and the encoding', () => {
    expect(factsNote({ ...base, encoding: 'base64' })).toBe(
      `[fs-tools: content_hash ${HASH}; lines 1-5 of 5; bytes 0-10 of 10; base64]`,
    );
  });
});
