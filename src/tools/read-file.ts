/**
 * read_file (docs/tools.md): a whole file or an exact line/byte range, in bounded memory, with the whole file's
 * content hash (remembered for OCC), line count, EOL style and BOM.
 */
import { closeSync, type Stats } from 'node:fs';
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { contentFactsCache, identityOf } from '../fs/content-cache.js';
import { openForRead, openForReadSync, readSmallFileSync } from '../fs/open-file.js';
import { bytesSource, fdSource, readRange, type RangeRequest, type RangeSource } from '../fs/read-range.js';
import { authorizeRead } from '../policy/authorize.js';
import { findContainingRoot } from '../policy/containment.js';
import { ContentHash, PathArg, ReadOptionsShape } from './common-schemas.js';
import { defineTool, type ToolContext } from './define-tool.js';
import { prefixWithinJsonBytes, TOOL_BUDGET_BYTES } from './response-budget.js';

export const ReadFileInput = z.strictObject({
  path: PathArg,
  ...ReadOptionsShape,
});

/**
 * read_file's structured result (docs/tools.md; structured-first clients show it to their model as JSON on every
 * read, so a field at its default is left out and its absence means the default). Always present: `content`,
 * `content_hash`, `size`, `total_lines`. Absent means: `path` the path as asked (no link followed), `encoding` utf8,
 * `range` the whole file, `truncated` false (and then no `continuation`), `eol` lf, `bom` false.
 */
export const ReadResultShape = {
  path: z.string().optional().describe('Only when a link was followed: the real path read'),
  content: z.string().describe('The returned bytes: raw UTF-8 text, or base64 with encoding base64'),
  encoding: z.literal('base64').optional().describe('Absent: utf8'),
  content_hash: ContentHash.describe('Hash of the whole file (also for a partial read)'),
  size: z.number().int().describe('File size in bytes'),
  total_lines: z.number().int().describe('Lines in the whole file'),
  range: z
    .object({
      start_line: z.number().int(),
      end_line: z.number().int().describe('Inclusive; start_line - 1 when nothing was returned'),
      start_byte: z.number().int().optional(),
      end_byte: z.number().int().optional().describe('Exclusive'),
    })
    .optional()
    .describe('Absent: the whole file. Bytes only when truncated, base64 or read from an offset'),
  truncated: z.boolean().optional().describe('Present (true) only when the cap cut the range'),
  continuation: z
    .object({
      start_line: z.number().int(),
      offset: z.number().int().describe('Byte offset of the next unread byte'),
      cut_mid_line: z.boolean(),
    })
    .optional()
    .describe('With truncated: pass start_line (or offset when cut_mid_line)'),
  eol: z.enum(['crlf', 'mixed', 'none']).optional().describe('Absent: lf'),
  bom: z.boolean().optional().describe('Present (true) only when the file starts with a BOM'),
};

export const ReadFileOutput = z.object(ReadResultShape);
/** The wire result of one read (defaults left out). */
export type ReadResult = z.infer<typeof ReadFileOutput>;

/**
 * Everything one read established (internal; every field set). `compactRead` turns it into the wire result and
 * `factsNote` into the text facts line.
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

/** True when the byte bounds of the range are worth stating: the read was cut, is base64, or started at an offset. */
function bytesMatter(f: ReadFacts): boolean {
  return f.truncated || f.encoding === 'base64' || f.by_offset;
}

/** The wire result of a read: every field at its default left out (ReadResultShape says what absence means). */
export function compactRead(f: ReadFacts): ReadResult {
  const whole = f.range.start_byte === 0 && f.range.end_byte === f.size && !f.truncated;
  // Built field by field in the wire order (the order of ReadResultShape): no spread of an empty object per default
  // field on every read. test/tools/read-file-compact.test.ts pins it against the spread form.
  const out: Partial<ReadResult> = {};
  if (f.path !== f.requested) out.path = f.path;
  out.content = f.content;
  if (f.encoding === 'base64') out.encoding = 'base64';
  out.content_hash = f.content_hash;
  out.size = f.size;
  out.total_lines = f.total_lines;
  if (!whole) {
    out.range = bytesMatter(f)
      ? {
          start_line: f.range.start_line,
          end_line: f.range.end_line,
          start_byte: f.range.start_byte,
          end_byte: f.range.end_byte,
        }
      : { start_line: f.range.start_line, end_line: f.range.end_line };
  }
  if (f.truncated) out.truncated = true;
  if (f.truncated && f.continuation) out.continuation = f.continuation;
  if (f.eol !== 'lf') out.eol = f.eol;
  if (f.bom) out.bom = true;
  return out as ReadResult;
}

