/**
 * search_files (docs/tools.md): find files by glob and/or lines by content (literal, or a regular expression when
 * `regex: true`), over the shared walker (deterministic order, .gitignore, no symlinks followed). Content search
 * skips secret files, policy-denied files, binary files and files over the size cap, and counts each; results are
 * capped and continue with a cursor; a regular expression runs bounded (src/fs/search-reader.ts).
 *
 * This file holds the definition and the call's order; the contract is src/tools/search-schema.ts, the loop
 * src/tools/search-pager.ts, and the three steps live apart: src/tools/search-walk.ts (what is visited, walk skips),
 * src/tools/search-match.ts (what a candidate holds), src/tools/search-page.ts (what a page returns, its cursor and
 * text).
 */
import type { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { globMatcher } from '../fs/walk.js';
import { patternBudget } from '../fs/glob/glob.js';
import { createLineMatcher, type LineMatcher } from '../fs/line-matcher.js';
import { authorizeRead, type AuthorizedPath } from '../policy/authorize.js';
import { HOST_FLAVOR } from '../policy/containment.js';
import { decodeCursor, encodeCursor, queryFingerprint } from './cursor.js';
import { defineTool } from './define-tool.js';
import { contentMatcher } from './search-match.js';
import { SearchPage } from './search-page.js';
import { pageEntries } from './search-pager.js';
import { SearchFilesInput, SearchFilesOutput, SearchPosition } from './search-schema.js';
import { searchWalk, type WalkResume } from './search-walk.js';

/** Wall-clock budget of one search call, ms; past it the call returns what it has with a cursor. */
const SEARCH_TIME_BUDGET_MS = 20_000;

type SearchArgs = z.infer<typeof SearchFilesInput>;

/**
 * The query compiled, after the argument rules: a glob or a query is needed, and `count` needs a query.
 * @throws ToolError VALIDATION missing_field, invalid_regex, query_too_long
 */
function compileQuery(args: SearchArgs): LineMatcher | null {
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
  if (args.query === undefined && args.output_mode === 'count') {
    throw new ToolError('VALIDATION', 'output_mode "count" needs a query.', {
      details: { reason: 'missing_field', field: 'query' },
      suggestion: 'Pass query, or use output_mode "files_with_matches" (or no output_mode) for a glob-only listing.',
    });
  }
  return matcher;
}

/** What a cursor of this call's arguments is bound to (the modes page differently, so one mode's is not another's). */
function fingerprintOf(args: SearchArgs): string {
  return queryFingerprint([
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
    ...(args.output_mode === 'matches' ? [] : [args.output_mode]),
  ]);
}

/**
 * The glob's matcher (null without one), after checking every pattern argument against the limits, before any path
 * is looked at. @throws ToolError VALIDATION pattern_too_complex
 */
function compilePatterns(args: SearchArgs): ((relative: string) => boolean) | null {
  const patterns = patternBudget();
  const nocase = HOST_FLAVOR.caseInsensitive;
  const globMatch = globMatcher(args.glob === undefined ? undefined : [args.glob], nocase, 'glob', patterns);
  globMatcher(args.include, nocase, 'include', patterns);
  globMatcher(args.exclude, nocase, 'exclude', patterns);
  return globMatch;
}

/** The structured result of a finished page: only the result array of its kind, skips > 0, a cursor when truncated. */
function resultOf(
  target: AuthorizedPath,
  page: SearchPage,
  modes: { mode: 'glob' | 'content'; outputMode: SearchArgs['output_mode'] },
  nextCursor: string | null,
): z.infer<typeof SearchFilesOutput> {
  const { mode, outputMode } = modes;
  const nonZeroSkips = Object.fromEntries(Object.entries(page.skipped).filter(([, n]) => n > 0));
  return {
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
}

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
    const matcher = compileQuery(args);
    const fingerprint = fingerprintOf(args);
    const position = args.cursor ? decodeCursor(args.cursor, fingerprint, SearchPosition) : null;
    const globMatch = compilePatterns(args);
    const target = await authorizeRead(args.path, ctx.policy, { kind: 'any' });
    const limits = ctx.config.limits;
    const resumeFile = position && 'file' in position ? position.file : null;
    const resumeAfter = position && 'after' in position ? position.after : null;
    const resume: WalkResume =
      resumeFile !== null
        ? { components: resumeFile.split('/'), inclusive: true }
        : resumeAfter !== null
          ? { components: resumeAfter.split('/'), inclusive: false }
          : null;

    // Step 1: what is visited. Step 2: what each candidate holds. Step 3: what the page returns.
    const { respect_gitignore: respectGitignore, include, exclude } = args;
    const walk = searchWalk({
      target,
      policy: ctx.policy,
      respectGitignore,
      include,
      exclude,
      resume,
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
    const mode = matcher ? 'content' : 'glob';
    const page = new SearchPage({
      mode,
      outputMode: args.output_mode,
      maxResults: Math.min(args.max_results ?? limits.maxSearchResults, limits.maxSearchResults),
      contextLines: args.context_lines,
      resumeFile,
      resumeSkip: position && 'file' in position ? position.skip : 0,
    });

    // The walk hands each entry to the pager (no async-iteration step per entry); candidate files go to the reader
    // threads at once, and the page consumes the entries strictly in walk order.
    const pager = pageEntries({ walk, content, globMatch, page, deadline: Date.now() + SEARCH_TIME_BUDGET_MS });
    await walk.run(pager.sink);
    await pager.drain();
    if (!page.truncated) page.finishWalk(walk.takeSkips());
    const ignoreRules = walk.ignoreRules();
    if (ignoreRules > 0) page.skipped.ignore_rules = ignoreRules;
    const nextCursor = page.truncated && page.next ? encodeCursor(fingerprint, page.next) : null;
    const structured = resultOf(target, page, { mode, outputMode: args.output_mode }, nextCursor);
    return { structured, text: page.text(nextCursor), audit: { paths: [target.real] } };
  },
});
