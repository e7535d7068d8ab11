/**
 * replace_in_files ("Replace across files"): a literal or regular-expression replacement, line by line as
 * search_files matches (src/fs/replace-lines.ts), over a directory walked like search_files (include/exclude,
 * .gitignore, no links followed). Secret, policy-protected, git-directory, binary and oversized files are skipped and
 * counted; a `.git` directory is never walked, so nothing in it is counted (docs/tools.md). A `dry_run` returns per-file diffs, counts and each file's current content_hash; applying with those
 * hashes (`expected_hashes`) changes exactly the previewed files, or nothing (OCC_MISMATCH naming the file that
 * moved). The change is one journaled transaction (src/patch/transaction.ts, as a multi-file apply_patch) through
 * `runMutation`: one budget unit, one undo-history change, rolled back as a whole on a failure part-way.
 */
import path from 'node:path';
import { z } from 'zod';
import { patternBudget } from '../fs/glob/glob.js';
import { createLineMatcher, type LineMatcher } from '../fs/line-matcher.js';
import { globMatcher } from '../fs/walk.js';
import { HOST_FLAVOR } from '../policy/containment.js';
import { runMutation } from '../mutation/pipeline.js';
import { decideReplace, type ReplaceReport } from '../mutation/replace-in-files.js';
import { planReplace } from '../mutation/replace-plan.js';
import { ContentHash, DryRun, ExpectedHash, GlobList, PathArg } from './common-schemas.js';
import { defineTool, type ToolContext } from './define-tool.js';
import { jsonStringBytes, ResponseBudget } from './response-budget.js';
import { quoteName } from './text-safe.js';

/** Largest max_files (the default, 100, is the plan's: src/mutation/replace-plan.ts). */
const MAX_FILES = 1000;
/** Largest max_replacements (default 1000). */
const MAX_REPLACEMENTS = 10_000;

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

/** Compiles the query (docs/errors.md "Order of checks" step 2). @throws ToolError VALIDATION invalid_regex */
function matcherOf(args: z.output<typeof ReplaceInFilesInput>): LineMatcher {
  return createLineMatcher(args.query, { regex: args.regex, caseSensitive: args.case_sensitive });
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

/** The call: plan (the walk), then the pipeline's inspect-free decide step, then the report. */
async function replace(args: z.output<typeof ReplaceInFilesInput>, ctx: ToolContext) {
  const plan = await planReplace(args, ctx, matcherOf(args));
  const budget = new ResponseBudget();
  budget.charge(4096);
  const report: ReplaceReport = {
    warnings: [],
    diffsTruncated: false,
    keepDiff: (diff) => budget.take(2 * jsonStringBytes(diff) + 256), // in the structured result and the text
  };
  const { result: files } = await runMutation(ctx, {
    lockPaths: plan.candidates.map((c) => c.target.real),
    expectedStatusHash: undefined,
    statusPaths: [],
    dryRun: args.dry_run,
    decide: (scope) => decideReplace(ctx, scope, plan, args, report),
  });
  const { skipped, truncated, filesScanned, baseDir } = plan;
  const { warnings, diffsTruncated } = report;
  const replacements = files.reduce((n, f) => n + f.replacements, 0);
  const structured = {
    path: plan.base.real,
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
