/**
 * search_files' contract (docs/tools.md): its input and output schemas, and the position a cursor resumes at. The
 * tool (src/tools/search-files.ts) declares these; this file changes when the contract changes.
 */
import { z } from 'zod';
import { GlobList, PathArg } from './common-schemas.js';
import { CursorCount, CursorPath } from './cursor.js';
import { MatchSchema } from './search-line.js';

export const SearchFilesInput = z.strictObject({
  path: PathArg.default('.').describe('Default: the first root'),
  glob: z.string().min(1).optional().describe('e.g. **/*.ts'),
  query: z.string().min(1).optional().describe('Text to find'),
  regex: z.boolean().default(false).describe('query is a JS regex'),
  case_sensitive: z.boolean().default(true).describe('Default true'),
  context_lines: z.number().int().min(0).max(10).default(0).describe('0-10 (default 0)'),
  include: GlobList.optional(),
  exclude: GlobList.optional(),
  respect_gitignore: z.boolean().default(true).describe('Default true'),
  max_results: z.number().int().min(1).optional().describe('Default and most 500'),
  cursor: z.string().optional(),
  output_mode: z
    .enum(['matches', 'files_with_matches', 'count'])
    .default('matches')
    .describe('With query: matches (default), files_with_matches, count'),
});

export const SearchFilesOutput = z.object({
  path: z.string().describe('Absolute resolved directory searched'),
  mode: z.enum(['glob', 'content']),
  files: z
    .array(z.string())
    .optional()
    .describe('Glob search or output_mode files_with_matches (only then present): file paths, relative to path'),
  matches: z.array(MatchSchema).optional().describe('Content search, output_mode matches (only then present)'),
  counts: z
    .array(z.object({ path: z.string(), count: z.number().int() }))
    .optional()
    .describe('output_mode count (only then present): matching lines per file (files with none are left out)'),
  output_mode: z.enum(['matches', 'files_with_matches', 'count']),
  files_scanned: z.number().int(),
  files_matched: z.number().int(),
  skipped: z
    .object({
      secret: z.number().int().optional(),
      binary: z.number().int().optional(),
      too_large: z.number().int().optional(),
      policy: z.number().int().optional(),
      unreadable: z.number().int().optional().describe('Directories or files that could not be read'),
      too_deep: z
        .number()
        .int()
        .optional()
        .describe("Directories past the walk's depth limit (64) or 256 path components, not searched"),
      name_too_long: z
        .number()
        .int()
        .optional()
        .describe('Directories whose path is longer than the OS accepts (PATH_MAX), not searched'),
      ignore_rules: z
        .number()
        .int()
        .optional()
        .describe('.gitignore lines not applied because they exceed the pattern limits (they match nothing)'),
    })
    .optional()
    .describe('What was not searched, by reason; only reasons > 0, and absent when nothing was skipped'),
  truncated: z.boolean(),
  next_cursor: z.string().optional().describe('Present when truncated: pass it as cursor for the next page'),
});

/**
 * Where a search_files page resumes (src/tools/search-page.ts): after a glob result, or at a file after its first
 * `skip` matches (paths relative to the searched directory).
 */
export const SearchPosition = z.union([
  z.strictObject({ after: CursorPath }),
  z.strictObject({ file: CursorPath, skip: CursorCount }),
]);
