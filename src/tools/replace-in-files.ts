/**
 * replace_in_files ("Replace across files"): a literal or regular-expression replacement, line by line as
 * search_files matches (src/fs/replace-lines.ts), over a directory walked like search_files (include/exclude,
 * .gitignore, no links followed). Secret, policy-protected, git-directory, binary and oversized files are skipped and
 * counted; a `.git` directory is never walked, so nothing in it is counted (docs/tools.md). A `dry_run` returns per-file diffs, counts and each file's current content_hash; applying with those
 * hashes (`expected_hashes`) changes exactly the previewed files, or nothing (OCC_MISMATCH naming the file that
 * moved). The change is one journaled transaction (src/patch/transaction.ts, as a multi-file apply_patch) through
 * `runMutation`: one budget unit, one undo-history change, rolled back as a whole on a failure part-way.
 */
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { z } from 'zod';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import { identityOf } from '../fs/atomic-write.js';
import { patternBudget } from '../fs/glob/glob.js';
import { hashBytes, readAtMost } from '../fs/hash.js';
import { historyFileOf } from '../fs/history.js';
import { createLineMatcher, type LineMatcher } from '../fs/line-matcher.js';
import { openForRead } from '../fs/open-file.js';
import { looksBinary } from '../fs/text.js';
import { globMatcher, walkTree, type WalkItem } from '../fs/walk.js';
import { commitTransaction, type PlannedChange } from '../patch/transaction.js';
import { boundedUnifiedDiffSliced } from '../patch/window-diff.js';
import {
  authorizeRead,
  authorizeWrite,
  classifyEntry,
  policyWalkFilter,
  type AuthorizedWrite,
} from '../policy/authorize.js';
import { HOST_FLAVOR, isWithin, toPosixRelative } from '../policy/containment.js';
import { assertNotGitInternal } from '../policy/file-policy.js';
import { assertNotInGitDirectory } from '../policy/git-dirs.js';
import { checkExpectedHash } from '../policy/occ.js';
import { ContentHash, DryRun, ExpectedHash, GlobList, PathArg } from './common-schemas.js';
import { defineTool, type ToolContext } from './define-tool.js';
import { hashRequiredForAll } from '../mutation/occ-rules.js';
import { runMutation } from '../mutation/pipeline.js';
import { insideRoots } from '../mutation/scope.js';

import { jsonStringBytes, ResponseBudget } from './response-budget.js';
import { quoteName } from './text-safe.js';

/** Default and largest max_files. */
const DEFAULT_MAX_FILES = 100;
const MAX_FILES = 1000;
/** Default and largest max_replacements. */
const DEFAULT_MAX_REPLACEMENTS = 1000;
const MAX_REPLACEMENTS = 10_000;
/** Most milliseconds one call spends walking and replacing (as search_files' budget); then `truncated`. */
const REPLACE_TIME_BUDGET_MS = 20_000;
/** Most bytes of old content one call holds in memory (the new content is about as large). */
const MAX_TOTAL_BYTES = 64 * 1024 * 1024;

export const ReplaceInFilesInput = z.strictObject({
  path: PathArg.default('.').describe('Default: the first root'),
  query: z.string().min(1).describe('Text to find in each line'),
  replacement: z.string().describe('With regex: $1, $<name>, $& expand'),
  regex: z.boolean().default(false).describe('query is a JS regex'),
  case_sensitive: z.boolean().default(true).describe('Default true'),
  include: GlobList.optional(),
  exclude: GlobList.optional(),
  respect_gitignore: z.boolean().default(true).describe('Default true'),
  max_files: z.number().int().min(1).max(MAX_FILES).optional().describe('Default 100, most 1000'),
  max_replacements: z.number().int().min(1).max(MAX_REPLACEMENTS).optional().describe('Default 1000, most 10000'),
  expected_hashes: z.record(z.string(), ExpectedHash).optional().describe('path → previous_hash from the dry run'),
  dry_run: DryRun,
});

