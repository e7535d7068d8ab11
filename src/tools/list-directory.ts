/**
 * list_directory (docs/tools.md): entries of a directory tree up to `depth`, in deterministic order, paged with a cursor.
 * Symlinks are reported as links (never descended), with their target's type only when the target is inside the
 * roots. Secret names are shown and marked; policy-hidden and denied entries are omitted; .gitignore is honoured by
 * default.
 */
import { z } from 'zod';
import { globMatcher, walkInto, type WalkEntry, type WalkItem } from '../fs/walk.js';
import { patternBudget } from '../fs/glob/glob.js';
import { authorizeRead, kindOf, linkTargetKind, walkEntryClassifier } from '../policy/authorize.js';
import { childOf } from '../policy/resolve-path.js';
import { HOST_FLAVOR } from '../policy/containment.js';
import { GlobList, KindSchema, PathArg } from './common-schemas.js';
import { afterCursorBytesBound, CursorPath, decodeCursor, encodeCursor, queryFingerprint } from './cursor.js';
import { defineTool } from './define-tool.js';
import { quoteName } from './text-safe.js';
import { jsonStringBytes, ResponseBudget } from './response-budget.js';

/** Default page of a `long` listing (at most --max-list-entries): entries, each an object with size and mtime. */
export const LONG_PAGE_ENTRIES = 1000;
/** Bytes of the text's truncation line around its cursor (`[fs-tools: listing truncated at N entries; …]`), at most. */
const CURSOR_LINE_BYTES = 96;

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
const EntrySchema = z.union([z.string(), EntryObjectSchema]);
type EntryObject = z.infer<typeof EntryObjectSchema>;

