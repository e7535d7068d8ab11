/**
 * Bounded-memory reads of a line or byte range (docs/tools.md), with the whole-file facts every read reports (docs/errors.md "Optimistic concurrency"):
 * one streaming pass over the file computes the content hash, the line count, the EOL style, the BOM and UTF-8
 * validity, and finds the byte offsets of the requested lines; then only the range (at most `maxBytes`) is read.
 * Memory is one chunk plus the returned range, whatever the file size. Ranges are exact: a range holds the bytes of
 * its lines including their terminators, so consecutive ranges concatenate to the file; a cut never splits a UTF-8
 * character (line ends are `\n` bytes, which never occur inside a multi-byte character).
 *
 * Large unchanged files are not scanned again: given the handle's fstat and a ContentFactsCache
 * (src/fs/content-cache.ts), the pass also records a sparse line index, and a later read of the same version of the
 * file takes the whole-file facts from the cache and finds its line range from the nearest index checkpoint (at most
 * 64 KiB read per range end), so its cost no longer depends on the file's size.
 */
import { isUtf8 } from 'node:buffer';
import type { Stats } from 'node:fs';
import { ToolError } from '../errors/tool-error.js';
import {
  CHECKPOINT_BYTES,
  identityOf,
  type ContentFacts,
  type ContentFactsCache,
  type FileFacts,
} from './content-cache.js';
import { checkContentBound, createContentHasher, hashBytes, hashRecentBytes } from './hash.js';
import { inMemoryBytes, type RangeSource } from './range-source.js';
import { type Eol, eolFromCounts, hasUtf8Bom } from './text.js';

// The sources a range is read from: src/fs/range-source.ts (re-exported: part of this module's surface).
export { bytesSource, fdSource, type RangeSource } from './range-source.js';

const CHUNK_BYTES = 1024 * 1024;
/** The first read of a file that reports 0 bytes. */
const SMALL_CHUNK_BYTES = 64 * 1024;
/** First step of the backwards scan of `tail` (grows 4× per step up to CHUNK_BYTES). */
const TAIL_FIRST_STEP_BYTES = 16 * 1024;

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
  /** fstat of `handle` (from the open). Sizes the scan buffer; with `cache`, identifies the file's version. */
  stats?: Stats;
  /** Whole-file facts of unchanged large files (needs `stats`); absent: always scan. */
  cache?: ContentFactsCache;
  /**
   * Most bytes the hashing pass reads past the size fstat reports (a procfs file reports 0 and may never end); past
   * both, VALIDATION file_too_large (src/fs/hash.ts checkContentBound). Default DEFAULT_SCAN_CAP_BYTES.
   */
  maxScanBytes?: number;
}

/** The default `maxScanBytes`: the default --max-edit-bytes (docs/security.md "Bounded work"). */
export const DEFAULT_SCAN_CAP_BYTES = 64 * 1024 * 1024;

/**
 * Reads a range of an open regular file.
 * @throws ToolError VALIDATION (reason `range_past_end`) when the range starts past the end of the file
 */
export async function readRange(
  handle: RangeSource,
  request: RangeRequest,
  options: ReadRangeOptions,
): Promise<RangeResult> {
  let current = options;
  for (let attempt = 1; ; attempt++) {
    const result = await readRangeOnce(handle, request, current);
    if (result !== CHANGED) return result;
    if (attempt >= CHANGED_ATTEMPTS) {
      throw new ToolError('IO_ERROR', 'The file changed while it was read (another process is writing it).', {
        details: { reason: 'changed_during_read' },
        retryable: true,
        suggestion: 'Read it again once the writer is done.',
      });
    }
    current = { ...options, stats: await handle.stat() };
  }
}

/** How many times a read whose file changed between its passes is started again before IO_ERROR. */
const CHANGED_ATTEMPTS = 3;
/** `readRangeOnce`'s answer when the file changed between the hashing pass and the range read. */
const CHANGED = Symbol('changed during read');

/**
 * One attempt of `readRange`. When the range is not cut from the bytes the hashing pass read (a file read in more
 * than one chunk, or whose facts were cached), the range is a second read: a file rewritten in between would pair the
 * hash of one version with the bytes of another (a shrunk file even with zeros never written; found by
 * test/attacks/occ-reread.test.ts). Such a read is checked — every byte read, and the file's size, mtime and ctime
 * after it equal to those before the pass — and CHANGED is returned otherwise.
 */
