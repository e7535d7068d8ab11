/**
 * replace_in_files' plan (before the lock): the base authorized, every file expected_hashes names authorized (step 6
 * before the walk), then the walk — like search_files' (include/exclude, .gitignore, no links followed) — finding the
 * files with matches and their replaced text. Secret, policy-protected, git-directory, binary and oversized files are
 * skipped and counted; the caps (max_files, max_replacements, bytes held, time) end the walk as `truncated`.
 */
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import { hashBytes, readAtMost } from '../fs/hash.js';
import type { LineMatcher } from '../fs/line-matcher.js';
import { openForRead } from '../fs/open-file.js';
import { looksBinary } from '../fs/text.js';
import { walkTree, type WalkItem } from '../fs/walk.js';
import {
  authorizeRead,
  authorizeWrite,
  classifyEntry,
  policyWalkFilter,
  type AuthorizedPath,
  type AuthorizedWrite,
} from '../policy/authorize.js';
import { HOST_FLAVOR, isWithin, toPosixRelative } from '../policy/containment.js';
import { childOf } from '../policy/resolve-path.js';
import { assertNotGitInternal } from '../policy/file-policy.js';
import { assertNotInGitDirectory } from '../policy/git-dirs.js';
import type { ToolContext } from './context.js';
import { insideRoots } from './scope.js';

/** Default max_files. */
const DEFAULT_MAX_FILES = 100;
/** Default max_replacements. */
const DEFAULT_MAX_REPLACEMENTS = 1000;
/** Most milliseconds one call spends walking and replacing (as search_files' budget); then `truncated`. */
const REPLACE_TIME_BUDGET_MS = 20_000;
/** Most bytes of old content one call holds in memory (the new content is about as large). */
const MAX_TOTAL_BYTES = 64 * 1024 * 1024;

/** The arguments of replace_in_files the plan and the steps read. */
export interface ReplaceArgs {
  path: string;
  replacement: string;
  include?: string[];
  exclude?: string[];
  respect_gitignore: boolean;
  max_files?: number;
  max_replacements?: number;
  /** Relative (as the preview listed) or absolute path → the preview's previous_hash. */
  expected_hashes?: Record<string, string>;
  dry_run: boolean;
}

/** Why files were left alone, counted (the output's `skipped`). */
export interface ReplaceSkipped {
  secret: number;
  policy: number;
  git: number;
  binary: number;
  too_large: number;
  unreadable: number;
  not_previewed: number;
  too_many_matches: number;
}

/** A file the walk found with matches, authorized for writing. */
export interface Candidate {
  relative: string;
  target: AuthorizedWrite;
  oldHash: string;
  oldText: string;
  newText: string;
  count: number;
}

/** What the plan found; the decide step adds to `skipped` and may set `truncated`. */
export interface ReplacePlan {
  matcher: LineMatcher;
  base: AuthorizedPath;
  /** The directory relative paths are taken from (the file's directory when path names a file). */
  baseDir: string;
  maxFiles: number;
  maxReplacements: number;
  candidates: Candidate[];
  skipped: ReplaceSkipped;
  filesScanned: number;
  truncated: boolean;
  /** expected_hashes' entry for a file: by its relative path (as listed) or its absolute path. */
  expectedFor(relative: string, real: string): string | undefined;
}

/**
 * The plan of one call (see the module comment).
 * @throws ToolError as authorizeRead/authorizeWrite (the base, expected_hashes' keys), VALIDATION outside_preview /
 *   too_many_matches, OCC_MISMATCH (a preview file this walk no longer changes)
 */
export async function planReplace(args: ReplaceArgs, ctx: ToolContext, matcher: LineMatcher): Promise<ReplacePlan> {
  const plan = await authorizeReplace(args, ctx, matcher);
  await collectCandidates(plan, args, ctx);
  if (args.expected_hashes && !plan.truncated) assertPreviewReached(plan, args.expected_hashes);
  return plan;
}

/** The base and every key of expected_hashes authorized; the plan's empty start. */
async function authorizeReplace(args: ReplaceArgs, ctx: ToolContext, matcher: LineMatcher): Promise<ReplacePlan> {
  const base = await authorizeRead(args.path, ctx.policy, { kind: 'any' });
  assertNotGitInternal(base.absolute, base.real); // nothing under .git is ever written (docs/security.md)
  // Nor in a git directory of any name, or a core.hooksPath directory (docs/security.md).
  assertNotInGitDirectory(ctx.policy, base.absolute, base.real);
  const baseDir = base.stats.isFile() ? path.dirname(base.real) : base.real;
  const expected = args.expected_hashes;
  // A key naming a path outside `path` can never be in the preview; saying so names no outside path (docs/security.md:
  // no outside path in an envelope) and costs no walk.
  for (const key of Object.keys(expected ?? {})) {
    if (!isWithin(baseDir, path.isAbsolute(key) ? path.normalize(key) : path.join(baseDir, key))) {
      throw new ToolError('VALIDATION', 'expected_hashes names a file outside path; only files of the preview apply.', {
        details: { reason: 'outside_preview', field: 'expected_hashes' },
        suggestion: 'Pass the paths as the dry run listed them (relative to path).',
      });
    }
  }
  // docs/errors.md "Order of checks" step 6 for every file expected_hashes names, before the walk: a key naming a
  // secret, a denied or read-only file, or one in a git directory is refused with its own code (SECRET_DENIED,
  // FILE_POLICY_DENIED), not reported later as a preview file "no longer changed" (the walk never yields what it may
  // not change).
  for (const key of Object.keys(expected ?? {})) {
    await authorizeWrite(path.isAbsolute(key) ? key : path.join(baseDir, key), ctx.policy, {
      kind: 'file',
      mustExist: false,
      followFinal: false,
      field: 'expected_hashes',
    });
  }
  return {
    matcher,
    base,
    baseDir,
    maxFiles: args.max_files ?? DEFAULT_MAX_FILES,
    maxReplacements: args.max_replacements ?? DEFAULT_MAX_REPLACEMENTS,
    candidates: [],
    skipped: {
      secret: 0,
      policy: 0,
      git: 0,
      binary: 0,
      too_large: 0,
      unreadable: 0,
      not_previewed: 0,
      too_many_matches: 0,
    },
    filesScanned: 0,
    truncated: false,
    expectedFor: (relative, real) =>
      expected ? (expected[relative] ?? expected[real] ?? expected[path.join(baseDir, relative)]) : undefined,
  };
}

