/**
 * read_file (docs/tools.md): a whole file or an exact line/byte range, in bounded memory, with the whole file's
 * content hash (remembered for OCC), line count, EOL style and BOM.
 */
import { z } from 'zod';
import { ContentHash, PathArg, ReadOptionsShape } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { readOne, type ReadFacts } from './read-one.js';
import { TOOL_BUDGET_BYTES } from './response-budget.js';

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
