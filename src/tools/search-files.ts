/**
 * search_files (SPEC §6, §6.1): find files by glob and/or lines by content (literal, or a regular expression when
 * `regex: true`), over the shared walker (deterministic order, .gitignore, no symlinks followed). Content search
 * skips secret files, policy-denied files, binary files and files over the size cap, and counts each; results are
 * capped and continue with a cursor; a regular expression runs bounded (src/fs/line-matcher.ts).
 */
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { openForRead } from '../fs/open-file.js';
import { looksBinary } from '../fs/text.js';
import { searchReaderPool, type ReadOutcome } from '../fs/search-reader.js';
import { globMatcher, walkTree, type WalkItem } from '../fs/walk.js';
import { patternBudget } from '../fs/glob/glob.js';
import { createLineMatcher, matcherSpec, regexTimeoutError, type LineHit } from '../fs/line-matcher.js';
import { authorizeRead, classifyEntry } from '../policy/authorize.js';
import { findContainingRoot, HOST_FLAVOR } from '../policy/containment.js';
import { GlobList, PathArg } from './common-schemas.js';
import { decodeCursor, encodeCursor, queryFingerprint } from './cursor.js';
import { runHeavy } from './heavy-calls.js';
import { defineTool } from './define-tool.js';
import { escapeLine, quoteName } from './text-safe.js';
import { jsonBytes, jsonStringBytes, ResponseBudget } from './response-budget.js';

/** Longest line text returned per match, in characters (longer lines are cut around the match). */
const MAX_LINE_CHARS = 400;
/** Wall-clock budget of one search call, ms; past it the call returns what it has with a cursor. */
const SEARCH_TIME_BUDGET_MS = 20_000;

export const SearchFilesInput = z.strictObject({
  path: PathArg.default('.').describe('Default: the first root'),
  glob: z.string().min(1).optional().describe('File glob, e.g. **/*.ts'),
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
    .describe('With query: matches (default), files_with_matches (paths), count (per file)'),
});

const MatchSchema = z.object({
  path: z.string().describe('Relative to the searched directory, / separated'),
  line: z.number().int().describe('1-based'),
  column: z.number().int().describe('1-based, in UTF-16 code units'),
  text: z.string().describe('The matching line (without its terminator; long lines are cut around the match)'),
  before: z.array(z.string()).optional(),
  after: z.array(z.string()).optional(),
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

type Match = z.infer<typeof MatchSchema>;

/**
 * A candidate file's content, or why content search skips it. `no_match`: a text file without the query's required
 * bytes (scanned, nothing to report).
 */
type Loaded =
  | { kind: 'secret' | 'too_large' | 'unreadable' | 'binary' | 'no_match' }
  | { kind: 'text'; text: string; hits?: LineHit[] };

/** A walk entry as the search loop sees it: the walk's skips before it, whether it is searched, its content. */
/** The walk's own skip reasons, counted per yielded entry. */
const WALK_SKIPS = ['policy', 'unreadable', 'too_deep', 'name_too_long'] as const;

/** The skips of an entry with none before it (shared: most entries). */
const NO_SKIPS: Readonly<Record<(typeof WALK_SKIPS)[number], number>> = Object.freeze({
  policy: 0,
  unreadable: 0,
  too_deep: 0,
  name_too_long: 0,
});

interface Prepared {
  skips: Readonly<Record<(typeof WALK_SKIPS)[number], number>>;
  wanted: boolean;
  loaded: () => Promise<Loaded>;
}

/**
 * How many walk entries are prepared ahead of the one being matched. Files are read concurrently with matching, by
 * the search reader threads (src/fs/search-reader.ts), and results are still consumed strictly in walk order, so
 * pages and cursors are unchanged. The window keeps every reader thread busy while the main thread walks.
 */
const READ_AHEAD = 256;
/**
 * Only candidates up to this size are held by read-ahead (bounds its memory to READ_AHEAD × this); a larger one is
 * read when the search gets to it.
 */
const READ_AHEAD_MAX_FILE_BYTES = 128 * 1024;

/**
 * Yields `[item, prepare(item)]` for each item of `source`, in order, calling `prepare` up to `size` items ahead of
 * the consumer. Stopping early (break) finishes `source`.
 */
/** An async source of exactly one item (a search over a single file). */
function oneItem<T>(item: T): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: () => {
      let given = false;
      return {
        next: (): Promise<IteratorResult<T>> => {
          const result: IteratorResult<T> = given ? { done: true, value: undefined } : { done: false, value: item };
          given = true;
          return Promise.resolve(result);
        },
      };
    },
  };
}

