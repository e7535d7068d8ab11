/**
 * What an issue tool does when called (docs/issue-tools.md): resolve the target (src/tools/issue-target.ts) → the host
 * allow-list (GH_HOST_DENIED) → the forge backend in src/vcs (network) → the result, with list and view pages fitted
 * to the response budget and rendered between the untrusted-content markers (src/tools/issue-render.ts).
 * `defineIssueTool` builds each forge's tool from its contract (github-issues.ts, gitlab-issues.ts).
 *
 * Order inside a call (after docs/errors.md "Order of checks" steps 1–3 in call-tool: lookup, VALIDATION incl. `validateIssueArgs`,
 * READONLY/BUDGET for write actions): resolve the target (path → roots policy → work tree → remotes →
 * *_REPO_UNRESOLVED/*_AMBIGUOUS) → GH_HOST_DENIED → backend (network).
 */
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { githubBackend } from '../vcs/github.js';
import { gitlabBackend } from '../vcs/gitlab.js';
import { assertHostAllowed } from '../vcs/host-allow.js';
import { describeTarget, hostArg, type Issue, type IssueComment } from '../vcs/issues.js';
import type { Forge } from '../vcs/remotes.js';
import { decodeCursor, encodeCursor, queryFingerprint } from './cursor.js';
import { defineTool, type ToolContext, type ToolOutcome } from './define-tool.js';
import { commentBlock, issueBlock, issueLine, wrapUntrusted } from './issue-render.js';
import { validateIssueArgs } from './issue-rules.js';
import { issueInput, IssueOutput, WRITE_ACTIONS, type IssueArgs, type IssueResult } from './issue-schema.js';
import { insideRootsOf, resolveTarget } from './issue-target.js';
import { jsonBytes, jsonStringBytes, prefixWithinJsonBytes, ResponseBudget } from './response-budget.js';

/**
 * Where an issue list or view page resumes: the forge page, its size (a list page may have been split, see
 * runIssueAction), and how many items of that page an earlier response already returned (response budget).
 */
const IssuePosition = z.strictObject({
  page: z.number().int().min(1),
  per_page: z.number().int().min(1).max(100),
  skip: z.number().int().min(0).max(100).optional(),
});

/**
 * Decodes a page cursor for this query (src/tools/cursor.ts).
 * @throws ToolError VALIDATION invalid_cursor / stale_cursor / cursor_mismatch
 */
function pageFrom(
  cursor: string | undefined,
  fingerprint: string,
  perPage: number,
): { page: number; perPage: number; skip: number } {
  if (cursor === undefined) return { page: 1, perPage, skip: 0 };
  const position = decodeCursor(cursor, fingerprint, IssuePosition);
  return { page: position.page, perPage: position.per_page, skip: position.skip ?? 0 };
}

/**
 * The issue with its body cut so that it fits the budget twice (structured and text), charging what it takes. The
 * text says when the body was cut; the structured body is then a prefix of the real one.
 */
function fitBody(issue: Issue, budget: ResponseBudget): Issue {
  const fixed = jsonBytes({ ...issue, body: '' }) * 2;
  budget.charge(fixed);
  const body = issue.body ?? '';
  const cost = 2 * jsonStringBytes(body);
  if (budget.take(cost)) return issue;
  const kept = prefixWithinJsonBytes(body, Math.floor(budget.remaining / 2) - 1024);
  budget.charge(2 * jsonStringBytes(kept));
  return { ...issue, body: kept };
}

/**
 * Runs one action of `forge`'s tool.
 * @throws ToolError (see validateIssueArgs, resolveTarget, GH_HOST_DENIED, and the backends' docs/issue-tools.md codes)
 */
