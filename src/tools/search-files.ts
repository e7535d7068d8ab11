/**
 * search_files (docs/tools.md): find files by glob and/or lines by content (literal, or a regular expression when
 * `regex: true`), over the shared walker (deterministic order, .gitignore, no symlinks followed). Content search
 * skips secret files, policy-denied files, binary files and files over the size cap, and counts each; results are
 * capped and continue with a cursor; a regular expression runs bounded (src/fs/line-matcher.ts).
 *
 * This file holds the contract (schemas, definition) and the loop; the three steps live apart:
 * src/tools/search-walk.ts (what is visited, walk skips), src/tools/search-match.ts (what a candidate holds),
 * src/tools/search-page.ts (what a page returns, its cursor and text).
 */
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { globMatcher, type WalkItem } from '../fs/walk.js';
import { ReadTicket } from '../fs/search-reader.js';
import { patternBudget } from '../fs/glob/glob.js';
import { createLineMatcher } from '../fs/line-matcher.js';
import { authorizeRead } from '../policy/authorize.js';
import { HOST_FLAVOR } from '../policy/containment.js';
import { GlobList, PathArg } from './common-schemas.js';
import { CursorCount, CursorPath, decodeCursor, encodeCursor, queryFingerprint } from './cursor.js';
import { defineTool } from './define-tool.js';
import { contentMatcher, READ_AHEAD, type ContentMatch, type Loaded, type Started } from './search-match.js';
import { MatchSchema, SearchPage } from './search-page.js';
import { NO_SKIPS, searchWalk, type SearchWalk, type WalkSkipCounts } from './search-walk.js';

/** Wall-clock budget of one search call, ms; past it the call returns what it has with a cursor. */
const SEARCH_TIME_BUDGET_MS = 20_000;

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
      too_deep: z.number().int().optional().describe("Directories below the walk's depth limit (64), not searched"),
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
const SearchPosition = z.union([
  z.strictObject({ after: CursorPath }),
  z.strictObject({ file: CursorPath, skip: CursorCount }),
]);

