/**
 * git_diff (docs/security.md "What git may read"): the unified diff of the work tree (or the index with `staged`), paged by file with a cursor
 * bound to the status hash. Binary files are listed, never dumped; secret and policy-protected files are listed as
 * omitted, never shown; output over max_bytes is cut with a continuation. With expected_status_hash, a moved tree
 * is STALE_GIT and no diff body is returned. git runs in the sanitized view (src/vcs/git-view.ts): submodules are not
 * entered, no driver, filter or hook of the repository runs, and failures are classified without git's stderr.
 */
import path from 'node:path';
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { classifyEntry } from '../policy/authorize.js';
import { findContainingRoot, toPosixRelative } from '../policy/containment.js';
import { hiddenInWorkTree } from '../policy/git-access.js';
import { resolveInRoots } from '../policy/resolve-path.js';
import { gitStatus, throwGitFailure } from '../vcs/git.js';
import type { GitView } from '../vcs/git-view.js';
import { splitDiff } from '../vcs/diff-output.js';
import { ExpectedStatusHash, PathArg } from './common-schemas.js';
import { CursorCount, decodeCursor, encodeCursor, queryFingerprint } from './cursor.js';
import { jsonStringBytes } from './response-budget.js';
import { defineTool, type ToolContext } from './define-tool.js';
import { pageDiff } from './git-diff-page.js';
import { openWorkTree } from './git-status.js';

export const GitDiffInput = z.strictObject({
  path: PathArg.default('.').describe('In the work tree (default the first root)'),
  staged: z.boolean().default(false).describe('Index vs HEAD'),
  paths: z.array(PathArg).max(1000).optional().describe('Only these paths'),
  context_lines: z.number().int().min(0).max(100).default(3).describe('0-100 (default 3)'),
  expected_status_hash: ExpectedStatusHash.optional(),
  max_bytes: z.number().int().min(1).optional().describe('Default and most 262144'),
  cursor: z.string().optional(),
});

/**
 * Where a git_diff page resumes: the file (index in the diff's files) and the UTF-16 offset inside what that file
 * shows, for the work tree in the state `status_hash` names (a moved tree is STALE_GIT).
 */
const DiffPosition = z.strictObject({
  index: CursorCount,
  offset: CursorCount,
  status_hash: z.string().regex(/^sha256:[0-9a-f]{64}$/),
});

const FileSchema = z.object({
  path: z.string().describe('Relative to repo_root'),
  old_path: z.string().optional(),
  binary: z.boolean(),
  omitted: z.enum(['secret', 'policy']).optional().describe("Present when the file's diff is withheld"),
});

export const GitDiffOutput = z.object({
  repo_root: z.string(),
  diff: z.string().describe('Unified diff text of this page'),
  files: z.array(FileSchema).describe('Files whose diff (or part of it) is on this page'),
  files_total: z.number().int(),
  status_hash: z.string(),
  truncated: z.boolean(),
  next_cursor: z.string().nullable(),
});

export const gitDiff = defineTool({
  name: 'git_diff',
  title: 'Git diff',
  description:
    'Diff of the work tree against the index (staged: index against HEAD), paged by file, 256 KiB a page ' +
    '(next_cursor). Binary and secret files listed, not dumped; untracked files not included. A stale ' +
    'expected_status_hash fails (STALE_GIT).',
  group: 'git',
  input: GitDiffInput,
  output: GitDiffOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path, ...(a.paths ?? [])],
  // A heavy call: the server runs it through the heavy-call queue (src/tools/heavy-calls.ts).
  heavy: () => ['git'],
  async run(args, ctx) {
    const fingerprint = queryFingerprint(['git_diff', args.path, args.staged, args.paths, args.context_lines]);
    const position = args.cursor ? decodeCursor(args.cursor, fingerprint, DiffPosition) : null;
    // docs/errors.md "Order of checks": every path's containment (step 5) before anything about the tree (STALE_GIT is step 8). A `paths`
    // entry need not exist: a file deleted in the work tree is a fine thing to diff.
    const filters: ResolvedFilter[] = [];
    for (const p of args.paths ?? [])
      filters.push(await resolveInRoots(p, ctx.policy.roots, { followFinal: false }, 'paths'));
    const view = await openWorkTree(args.path, ctx);
    try {
      return await diffIn(view, args, ctx, { filters, position, fingerprint });
    } finally {
      await view.dispose();
    }
  },
});

type ResolvedFilter = Awaited<ReturnType<typeof resolveInRoots>>;