export async function runIssueAction(
  forge: Forge,
  tool: string,
  args: IssueArgs,
  ctx: ToolContext,
): Promise<ToolOutcome<IssueResult>> {
  const target = await resolveTarget(forge, args, ctx);
  // process.env: the operator's allow-list defaults (GH_HOST, GITLAB_HOST …), not a test switch.
  assertHostAllowed(
    ctx.config.gitRemoteAllow,
    { host: target.host, port: target.port, repo: target.repo },
    process.env,
    insideRootsOf(ctx),
  );
  const callOpts = {
    timeoutMs: ctx.config.limits.forgeTimeoutMs,
    maxOutputBytes: ctx.config.limits.forgeOutputBytes,
    signal: ctx.signal,
    allow: ctx.config.gitRemoteAllow,
    isInsideRoots: insideRootsOf(ctx),
  };
  const backend = forge === 'github' ? githubBackend(callOpts) : gitlabBackend(callOpts);
  const base = {
    action: args.action,
    forge,
    host: hostArg(target),
    repo: target.repo,
    untrusted_content: true as const,
  };
  const audit = { action: args.action, paths: args.path !== undefined ? [args.path] : [] };
  const fingerprint = queryFingerprint({
    tool,
    action: args.action,
    host: base.host,
    repo: target.repo.toLowerCase(),
    state: args.state ?? 'open',
    labels: args.labels ?? [],
    number: args.number ?? null,
    limit: args.limit ?? 30,
  });
  const perPage = args.limit ?? 30;
  const where = describeTarget(target, args.number);

  switch (args.action) {
    case 'list': {
      const state = args.state ?? 'open';
      const at = pageFrom(args.cursor, fingerprint, perPage);
      // Issue #14: a page whose raw answer exceeds the forge output cap (huge bodies) is fetched again in halves
      // (page p of size n is pages 2p-1 and 2p of size n/2), down to one issue per page; the cursor carries the size.
      let size = at.perPage;
      let page = at.page;
      let r;
      for (;;) {
        try {
          r = await backend.list(target, { state, labels: args.labels, perPage: size, page });
          break;
        } catch (error) {
          if (!(error instanceof ToolError) || error.code !== 'GH_OUTPUT_LIMIT' || size === 1 || at.skip > 0)
            throw error;
          size = Math.ceil(size / 2);
          page = 2 * page - 1;
          if ((at.page - 1) * at.perPage !== (page - 1) * size) throw error; // odd sizes do not split exactly
        }
      }
      // Issue #14: issues are charged to the response budget (structured + text line) as they are added; the rest
      // of the page is left for the cursor (same page, skip).
      const budget = new ResponseBudget();
      budget.charge(4096);
      const shown: Issue[] = [];
      const lines: string[] = [];
      const pageIssues = r.issues.slice(at.skip);
      for (const issue of pageIssues) {
        const line = issueLine(issue);
        if (shown.length > 0 && !budget.take(jsonBytes(issue) + jsonStringBytes(line) + 2)) break;
        shown.push(issue);
        lines.push(line);
      }
      const cut = shown.length < pageIssues.length;
      const next = cut
        ? encodeCursor(fingerprint, { page, per_page: size, skip: at.skip + shown.length })
        : r.nextPage !== null
          ? encodeCursor(fingerprint, { page: r.nextPage, per_page: size })
          : null;
      const structured: IssueResult = {
        ...base,
        issues: shown,
        pull_requests_omitted: r.pullRequestsOmitted,
        next_cursor: next,
      };
      const head =
        `${where}: ${shown.length} ${state === 'all' ? '' : `${state} `}issue${shown.length === 1 ? '' : 's'} on page ${page}` +
        `${size !== perPage ? ` (${size} per page: the forge output cap)` : ''}` +
        `${forge === 'github' ? `; ${r.pullRequestsOmitted} pull request${r.pullRequestsOmitted === 1 ? '' : 's'} omitted` : ''}` +
        `${cut ? `; ${pageIssues.length - shown.length} more on this page left out (response budget)` : ''}` +
        `${next ? `; more: call again with cursor: ${next}` : ''}.`;
      const text = shown.length === 0 ? head : `${head}\n${await wrapUntrusted(lines.join('\n'))}`;
      return { structured, text, audit };
    }
    case 'view': {
      const at = pageFrom(args.cursor, fingerprint, perPage);
      const page = at.page;
      const r = await backend.view(target, args.number!, { perPage: at.perPage, page });
      // Issue #14: the issue (its body capped to what fits) and then comments while the response budget lasts.
      const budget = new ResponseBudget();
      budget.charge(4096);
      const issue = fitBody(r.issue, budget);
      const comments: IssueComment[] = [];
      const pageComments = r.comments.slice(at.skip);
      for (const c of pageComments) {
        if (!budget.take(2 * jsonBytes(c))) break;
        comments.push(c);
      }
      const cut = comments.length < pageComments.length;
      const next = cut
        ? encodeCursor(fingerprint, { page, per_page: at.perPage, skip: at.skip + comments.length })
        : r.nextCommentsPage !== null
          ? encodeCursor(fingerprint, { page: r.nextCommentsPage, per_page: at.perPage })
          : null;
      const structured: IssueResult = { ...base, issue, comments, next_cursor: next };
      const first = (page - 1) * at.perPage + at.skip + 1;
      const head =
        `${where} (${r.issue.state}), ${r.issue.comments_count} comment${r.issue.comments_count === 1 ? '' : 's'}` +
        `${comments.length ? `; showing comments from #${first}` : ''}` +
        `${issue.body !== r.issue.body ? `; body cut to ${issue.body?.length ?? 0} of ${r.issue.body?.length ?? 0} characters (response budget)` : ''}` +
        `${next ? `; more: call again with cursor: ${next}` : ''}.`;
      return { structured, text: `${head}\n${await wrapUntrusted(issueBlock(issue, comments))}`, audit };
    }
    case 'create': {
      const issue = await backend.create(target, {
        title: args.title,
        body: args.body,
        labels: args.labels,
        assignees: args.assignees,
      });
      return {
        structured: { ...base, issue },
        text: `Created ${describeTarget(target, issue.number)}.\n${await wrapUntrusted(issueLine(issue))}`,
        audit,
      };
    }
    case 'comment': {
      const r = await backend.comment(target, args.number!, args.body!);
      const structured: IssueResult = { ...base, comment: r.comment, ...(r.issue ? { issue: r.issue } : {}) };
      return {
        structured,
        text: `Commented on ${where} (comment ${r.comment.id}).\n${await wrapUntrusted(commentBlock(r.comment))}`,
        audit,
      };
    }
    case 'close': {
      const reason = args.reason ?? 'completed';
      const issue = await backend.close(target, args.number!, reason);
      const warnings =
        forge === 'gitlab' && reason === 'not_planned'
          ? ['GitLab records no close reason; not_planned was not stored.']
          : undefined;
      return {
        structured: { ...base, issue, ...(warnings ? { warnings } : {}) },
        text: `Closed ${where}${forge === 'github' ? ` as ${reason}` : ''}.${warnings ? ` Warning: ${warnings[0]}` : ''}\n${await wrapUntrusted(issueLine(issue))}`,
        audit,
      };
    }
    case 'reopen': {
      const issue = await backend.reopen(target, args.number!);
      return {
        structured: { ...base, issue },
        text: `Reopened ${where}.\n${await wrapUntrusted(issueLine(issue))}`,
        audit,
      };
    }
    case 'edit': {
      const issue = await backend.edit(target, args.number!, {
        title: args.title,
        body: args.body,
        labels: args.labels,
        assignees: args.assignees,
      });
      const changed = (['title', 'body', 'labels', 'assignees'] as const).filter((k) => args[k] !== undefined);
      return {
        structured: { ...base, issue },
        text: `Edited ${where} (${changed.join(', ')}).\n${await wrapUntrusted(issueLine(issue))}`,
        audit,
      };
    }
  }
}

/**
 * One forge's issue tool: its name, title and description on top of the shared schemas, rules and handler. Both
 * tools are open-world and may write (the most dangerous action decides the annotations); a write action is
 * mutating (READONLY, budget).
 */
export function defineIssueTool(forge: Forge, contract: { name: string; title: string; description: string }) {
  return defineTool({
    ...contract,
    group: 'issues',
    input: issueInput(forge),
    output: IssueOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    mutating: (a) => WRITE_ACTIONS.has(a.action),
    validate: (a) => validateIssueArgs(forge, a),
    pathsOf: (a) => (a.path !== undefined ? [a.path] : []),
    // One forge call at a time per slot; the git view that finds the repository from a path counts as part of it.
    heavy: () => ['forge'],
    run: (args, ctx) => runIssueAction(forge, contract.name, args, ctx),
  });
}