export const searchFiles = defineTool({
  name: 'search_files',
  title: 'Search files',
  description:
    'Find files by glob and/or lines by text (literal, or JS regex if regex: true). Respects .gitignore; skips ' +
    'secret, binary, >10 MiB files (counted). Paged (next_cursor). output_mode ' +
    'files_with_matches/count: paths or per-file counts. Needs glob or query (VALIDATION).',
  group: 'fs-read',
  input: SearchFilesInput,
  output: SearchFilesOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path],
  // A heavy call: the server runs it through the heavy-call queue (src/tools/heavy-calls.ts).
  heavy: () => ['walk'],
  async run(args, ctx) {
    if (args.glob === undefined && args.query === undefined) {
      throw new ToolError('VALIDATION', 'search_files needs a glob, a query, or both.', {
        details: { reason: 'missing_field', field: 'query' },
        suggestion: 'Pass query (text to find) and/or glob (e.g. "**/*.ts").',
      });
    }
    const matcher =
      args.query !== undefined
        ? createLineMatcher(args.query, { regex: args.regex, caseSensitive: args.case_sensitive })
        : null;
    const outputMode = args.output_mode;
    if (args.query === undefined && outputMode === 'count') {
      throw new ToolError('VALIDATION', 'output_mode "count" needs a query.', {
        details: { reason: 'missing_field', field: 'query' },
        suggestion: 'Pass query, or use output_mode "files_with_matches" (or no output_mode) for a glob-only listing.',
      });
    }
    // Issue #18: the modes page differently (per file, not per match), so a cursor of one mode is not another's.
    const fingerprint = queryFingerprint([
      'search_files',
      args.path,
      args.glob,
      args.query,
      args.regex,
      args.case_sensitive,
      args.context_lines,
      args.include,
      args.exclude,
      args.respect_gitignore,
      ...(outputMode === 'matches' ? [] : [outputMode]),
    ]);
    const position = args.cursor ? decodeCursor(args.cursor, fingerprint, SearchPosition) : null;
    // Patterns are arguments: one over the limits is VALIDATION (pattern_too_complex) before any path is looked at.
    const patterns = patternBudget();
    const globMatch = globMatcher(
      args.glob === undefined ? undefined : [args.glob],
      HOST_FLAVOR.caseInsensitive,
      'glob',
      patterns,
    );
    globMatcher(args.include, HOST_FLAVOR.caseInsensitive, 'include', patterns);
    globMatcher(args.exclude, HOST_FLAVOR.caseInsensitive, 'exclude', patterns);
    const target = await authorizeRead(args.path, ctx.policy, { kind: 'any' });
    const limits = ctx.config.limits;
    const maxResults = Math.min(args.max_results ?? limits.maxSearchResults, limits.maxSearchResults);
    const mode = matcher ? 'content' : 'glob';
    const resumeFile = position && 'file' in position ? position.file : null;
    const resumeSkip = position && 'file' in position ? position.skip : 0;
    const resumeAfter = position && 'after' in position ? position.after : null;
    const deadline = Date.now() + SEARCH_TIME_BUDGET_MS;

    // Step 1: what is visited. Step 2: what each candidate holds. Step 3: what the page returns.
    const walk = searchWalk({
      target,
      policy: ctx.policy,
      respectGitignore: args.respect_gitignore,
      include: args.include,
      exclude: args.exclude,
      resume:
        resumeFile !== null
          ? { components: resumeFile.split('/'), inclusive: true }
          : resumeAfter !== null
            ? { components: resumeAfter.split('/'), inclusive: false }
            : null,
      signal: ctx.signal,
    });
    const content = matcher
      ? contentMatcher({
          policy: ctx.policy,
          matcher,
          query: args.query!,
          regex: args.regex,
          caseSensitive: args.case_sensitive,
          maxFileBytes: limits.maxSearchFileBytes,
        })
      : null;
    const page = new SearchPage({
      mode,
      outputMode,
      maxResults,
      contextLines: args.context_lines,
      resumeFile,
      resumeSkip,
    });

    // Issue #19: the walk hands each entry to `pageEntries` (no async-iteration step per entry); candidate files
    // go to the reader threads at once, and the page consumes the entries strictly in walk order.
    const pager = pageEntries({ walk, content, globMatch, page, deadline });
    await walk.run(pager.sink);
    await pager.drain();
    if (!page.truncated) page.finishWalk(walk.takeSkips());
    const ignoreRules = walk.ignoreRules();
    if (ignoreRules > 0) page.skipped.ignore_rules = ignoreRules;
    const nextCursor = page.truncated && page.next ? encodeCursor(fingerprint, page.next) : null;
    // Issue #15: only the result array of this kind of search, only the skip reasons that happened, the cursor
    // only when there is a next page (structured-first clients show all of it to their model, JSON-escaped).
    const nonZeroSkips = Object.fromEntries(Object.entries(page.skipped).filter(([, n]) => n > 0));
    const structured: z.infer<typeof SearchFilesOutput> = {
      path: target.real,
      mode,
      output_mode: outputMode,
      ...(mode === 'glob' || outputMode === 'files_with_matches'
        ? { files: page.files }
        : outputMode === 'count'
          ? { counts: page.counts }
          : { matches: page.matches }),
      files_scanned: page.filesScanned,
      files_matched: page.filesMatched,
      ...(Object.keys(nonZeroSkips).length > 0 ? { skipped: nonZeroSkips } : {}),
      truncated: page.truncated,
      ...(nextCursor !== null ? { next_cursor: nextCursor } : {}),
    };
    return { structured, text: page.text(nextCursor), audit: { paths: [target.real] } };
  },
});

/** What `pageEntries` works with. */
interface PageEntriesOptions {
  walk: SearchWalk;
  content: ContentMatch | null;
  globMatch: ((relative: string) => boolean) | null;
  page: SearchPage;
  /** Date.now() past which the page stops (SEARCH_TIME_BUDGET_MS), ms since the epoch. */
  deadline: number;
}

/**
 * The walk's sink for one page (this was an async generator of read-ahead over the walk's own, a promise
 * and an iterator step per entry at each level): each entry is prepared as the walk reaches it (its skips taken, a
 * wanted file handed to the reader threads) and queued; the queue is paged in walk order as far as the outcomes are
 * there. The walk goes on while the head waits for its batch, up to READ_AHEAD entries queued (a glob search queues
 * none: it has nothing to read); then, or when the head must be read on this thread, the walk waits for the page.
 * The sink returns false (the walk stops) once the page is full or out of time; after the walk, `drain` pages what is
 * still queued.
 */