/** The `:(literal)` pathspecs of `filters`, relative to the work tree `root`. @throws ToolError VALIDATION outside_work_tree */
function workTreePathspecs(root: string, filters: readonly ResolvedFilter[]): string[] {
  const pathspecs: string[] = [];
  for (const f of filters) {
    const relative = path.relative(root, f.real);
    if (relative.startsWith('..') || path.isAbsolute(relative)) {
      throw new ToolError('VALIDATION', `${f.absolute} is not inside the work tree ${root}.`, {
        path: f.absolute,
        details: { reason: 'outside_work_tree', field: 'paths' },
        suggestion: 'List only paths inside the work tree of path, or call git_diff once per repository.',
      });
    }
    pathspecs.push(`:(literal)${relative || '.'}`);
  }
  return pathspecs;
}

/** The arguments of the diff git runs in the view. */
function diffArguments(staged: boolean, contextLines: number, pathspecs: readonly string[]): string[] {
  return [
    // The work-tree diff uses the plumbing `diff-files -p`: porcelain `git diff` refreshes and rewrites .git/index
    // whenever stat data is stale, even under --no-optional-locks (docs/security.md "What git may read": never write to the repository).
    // `diff --cached` does not touch the index, and unlike diff-index it also works on an unborn branch.
    ...(staged ? ['diff', '--cached'] : ['diff-files', '-p']),
    '--no-ext-diff',
    '--no-textconv',
    '--no-color',
    '-M',
    // Submodules are never entered (no child git runs with the submodule's own config).
    '--ignore-submodules=all',
    // Fixed a/ b/ prefixes whatever diff.noprefix / diff.mnemonicPrefix the repository sets (splitDiff reads them).
    '--src-prefix=a/',
    '--dst-prefix=b/',
    `-U${contextLines}`,
    '--',
    ...pathspecs,
  ];
}

/** The diff itself, in the opened view (disposed by the caller): status hash and staleness, git's diff, one page. */
async function diffIn(
  view: GitView,
  args: z.output<typeof GitDiffInput>,
  ctx: ToolContext,
  request: {
    filters: readonly ResolvedFilter[];
    position: z.infer<typeof DiffPosition> | null;
    fingerprint: string;
  },
) {
  const { position, fingerprint } = request;
  const root = view.workTree;
  const pathspecs = workTreePathspecs(root, request.filters);
  const gitOptions = { timeoutMs: ctx.config.limits.gitTimeoutMs, signal: ctx.signal };
  const hides = hiddenInWorkTree(ctx.policy, root);
  const { statusHash } = await gitStatus(view, gitOptions, hides);
  const stale = (expected: string) =>
    new ToolError(
      'STALE_GIT',
      `The git work tree ${root} changed since ${expected === args.expected_status_hash ? 'expected_status_hash' : 'the cursor'} was taken.`,
      {
        path: root,
        details: { current_status_hash: statusHash, work_tree: root },
      },
    );
  if (args.expected_status_hash !== undefined && args.expected_status_hash !== statusHash)
    throw stale(args.expected_status_hash);
  if (position && position.status_hash !== statusHash) throw stale(position.status_hash);
  const r = await view.run(diffArguments(args.staged, args.context_lines, pathspecs), {
    ...gitOptions,
    maxOutputBytes: 256 * 1024 * 1024,
  });
  if (r.exitCode !== 0) throwGitFailure(r, root, 'diff', view);
  const chunks = splitDiff(r.stdout);
  const maxBytes = Math.min(args.max_bytes ?? ctx.config.limits.maxReadBytes, ctx.config.limits.maxReadBytes);
  const page = pageDiff(
    chunks,
    { index: position?.index ?? 0, offset: position?.offset ?? 0 },
    maxBytes,
    4096 + jsonStringBytes(root),
    (p) => {
      const abs = path.join(root, p);
      return classifyEntry(
        ctx.policy,
        abs,
        toPosixRelative(findContainingRoot(ctx.policy.roots, abs)?.real ?? root, abs),
      );
    },
  );
  const truncated = page.next !== null;
  const nextCursor = page.next ? encodeCursor(fingerprint, { ...page.next, status_hash: statusHash }) : null;
  return {
    structured: {
      repo_root: root,
      diff: page.text,
      files: page.files,
      // Hidden files are not counted either: their number is not the caller's to know.
      files_total: chunks.filter((c) => !hides(c.path) && (c.oldPath === undefined || !hides(c.oldPath))).length,
      status_hash: statusHash,
      truncated,
      next_cursor: nextCursor,
    },
    text:
      (page.text || '(no differences)\n') +
      (truncated ? `[fs-tools: diff truncated; continue with cursor: ${nextCursor}]\n` : '') +
      `status_hash ${statusHash}`,
    audit: { paths: [root] },
  };
}