const FileSchema = z.object({
  path: z.string().describe('Relative to path, / separated (the expected_hashes key)'),
  replacements: z.number().int(),
  previous_hash: ContentHash.describe('Current hash (pass it back in expected_hashes)'),
  content_hash: ContentHash.describe('Hash after the replacement'),
  diff: z.string().optional().describe('dry_run: unified diff'),
});

export const ReplaceInFilesOutput = z.object({
  path: z.string().describe('Absolute resolved directory (or file)'),
  dry_run: z.boolean(),
  files: z.array(FileSchema),
  replacements: z.number().int().describe('Total'),
  files_scanned: z.number().int(),
  skipped: z.object({
    secret: z.number().int(),
    policy: z.number().int().describe('Denied or read-only by the file policy'),
    git: z
      .number()
      .int()
      .describe('In a git directory of another name or a hooks directory (.git itself is never walked nor counted)'),
    binary: z.number().int(),
    too_large: z.number().int(),
    unreadable: z.number().int(),
    not_previewed: z.number().int().describe('Files with matches not named in expected_hashes (left unchanged)'),
    too_many_matches: z
      .number()
      .int()
      .describe('Files with more matches than max_replacements (a file is replaced whole): raise it or narrow'),
  }),
  truncated: z.boolean().describe('More files match than max_files / max_replacements allowed: run again'),
  diffs_truncated: z.boolean().optional().describe('Some diffs were left out (response size); counts and hashes hold'),
  external_change: z.boolean().optional(),
  warnings: z.array(z.string()).optional(),
});

type FileResult = z.infer<typeof FileSchema>;
type Skipped = z.infer<typeof ReplaceInFilesOutput>['skipped'];

/** A file the walk found with matches, authorized for writing. */
interface Candidate {
  relative: string;
  target: AuthorizedWrite;
  oldHash: string;
  oldText: string;
  newText: string;
  count: number;
}

/** Compiles the query (docs/errors.md "Order of checks" step 2). @throws ToolError VALIDATION invalid_regex */
function matcherOf(args: z.output<typeof ReplaceInFilesInput>): LineMatcher {
  return createLineMatcher(args.query, { regex: args.regex, caseSensitive: args.case_sensitive });
}

/** The skip a refused authorizeWrite counts as; null: not a skip (rethrown). */
function skipOf(error: unknown): keyof Skipped | null {
  if (!(error instanceof ToolError)) return null;
  if (error.code === 'SECRET_DENIED') return 'secret';
  if (error.code === 'FILE_POLICY_DENIED')
    return error.details.rule === 'git_dir' || error.details.rule === 'hooks_dir' ? 'git' : 'policy';
  if (error.code === 'NOT_FOUND' || error.code === 'NOT_ALLOWED') return 'unreadable'; // gone or swapped since the walk
  return null;
}

/** Reads a walked file as text, or says why it is skipped. */
async function readText(
  entry: WalkItem,
  ctx: ToolContext,
  isInside: (p: string) => boolean,
): Promise<{ text: string; hash: string; bytes: Buffer } | 'too_large' | 'binary' | 'unreadable'> {
  let bytes: Buffer;
  try {
    const { handle, stats } = await openForRead(entry.absolute, isInside);
    try {
      if (stats.size > ctx.config.limits.maxSearchFileBytes) return 'too_large';
      bytes = await readAtMost(handle, ctx.config.limits.maxSearchFileBytes, stats.size); // never to EOF
    } finally {
      await handle.close();
    }
  } catch {
    return 'unreadable';
  }
  if (bytes.length > ctx.config.limits.maxSearchFileBytes) return 'too_large';
  if (looksBinary(bytes, true) || !isUtf8(bytes)) return 'binary';
  return { text: bytes.toString('utf8'), hash: hashBytes(bytes), bytes };
}

