/**
 * git_status (docs/security.md "What git may read"): the work tree's branch, upstream, ahead/behind, entries and status_hash (sha256 over the
 * exact porcelain v2 output of the sanitized view, untracked files included, policy-hidden paths' lines left out;
 * README "Git"). Read-only: git runs with
 * --no-optional-locks against a private git dir (src/vcs/git-view.ts), and reads the index through a descriptor.
 */
import path from 'node:path';
import { z } from 'zod';
import { authorizeRead } from '../policy/authorize.js';
import { gitViewAccess, hiddenInWorkTree } from '../policy/git-access.js';
import { gitStatus, openRepository } from '../vcs/git.js';
import { statusTicket } from '../vcs/git-status-watch.js';
import type { GitView } from '../vcs/git-view.js';
import { PathArg } from './common-schemas.js';
import { defineTool, type ToolContext } from './define-tool.js';
import { quoteName } from './text-safe.js';
import { jsonBytes, jsonStringBytes, ResponseBudget } from './response-budget.js';

export const GitStatusInput = z.strictObject({
  path: PathArg.default('.').describe('In the work tree (default the first root)'),
});

export const GitStatusOutput = z.object({
  repo_root: z.string(),
  branch: z.string().nullable().describe('Current branch, null when detached'),
  detached: z.boolean(),
  head: z.string().nullable().describe('HEAD commit id, null before the first commit'),
  upstream: z.string().nullable(),
  ahead: z.number().int().nullable(),
  behind: z.number().int().nullable(),
  entries: z.array(
    z.object({
      path: z.string().describe('Relative to repo_root'),
      kind: z.enum(['changed', 'renamed', 'unmerged', 'untracked', 'ignored']),
      index: z.string().describe('Index (staged) status letter; "." unmodified'),
      worktree: z.string().describe('Work-tree status letter; "." unmodified'),
      orig_path: z.string().optional(),
    }),
  ),
  status_hash: z.string().describe('Pass as expected_status_hash to mutations and git_diff'),
  clean: z.boolean(),
  truncated: z.boolean().describe('True when the response budget cut the entries list (status_hash still covers all)'),
  entries_total: z.number().int().describe('Entries in the whole status (more than entries.length when truncated)'),
});

/** The real directory `requested` names (a file's directory), after the read checks of docs/errors.md "Order of checks" steps 4–7. */
async function directoryOf(requested: string, ctx: ToolContext): Promise<string> {
  const target = await authorizeRead(requested, ctx.policy, { kind: 'any', secrets: 'flag' });
  return target.stats.isDirectory() ? target.real : path.dirname(target.real);
}

/**
 * Opens the sanitized view of the repository containing `requested` (dispose it when done): the one way git_status,
 * git_diff and the issue tools' remote lookup find a repository, every git location verified inside the roots.
 * @throws ToolError NOT_ALLOWED (path, work-tree root or a git metadata link outside the roots), VALIDATION (not a
 *   work tree, dubious ownership, unsupported repository, git_missing), SECRET_DENIED, IO_ERROR corrupt_repository /
 *   git_timeout
 */
export async function openWorkTree(requested: string, ctx: ToolContext): Promise<GitView> {
  return openRepository(await directoryOf(requested, ctx), gitViewAccess(ctx.policy), {
    timeoutMs: ctx.config.limits.gitTimeoutMs,
    signal: ctx.signal,
  });
}

export const gitStatusTool = defineTool({
  name: 'git_status',
  title: 'Git status',
  description:
    'Git status of the work tree at path: branch, ahead/behind, entries, clean, status_hash (pass it as ' +
    'expected_status_hash: STALE_GIT if the tree moved). Read-only; runs nothing the repository names; fails ' +
    'outside a work tree or if git metadata leads out of the roots.',
  group: 'git',
  input: GitStatusInput,
  output: GitStatusOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path],
  heavy: () => ['git'],
  async run(args, ctx) {
    // Taken before anything of the repository is read: a kept answer is used only while no event came since the
    // producing call's own ticket (docs/security.md "git_status: reuse of the previous answer").
    const ticket = statusTicket();
    const view = await openWorkTree(args.path, ctx);
    const root = view.workTree;
    // A policy-hidden path behaves as absent, so git_status does not name it either, and the status hash leaves its
    // line out. A rename or copy has two names, and either hidden side drops the whole entry, as git_diff drops its
    // file (docs/security.md "Finding the repository and continuation cursors").
    const hides = hiddenInWorkTree(ctx.policy, root);
    let status: Awaited<ReturnType<typeof gitStatus>>;
    try {
      status = await gitStatus(
        view,
        { timeoutMs: ctx.config.limits.gitTimeoutMs, signal: ctx.signal, reuse: ticket },
        hides,
      );
    } finally {
      await view.dispose();
    }
    // Parsed once: the entries are those the status hash covers (hidden ones left out).
    const { branch, entries, statusHash } = status;
    // The response budget (docs/tools.md): entries are charged to the response budget (structured + text line); the rest is counted, not sent.
    const budget = new ResponseBudget();
    budget.charge(4096);
    const shown: typeof entries = [];
    const entryLines: string[] = [];
    for (const e of entries) {
      const line = `${e.index}${e.worktree} ${quoteName(e.path)}${e.orig_path !== undefined ? ` (from ${quoteName(e.orig_path)})` : ''}`;
      if (!budget.take(jsonBytes(e) + jsonStringBytes(line) + 2)) break;
      shown.push(e);
      entryLines.push(line);
    }
    const truncated = shown.length < entries.length;
    const structured = {
      repo_root: root,
      branch: branch.head,
      detached: branch.detached,
      head: branch.oid,
      upstream: branch.upstream,
      ahead: branch.ahead,
      behind: branch.behind,
      entries: shown,
      status_hash: statusHash,
      clean: entries.length === 0,
      truncated,
      entries_total: entries.length,
    };
    const lines = [
      `${quoteName(root)}: ${branch.detached ? 'detached HEAD' : `branch ${quoteName(branch.head ?? '(none)')}`}` +
        `${branch.upstream ? ` tracking ${quoteName(branch.upstream)} (ahead ${branch.ahead}, behind ${branch.behind})` : ''}`,
      ...entryLines,
      entries.length === 0
        ? 'clean'
        : `${entries.length} entries${
            truncated
              ? ` (${shown.length} shown: response budget; use git_diff with paths, or list_directory, for the rest)`
              : ''
          }`,
      `status_hash ${statusHash}`,
    ];
    return { structured, text: lines.join('\n'), audit: { paths: [root] } };
  },
});