async function* readAhead<T, P>(
  source: AsyncIterable<T>,
  prepare: (item: T) => P,
  size: number,
): AsyncGenerator<[T, P]> {
  const iterator = source[Symbol.asyncIterator]();
  const queue: Array<[T, P]> = [];
  let done = false;
  try {
    for (;;) {
      while (!done && queue.length < size) {
        const step = await iterator.next();
        if (step.done) done = true;
        else queue.push([step.value, prepare(step.value)]);
      }
      const head = queue.shift();
      if (!head) return;
      yield head;
    }
  } finally {
    if (!done) await iterator.return?.();
  }
}

function cutLine(line: string, column: number): string {
  if (line.length <= MAX_LINE_CHARS) return line;
  const start = Math.max(0, Math.min(column - MAX_LINE_CHARS / 4, line.length - MAX_LINE_CHARS));
  return `${start > 0 ? '…' : ''}${line.slice(start, start + MAX_LINE_CHARS)}${start + MAX_LINE_CHARS < line.length ? '…' : ''}`;
}

/**
 * One match as text, grep style: `path:line:column: text` for the match, `path-line- text` for its context lines,
 * `--` after the group when context is shown. The path is quoted when unusual and the line texts have their control
 * characters escaped (src/tools/text-safe.ts), so each match or context line is exactly one line of output.
 */