/** Most characters of one file's preview diff; a longer one is left out (diffs_truncated), never cut. */
const MAX_FILE_DIFF_CHARS = 1024 * 1024;

/** The preview diff of one file, in bounded time (src/patch/window-diff.ts), or null when it is too long to show. */
async function diffOf(relative: string, before: string, after: string): Promise<string | null> {
  const d = await boundedUnifiedDiffSliced(`a/${relative}`, `b/${relative}`, before, after, 3, MAX_FILE_DIFF_CHARS);
  if (d.truncated) return null;
  return d.text.replace(/^Index:.*\n/, '').replace(/^=+\n/, '');
}

export const replaceInFiles = defineTool({
  name: 'replace_in_files',
  title: 'Replace in files',
  description:
    'Replace text (literal, or JS regex: 1 s/file) per line in files under path, filtered as search_files; skips ' +
    'secret, policy, .git, binary, >10 MiB, >max_replacements matches (counted). dry_run: diffs, previous_hash per ' +
    'file; apply exactly that with them as expected_hashes (else OCC_MISMATCH). All or nothing; caps → truncated.',
  group: 'fs-write',
  input: ReplaceInFilesInput,
  output: ReplaceInFilesOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  mutating: true,
  validate: (args) => {
    matcherOf(args);
    const patterns = patternBudget();
    globMatcher(args.include, HOST_FLAVOR.caseInsensitive, 'include', patterns);
    globMatcher(args.exclude, HOST_FLAVOR.caseInsensitive, 'exclude', patterns);
  },
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.path],
  heavy: () => ['walk'],
  run: (args, ctx) => replace(args, ctx),
});

