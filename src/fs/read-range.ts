/**
 * Bounded-memory reads of a line or byte range (SPEC §6.1), with the whole-file facts every read reports (SPEC §5):
 * one streaming pass over the file computes the content hash, the line count, the EOL style, the BOM and UTF-8
 * validity, and finds the byte offsets of the requested lines; then only the range (at most `maxBytes`) is read.
 * Memory is one chunk plus the returned range, whatever the file size. Ranges are exact: a range holds the bytes of
 * its lines including their terminators, so consecutive ranges concatenate to the file; a cut never splits a UTF-8
 * character (line ends are `\n` bytes, which never occur inside a multi-byte character).
 */
import { isUtf8 } from 'node:buffer';
import type { FileHandle } from 'node:fs/promises';
import { ToolError } from '../errors/tool-error.js';
import { createContentHasher } from './hash.js';
import { type Eol, eolFromCounts, hasUtf8Bom } from './text.js';

const CHUNK_BYTES = 1024 * 1024;

/** Which part of the file to return. Lines are numbered from 1; `end_line` is inclusive. */
export type RangeRequest =
  | { kind: 'lines'; startLine: number; endLine: number | null }
  | { kind: 'head'; lines: number }
  | { kind: 'tail'; lines: number }
  | { kind: 'bytes'; offset: number };

/** The facts of one read. Byte offsets are 0-based, end exclusive. */
export interface RangeResult {
  contentHash: string;
  size: number;
  totalLines: number;
  eol: Eol;
  bom: boolean;
  validUtf8: boolean;
  /** The returned bytes. */
  bytes: Buffer;
  startByte: number;
  endByte: number;
  /** Line number of the first returned byte (1-based); for an empty range, the line where it starts. */
  startLine: number;
  /** Line number of the last returned byte's line (inclusive); startLine - 1 for an empty range. */
  endLine: number;
  /** True when the range was cut by `maxBytes`. */
  truncated: boolean;
  /** Where to continue when truncated: the next unread byte and the line it lies on. */
  continuation: { start_line: number; offset: number; cut_mid_line: boolean } | null;
}

/** Options of `readRange`. */
export interface ReadRangeOptions {
  maxBytes: number;
  /** Cut only on UTF-8 character boundaries (true for text; false for base64 byte reads). */
  textBoundaries: boolean;
}

/**
 * Reads a range of an open regular file.
 * @throws ToolError VALIDATION (reason `range_past_end`) when the range starts past the end of the file
 */