async function readRangeOnce(
  handle: RangeSource,
  request: RangeRequest,
  options: ReadRangeOptions,
): Promise<RangeResult | typeof CHANGED> {
  const scan = await scanOrRecall(handle, request, options);
  let startByte: number;
  let endByte: number;
  let startLine: number;
  if (request.kind === 'tail') {
    startByte = scan.tailStart ?? (await findTailStart(handle, scan.size, scan.endsWithNewline, request.lines));
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
  let readEnd = endByte;
  if (endByte - startByte > options.maxBytes) {
    truncated = true;
    readEnd = startByte + options.maxBytes;
  }
  let bytes: Buffer;
  if (scan.whole) {
    bytes = scan.whole.subarray(startByte, readEnd);
  } else {
    bytes = Buffer.alloc(readEnd - startByte);
    const got = bytes.length > 0 ? await readFully(handle, bytes, startByte) : 0;
    if (got < bytes.length || !sameVersion(options.stats, await handle.stat(), scan.size)) return CHANGED;
  }
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
    // A copy, so that a short range does not keep a large read buffer alive; the whole of a file read in one chunk is
    // that buffer already (read for this call alone), so it is handed on as it is (one copy less per read).
    bytes: scan.whole && content.length === scan.whole.length ? content : Buffer.from(content),
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
async function assertCharacterBoundary(handle: RangeSource, offset: number, size: number): Promise<void> {
  if (offset >= size) return;
  const byte = Buffer.alloc(1);
  await readFully(handle, byte, offset);
  if ((byte[0] & 0xc0) !== 0x80) return;
  throw new ToolError('VALIDATION', `offset ${offset} is inside a UTF-8 character.`, {
    details: { reason: 'offset_splits_character', field: 'offset' },
    suggestion:
      'Pass the offset from a continuation (always a character boundary), use a line range, or read raw bytes ' +
      'with encoding "base64".',
  });
}

function pastEnd(what: string, scan: Scan): ToolError {
  return new ToolError(
    'VALIDATION',
    `${what} is past the end of the file (${scan.totalLines} lines, ${scan.size} bytes).`,
    {
      details: { reason: 'range_past_end', total_lines: scan.totalLines, size: scan.size },
      suggestion: `Request a range within lines 1-${Math.max(scan.totalLines, 1)}.`,
    },
  );
}

/** The whole-file facts: from the cache for an unchanged large file, else from a full pass (which may fill it). */
async function scanOrRecall(handle: RangeSource, request: RangeRequest, options: ReadRangeOptions): Promise<Scan> {
  const { cache, stats } = options;
  const cap = options.maxScanBytes ?? DEFAULT_SCAN_CAP_BYTES;
  if (!cache || !stats) return scanFile(handle, request, stats?.size ?? null, false, cap);
  const before = identityOf(stats);
  const facts = cache.lookup(before);
  if (facts) return scanWithFacts(handle, facts, request);
  const startedMs = cache.clock();
  const scan = await scanFile(handle, request, stats.size, cache.wants(stats.size), cap);
  if (scan.facts) cache.store(before, identityOf(await handle.stat()), startedMs, scan.facts);
  return scan;
}

interface Scan extends FileFacts {
  rangeStart: number | null;
  rangeEnd: number | null;
  lineAtOffset: number;
  /** The facts to cache (when the pass was asked to build the line index). */
  facts?: ContentFacts;
  /** The whole file, when the pass read it in one chunk (the range is then cut from it, not read again). */
  whole?: Buffer;
  /** For `tail`, from the line index: where the last lines start (else the backwards scan finds it). */
  tailStart?: number;
}

/** No bytes: the carry of a scan whose chunks end on whole characters (zero length, so never written). */
const NO_BYTES = Buffer.alloc(0);

/**
 * What the streaming pass learns from the bytes, chunk by chunk: newlines and EOL counts, UTF-8 validity, the requested
 * line range's byte offsets and, with `buildIndex`, the sparse line index (newlines before every CHECKPOINT_BYTES
 * boundary). `take` copies the counters to locals for its loop (one chunk's newlines) and writes them back.
 */
class ChunkScan {
  newlines = 0;
  crlf = 0;
  lf = 0;
  prevByte = -1;
  validUtf8 = true;
  private carry: Buffer = NO_BYTES;
  readonly checkpoints: number[] = [0];
  private nextCheckpoint: number;
  /** Line range wanted (for lines/head): start after the (S-1)th newline, end after the E-th. */
  private readonly startLine: number;
  private readonly endLine: number | null;
  private readonly offset: number;
  rangeStart: number | null;
  rangeEnd: number | null = null;
  lineAtOffset = 1;

  constructor(request: RangeRequest, buildIndex: boolean) {
    this.nextCheckpoint = buildIndex ? CHECKPOINT_BYTES : Infinity;
    this.startLine = request.kind === 'lines' ? request.startLine : 1;
    this.endLine = request.kind === 'lines' ? request.endLine : request.kind === 'head' ? request.lines : null;
    this.rangeStart = this.startLine === 1 ? 0 : null;
    this.offset = request.kind === 'bytes' ? request.offset : -1;
  }

  /** Scans `chunk`, which starts at byte `pos` of the file. */
  take(chunk: Buffer, pos: number): void {
    if (this.validUtf8) {
      const joined = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk;
      const boundary = utf8Boundary(joined, joined.length);
      if (!isUtf8(joined.subarray(0, boundary))) this.validUtf8 = false;
      // A copy of the cut-off sequence only when there is one (a chunk that ends on a character needs none).
      this.carry = boundary === joined.length ? NO_BYTES : Buffer.from(joined.subarray(boundary));
    }
    let { newlines, crlf, lf, nextCheckpoint, rangeStart, rangeEnd, lineAtOffset } = this;
    const { startLine, endLine, offset, checkpoints, prevByte } = this;
    let i = chunk.indexOf(0x0a);
    while (i !== -1) {
      const before = i > 0 ? chunk[i - 1] : prevByte;
      if (before === 0x0d) crlf++;
      else lf++;
      const absolute = pos + i;
      // Every newline counted so far lies before nextCheckpoint (else it would have been recorded then).
      while (nextCheckpoint <= absolute) {
        checkpoints.push(newlines);
        nextCheckpoint += CHECKPOINT_BYTES;
      }
      newlines++;
      if (rangeStart === null && newlines === startLine - 1) rangeStart = absolute + 1;
      if (rangeEnd === null && endLine !== null && newlines === endLine) rangeEnd = absolute + 1;
      if (offset >= 0 && absolute < offset) lineAtOffset = newlines + 1;
      i = chunk.indexOf(0x0a, i + 1);
    }
    this.newlines = newlines;
    this.crlf = crlf;
    this.lf = lf;
    this.nextCheckpoint = nextCheckpoint;
    this.rangeStart = rangeStart;
    this.rangeEnd = rangeEnd;
    this.lineAtOffset = lineAtOffset;
    this.prevByte = chunk[chunk.length - 1];
  }

  /** The end of the bytes at `size`: a UTF-8 sequence cut off there is invalid; the index is completed to `size`. */
  end(size: number): void {
    if (this.carry.length > 0) this.validUtf8 = false;
    if (this.nextCheckpoint === Infinity) return;
    while (this.nextCheckpoint <= size) {
      this.checkpoints.push(this.newlines);
      this.nextCheckpoint += CHECKPOINT_BYTES;
    }
  }
}

/** The first read buffer: one byte more than the size, so a small file's end is seen by the short read. */
function firstBuffer(sizeHint: number | null): Buffer {
  // A file that reports 0 bytes may hold more (procfs): its first read is a whole small chunk (some such files refuse
  // reads that are not a multiple of 8 bytes, e.g. /proc/PID/pagemap).
  return Buffer.allocUnsafe(
    sizeHint === null ? CHUNK_BYTES : sizeHint === 0 ? SMALL_CHUNK_BYTES : Math.min(CHUNK_BYTES, sizeHint + 1),
  );
}

/**
 * The streaming pass: hash, lines, EOL counts, UTF-8 validity, and the requested line range's byte offsets; with
 * `buildIndex`, also the sparse line index (newlines before every CHECKPOINT_BYTES boundary) for the cache.
 * @param sizeHint the size from fstat (sizes the read buffer: a 4 KB file needs no 1 MiB buffer), or null
 */
async function scanFile(
  handle: RangeSource,
  request: RangeRequest,
  sizeHint: number | null,
  buildIndex: boolean,
  maxScanBytes: number,
): Promise<Scan> {
  const bound = { reportedSize: sizeHint ?? 0, maxBytes: maxScanBytes, path: null };
  let firstChunk: Buffer | null = null;
  // A chunk is hashed only once the next read is about to overwrite `buf`, so a file read in one chunk
  // (every small read) is hashed in one shot at the end (hashBytes), without an incremental Hash object.
  let hasher: ReturnType<typeof createContentHasher> | null = null;
  let unhashed: Buffer | null = null;
  // Bytes already in memory are scanned in place, as one chunk: no buffer, no copy.
  const preread = inMemoryBytes(handle);
  let buf = preread ?? firstBuffer(sizeHint);
  let reads = 0;
  let pos = 0;
  let bom = false;
  const scan = new ChunkScan(request, buildIndex);
  for (;;) {
    if (preread && pos > 0) break; // the one chunk is done (its hash is taken in one shot below)
    if (unhashed) {
      (hasher ??= createContentHasher()).update(unhashed);
      unhashed = null;
    }
    const bytesRead = preread ? preread.length : (await handle.read(buf, 0, buf.length, pos)).bytesRead;
    if (bytesRead === 0) break;
    const chunk = buf.subarray(0, bytesRead);
    firstChunk ??= chunk;
    unhashed = chunk;
    if (pos === 0) bom = hasUtf8Bom(chunk);
    scan.take(chunk, pos);
    pos += bytesRead;
    reads++;
    // Never to EOF past the reported size and the cap (a procfs file); one that reads past its reported size is read
    // on in whole chunks (the buffer was sized for what it reported; `unhashed` keeps the old one alive).
    if (!preread) {
      await checkContentBound(bound, pos, () => handle.stat());
      if (pos > (sizeHint ?? 0) && buf.length < CHUNK_BYTES) buf = Buffer.allocUnsafe(CHUNK_BYTES);
    }
    // A regular file's read returns fewer bytes than asked only at its end.
    if (sizeHint !== null && bytesRead < buf.length && pos >= sizeHint) break;
  }
  const size = pos;
  scan.end(size);
  const { newlines, crlf, lf, validUtf8 } = scan;
  const endsWithNewline = scan.prevByte === 0x0a;
  const totalLines = size === 0 ? 0 : newlines + (endsWithNewline ? 0 : 1);
  let hash: string;
  if (hasher === null) {
    // Bytes already in memory (a small file read whole in one step) are likely read again unchanged: their hash is
    // recalled after a full comparison (hashRecentBytes); a file read in one chunk here is hashed as it is.
    hash = preread ? hashRecentBytes(preread) : hashBytes(unhashed ?? new Uint8Array(0));
  } else {
    if (unhashed) hasher.update(unhashed);
    hash = hasher.digest();
  }
  const facts: ContentFacts | undefined = buildIndex
    ? {
        ...{ hash, size, totalLines, crlf, lf, bom, validUtf8, endsWithNewline },
        checkpointBytes: CHECKPOINT_BYTES,
        checkpointNewlines: Float64Array.from(scan.checkpoints),
      }
    : undefined;
  // Written out rather than spread from the facts: this runs once per read.
  return {
    hash,
    size,
    totalLines,
    crlf,
    lf,
    bom,
    validUtf8,
    endsWithNewline,
    rangeStart: scan.rangeStart,
    rangeEnd: scan.rangeEnd,
    lineAtOffset: scan.lineAtOffset,
    facts,
    whole: reads > 1 ? undefined : preread && preread.length === size ? preread : (firstChunk ?? buf).subarray(0, size),
  };
}

/**
 * The same answer as scanFile, from cached facts: only the neighbourhood of the requested line boundaries is read.
 */
async function scanWithFacts(handle: RangeSource, f: ContentFacts, request: RangeRequest): Promise<Scan> {
  const startLine = request.kind === 'lines' ? request.startLine : 1;
  const endLine = request.kind === 'lines' ? request.endLine : request.kind === 'head' ? request.lines : null;
  let rangeStart: number | null = startLine === 1 ? 0 : null;
  let rangeEnd: number | null = null;
  let lineAtOffset = 1;
  if (request.kind === 'lines' || request.kind === 'head') {
    if (startLine > 1) rangeStart = await afterNewline(handle, f, startLine - 1);
    if (endLine !== null) rangeEnd = await afterNewline(handle, f, endLine);
  } else if (request.kind === 'bytes') {
    lineAtOffset = 1 + (await newlinesBefore(handle, f, Math.min(request.offset, f.size)));
  }
  // The last n lines start at line totalLines - n + 1, just after newline number totalLines - n.
  let tailStart: number | undefined;
  if (request.kind === 'tail') {
    const first = f.totalLines - request.lines + 1;
    tailStart =
      request.lines <= 0 || f.size === 0
        ? f.size
        : first <= 1
          ? 0
          : ((await afterNewline(handle, f, first - 1)) ?? f.size);
  }
  return {
    hash: f.hash,
    size: f.size,
    totalLines: f.totalLines,
    crlf: f.crlf,
    lf: f.lf,
    bom: f.bom,
    validUtf8: f.validUtf8,
    endsWithNewline: f.endsWithNewline,
    rangeStart,
    rangeEnd,
    lineAtOffset,
    tailStart,
  };
}

/** Byte offset just after the `m`-th newline (1-based), or null when the file has fewer; reads at most one span. */
async function afterNewline(handle: RangeSource, f: ContentFacts, m: number): Promise<number | null> {
  if (m < 1 || m > f.crlf + f.lf) return null;
  // The last checkpoint with fewer than m newlines before it: the m-th newline lies in its span.
  const cps = f.checkpointNewlines;
  let lo = 0;
  let hi = cps.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (cps[mid] < m) lo = mid;
    else hi = mid - 1;
  }
  let seen = cps[lo];
  let pos = lo * f.checkpointBytes;
  const buf = Buffer.allocUnsafe(f.checkpointBytes);
  while (pos < f.size) {
    const len = Math.min(buf.length, f.size - pos);
    const { bytesRead } = await handle.read(buf, 0, len, pos);
    if (bytesRead === 0) break;
    const chunk = buf.subarray(0, bytesRead);
    let i = chunk.indexOf(0x0a);
    while (i !== -1) {
      seen++;
      if (seen === m) return pos + i + 1;
      i = chunk.indexOf(0x0a, i + 1);
    }
    pos += bytesRead;
  }
  return null;
}

/** Newlines in `[0, offset)`, from the checkpoint at or before `offset`. */
async function newlinesBefore(handle: RangeSource, f: ContentFacts, offset: number): Promise<number> {
  const k = Math.min(Math.floor(offset / f.checkpointBytes), f.checkpointNewlines.length - 1);
  let count = f.checkpointNewlines[k];
  const from = k * f.checkpointBytes;
  if (offset > from) {
    const bytes = Buffer.allocUnsafe(offset - from);
    await readFully(handle, bytes, from);
    count += countNewlines(bytes);
  }
  return count;
}

/** Scans backwards for the start of the last `n` lines. */
async function findTailStart(handle: RangeSource, size: number, endsWithNewline: boolean, n: number): Promise<number> {
  if (n <= 0 || size === 0) return size;
  let seen = 0;
  let end = endsWithNewline ? size - 1 : size; // ignore the final terminator
  // Small steps back: a tail of a few lines of a huge file reads a few KiB, not a whole 1 MiB chunk.
  let step = TAIL_FIRST_STEP_BYTES;
  const buf = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(end, 1)));
  while (end > 0) {
    const start = Math.max(0, end - Math.min(step, buf.length));
    const len = end - start;
    const view = buf.subarray(0, len);
    await readFully(handle, view, start);
    let i = view.lastIndexOf(0x0a);
    while (i !== -1) {
      seen++;
      if (seen === n) return start + i + 1;
      i = i > 0 ? view.lastIndexOf(0x0a, i - 1) : -1;
    }
    end = start;
    step *= 4;
  }
  return 0;
}

async function readFully(handle: RangeSource, target: Buffer, position: number): Promise<number> {
  let done = 0;
  while (done < target.length) {
    const { bytesRead } = await handle.read(target, done, target.length - done, position + done);
    if (bytesRead === 0) break; // the file shrank under us; return what is there
    done += bytesRead;
  }
  return done;
}

/**
 * True when `after` (fstat after a range read) shows the version the hashing pass saw: its size is the pass's, and
 * size, mtime and ctime equal `before` (fstat before the pass) when the caller had one.
 */
function sameVersion(before: Stats | undefined, after: Stats, scannedSize: number): boolean {
  if (after.size !== scannedSize) return false;
  if (!before) return true;
  return before.size === after.size && before.mtimeMs === after.mtimeMs && before.ctimeMs === after.ctimeMs;
}

/** The UTF-8 sequence starting at `start` (1 byte for a byte that cannot start one), not reading past `end`. */
async function firstCharacter(handle: RangeSource, start: number, end: number): Promise<Buffer<ArrayBuffer>> {
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
    if ((b & 0xc0) === 0x80) {
      i--;
      continue;
    } // continuation byte
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
