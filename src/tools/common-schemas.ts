/**
 * Schema pieces shared by several tools, so a field means the same thing everywhere (wire names are snake_case).
 */
import { z } from 'zod';

/** A path argument (docs/security.md "Roots"). */
export const PathArg = z.string(); // absolute, or relative to the first root: said once, in the server instructions

/** A content hash (docs/errors.md "Optimistic concurrency"). */
export const ContentHash = z
  .string()
  .regex(/^sha256:[0-9a-f]{64}$/)
  .describe("sha256: + 64 lower-case hex digits over the whole file's raw bytes");

/** Line-ending styles. */
export const EolSchema = z.enum(['lf', 'crlf', 'mixed', 'none']);

/** Include/exclude glob lists (micromatch dialect, matched in linear time by src/fs/glob; relative to the listed or searched directory). */
export const GlobList = z.array(z.string().min(1)).max(100).describe('Globs');

/** Kinds of filesystem objects. */
export const KindSchema = z.enum([
  'file',
  'directory',
  'symlink',
  'fifo',
  'socket',
  'block_device',
  'char_device',
  'other',
]);

/** Options that shape what a read returns (read_file, read_files). */
export const ReadOptionsShape = {
  start_line: z.number().int().min(1).optional().describe('From 1'),
  end_line: z.number().int().min(1).optional().describe('Inclusive'),
  head: z.number().int().min(1).max(10_000_000).optional(),
  tail: z.number().int().min(1).max(10_000_000).optional(),
  offset: z.number().int().min(0).optional().describe('From continuation'),
  max_bytes: z.number().int().min(1).optional().describe('Default and most 262144'),
  encoding: z.enum(['utf8', 'base64']).default('utf8').describe('Default utf8'),
};

/** expected_hash of mutating tools (docs/errors.md "Optimistic concurrency"): a content hash, or "absent" for "must not exist". */
export const ExpectedHash = z
  .string()
  .regex(/^(?:sha256:[0-9a-f]{64}|absent)$/)
  .describe('content_hash from a read, or "absent"');

/** on_conflict of edit_file and apply_patch (docs/tools.md "Merging instead of refusing"). */
export const OnConflict = z.enum(['fail', 'merge']).describe("merge: keep others' edits elsewhere");

/** What a merged mutation reports (on_conflict "merge"). */
export const MergedResult = z
  .object({
    base_hash: z.string(),
    current_hash_before: z.string(),
    changed_ranges: z.array(z.tuple([z.number().int(), z.number().int()])).describe('Their lines in the new file'),
  })
  .optional();

/** expected_status_hash of mutating tools (docs/security.md "What git may read"). */
export const ExpectedStatusHash = z.string().regex(/^sha256:[0-9a-f]{64}$/); // the name says it: git_status's status_hash

/** dry_run of mutating tools (docs/errors.md "Order of checks"). */
export const DryRun = z.boolean().default(false);

/**
 * Result fields every file mutation reports (docs/tools.md): `path` only when it is news — the real path changed differs
 * from the path asked (a link was followed); the caller named the file.
 */
export const MutationResultShape = {
  path: z.string().optional().describe('Only when a link was followed: the real path changed'),
  dry_run: z.boolean(),
  previous_hash: ContentHash.nullable().describe('Hash before the change (null: the file did not exist)'),
  content_hash: ContentHash.nullable().describe('Hash of the content now on disk (or that would be, for a dry run)'),
  external_change: z.boolean().optional().describe('--auto-occ=warn: the file changed since this session saw it'),
  warnings: z.array(z.string()).optional(),
  status_hash: z
    .string()
    .optional()
    .describe('Work tree status hash after the change (when expected_status_hash was given)'),
};