export async function readRange(handle: FileHandle, request: RangeRequest, options: ReadRangeOptions): Promise<RangeResult> {
  const scan = await scanFile(handle, request);
  let startByte: number;
  let endByte: number;
  let startLine: number;
  if (request.kind === 'tail') {
    startByte = await findTailStart(handle, scan.size, scan.endsWithNewline, request.lines);
    endByte = scan.size;
    startLine = Math.max(1, scan.totalLines - request.lines + 1);
    if (scan.size === 0) startLine = 1;
  } else if (request.kind === 'bytes') {
    if (request.offset > scan.size) throw pastEnd(`offset ${request.offset}`, scan);
    if (options.textBoundaries && scan.validUtf8) await assertCharacterBoundary(handle, request.offset, scan.size);
    startByte = request.offset;
    endByte = scan.size;
    startLine = scan.lineAtOffset;
  } else {
    const first = request.kind === 'lines' ? request.startLine : 1;
    if (first > Math.max(scan.totalLines, 1)) throw pastEnd(`start_line ${first}`, scan);
    startByte = scan.rangeStart ?? scan.size;
    endByte = scan.rangeEnd ?? scan.size;
    startLine = first;
  }

  let truncated = false;
  let cutMidLine = false;
  let readEnd = endByte;
  if (endByte - startByte > options.maxBytes) {
    truncated = true;
    readEnd = startByte + options.maxBytes;
  }
  const bytes = Buffer.alloc(readEnd - startByte);
  if (bytes.length > 0) await readFully(handle, bytes, startByte);
  let content = bytes;
  if (truncated) {
    const lastNl = bytes.lastIndexOf(0x0a);
    if (lastNl >= 0 && request.kind !== 'bytes') {
      content = bytes.subarray(0, lastNl + 1);
    } else {
      // One line larger than the cap (or a byte read): cut inside it, never inside a character. A cap smaller than
      // the first character returns that whole character (at most 3 bytes over the cap), so a continuation always
      // makes progress.
      const cut = options.textBoundaries ? utf8Boundary(bytes, bytes.length) : bytes.length;
      content = cut > 0 ? bytes.subarray(0, cut) : await firstCharacter(handle, startByte, endByte);
      cutMidLine = content.length > 0 ? content[content.length - 1] !== 0x0a : true;
    }
  }
  const newlines = countNewlines(content);
  const endsWithNl = content.length > 0 && content[content.length - 1] === 0x0a;
  const endLine = content.length === 0 ? startLine - 1 : startLine + newlines - (endsWithNl ? 1 : 0);
  const nextOffset = startByte + content.length;
  return {
    contentHash: scan.hash,
    size: scan.size,
    totalLines: scan.totalLines,
    eol: eolFromCounts(scan.crlf, scan.lf),
    bom: scan.bom,
    validUtf8: scan.validUtf8,
    bytes: Buffer.from(content),
    startByte,
    endByte: nextOffset,
    startLine,
    endLine,
    truncated,
    continuation: truncated
      ? { start_line: startLine + newlines, offset: nextOffset, cut_mid_line: !endsWithNl }
      : null,
  };
}

/**
 * Text reads start on a character: an offset inside a UTF-8 sequence would return a broken first character.
 * @throws ToolError VALIDATION (reason `offset_splits_character`)
 */
async function assertCharacterBoundary(handle: FileHandle, offset: number, size: number): Promise<void> {
  if (offset >= size) return;
  const byte = Buffer.alloc(1);
  await readFully(handle, byte, offset);
  if ((byte[0] & 0xc0) !== 0x80) return;
  throw new ToolError('VALIDATION', `offset ${offset} is inside a UTF-8 character.`, {
    details: { reason: 'offset_splits_character', field: 'offset' },
    suggestion: 'Pass the offset from a continuation (always a character boundary), use a line range, or read raw bytes '
      + 'with encoding "base64".',
  });
}

function pastEnd(what: string, scan: Scan): ToolError {
  return new ToolError('VALIDATION', `${what} is past the end of the file (${scan.totalLines} lines, ${scan.size} bytes).`, {
    details: { reason: 'range_past_end', total_lines: scan.totalLines, size: scan.size },
    suggestion: `Request a range within lines 1-${Math.max(scan.totalLines, 1)}.`,
  });
}

interface Scan {
  hash: string;
  size: number;
  totalLines: number;
  crlf: number;
  lf: number;
  bom: boolean;
  validUtf8: boolean;
  endsWithNewline: boolean;
  rangeStart: number | null;
  rangeEnd: number | null;
  lineAtOffset: number;
}