function pageEntries(o: PageEntriesOptions): {
  sink: (entry: WalkItem, name: string) => boolean | Promise<boolean>;
  drain: () => Promise<void>;
} {
  const { walk, content, globMatch, page, deadline } = o;
  // A ring of READ_AHEAD slots in three arrays (no object per entry): `head` is the next entry to page, `count` how
  // many are queued. A slot's `started` is NOT_WANTED (not a file the search wants), null (a wanted file with nothing
  // to read: a glob search), or what content search started for it (a ticket, or a known outcome).
  const entries = new Array<WalkItem | undefined>(READ_AHEAD);
  const skipsOf = new Array<WalkSkipCounts | undefined>(READ_AHEAD);
  const startedOf = new Array<Started | null | typeof NOT_WANTED | undefined>(READ_AHEAD);
  let head = 0;
  let count = 0;
  let stopped = false;

  /** Pages a loaded candidate (content search). */
  const addLoaded = (entry: WalkItem, loaded: Loaded): void => {
    if (loaded.kind === 'no_match') page.scannedWithoutMatch();
    else if (loaded.kind !== 'text') page.skippedFile(loaded.kind);
    else if (!page.addFileMatches(entry.relative, loaded.text, loaded.hits)) stopped = true;
  };

  /**
   * Pages queued entries while their outcomes are at hand. Returns null when the queue is empty or the page stopped,
   * the head's ticket when its batch is not answered yet, or a promise (to be awaited before anything else is paged)
   * when the head is being read on this thread.
   */
  const pageReady = (): ReadTicket | Promise<void> | null => {
    while (count > 0 && !stopped) {
      const started = startedOf[head]!;
      if (started instanceof ReadTicket && started.outcome === undefined) return started;
      const entry = entries[head]!;
      page.beforeEntry(skipsOf[head]!);
      entries[head] = undefined;
      skipsOf[head] = undefined;
      startedOf[head] = undefined;
      head = head + 1 === READ_AHEAD ? 0 : head + 1;
      count--;
      if (started === NOT_WANTED) continue;
      if (Date.now() > deadline) {
        page.stopAt(entry.relative);
        stopped = true;
        return null;
      }
      if (started === null) {
        if (!page.addFile(entry.relative)) stopped = true;
        continue;
      }
      page.commitSkips();
      const loaded = started instanceof ReadTicket ? content!.finish(entry, started.outcome!) : started;
      if (loaded instanceof Promise) return loaded.then((l) => addLoaded(entry, l));
      addLoaded(entry, loaded);
    }
    return null;
  };

  /**
   * Pages until fewer than `room` entries are queued (1: all of them), waiting where it must; `next` is what the last
   * `pageReady` returned (a promise there must be awaited before anything else is paged).
   */
  const drain = async (room: number, next: ReadTicket | Promise<void> | null): Promise<boolean> => {
    for (;;) {
      if (stopped) return false;
      if (next === null) return true;
      if (next instanceof Promise) await next;
      else if (count >= room) await next.wait();
      else return true;
      next = pageReady();
    }
  };

  const sink = (entry: WalkItem, name: string): boolean | Promise<boolean> => {
    const skips = walk.takeSkips();
    const wanted = entry.type === 'file' && (globMatch === null || globMatch(entry.relative));
    if (!wanted && (count === 0 || skips === NO_SKIPS)) {
      // Nothing queued ahead of it, or nothing to page (no skips before it): paged at once.
      page.beforeEntry(skips);
      return true;
    }
    const tail = head + count < READ_AHEAD ? head + count : head + count - READ_AHEAD;
    entries[tail] = entry;
    skipsOf[tail] = skips;
    startedOf[tail] = !wanted ? NOT_WANTED : content !== null ? content.start(entry, name) : null;
    count++;
    const next = pageReady();
    if (stopped) return false;
    if (next === null || (!(next instanceof Promise) && count < READ_AHEAD)) return true;
    return drain(READ_AHEAD, next);
  };
  return {
    sink,
    drain: async () => {
      await drain(1, pageReady());
    },
  };
}

/** `pageEntries`' mark of a queued entry the search does not want (a directory, a link, a file the glob skips). */
const NOT_WANTED = Symbol('not wanted');
