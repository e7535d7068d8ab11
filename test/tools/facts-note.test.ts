/**
 * read_file's facts line (issue #15; src/tools/read-file.ts factsNote): every fact the next call needs, and the
 * defaults left out — the byte range only when the read was cut or is base64, eol only when not lf/none, bom only
 * when present.
 */
import { describe, expect, it } from 'vitest';
import { compactRead, factsNote } from '../../src/tools/read-file.js';
import type { ReadFacts } from '../../src/tools/read-one.js';

const HASH = `sha256:${'a'.repeat(64)}`;
const base: ReadFacts = {
  path: '/r/a.txt',
  requested: '/r/a.txt',
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
  by_offset: false,
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

  it('a read from a byte offset: the byte range', () => {
    const tail = { ...base, range: { start_line: 3, end_line: 5, start_byte: 6, end_byte: 10 }, by_offset: true };
    expect(factsNote(tail)).toBe(`[fs-tools: content_hash ${HASH}; lines 3-5 of 5; bytes 6-10 of 10]`);
  });
});

/** The structured result (issue #15): a field at its default is left out, and its absence means that default. */
describe('compactRead', () => {
  it('a whole lf utf8 file read by its real path: content, content_hash, size and total_lines only', () => {
    expect(compactRead(base)).toEqual({ content: 'x\n', content_hash: HASH, size: 10, total_lines: 5 });
  });

  it('names the real path only when a link was followed', () => {
    expect(compactRead({ ...base, requested: '/r/link.txt' }).path).toBe('/r/a.txt');
  });

  it('every non-default fact is present: encoding, eol, bom', () => {
    expect(compactRead({ ...base, encoding: 'base64', eol: 'crlf', bom: true })).toMatchObject({
      encoding: 'base64',
      eol: 'crlf',
      bom: true,
    });
    expect(compactRead({ ...base, eol: 'none' }).eol).toBe('none');
    expect(compactRead({ ...base, eol: 'mixed' }).eol).toBe('mixed');
  });

  it('a part of the file: its lines; its bytes only when they matter (base64 here)', () => {
    const part = { ...base, range: { start_line: 2, end_line: 3, start_byte: 2, end_byte: 6 } };
    expect(compactRead(part).range).toEqual({ start_line: 2, end_line: 3 });
    expect(compactRead({ ...part, encoding: 'base64' }).range).toEqual({
      start_line: 2,
      end_line: 3,
      start_byte: 2,
      end_byte: 6,
    });
  });

  it('a cut read: the range with bytes, truncated and the continuation', () => {
    const cut = compactRead({
      ...base,
      range: { start_line: 1, end_line: 2, start_byte: 0, end_byte: 4 },
      truncated: true,
      continuation: { start_line: 3, offset: 4, cut_mid_line: false },
    });
    expect(cut).toMatchObject({
      range: { start_line: 1, end_line: 2, start_byte: 0, end_byte: 4 },
      truncated: true,
      continuation: { start_line: 3, offset: 4, cut_mid_line: false },
    });
  });

  it('no truncated or continuation when not cut', () => {
    const r = compactRead({ ...base, continuation: { start_line: 6, offset: 10, cut_mid_line: false } });
    expect(r).not.toHaveProperty('truncated');
    expect(r).not.toHaveProperty('continuation');
    expect(r).not.toHaveProperty('range');
  });
});