function renderMatch(m: Match, withContext: boolean): string {
  const p = quoteName(m.path);
  return [
    ...(m.before ?? []).map((t, i, all) => `${p}-${m.line - all.length + i}- ${escapeLine(t)}`),
    `${p}:${m.line}:${m.column}: ${escapeLine(m.text)}`,
    ...(m.after ?? []).map((t, i) => `${p}-${m.line + 1 + i}- ${escapeLine(t)}`),
    ...(withContext ? ['--'] : []),
  ].join('\n');
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

export const searchFiles = defineTool({
  name: 'search_files',
  title: 'Search files',
  description:
    'Find files by glob and/or lines by text (literal, or a JS regex with regex: true). Respects .gitignore; ' +
    'skips secret, binary and >10 MiB files (counted). At most 500 results a page: go on with next_cursor. ' +
    'output_mode files_with_matches/count: paths or per-file counts. Fails without glob or query (VALIDATION).',
  group: 'fs-read',
  input: SearchFilesInput,
  output: SearchFilesOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path],
  // Issue #14: a heavy call (src/tools/heavy-calls.ts): bounded concurrency, queued beyond it.
  run: (args, ctx) =>
    runHeavy(
      ctx.signal,
      async () => {
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
            suggestion:
              'Pass query, or use output_mode "files_with_matches" (or no output_mode) for a glob-only listing.',
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
        const position = args.cursor ? decodeCursor(args.cursor, fingerprint) : null;
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

        const files: string[] = [];
        const matches: Match[] = [];
        const counts: Array<{ path: string; count: number }> = [];
        // Issue #14: the text lines are built with the results, and both are charged to the response budget.
        const out: string[] = [];
        const budget = new ResponseBudget();
        budget.charge(4096); // the fixed fields and the summary line
        const skipped: {
          secret: number;
          binary: number;
          too_large: number;
          policy: number;
          unreadable: number;
          too_deep: number;
          name_too_long: number;
          ignore_rules?: number;
        } = { secret: 0, binary: 0, too_large: 0, policy: 0, unreadable: 0, too_deep: 0, name_too_long: 0 };
        let ignoreRules = 0;
        let filesScanned = 0;
        let filesMatched = 0;
        let truncated = false;
        let next: Record<string, unknown> | null = null;
        const deadline = Date.now() + SEARCH_TIME_BUDGET_MS;
        const isInside = (p: string) => findContainingRoot(ctx.policy.roots, p) !== undefined;
        // What the walk skipped since the entry it last yielded. Each yielded entry carries the skips before it, and they
        // are committed only once the page has consumed past them, so a page boundary never counts a skip twice.
        const walkSkips = { policy: 0, unreadable: 0, too_deep: 0, name_too_long: 0 };
        let uncommitted = { ...walkSkips };
        const commitSkips = () => {
          for (const k of WALK_SKIPS) skipped[k] += uncommitted[k];
          uncommitted = { policy: 0, unreadable: 0, too_deep: 0, name_too_long: 0 };
        };

        // A single file may be searched directly.
        const single = target.stats.isFile();
        const resumeFile = typeof position?.file === 'string' ? position.file : null;
        const resumeSkip = typeof position?.skip === 'number' ? position.skip : 0;
        const resumeAfter = typeof position?.after === 'string' ? position.after : null;

        const candidates = single
          ? oneItem<WalkItem>({
              relative: target.real.split(/[\\/]/).pop()!,
              absolute: target.real,
              rootRelative: target.relative,
              type: 'file',
              depth: 1,
            })
          : walkTree({
              base: target.real,
              rootReal: target.root.real,
              maxDepth: 64,
              respectGitignore: args.respect_gitignore,
              include: args.include,
              exclude: args.exclude,
              resume:
                resumeFile !== null
                  ? { components: resumeFile.split('/'), inclusive: true }
                  : resumeAfter !== null
                    ? { components: resumeAfter.split('/'), inclusive: false }
                    : null,
              filter: (abs, rel) => {
                const v = classifyEntry(ctx.policy, abs, rel);
                if (v.hidden) return 'omit';
                if (v.denied) {
                  walkSkips.policy++;
                  return 'omit';
                }
                return 'ok';
              },
              onSkip: (reason) => {
                if (reason === 'ignore_rule') ignoreRules++;
                else if (reason !== 'policy') walkSkips[reason]++;
              },
              depthIsLimit: true,
              signal: ctx.signal,
              nocase: HOST_FLAVOR.caseInsensitive,
              // Types from the directory listing are all search needs: no per-entry lstat (sizes come from each open).
              stats: false,
            });

        /** Reads one candidate file on this thread (large candidates, or when the reader threads are unavailable). */
        const load = async (entry: WalkItem): Promise<Loaded> => {
          if (classifyEntry(ctx.policy, entry.absolute, entry.rootRelative).secret) return { kind: 'secret' };
          let bytes: Buffer;
          try {
            const { handle, stats } = await openForRead(entry.absolute, isInside);
            try {
              if (stats.size > limits.maxSearchFileBytes) return { kind: 'too_large' };
              // The size is known from the open's fstat: read exactly that (handle.readFile would fstat again and read
              // once more to see the end).
              bytes = Buffer.allocUnsafe(stats.size);
              let filled = 0;
              while (filled < bytes.length) {
                const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, filled);
                if (bytesRead === 0) break;
                filled += bytesRead;
              }
              bytes = bytes.subarray(0, filled);
            } finally {
              await handle.close();
            }
          } catch {
            return { kind: 'unreadable' };
          }
          if (looksBinary(bytes.subarray(0, 8192), bytes.length <= 8192) || looksBinary(bytes, true))
            return { kind: 'binary' };
          if (matcher?.needle && bytes.indexOf(matcher.needle) === -1) return { kind: 'no_match' };
          return { kind: 'text', text: bytes.toString('utf8') };
        };
        const reader =
          mode === 'content'
            ? searchReaderPool.session({
                roots: ctx.policy.roots.map((r) => ({ real: r.real })),
                maxFileBytes: limits.maxSearchFileBytes,
                keepMaxBytes: READ_AHEAD_MAX_FILE_BYTES,
                needle: matcher!.needle,
                // The reader threads match lines themselves (a user regex under the same per-file time limit).
                match: matcherSpec(args.query!, { regex: args.regex, caseSensitive: args.case_sensitive }),
              })
            : null;
        /** What the reader thread found, as the search loop sees it. */
        const fromReader = (entry: WalkItem, o: ReadOutcome): Promise<Loaded> | Loaded => {
          const decode = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
          if (o.kind === 'hits') return { kind: 'text', text: decode(o.bytes), hits: o.hits };
          if (o.kind === 'text') return { kind: 'text', text: decode(o.bytes) };
          if (o.kind === 'deferred' || o.kind === 'fallback') return load(entry);
          if (o.kind === 'regex_timeout') throw regexTimeoutError();
          return { kind: o.kind };
        };
        // Called as the walk yields an entry (ahead of the loop below): candidate files go to the reader threads at once.
        const prepare = (entry: WalkItem): Prepared => {
          const skipped = walkSkips.policy + walkSkips.unreadable + walkSkips.too_deep + walkSkips.name_too_long > 0;
          const skips = skipped ? { ...walkSkips } : NO_SKIPS;
          if (skipped) for (const k of WALK_SKIPS) walkSkips[k] = 0;
          const wanted = entry.type === 'file' && (!globMatch || globMatch(entry.relative));
          let loading: Promise<Loaded> | null = null;
          if (wanted && reader) {
            loading = classifyEntry(ctx.policy, entry.absolute, entry.rootRelative).secret
              ? Promise.resolve({ kind: 'secret' })
              : reader.read(entry.absolute).then((o) => fromReader(entry, o));
            // A regex timeout rejects; the loop rethrows it when it gets there, and a search that stops earlier (a full
            // page) never awaits it: it must not become an unhandled rejection.
            loading.catch(() => undefined);
          }
          const loaded = () => (loading ??= load(entry));
          return { skips, wanted, loaded };
        };

        outer: for await (const [entry, item] of readAhead(candidates, prepare, READ_AHEAD)) {
          if (item.skips !== NO_SKIPS) for (const k of WALK_SKIPS) uncommitted[k] += item.skips[k];
          if (!item.wanted) continue;
          if (Date.now() > deadline) {
            truncated = true;
            next = { file: entry.relative, skip: 0 };
            commitSkips();
            break;
          }
          if (mode === 'glob') {
            const line = quoteName(entry.relative);
            const cost = jsonStringBytes(entry.relative) + jsonStringBytes(line) + 8;
            if (files.length >= maxResults || (files.length > 0 && !budget.take(cost))) {
              truncated = true;
              next = { after: files[files.length - 1] };
              break; // the skips since that file are counted again by the next page, so not here
            }
            if (files.length === 0) budget.charge(cost); // the first always goes (a page makes progress)
            commitSkips();
            files.push(entry.relative);
            out.push(line);
            filesMatched++;
            continue;
          }
          commitSkips();
          const loaded = await item.loaded();
          if (loaded.kind === 'no_match') {
            filesScanned++;
            continue;
          }
          if (loaded.kind !== 'text') {
            if (loaded.kind === 'binary') filesScanned++;
            skipped[loaded.kind]++;
            continue;
          }
          filesScanned++;
          const text = loaded.text;
          const hits = loaded.hits ?? (await matcher!.match(text));
          if (hits.length === 0) continue;
          if (outputMode !== 'matches') {
            // Issue #18: one result per file (its path, or its path and count), paged by file: the cursor resumes at
            // the first file not returned, with the same result cap and response budget as matches.
            const line =
              outputMode === 'count' ? `${quoteName(entry.relative)}:${hits.length}` : quoteName(entry.relative);
            const cost = jsonStringBytes(entry.relative) * 2 + 24 + 8;
            const returned = files.length + counts.length;
            if (returned >= maxResults || (returned > 0 && !budget.take(cost))) {
              truncated = true;
              next = { file: entry.relative, skip: 0 }; // resumes at this file (its skips are already counted)
              break;
            }
            if (returned === 0) budget.charge(cost);
            if (outputMode === 'count') counts.push({ path: entry.relative, count: hits.length });
            else files.push(entry.relative);
            out.push(line);
            filesMatched++;
            continue;
          }
          const lines = text.split('\n');
          const skip = resumeFile === entry.relative ? resumeSkip : 0;
          for (let h = skip; h < hits.length; h++) {
            if (matches.length >= maxResults) {
              truncated = true;
              next = { file: entry.relative, skip: h };
              break outer;
            }
            // Counted with its first match on this page (a file whose matches all go to the next page is not counted here).
            if (h === skip) filesMatched++;
            const [lineIndex, column] = hits[h];
            const lineText = lines[lineIndex];
            const match: Match = {
              path: entry.relative,
              line: lineIndex + 1,
              column: column + 1,
              text: cutLine(stripCr(lineText ?? ''), column),
            };
            if (args.context_lines > 0) {
              match.before = lines
                .slice(Math.max(0, lineIndex - args.context_lines), lineIndex)
                .map((l) => cutLine(stripCr(l), 0));
              match.after = lines
                .slice(lineIndex + 1, lineIndex + 1 + args.context_lines)
                .map((l) => cutLine(stripCr(l), 0));
              if (lineIndex + 1 + args.context_lines >= lines.length && lines[lines.length - 1] === '') {
                match.after = match.after.slice(0, Math.max(0, lines.length - 1 - (lineIndex + 1)));
              }
            }
            const rendered = renderMatch(match, args.context_lines > 0);
            const cost = jsonBytes(match) + jsonStringBytes(rendered) + 8;
            if (matches.length === 0)
              budget.charge(cost); // the first always goes (a page makes progress)
            else if (!budget.take(cost)) {
              truncated = true;
              next = { file: entry.relative, skip: h };
              if (h === skip) filesMatched--; // its first match goes to the next page
              break outer;
            }
            matches.push(match);
            out.push(rendered);
          }
        }
        if (!truncated) {
          commitSkips();
          for (const k of WALK_SKIPS) skipped[k] += walkSkips[k];
        }
        if (ignoreRules > 0) skipped.ignore_rules = ignoreRules;
        const nextCursor = truncated && next ? encodeCursor(fingerprint, next) : null;
        // Issue #15: only the result array of this kind of search, only the skip reasons that happened, the cursor
        // only when there is a next page (structured-first clients show all of it to their model, JSON-escaped).
        const nonZeroSkips = Object.fromEntries(Object.entries(skipped).filter(([, n]) => n > 0));
        const structured: z.infer<typeof SearchFilesOutput> = {
          path: target.real,
          mode,
          output_mode: outputMode,
          ...(mode === 'glob' || outputMode === 'files_with_matches'
            ? { files }
            : outputMode === 'count'
              ? { counts }
              : { matches }),
          files_scanned: filesScanned,
          files_matched: filesMatched,
          ...(Object.keys(nonZeroSkips).length > 0 ? { skipped: nonZeroSkips } : {}),
          truncated,
          ...(nextCursor !== null ? { next_cursor: nextCursor } : {}),
        };
        if (out.length === 0) out.push('(no matches)');
        const skippedParts = Object.entries(skipped)
          .filter(([, n]) => n > 0)
          .map(([k, n]) => `${n} ${k}`);
        const summary =
          mode === 'glob'
            ? `${files.length} files`
            : outputMode === 'count'
              ? `${counts.reduce((n, c) => n + c.count, 0)} matches in ${filesMatched} files, ${filesScanned} scanned`
              : outputMode === 'files_with_matches'
                ? `${filesMatched} files with matches, ${filesScanned} scanned`
                : `${matches.length} matches in ${filesMatched} files, ${filesScanned} scanned`;
        out.push(
          `[${summary}${skippedParts.length ? `; skipped ${skippedParts.join(', ')}` : ''}` +
            `${truncated ? `; truncated, continue with cursor: ${nextCursor}` : ''}]`,
        );
        return { structured: { ...structured }, text: out.join('\n'), audit: { paths: [target.real] } };
      },
      args,
    ),
});
