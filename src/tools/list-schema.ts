/**
 * list_directory's contract (docs/tools.md): its input and output schemas, a listed entry's compact form, its text
 * line and its JSON bytes, and the position a cursor resumes at. This file changes when the contract changes.
 */
import { z } from 'zod';
import { GlobList, KindSchema, PathArg } from './common-schemas.js';
import { CursorPath } from './cursor.js';
import { jsonStringBytes } from './response-budget.js';
import { quoteName } from './text-safe.js';

export const ListDirectoryInput = z.strictObject({
  path: PathArg.default('.').describe('Default: the first root'),
  depth: z.number().int().min(1).max(20).default(1).describe('1-20 (default 1: children)'),
  include: GlobList.optional(),
  exclude: GlobList.optional(),
  respect_gitignore: z.boolean().default(true).describe('Default true'),
  max_entries: z.number().int().min(1).optional().describe('Default and most 10000 (long: default 1000)'),
  cursor: z.string().optional(),
  long: z.boolean().default(false).describe('Add size and mtime'),
});

export const EntryObjectSchema = z.object({
  path: z.string().describe('Relative to the listed directory, / separated'),
  type: KindSchema,
  size: z.number().int().optional().describe('long: bytes (of the link itself for a symlink)'),
  mtime: z.string().optional().describe('long: ISO 8601'),
  secret: z.boolean().optional().describe('Present and true for a secret filename'),
  link_target_type: KindSchema.nullable()
    .optional()
    .describe("Symlinks only: the target's type when it is inside the roots, else null"),
});

/**
 * One listed entry as the model sees it: a regular file or a directory that is not a secret is just its
 * path, a directory's with `/` after it (a name never holds `/`, so this is unambiguous); a symlink, a special file,
 * a secret, or any entry of a `long` listing is an object. Structured-first clients show this JSON to their model:
 * the object form tripled a listing's bytes.
 */
export const EntrySchema = z.union([z.string(), EntryObjectSchema]);
export type EntryObject = z.infer<typeof EntryObjectSchema>;

/** The compact form of an entry (see EntrySchema). */
export function compactEntry(e: EntryObject): z.infer<typeof EntrySchema> {
  const plain = e.size === undefined && e.secret === undefined;
  if (plain && e.type === 'file') return e.path;
  if (plain && e.type === 'directory') return `${e.path}/`;
  return e;
}

export const ListDirectoryOutput = z.object({
  path: z.string().describe('Absolute resolved directory'),
  entries: z
    .array(EntrySchema)
    .describe('A file is its path, a directory its path and "/"; other kinds, secrets and long entries are objects'),
  truncated: z.boolean(),
  next_cursor: z.string().nullable(),
  skipped: z.object({
    unreadable: z.number().int().describe('Directories that could not be read'),
    name_too_long: z
      .number()
      .int()
      .describe('Directories whose path is longer than the OS accepts (PATH_MAX), not listed'),
    too_deep: z
      .number()
      .int()
      .optional()
      .describe('Directories past 256 path components, not listed; present when > 0'),
    ignore_rules: z
      .number()
      .int()
      .optional()
      .describe(
        '.gitignore lines not applied because they exceed the pattern limits (they match nothing); present when > 0',
      ),
  }),
});

/**
 * One entry as a line of text: the path (quoted and C-escaped when it holds a control character, a line break, a
 * quote or a backslash: src/tools/text-safe.ts), `/` after a directory, the link note, the secret mark.
 */
export function entryLine(e: EntryObject): string {
  const suffix =
    e.type === 'directory'
      ? '/'
      : e.type === 'symlink'
        ? ` -> (link${e.link_target_type ? ` to ${e.link_target_type}` : ', target outside the roots or missing'})`
        : '';
  return `${quoteName(e.path)}${suffix}${e.secret ? '  [secret]' : ''}`;
}

/**
 * `jsonBytes(e)` of an entry built as list_directory builds it (keys in the order path, type, size, mtime, secret,
 * link_target_type), computed without serializing it (one JSON.stringify per entry was a tenth of a
 * page's time). test/tools/list-entry-bytes.test.ts pins it to jsonBytes. Units: bytes of UTF-8.
 */
export function entryBytes(e: EntryObject): number {
  // {"path":"…","type":"…"}
  let n = 21 + jsonStringBytes(e.path) + e.type.length;
  if (e.size !== undefined) n += 8 + String(e.size).length; // ,"size":N
  if (e.mtime !== undefined) n += 11 + jsonStringBytes(e.mtime); // ,"mtime":"…"
  if (e.secret !== undefined) n += 10 + String(e.secret).length; // ,"secret":true
  if (e.link_target_type !== undefined) n += 20 + (e.link_target_type === null ? 4 : e.link_target_type.length + 2);
  return n;
}

/** Where a list_directory page resumes: after this entry (its path relative to the listed directory). */
export const ListPosition = z.strictObject({ after: CursorPath });