/** What the walk visits: the one file `path` names, or the tree under it. */
function entriesOf(plan: ReplacePlan, args: ReplaceArgs, ctx: ToolContext): AsyncIterable<WalkItem> | WalkItem[] {
  const { base, skipped } = plan;
  if (base.stats.isFile()) {
    return [
      { relative: path.basename(base.real), absolute: base.real, rootRelative: base.relative, type: 'file', depth: 1 },
    ];
  }
  return walkTree({
    base: base.real,
    rootReal: base.root.real,
    childOf,
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
}

/** The walk: every file read, matched and, when it has matches, authorized as a candidate, until a cap. */
async function collectCandidates(plan: ReplacePlan, args: ReplaceArgs, ctx: ToolContext): Promise<void> {
  const isInside = insideRoots(ctx);
  const { skipped } = plan;
  let total = 0;
  let heldBytes = 0;
  // A whole call's time, as search_files' (each regex file is bounded at 1 s, but not the number of files): past it the
  // walk stops like a cap, `truncated` (run again; replaced files no longer match).
  const deadline = Date.now() + REPLACE_TIME_BUDGET_MS;
  for await (const entry of entriesOf(plan, args, ctx)) {
    if (Date.now() > deadline) {
      plan.truncated = true;
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
      if (read === 'binary') plan.filesScanned++;
      continue;
    }
    plan.filesScanned++;
    const replaced = await replacedIn(plan, args, ctx, entry, read);
    if (replaced === null) continue;
    if (
      plan.candidates.length >= plan.maxFiles ||
      total + replaced.count > plan.maxReplacements ||
      heldBytes + read.text.length > MAX_TOTAL_BYTES
    ) {
      plan.truncated = true;
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
    plan.candidates.push({ relative: entry.relative, target, oldHash: read.hash, oldText: read.text, ...replaced });
    total += replaced.count;
    heldBytes += read.text.length;
  }
}

/**
 * One read file's replaced text, or null when it is left alone (no match, too large a result, too many matches, not
 * in the preview being applied — counted in `skipped`).
 * @throws ToolError VALIDATION too_many_matches for a preview file, unchanged since, that no longer fits
 */
async function replacedIn(
  plan: ReplacePlan,
  args: ReplaceArgs,
  ctx: ToolContext,
  entry: WalkItem,
  read: { text: string; hash: string; bytes: Buffer },
): Promise<{ newText: string; count: number } | null> {
  const { matcher, skipped, maxReplacements } = plan;
  // The query's required bytes (LineMatcher.needle, as search_files' prefilter): a file without them has no match,
  // found by one indexOf instead of a pass over every line (on the main thread for a literal query).
  if (matcher.needle && read.bytes.indexOf(matcher.needle) === -1) return null;
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
    return null;
  }
  const previewed = args.expected_hashes ? plan.expectedFor(entry.relative, entry.absolute) : undefined;
  if (replaced.tooMany) {
    // A file of the preview, unchanged since, that no longer fits: the apply's max_replacements is lower than the
    // preview's. OCC_MISMATCH ("no longer changed") would send the agent round the same preview and apply again.
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
    return null;
  }
  if (replaced.count === 0) return null;
  if (args.expected_hashes && previewed === undefined) {
    skipped.not_previewed++; // not in the preview being applied: left alone
    return null;
  }
  return { newText: replaced.text, count: replaced.count };
}

/**
 * expected_hashes names the preview's files: one this walk did not reach (deleted since, or no longer matching the
 * selection) means the preview cannot be applied as shown.
 * @throws OccMismatchError for the first such file
 */
function assertPreviewReached(plan: ReplacePlan, expected: Record<string, string>): void {
  const visited = new Set(plan.candidates.map((c) => c.relative));
  for (const key of Object.keys(expected)) {
    const relative = path.isAbsolute(key) ? toPosixRelative(plan.baseDir, key) : key;
    if (visited.has(relative)) continue;
    const absolute = path.isAbsolute(key) ? key : path.join(plan.baseDir, key);
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

/** The skip a refused authorizeWrite counts as; null: not a skip (rethrown). */
function skipOf(error: unknown): keyof ReplaceSkipped | null {
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
