/**
 * Schema pieces shared by several tools, so a field means the same thing everywhere (wire names are snake_case).
 */
import { z } from 'zod';

/** A path argument (SPEC §4.1). */
export const PathArg = z.string().describe(
  'Absolute path, or relative to the first root (see list_allowed_directories). `~` is not expanded.');

/** A content hash (SPEC §5). */
export const ContentHash = z.string().regex(/^sha256:[0-9a-f]{64}$/)
  .describe('sha256: + 64 lower-case hex digits over the whole file\'s raw bytes');

/** Line-ending styles. */
export const EolSchema = z.enum(['lf', 'crlf', 'mixed', 'none']);

/** Include/exclude glob lists (micromatch dialect, matched in linear time by src/fs/glob; relative to the listed or searched directory). */
export const GlobList = z.array(z.string().min(1)).max(100);

/** Kinds of filesystem objects. */
export const KindSchema = z.enum(['file', 'directory', 'symlink', 'fifo', 'socket', 'block_device', 'char_device', 'other']);

/** Options that shape what a read returns (read_file, read_files). */
export const ReadOptionsShape = {
  start_line: z.number().int().min(1).optional().describe('First line to return (1-based). Default 1.'),
  end_line: z.number().int().min(1).optional().describe('Last line to return, inclusive. Default: end of file.'),
  head: z.number().int().min(1).max(10_000_000).optional().describe('Return the first N lines (instead of start_line/end_line).'),
  tail: z.number().int().min(1).max(10_000_000).optional().describe('Return the last N lines (instead of start_line/end_line).'),
  offset: z.number().int().min(0).optional()
    .describe('Byte offset to start at (continuing a cut line, or reading base64 chunks); excludes line options.'),
  max_bytes: z.number().int().min(1).optional()
    .describe('Most bytes of content to return; default and ceiling: the server\'s --max-read-bytes (262144).'),
  encoding: z.enum(['utf8', 'base64']).default('utf8')
    .describe('utf8 (default; a file that is not valid UTF-8 is refused with reason "binary") or base64 for raw bytes.'),
};

/** expected_hash of mutating tools (SPEC §5): a content hash, or "absent" for "must not exist". */
export const ExpectedHash = z.union([ContentHash, z.literal('absent')])
  .describe('Content hash the file must have now (from a read), or "absent" if it must not exist. Without it, '
    + '--auto-occ=block uses the hash this session last saw, and refuses (HASH_REQUIRED) if it never saw the file.');

/** expected_status_hash of mutating tools (SPEC §7). */
export const ExpectedStatusHash = z.string().regex(/^sha256:[0-9a-f]{64}$/)
  .describe('status_hash from git_status: refuse with STALE_GIT if the work tree changed since');

/** dry_run of mutating tools (SPEC §3.3). */
export const DryRun = z.boolean().default(false)
  .describe('Run every check and compute the result without writing (does not count against the budget)');

/** Result fields every file mutation reports. */
export const MutationResultShape = {
  path: z.string().describe('Absolute resolved path'),
  dry_run: z.boolean(),
  previous_hash: ContentHash.nullable().describe('Hash before the change (null: the file did not exist)'),
  content_hash: ContentHash.nullable().describe('Hash of the content now on disk (or that would be, for a dry run)'),
  external_change: z.boolean().optional().describe('--auto-occ=warn: the file changed since this session saw it'),
  warnings: z.array(z.string()).optional(),
  status_hash: z.string().optional().describe('Work tree status hash after the change (when expected_status_hash was given)'),
};
