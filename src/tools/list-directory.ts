/**
 * list_directory (SPEC §6): entries of a directory tree up to `depth`, in deterministic order, paged with a cursor.
 * Symlinks are reported as links (never descended), with their target's type only when the target is inside the
 * roots. Secret names are shown and marked; policy-hidden and denied entries are omitted; .gitignore is honoured by
 * default.
 */
import { realpath, stat as fsStat } from 'node:fs/promises';
import { z } from 'zod';
import { globMatcher, walkTree, type WalkEntry } from '../fs/walk.js';
import { patternBudget } from '../fs/glob/glob.js';
import { authorizeRead, classifyEntry, kindOf } from '../policy/authorize.js';
import { findContainingRoot, HOST_FLAVOR } from '../policy/containment.js';
import { GlobList, KindSchema, PathArg } from './common-schemas.js';
import { decodeCursor, encodeCursor, queryFingerprint } from './cursor.js';
import { defineTool, type ToolContext } from './define-tool.js';

export const ListDirectoryInput = z.strictObject({
  path: PathArg.default('.').describe('Directory to list; default the first root'),
  depth: z.number().int().min(1).max(20).default(1).describe('1 = direct children (default); up to 20'),
  include: GlobList.optional().describe('Only entries matching one of these globs (a glob without / matches the name)'),
  exclude: GlobList.optional().describe('Skip entries matching these globs (directories are not descended)'),
  respect_gitignore: z.boolean().default(true).describe('Skip what .gitignore files ignore (default true)'),
  max_entries: z.number().int().min(1).optional().describe('Entries per page; default and ceiling --max-list-entries (1000)'),
  cursor: z.string().optional().describe('next_cursor from the previous page'),
});

const EntrySchema = z.object({
  path: z.string().describe('Relative to the listed directory, / separated'),
  type: KindSchema,
  size: z.number().int().describe('Bytes (of the link itself for a symlink)'),
  mtime: z.string().describe('ISO 8601'),
  secret: z.boolean().optional().describe('Present and true for a secret filename'),
  link_target_type: KindSchema.nullable().optional()
    .describe('Symlinks only: the target\'s type when it is inside the roots, else null'),
});

export const ListDirectoryOutput = z.object({
  path: z.string().describe('Absolute resolved directory'),
  entries: z.array(EntrySchema),
  truncated: z.boolean(),
  next_cursor: z.string().nullable(),
  skipped: z.object({
    unreadable: z.number().int().describe('Directories that could not be read'),
    ignore_rules: z.number().int().optional()
      .describe('.gitignore lines not applied because they exceed the pattern limits (they match nothing); present when > 0'),
  }),
});

async function linkTargetType(entry: WalkEntry, ctx: ToolContext): Promise<z.infer<typeof KindSchema> | null> {
  try {
    const target = await realpath(entry.absolute);
    if (!findContainingRoot(ctx.policy.roots, target, HOST_FLAVOR)) return null;
    return kindOf(await fsStat(target));
  } catch {
    return null; // dangling or unreadable
  }
}

export const listDirectory = defineTool({
  name: 'list_directory',
  title: 'List directory',
  description: 'List a directory (depth 1 by default, up to 20) in a stable order: each entry\'s relative path, type, '
    + 'size and mtime. Symlinks are shown as links and never followed. Secret files are listed with secret: true; '
    + 'policy-hidden entries are omitted; .gitignore is respected by default; .git is not descended. At most '
    + 'max_entries (default 1000) per page: truncated and next_cursor continue. Fails with NOT_ALLOWED, NOT_FOUND, '
    + 'VALIDATION (not a directory; bad cursor).',
  group: 'fs-read',
  input: ListDirectoryInput,
  output: ListDirectoryOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path],
  async run(args, ctx) {
    const fingerprint = queryFingerprint(['list_directory', args.path, args.depth, args.include, args.exclude,
      args.respect_gitignore]);
    const resumeAfter = args.cursor ? String(decodeCursor(args.cursor, fingerprint).after ?? '') : null;
    // Patterns are arguments: one over the limits is VALIDATION (pattern_too_complex) before any path is looked at.
    const budget = patternBudget();
    globMatcher(args.include, HOST_FLAVOR.caseInsensitive, 'include', budget);
    globMatcher(args.exclude, HOST_FLAVOR.caseInsensitive, 'exclude', budget);
    const target = await authorizeRead(args.path, ctx.policy, { kind: 'directory' });
    const maxEntries = Math.min(args.max_entries ?? ctx.config.limits.maxListEntries, ctx.config.limits.maxListEntries);
    const entries: z.infer<typeof EntrySchema>[] = [];
    let unreadable = 0;
    let ignoreRules = 0;
    let pendingUnreadable = 0;
    let truncated = false;
    const walk = walkTree({
      base: target.real,
      rootReal: target.root.real,
      maxDepth: args.depth,
      respectGitignore: args.respect_gitignore,
      include: args.include,
      exclude: args.exclude,
      resume: resumeAfter ? { components: resumeAfter.split('/'), inclusive: false } : null,
      filter: (abs, rel) => {
        const v = classifyEntry(ctx.policy, abs, rel);
        return v.hidden || v.denied ? 'omit' : 'ok';
      },
      // Counted once an entry after the skip is on this page: a skip after the page's last entry is seen again by
      // the next page, which resumes there.
      onSkip: (reason) => {
        if (reason === 'unreadable') pendingUnreadable++;
        else if (reason === 'ignore_rule') ignoreRules++;
      },
      signal: ctx.signal,
      nocase: HOST_FLAVOR.caseInsensitive,
    });
    for await (const entry of walk) {
      if (entries.length >= maxEntries) {
        truncated = true;
        break;
      }
      unreadable += pendingUnreadable;
      pendingUnreadable = 0;
      const type = kindOf(entry.stats);
      const secret = classifyEntry(ctx.policy, entry.absolute, entry.rootRelative).secret;
      entries.push({
        path: entry.relative,
        type,
        size: entry.stats.size,
        mtime: entry.stats.mtime.toISOString(),
        ...(secret ? { secret: true } : {}),
        ...(type === 'symlink' ? { link_target_type: await linkTargetType(entry, ctx) } : {}),
      });
    }
    if (!truncated) unreadable += pendingUnreadable;
    const last = entries[entries.length - 1];
    const nextCursor = truncated && last ? encodeCursor(fingerprint, { after: last.path }) : null;
    const lines = entries.map((e) => {
      const suffix = e.type === 'directory' ? '/' : e.type === 'symlink'
        ? ` -> (link${e.link_target_type ? ` to ${e.link_target_type}` : ', target outside the roots or missing'})` : '';
      return `${e.path}${suffix}${e.secret ? '  [secret]' : ''}`;
    });
    if (truncated) lines.push(`[fs-tools: listing truncated at ${entries.length} entries; pass cursor to continue]`);
    if (entries.length === 0) lines.push('(empty)');
    return {
      structured: {
        path: target.real, entries, truncated, next_cursor: nextCursor,
        skipped: { unreadable, ...(ignoreRules > 0 ? { ignore_rules: ignoreRules } : {}) },
      },
      text: lines.join('\n'),
      audit: { paths: [target.real] },
    };
  },
});
