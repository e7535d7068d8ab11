/**
 * Reading one path for read_file and read_files (docs/tools.md): policy's authorization, the file opened the way its
 * size asks for (one synchronous step for a small file, the content facts cache for a large known one, a handle
 * otherwise), the range read, cut to the caller's response budget, and the hash remembered for OCC.
 */
import { closeSync, type Stats } from 'node:fs';
import type { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { contentFactsCache, identityOf } from '../fs/content-cache.js';
import { openForRead, openForReadSync, readSmallFileSync } from '../fs/open-file.js';
import {
  bytesSource,
  fdSource,
  readRange,
  type RangeRequest,
  type RangeResult,
  type RangeSource,
} from '../fs/read-range.js';
import { authorizeRead, authorizeSpelledFile, type AuthorizedPath } from '../policy/authorize.js';
import { isInsideRoots } from '../policy/containment.js';
import type { ToolContext } from './define-tool.js';
import type { ReadFileInput } from './read-file.js';
import { prefixWithinJsonBytes } from './response-budget.js';

/**
 * Everything one read established (internal; every field set). `compactRead` turns it into the wire result and
 * `factsNote` into the text facts line (src/tools/read-file.ts).
 */
export interface ReadFacts {
  /** Real path of the file read. */
  path: string;
  /** The requested path, absolute (before links were followed). */
  requested: string;
  content: string;
  encoding: 'utf8' | 'base64';
  content_hash: string;
  size: number;
  total_lines: number;
  range: { start_line: number; end_line: number; start_byte: number; end_byte: number };
  truncated: boolean;
  continuation: { start_line: number; offset: number; cut_mid_line: boolean } | null;
  eol: 'lf' | 'crlf' | 'mixed' | 'none';
  bom: boolean;
  /** The read was asked from a byte offset. */
  by_offset: boolean;
}

/** read_file's options without the path. */
export type ReadOptions = Omit<z.output<typeof ReadFileInput>, 'path'>;

/** The caller's response budget for one read: see `readOne`. */
export interface ReadBudget {
  maxCost: number;
  cutByBudget?: boolean;
  probeOnly?: boolean;
}

/** Files up to this size (by policy's lstat) are read in one synchronous step. */
const SMALL_READ_BYTES = 64 * 1024;

/**
 * Turns read options into a range request.
 * @throws ToolError VALIDATION for conflicting options
 */
export function toRangeRequest(o: ReadOptions): RangeRequest {
  const lineOpts = o.start_line !== undefined || o.end_line !== undefined;
  const chosen = [lineOpts, o.head !== undefined, o.tail !== undefined, o.offset !== undefined].filter(Boolean).length;
  if (chosen > 1) {
    throw new ToolError('VALIDATION', 'Use only one of start_line/end_line, head, tail or offset.', {
      details: { reason: 'conflicting_parameters' },
    });
  }
  if (o.start_line !== undefined && o.end_line !== undefined && o.end_line < o.start_line) {
    throw new ToolError('VALIDATION', `end_line (${o.end_line}) is before start_line (${o.start_line}).`, {
      details: { reason: 'invalid_range', field: 'end_line' },
    });
  }
  if (o.head !== undefined) return { kind: 'head', lines: o.head };
  if (o.tail !== undefined) return { kind: 'tail', lines: o.tail };
  if (o.offset !== undefined) return { kind: 'bytes', offset: o.offset };
  return { kind: 'lines', startLine: o.start_line ?? 1, endLine: o.end_line ?? null };
}

/** An opened file: its range source (closed by the caller) and the stats of the descriptor read. */
interface OpenedFile {
  handle: RangeSource & { close(): Promise<void> };
  stats: Stats;
}

/**
 * Opens the authorized file. A small file is read whole in one synchronous step (src/fs/open-file.ts
 * readSmallFileSync); a larger one through a handle, with the facts cache sparing a re-hash and re-scan of a large
 * unchanged file (src/fs/content-cache.ts). A large file whose facts are cached (same identity as policy's lstat) is
 * read synchronously too: whatever the request, that is at most two 64 KiB index spans plus the capped range.
 */
async function openTarget(target: AuthorizedPath, ctx: ToolContext): Promise<OpenedFile> {
  const isInside = (p: string) => isInsideRoots(ctx.policy.roots, p);
  const small =
    target.stats.size <= SMALL_READ_BYTES ? readSmallFileSync(target.real, isInside, SMALL_READ_BYTES) : null;
  if (small) {
    // The source object itself (not a spread copy): readRange recognizes it and scans the bytes where they are.
    return { handle: bytesSource(small.bytes, small.stats), stats: small.stats };
  }
  if (contentFactsCache.lookup(identityOf(target.stats)) !== undefined) {
    const { fd, stats } = openForReadSync(target.real, isInside);
    return { handle: { ...fdSource(fd), close: () => Promise.resolve().then(() => closeSync(fd)) }, stats };
  }
  return await openForRead(target.real, isInside);
}

/**
 * Policy's authorization of `requested` and the file opened. A file named by its real path is authorized without
 * resolving it (`authorizeSpelledFile`): the open's proof that the descriptor is at that path (src/fs/open-file.ts)
 * is what establishes that no link was on the way, so when that open fails in any way — a link on the way, a change,
 * a missing file — the answer is discarded and the full `authorizeRead` decides and opens again, as for every other
 * path. @throws as authorizeRead and openTarget
 */
async function authorizeAndOpen(
  requested: string,
  ctx: ToolContext,
): Promise<{ target: AuthorizedPath; opened: OpenedFile }> {
  const spelled = authorizeSpelledFile(requested, ctx.policy);
  if (spelled !== null) {
    try {
      return { target: spelled, opened: await openTarget(spelled, ctx) };
    } catch {
      // Not proven: resolve and decide in full below.
    }
  }
  const target = await authorizeRead(requested, ctx.policy, { kind: 'file' });
  return { target, opened: await openTarget(target, ctx) };
}

/**
 * Reads `request` from the opened file; with `within`, reads again with the byte cap that fits when the content,
 * sent twice JSON-escaped (structured and text), would exceed `within.maxCost` (readRange then cuts at a character
 * boundary and gives the usual continuation). `probeOnly` only flags it (`cutByBudget`).
 */
async function readWithinBudget(
  { handle, stats }: OpenedFile,
  request: RangeRequest,
  options: ReadOptions,
  maxBytes: number,
  within: ReadBudget | undefined,
): Promise<RangeResult> {
  const textBoundaries = options.encoding === 'utf8';
  const r = await readRange(handle, request, { maxBytes, textBoundaries, stats, cache: contentFactsCache });
  if (!within || r.bytes.length === 0) return r;
  const half = Math.floor(within.maxCost / 2);
  // A text whose every byte could cost 6 when escaped (each byte decodes to at most one code unit, whose cost is at
  // most 6: jsonStringBytes) fits without the per-character scan.
  const fitting =
    options.encoding === 'base64'
      ? Math.floor(half / 4) * 3
      : r.bytes.length * 6 <= half
        ? r.bytes.length
        : Buffer.byteLength(prefixWithinJsonBytes(r.bytes.toString('utf8'), half), 'utf8');
  if (fitting >= r.bytes.length) return r;
  within.cutByBudget = true;
  // probeOnly: the caller defers a read that does not fit whole (read_files after its first entry).
  if (within.probeOnly) return r;
  return await readRange(handle, request, {
    maxBytes: Math.max(1, fitting),
    textBoundaries,
    stats,
    cache: contentFactsCache,
  });
}

/**
 * Reads one path (shared by read_file and read_files). With `within`, the content is cut so that it fits
 * `maxCost` bytes when sent twice JSON-escaped (structured + text), and `cutByBudget` says it was; with
 * `probeOnly` it is not cut, only flagged.
 * @throws ToolError from policy (docs/errors.md "Order of checks" 4–7), VALIDATION (conflicting options, range past end, binary)
 */
export async function readOne(
  requested: string,
  options: ReadOptions,
  ctx: ToolContext,
  within?: ReadBudget,
): Promise<ReadFacts> {
  const request = toRangeRequest(options);
  const maxBytes = Math.min(options.max_bytes ?? ctx.config.limits.maxReadBytes, ctx.config.limits.maxReadBytes);
  const { target, opened } = await authorizeAndOpen(requested, ctx);
  try {
    const r = await readWithinBudget(opened, request, options, maxBytes, within);
    ctx.hashes.remember(target.real, r.contentHash, r.startByte === 0 && r.endByte === r.size ? r.bytes : undefined);
    if (options.encoding === 'utf8' && !r.validUtf8) {
      throw new ToolError('VALIDATION', `${target.absolute} is not valid UTF-8 text.`, {
        path: target.absolute,
        details: { reason: 'binary', size: r.size, content_hash: r.contentHash },
        suggestion: 'Read it with encoding: "base64", or use stat for its size and hash.',
      });
    }
    return {
      path: target.real,
      requested: target.absolute,
      content: options.encoding === 'base64' ? r.bytes.toString('base64') : r.bytes.toString('utf8'),
      encoding: options.encoding,
      content_hash: r.contentHash,
      size: r.size,
      total_lines: r.totalLines,
      range: { start_line: r.startLine, end_line: r.endLine, start_byte: r.startByte, end_byte: r.endByte },
      truncated: r.truncated,
      continuation: r.continuation,
      eol: r.eol,
      bom: r.bom,
      by_offset: request.kind === 'bytes',
    };
  } finally {
    await opened.handle.close();
  }
}
