/**
 * Text facts shared by every tool that reads or rewrites text (docs/tools.md): line-ending style, UTF-8 BOM,
 * binary detection. Pure functions over bytes.
 */
import { isUtf8 } from 'node:buffer';

/** Line-ending style of a file: only LF, only CRLF, both, or no line ending at all. */
export type Eol = 'lf' | 'crlf' | 'mixed' | 'none';

/** The style from counts of CRLF and bare LF terminators. */
export function eolFromCounts(crlf: number, lf: number): Eol {
  if (crlf === 0 && lf === 0) return 'none';
  if (crlf > 0 && lf > 0) return 'mixed';
  return crlf > 0 ? 'crlf' : 'lf';
}

/** True when the bytes start with the UTF-8 byte-order mark EF BB BF. */
export function hasUtf8Bom(bytes: Uint8Array): boolean {
  return bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
}

/**
 * True when a sample looks binary, as git and ripgrep judge it: a NUL byte, or bytes that are not UTF-8.
 * `sample` may end mid-character (it is a prefix of the file); the last 3 bytes are given the benefit of the doubt.
 */
export function looksBinary(sample: Uint8Array, isWholeFile: boolean): boolean {
  if (sample.indexOf(0) !== -1) return true;
  if (isUtf8(sample)) return false;
  if (isWholeFile) return true;
  for (let cut = 1; cut <= 3 && cut < sample.length; cut++) {
    if (isUtf8(sample.subarray(0, sample.length - cut))) return false;
  }
  return true;
}