/** The compact form of an entry (see EntrySchema). */
function compactEntry(e: EntryObject): z.infer<typeof EntrySchema> {
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
function entryLine(e: EntryObject): string {
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
const ListPosition = z.strictObject({ after: CursorPath });

export const listDirectory = defineTool({
  name: 'list_directory',
  title: 'List directory',
  description:
    'List a directory in stable order: a file as its path, a directory as path/; links (not followed), secrets, ' +
    'other kinds and long (size, mtime) as objects. .gitignore respected. Paged ' +
    '(next_cursor). Fails on a file (VALIDATION).',
  group: 'fs-read',
  input: ListDirectoryInput,
  output: ListDirectoryOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path],
  // A heavy call: the server runs it through the heavy-call queue (src/tools/heavy-calls.ts).
  heavy: () => ['walk'],
  async run(args, ctx) {
    const fingerprint = queryFingerprint([
      'list_directory',
      args.path,
      args.depth,
      args.include,
      args.exclude,
      args.respect_gitignore,
    ]);
    // Where the page resumes: after this entry (the last one the previous page returned).
    const resumeAfter = args.cursor ? decodeCursor(args.cursor, fingerprint, ListPosition).after : null;
    // Patterns are arguments: one over the limits is VALIDATION (pattern_too_complex) before any path is looked at.
    const patterns = patternBudget();
    globMatcher(args.include, HOST_FLAVOR.caseInsensitive, 'include', patterns);
    globMatcher(args.exclude, HOST_FLAVOR.caseInsensitive, 'exclude', patterns);
    const target = await authorizeRead(args.path, ctx.policy, { kind: 'directory' });
    // Issue #19: a names-and-types page holds up to --max-list-entries (10,000) entries, one call for most
    // directories; a long one defaults to LONG_PAGE_ENTRIES (its entries are objects, three times the bytes).
    const most = ctx.config.limits.maxListEntries;
    const maxEntries = Math.min(args.max_entries ?? (args.long ? Math.min(LONG_PAGE_ENTRIES, most) : most), most);
    const entries: z.infer<typeof EntrySchema>[] = [];
    let lastPath: string | undefined;
    let unreadable = 0;
    let ignoreRules = 0;
    let pendingUnreadable = 0;
    let nameTooLong = 0;
    let pendingNameTooLong = 0;
    // Issue #14: each entry (structured + its text line) is charged to the response budget as it is added.
    const budget = new ResponseBudget();
    budget.charge(2048);
    const lines: string[] = [];
    let truncated = false;
    // The walk asks `filter` about an entry right before it hands it to the sink: its verdict is reused for the
    // secret mark (one classification per entry, not two).
    const verdict = { absolute: '', secret: false };
    const classify = walkEntryClassifier(ctx.policy);
    const walkOptions: Parameters<typeof walkInto>[0] = {
      base: target.real,
      rootReal: target.root.real,
      childOf,
      maxDepth: args.depth,
      respectGitignore: args.respect_gitignore,
      include: args.include,
      exclude: args.exclude,
      resume: resumeAfter ? { components: resumeAfter.split('/'), inclusive: false } : null,
      filter: (abs, rel, name) => {
        const c = classify(abs, rel, name);
        verdict.absolute = abs;
        verdict.secret = c === 'secret';
        return c === 'hidden' || c === 'denied' ? 'omit' : 'ok';
      },
      // Counted once an entry after the skip is on this page: a skip after the page's last entry is seen again by
      // the next page, which resumes there.
      onSkip: (reason) => {
        if (reason === 'unreadable') pendingUnreadable++;
        else if (reason === 'name_too_long') pendingNameTooLong++;
        else if (reason === 'ignore_rule') ignoreRules++;
      },
      signal: ctx.signal,
      nocase: HOST_FLAVOR.caseInsensitive,
      // Issue #19: names and types come from the directory listing itself (d_type); only `long` lstats entries.
      stats: args.long,
    };
    // One entry onto the page (false: the page is full, stop the walk). Synchronous for every entry but a
    // symlink, whose target type is looked up first (the walk hands entries to this sink in order,
    // right after its filter, instead of one async-iteration step each).
    const add = (entry: WalkItem | WalkEntry, linkTarget?: EntryObject['link_target_type']): boolean => {
      if (entries.length >= maxEntries) {
        truncated = true;
        return false;
      }
      const secret =
        verdict.absolute === entry.absolute
          ? verdict.secret
          : classify(entry.absolute, entry.rootRelative) === 'secret';
      let shaped: z.infer<typeof EntrySchema>;
      let line: string;
      let cost: number;
      if (!('stats' in entry) && !secret && (entry.type === 'file' || entry.type === 'directory')) {
        // Issue #19, the common entry (a plain file or directory of a names-and-types listing): its compact form
        // and its text line are the same string unless the name must be quoted (src/tools/text-safe.ts).
        shaped = entry.type === 'directory' ? `${entry.relative}/` : entry.relative;
        const quoted = quoteName(entry.relative);
        line = quoted === entry.relative ? shaped : entry.type === 'directory' ? `${quoted}/` : quoted;
        const bytes = jsonStringBytes(shaped);
        cost = bytes + (line === shaped ? bytes : jsonStringBytes(line)) + 2;
      } else {
        const type = 'stats' in entry ? kindOf(entry.stats) : (entry.special ?? entry.type);
        const item: EntryObject = {
          path: entry.relative,
          type,
          // Size and mtime only on request: they tripled a listing's bytes in every client's context.
          ...('stats' in entry ? { size: entry.stats.size, mtime: entry.stats.mtime.toISOString() } : {}),
          ...(secret ? { secret: true } : {}),
          ...(type === 'symlink' ? { link_target_type: linkTarget } : {}),
        };
        line = entryLine(item);
        shaped = compactEntry(item);
        cost = (typeof shaped === 'string' ? jsonStringBytes(shaped) : entryBytes(shaped)) + jsonStringBytes(line) + 2;
      }
      // Each entry also leaves room for the cursor that would follow it (next_cursor and the text's last line: a
      // deep path's cursor is kilobytes, past the fixed 2 KiB), so a truncated page stays within the budget.
      if (cost + 2 * afterCursorBytesBound(entry.relative.length) + CURSOR_LINE_BYTES > budget.remaining) {
        if (entries.length > 0) {
          truncated = true;
          return false;
        }
      }
      budget.charge(cost); // (the first entry always goes: a page makes progress)
      unreadable += pendingUnreadable;
      pendingUnreadable = 0;
      nameTooLong += pendingNameTooLong;
      pendingNameTooLong = 0;
      entries.push(shaped);
      lastPath = entry.relative;
      lines.push(line);
      return true;
    };
    await walkInto(walkOptions, (entry) =>
      ('stats' in entry ? entry.stats.isSymbolicLink() : entry.type === 'symlink')
        ? linkTargetKind(ctx.policy, entry.absolute).then((kind) => add(entry, kind))
        : add(entry),
    );
    if (!truncated) {
      unreadable += pendingUnreadable;
      nameTooLong += pendingNameTooLong;
    }
    const nextCursor = truncated && lastPath !== undefined ? encodeCursor(fingerprint, { after: lastPath }) : null;
    if (truncated)
      lines.push(`[fs-tools: listing truncated at ${entries.length} entries; continue with cursor: ${nextCursor}]`);
    if (entries.length === 0) lines.push('(empty)');
    return {
      structured: {
        path: target.real,
        entries,
        truncated,
        next_cursor: nextCursor,
        skipped: {
          unreadable,
          name_too_long: nameTooLong,
          ...(ignoreRules > 0 ? { ignore_rules: ignoreRules } : {}),
        },
      },
      text: lines.join('\n'),
      audit: { paths: [target.real] },
    };
  },
});