type ReadOptions = Omit<z.output<typeof ReadFileInput>, 'path'>;

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
  within?: { maxCost: number; cutByBudget?: boolean; probeOnly?: boolean },
): Promise<ReadFacts> {
  const request = toRangeRequest(options);
  const maxBytes = Math.min(options.max_bytes ?? ctx.config.limits.maxReadBytes, ctx.config.limits.maxReadBytes);
  const target = await authorizeRead(requested, ctx.policy, { kind: 'file' });
  const isInside = (p: string) => findContainingRoot(ctx.policy.roots, p) !== undefined;
  // A small file is read whole in one synchronous step (src/fs/open-file.ts readSmallFileSync); a larger one through
  // a handle, with the facts cache sparing a re-hash and re-scan of a large unchanged file (src/fs/content-cache.ts).
  // A large file whose facts are cached (same identity as policy's lstat) is read synchronously too: whatever the
  // request, that is at most two 64 KiB index spans plus the capped range.
  const small =
    target.stats.size <= SMALL_READ_BYTES ? readSmallFileSync(target.real, isInside, SMALL_READ_BYTES) : null;
  const cachedLarge = !small && contentFactsCache.lookup(identityOf(target.stats)) !== undefined;
  let opened: { handle: RangeSource & { close(): Promise<void> }; stats: Stats };
  if (small) {
    // The source object itself (not a spread copy): readRange recognizes it and scans the bytes where they are.
    opened = {
      handle: Object.assign(bytesSource(small.bytes, small.stats), { close: () => Promise.resolve() }),
      stats: small.stats,
    };
  } else if (cachedLarge) {
    const { fd, stats: st } = openForReadSync(target.real, isInside);
    opened = { handle: { ...fdSource(fd), close: () => Promise.resolve().then(() => closeSync(fd)) }, stats: st };
  } else {
    opened = await openForRead(target.real, isInside);
  }
  const { handle, stats } = opened;
  try {
    let r = await readRange(handle, request, {
      maxBytes,
      textBoundaries: options.encoding === 'utf8',
      stats,
      cache: contentFactsCache,
    });
    // Issue #14: the content goes out twice (structured and text), JSON-escaped. When that exceeds the caller's
    // response budget, read again with the byte cap that fits (readRange then cuts at a character boundary and gives
    // the usual continuation).
    if (within && r.bytes.length > 0) {
      const half = Math.floor(within.maxCost / 2);
      // Issue #19: a text whose every byte could cost 6 when escaped (each byte decodes to at most one code unit, whose
      // cost is at most 6: jsonStringBytes) fits without the per-character scan.
      const fitting =
        options.encoding === 'base64'
          ? Math.floor(half / 4) * 3
          : r.bytes.length * 6 <= half
            ? r.bytes.length
            : Buffer.byteLength(prefixWithinJsonBytes(r.bytes.toString('utf8'), half), 'utf8');
      if (fitting < r.bytes.length) {
        within.cutByBudget = true;
        // probeOnly: the caller defers a read that does not fit whole (read_files after its first entry).
        if (!within.probeOnly) {
          r = await readRange(handle, request, {
            maxBytes: Math.max(1, fitting),
            textBoundaries: options.encoding === 'utf8',
            stats,
            cache: contentFactsCache,
          });
        }
      }
    }
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
    await handle.close();
  }
}

/**
 * The facts block that follows the raw content as its own text block: a text-only client (Gemini CLI)
 * shows its model only text, so the facts needed for the next call — content_hash, the lines returned, and where to
 * continue when truncated — are written here too. One line; the content block stays raw. Defaults are left out to
 * keep every read small: the byte range only when the read was cut, read from an offset, or is base64; `eol` only when it is not
 * `lf` (or `none`); `bom` only when there is one.
 */
export function factsNote(r: ReadFacts): string {
  const facts = [
    `content_hash ${r.content_hash}`,
    `lines ${r.range.start_line}-${r.range.end_line} of ${r.total_lines}`,
  ];
  if (bytesMatter(r)) {
    facts.push(`bytes ${r.range.start_byte}-${r.range.end_byte} of ${r.size}`);
  }
  if (r.eol !== 'lf' && r.eol !== 'none') facts.push(`eol ${r.eol}`);
  if (r.bom) facts.push('bom');
  if (r.encoding === 'base64') facts.push('base64');
  if (r.truncated && r.continuation) {
    const next = r.continuation.cut_mid_line
      ? `offset: ${r.continuation.offset}`
      : `start_line: ${r.continuation.start_line}`;
    facts.push(`truncated, continue with ${next}`);
  }
  return `[fs-tools: ${facts.join('; ')}]`;
}

export const readFile = defineTool({
  name: 'read_file',
  title: 'Read file',
  description:
    'Read a UTF-8 file (or base64), whole or a range. Text is the raw content, then a facts line with ' +
    'content_hash (edits need it); eol named when not lf. ≤ 256 KiB a call; when truncated, go on from continuation. Non-UTF-8 ' +
    'fails (VALIDATION): use base64.',
  group: 'fs-read',
  input: ReadFileInput,
  output: ReadFileOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path],
  async run(args, ctx) {
    const { path: requested, ...options } = args;
    // Budget: the content twice (structured + text), plus room for the other fields and the note.
    const result = await readOne(requested, options, ctx, { maxCost: TOOL_BUDGET_BYTES - 16 * 1024 });
    return {
      structured: compactRead(result),
      text: [result.content, factsNote(result)],
      audit: {
        paths: [result.path],
        hash_after: result.content_hash,
        bytes: result.range.end_byte - result.range.start_byte,
      },
    };
  },
});