/** The streaming pass: hash, lines, EOL counts, UTF-8 validity, and the requested line range's byte offsets. */
async function scanFile(handle: FileHandle, request: RangeRequest): Promise<Scan> {
  const hasher = createContentHasher();
  const buf = Buffer.allocUnsafe(CHUNK_BYTES);
  let pos = 0;
  let newlines = 0;
  let crlf = 0;
  let lf = 0;
  let prevByte = -1;
  let validUtf8 = true;
  let carry: Buffer = Buffer.alloc(0);
  let bom = false;
  // Line range wanted (for lines/head): start after the (S-1)th newline, end after the E-th.
  const startLine = request.kind === 'lines' ? request.startLine : 1;
  const endLine = request.kind === 'lines' ? request.endLine : request.kind === 'head' ? request.lines : null;
  let rangeStart: number | null = startLine === 1 ? 0 : null;
  let rangeEnd: number | null = null;
  const offset = request.kind === 'bytes' ? request.offset : -1;
  let lineAtOffset = 1;
  for (;;) {
    const { bytesRead } = await handle.read(buf, 0, CHUNK_BYTES, pos);
    if (bytesRead === 0) break;
    const chunk = buf.subarray(0, bytesRead);
    hasher.update(chunk);
    if (pos === 0) bom = hasUtf8Bom(chunk);
    if (validUtf8) {
      const joined = carry.length ? Buffer.concat([carry, chunk]) : chunk;
      const boundary = utf8Boundary(joined, joined.length);
      if (!isUtf8(joined.subarray(0, boundary))) validUtf8 = false;
      carry = Buffer.from(joined.subarray(boundary));
    }
    let i = chunk.indexOf(0x0a);
    while (i !== -1) {
      const before = i > 0 ? chunk[i - 1] : prevByte;
      if (before === 0x0d) crlf++;
      else lf++;
      newlines++;
      const absolute = pos + i;
      if (rangeStart === null && newlines === startLine - 1) rangeStart = absolute + 1;
      if (rangeEnd === null && endLine !== null && newlines === endLine) rangeEnd = absolute + 1;
      if (offset >= 0 && absolute < offset) lineAtOffset = newlines + 1;
      i = chunk.indexOf(0x0a, i + 1);
    }
    prevByte = chunk[bytesRead - 1];
    pos += bytesRead;
  }
  if (carry.length > 0) validUtf8 = false;
  const size = pos;
  const endsWithNewline = prevByte === 0x0a;
  const totalLines = size === 0 ? 0 : newlines + (endsWithNewline ? 0 : 1);
  return {
    hash: hasher.digest(), size, totalLines, crlf, lf, bom, validUtf8, endsWithNewline,
    rangeStart, rangeEnd, lineAtOffset,
  };
}

/** Scans backwards for the start of the last `n` lines. */
async function findTailStart(handle: FileHandle, size: number, endsWithNewline: boolean, n: number): Promise<number> {
  if (n <= 0 || size === 0) return size;
  let seen = 0;
  let end = endsWithNewline ? size - 1 : size; // ignore the final terminator
  const buf = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(end, 1)));
  while (end > 0) {
    const start = Math.max(0, end - buf.length);
    const len = end - start;
    await readFully(handle, buf.subarray(0, len), start);
    for (let i = len - 1; i >= 0; i--) {
      if (buf[i] === 0x0a) {
        seen++;
        if (seen === n) return start + i + 1;
      }
    }
    end = start;
  }
  return 0;
}

async function readFully(handle: FileHandle, target: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < target.length) {
    const { bytesRead } = await handle.read(target, done, target.length - done, position + done);
    if (bytesRead === 0) break; // the file shrank under us; return what is there
    done += bytesRead;
  }
}

/** The UTF-8 sequence starting at `start` (1 byte for a byte that cannot start one), not reading past `end`. */
async function firstCharacter(handle: FileHandle, start: number, end: number): Promise<Buffer<ArrayBuffer>> {
  const bytes = Buffer.alloc(Math.min(4, end - start));
  await readFully(handle, bytes, start);
  const lead = bytes[0];
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return bytes.subarray(0, Math.min(need, bytes.length));
}

/**
 * The largest index ≤ `end` that does not split a UTF-8 sequence in `bytes` (looks back at most 3 bytes).
 */
export function utf8Boundary(bytes: Uint8Array, end: number): number {
  let i = end;
  for (let back = 0; back < 4 && i > 0; back++) {
    const b = bytes[i - 1];
    if ((b & 0xc0) === 0x80) { i--; continue; } // continuation byte
    if (b >= 0xc0) {
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
      return end - (i - 1) >= need ? end : i - 1;
    }
    return end; // ASCII
  }
  return end;
}

function countNewlines(bytes: Uint8Array): number {
  let n = 0;
  let i = bytes.indexOf(0x0a);
  while (i !== -1) {
    n++;
    i = bytes.indexOf(0x0a, i + 1);
  }
  return n;
}