async function replace(args: z.output<typeof ReplaceInFilesInput>, ctx: ToolContext) {
  const matcher = matcherOf(args);
  const base = await authorizeRead(args.path, ctx.policy, { kind: 'any' });
  assertNotGitInternal(base.absolute, base.real); // nothing under .git is ever written (docs/security.md)
  // Nor in a git directory of any name, or a core.hooksPath directory (docs/security.md).
  assertNotInGitDirectory(ctx.policy, base.absolute, base.real);
  const maxFiles = args.max_files ?? DEFAULT_MAX_FILES;
  const maxReplacements = args.max_replacements ?? DEFAULT_MAX_REPLACEMENTS;
  const expected = args.expected_hashes;
  const isInside = insideRoots(ctx);
  const single = base.stats.isFile();
  const baseDir = single ? path.dirname(base.real) : base.real;
  /** expected_hashes' entry for a file: by its relative path (as listed) or its absolute path. */
  const expectedFor = (relative: string, real: string) =>
    expected ? (expected[relative] ?? expected[real] ?? expected[path.join(baseDir, relative)]) : undefined;

  // A key naming a path outside `path` can never be in the preview; saying so names no outside path (docs/security.md: no outside
  // path in an envelope) and costs no walk.
  for (const key of Object.keys(expected ?? {})) {
    if (!isWithin(baseDir, path.isAbsolute(key) ? path.normalize(key) : path.join(baseDir, key))) {
      throw new ToolError('VALIDATION', 'expected_hashes names a file outside path; only files of the preview apply.', {
        details: { reason: 'outside_preview', field: 'expected_hashes' },
        suggestion: 'Pass the paths as the dry run listed them (relative to path).',
      });
    }
  }
  // docs/errors.md "Order of checks" step 6 for every file expected_hashes names, before the walk: a key naming a secret, a denied or
  // read-only file, or one in a git directory is refused with its own code (SECRET_DENIED, FILE_POLICY_DENIED), not
  // reported later as a preview file "no longer changed" (the walk never yields what it may not change).
  for (const key of Object.keys(expected ?? {})) {
    await authorizeWrite(path.isAbsolute(key) ? key : path.join(baseDir, key), ctx.policy, {
      kind: 'file',
      mustExist: false,
      followFinal: false,
      field: 'expected_hashes',
    });
  }
  const skipped: Skipped = {
    secret: 0,
    policy: 0,
    git: 0,
    binary: 0,
    too_large: 0,
    unreadable: 0,
    not_previewed: 0,
    too_many_matches: 0,
  };
  const candidates: Candidate[] = [];
  const visited = new Set<string>();
  let filesScanned = 0;
  let total = 0;
  let heldBytes = 0;
  let truncated = false;
  const entries: AsyncIterable<WalkItem> | WalkItem[] = single
    ? [
        {
          relative: path.basename(base.real),
          absolute: base.real,
          rootRelative: base.relative,
          type: 'file',
          depth: 1,
        },
      ]
    : walkTree({
        base: base.real,
        rootReal: base.root.real,
        maxDepth: 64,
        respectGitignore: args.respect_gitignore,
        include: args.include,
        exclude: args.exclude,
        resume: null,
        filter: policyWalkFilter(ctx.policy, () => skipped.policy++),
        onSkip: (reason) => {
          if (reason === 'unreadable' || reason === 'too_deep' || reason === 'name_too_long') skipped.unreadable++;
        },
        depthIsLimit: true,
        signal: ctx.signal,
        nocase: HOST_FLAVOR.caseInsensitive,
        stats: false,
      });
  // A whole call's time, as search_files' (each regex file is bounded at 1 s, but not the number of files): past it the
  // walk stops like a cap, `truncated` (run again; replaced files no longer match).
  const deadline = Date.now() + REPLACE_TIME_BUDGET_MS;
  for await (const entry of entries) {
    if (Date.now() > deadline) {
      truncated = true;
      break;
    }
    if (entry.type !== 'file') continue; // links are never followed, directories are walked
    if (classifyEntry(ctx.policy, entry.absolute, entry.rootRelative).secret) {
      skipped.secret++;
      continue;
    }
    const read = await readText(entry, ctx, isInside);
    if (typeof read === 'string') {
      skipped[read]++;
      if (read === 'binary') filesScanned++;
      continue;
    }
    filesScanned++;
    // The query's required bytes (LineMatcher.needle, as search_files' prefilter): a file without them has no match,
    // found by one indexOf instead of a pass over every line (on the main thread for a literal query).
    if (matcher.needle && read.bytes.indexOf(matcher.needle) === -1) continue;
    // The result may not exceed what this tool reads (a replacement bomb is skipped before it is built), and a file
    // is replaced whole, so one with more matches than a call may make is skipped (counting stops at max + 1): no
    // later call with these arguments could take it, and `truncated` would only send the agent round again.
    const replaced = await matcher.replace(
      read.text,
      args.replacement,
      ctx.config.limits.maxSearchFileBytes,
      maxReplacements,
    );
    if (replaced.tooLarge) {
      skipped.too_large++;
      continue;
    }
    if (replaced.tooMany) {
      // A file of the preview, unchanged since, that no longer fits: the apply's max_replacements is lower than the
      // preview's. OCC_MISMATCH ("no longer changed") would send the agent round the same preview and apply again.
      const previewed = expected ? expectedFor(entry.relative, entry.absolute) : undefined;
      if (previewed === read.hash) {
        throw new ToolError(
          'VALIDATION',
          `${entry.absolute} has more matches than max_replacements (${maxReplacements}), unchanged since the ` +
            'preview listed it; nothing was written.',
          {
            path: entry.absolute,
            details: { reason: 'too_many_matches', field: 'max_replacements' },
            suggestion: 'Pass the max_replacements of the dry run, or run the dry run again with this one.',
          },
        );
      }
      skipped.too_many_matches++;
      continue;
    }
    if (replaced.count === 0) continue;
    if (expected && expectedFor(entry.relative, entry.absolute) === undefined) {
      skipped.not_previewed++; // not in the preview being applied: left alone
      continue;
    }
    if (
      candidates.length >= maxFiles ||
      total + replaced.count > maxReplacements ||
      heldBytes + read.text.length > MAX_TOTAL_BYTES
    ) {
      truncated = true;
      break;
    }
    let target: AuthorizedWrite;
    try {
      target = await authorizeWrite(entry.absolute, ctx.policy, { kind: 'file', mustExist: true, followFinal: false });
    } catch (error) {
      const skip = skipOf(error);
      if (skip === null) throw error;
      skipped[skip]++;
      continue;
    }
    visited.add(entry.relative);
    candidates.push({
      relative: entry.relative,
      target,
      oldHash: read.hash,
      oldText: read.text,
      newText: replaced.text,
      count: replaced.count,
    });
    total += replaced.count;
    heldBytes += read.text.length;
  }

  // expected_hashes names the preview's files: one this walk did not reach (deleted since, or no longer matching the
  // selection) means the preview cannot be applied as shown.
  if (expected && !truncated) {
    for (const key of Object.keys(expected)) {
      const relative = path.isAbsolute(key) ? toPosixRelative(baseDir, key) : key;
      if (visited.has(relative)) continue;
      const absolute = path.isAbsolute(key) ? key : path.join(baseDir, key);
      throw new OccMismatchError(
        `${absolute} was in the preview (expected_hashes) but is no longer changed by this replacement; nothing was written.`,
        {
          path: absolute,
          expectedHash: expected[key],
          currentHash: null,
          conflict: { reason: 'modified' },
          suggestion: 'Run the replacement again with dry_run: true and review the new preview.',
        },
      );
    }
  }

  const warnings: string[] = [];
  const budget = new ResponseBudget();
  budget.charge(4096);
  let diffsTruncated = false;
  const { result: files } = await runMutation(ctx, {
    lockPaths: candidates.map((c) => c.target.real),
    expectedStatusHash: undefined,
    statusPaths: [],
    dryRun: args.dry_run,
    decide: async (scope) => {
      const changes: PlannedChange[] = [];
      const results: FileResult[] = [];
      const hashRequired: ToolError[] = [];
      const planned: Array<{ c: Candidate; newText: string; count: number }> = [];
      // The walk fitted the files under max_replacements; one that changed since is replaced again below, so the
      // bound is kept here too: the first file that no longer fits, and every one after it, is left to the next call.
      let plannedCount = 0;
      let full = false;
      // docs/errors.md "Order of checks" step 9 for every file before anything else: OCC_MISMATCH (any file) wins; every file needing a hash
      // is listed in one HASH_REQUIRED.
      for (const c of candidates) {
        const current = await scope.current(c.target.real, {
          wantBytes: true,
          maxBytes: ctx.config.limits.maxSearchFileBytes,
        });
        const explicit = expectedFor(c.relative, c.target.real);
        if (!current.exists) {
          throw new OccMismatchError(
            `${c.target.absolute} was deleted while the replacement ran; nothing was written.`,
            {
              path: c.target.absolute,
              expectedHash: explicit ?? c.oldHash,
              currentHash: null,
              conflict: { reason: 'deleted' },
            },
          );
        }
        // A preview needs no hash (it is how the caller gets them); an explicit one is still checked.
        if (!args.dry_run || explicit !== undefined) {
          try {
            const verdict = checkExpectedHash({
              absolute: c.target.absolute,
              real: c.target.real,
              current: { hash: current.hash, bytes: current.bytes ?? undefined },
              expected: explicit,
              autoOcc: ctx.config.autoOcc,
              memory: ctx.hashes,
              field: `expected_hashes["${c.relative}"]`,
            });
            if (verdict.warning) warnings.push(verdict.warning);
          } catch (error) {
            if (!(error instanceof ToolError) || error.code !== 'HASH_REQUIRED') throw error;
            hashRequired.push(error);
            continue;
          }
        }
        let { newText, count } = c;
        const bytes = current.bytes ?? Buffer.alloc(0);
        if (current.hash !== c.oldHash) {
          // Changed between the walk and the lock, and the OCC check accepted the new bytes: replace in those.
          if (looksBinary(bytes, true) || !isUtf8(bytes)) {
            skipped.binary++; // as the walk counts it
            continue;
          }
          const again = await matcher.replace(
            bytes.toString('utf8'),
            args.replacement,
            ctx.config.limits.maxSearchFileBytes,
            maxReplacements,
          );
          if (again.tooLarge) skipped.too_large++;
          else if (again.tooMany) skipped.too_many_matches++;
          if (again.count === 0 || again.tooLarge || again.tooMany) continue;
          ({ text: newText, count } = again);
        }
        if (full || plannedCount + count > maxReplacements) {
          full = true;
          truncated = true;
          continue;
        }
        plannedCount += count;
        planned.push({ c, newText, count });
        const newBytes = Buffer.from(newText, 'utf8');
        const newHash = hashBytes(newBytes);
        changes.push({
          real: c.target.real,
          oldBytes: bytes,
          oldHash: current.hash,
          oldIdentity: current.stats ? identityOf(current.stats) : null,
          oldMode: current.stats ? current.stats.mode & 0o7777 : null,
          newBytes,
          newHash,
          dir: scope.parent(c.target.real)?.dir,
        });
        const result: FileResult = {
          path: c.relative,
          replacements: count,
          previous_hash: current.hash!,
          content_hash: newHash,
        };
        if (args.dry_run) {
          const diff = diffsTruncated ? null : await diffOf(c.relative, bytes.toString('utf8'), newText);
          // The diff goes in both the structured result and the text.
          if (diff !== null && budget.take(2 * jsonStringBytes(diff) + 256)) result.diff = diff;
          else diffsTruncated = true;
        }
        results.push(result);
      }
      if (hashRequired.length) throw hashRequiredForAll(hashRequired);
      return {
        result: results,
        done: `replaced in ${changes.length} file(s)`,
        effect: changes.length
          ? () => commitTransaction(changes, { stateDir: ctx.config.stateDir, isInside })
          : undefined,
        remember: () => {
          for (const ch of changes) ctx.hashes.remember(ch.real, ch.newHash!, ch.newBytes!);
        },
        history: {
          tool: 'replace_in_files',
          files: changes.map((ch) => historyFileOf(ch.real, ch.oldBytes, ch.oldMode, ch.newHash)),
        },
      };
    },
  });
  const replacements = files.reduce((n, f) => n + f.replacements, 0);
  const structured = {
    path: base.real,
    dry_run: args.dry_run,
    files,
    replacements,
    files_scanned: filesScanned,
    skipped,
    truncated,
    ...(diffsTruncated ? { diffs_truncated: true } : {}),
    ...(warnings.length ? { external_change: true, warnings } : {}),
  };
  const skippedParts = Object.entries(skipped)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k}`);
  const text = [
    ...files.map(
      (f) =>
        `${args.dry_run ? 'would replace' : 'replaced'} ${f.replacements} in ${quoteName(f.path)}: ` +
        `previous_hash ${f.previous_hash} -> content_hash ${f.content_hash}`,
    ),
    ...(args.dry_run ? files.flatMap((f) => (f.diff ? [f.diff] : [])) : []),
    `[${replacements} replacement(s) in ${files.length} file(s), ${filesScanned} scanned` +
      `${skippedParts.length ? `; skipped ${skippedParts.join(', ')}` : ''}` +
      `${truncated ? '; truncated: more files match, run again after this one' : ''}` +
      `${diffsTruncated ? '; some diffs left out (response size)' : ''}]`,
    ...warnings.map((w) => `warning: ${w}`),
  ].join('\n');
  return {
    structured,
    text,
    audit: {
      paths: files.map((f) => path.join(baseDir, f.path)),
      action: args.dry_run ? 'replace_dry_run' : 'replace',
    },
  };
}
