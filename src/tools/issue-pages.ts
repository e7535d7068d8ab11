/**
 * The two paged actions of the issue tools (docs/issue-tools.md): `list` and `view`, each one forge page fitted to
 * the response budget (src/tools/response-budget.ts), with a cursor (src/tools/cursor.ts) that resumes where the
 * response stopped — the next forge page, or the same page with the items already returned skipped.
 */
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import type { Issue, IssueBackend, IssueComment, IssueTarget } from '../vcs/issues.js';
import type { Forge } from '../vcs/remotes.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import type { AuditFacts, ToolOutcome } from './define-tool.js';
import { issueBlock, issueLine } from './issue-render.js';
import type { IssueArgs, IssueResult } from './issue-schema.js';
import { wrapUntrusted } from './issue-untrusted.js';
import { jsonBytes, jsonStringBytes, prefixWithinJsonBytes, ResponseBudget } from './response-budget.js';

/** One call of an issue tool after its target is resolved and allowed: what every action needs. */
export interface IssueCall {
  forge: Forge;
  target: IssueTarget;
  backend: IssueBackend;
  /** The fields every structured result starts with. */
  base: Pick<IssueResult, 'action' | 'forge' | 'host' | 'repo' | 'untrusted_content'>;
  audit: AuditFacts;
  /** The query's fingerprint, which a cursor must carry (src/tools/cursor.ts). */
  fingerprint: string;
  /** The page size asked for (`limit`, default 30). */
  perPage: number;
  /** The target as text, e.g. "github.com/o/r#12". */
  where: string;
}

/**
 * Where an issue list or view page resumes: the forge page, its size (a list page may have been split, see
 * listAction), and how many items of that page an earlier response already returned (response budget).
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
 * Fetches one list page. A page whose raw answer exceeds the forge output cap (huge bodies) is fetched again in
 * halves (page p of size n is pages 2p-1 and 2p of size n/2), down to one issue per page; the cursor carries the size.
 * @throws ToolError GH_OUTPUT_LIMIT when even the smallest page (or a resumed, skipped one) is over the cap
 */
async function fetchListPage(call: IssueCall, args: IssueArgs, at: ReturnType<typeof pageFrom>) {
  let size = at.perPage;
  let page = at.page;
  for (;;) {
    try {
      const r = await call.backend.list(call.target, {
        state: args.state ?? 'open',
        labels: args.labels,
        perPage: size,
        page,
      });
      return { r, size, page };
    } catch (error) {
      if (!(error instanceof ToolError) || error.code !== 'GH_OUTPUT_LIMIT' || size === 1 || at.skip > 0) throw error;
      size = Math.ceil(size / 2);
      page = 2 * page - 1;
      if ((at.page - 1) * at.perPage !== (page - 1) * size) throw error; // odd sizes do not split exactly
    }
  }
}

/**
 * `list`: one forge page of issues, charged to the response budget (structured + text line) as they are added; the
 * rest of the page is left for the cursor (same page, skip).
 */
export async function listAction(call: IssueCall, args: IssueArgs): Promise<ToolOutcome<IssueResult>> {
  const { fingerprint, forge } = call;
  const state = args.state ?? 'open';
  const at = pageFrom(args.cursor, fingerprint, call.perPage);
  const { r, size, page } = await fetchListPage(call, args, at);
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
    ...call.base,
    issues: shown,
    pull_requests_omitted: r.pullRequestsOmitted,
    next_cursor: next,
  };
  const head =
    `${call.where}: ${shown.length} ${state === 'all' ? '' : `${state} `}issue${shown.length === 1 ? '' : 's'} on page ${page}` +
    `${size !== call.perPage ? ` (${size} per page: the forge output cap)` : ''}` +
    `${forge === 'github' ? `; ${r.pullRequestsOmitted} pull request${r.pullRequestsOmitted === 1 ? '' : 's'} omitted` : ''}` +
    `${cut ? `; ${pageIssues.length - shown.length} more on this page left out (response budget)` : ''}` +
    `${next ? `; more: call again with cursor: ${next}` : ''}.`;
  const text = shown.length === 0 ? head : `${head}\n${await wrapUntrusted(lines.join('\n'))}`;
  return { structured, text, audit: call.audit };
}

/** `view`: the issue (its body capped to what fits) and then comments while the response budget lasts. */
export async function viewAction(call: IssueCall, args: IssueArgs): Promise<ToolOutcome<IssueResult>> {
  const { fingerprint } = call;
  const at = pageFrom(args.cursor, fingerprint, call.perPage);
  const page = at.page;
  const r = await call.backend.view(call.target, args.number!, { perPage: at.perPage, page });
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
  const structured: IssueResult = { ...call.base, issue, comments, next_cursor: next };
  const first = (page - 1) * at.perPage + at.skip + 1;
  const head =
    `${call.where} (${r.issue.state}), ${r.issue.comments_count} comment${r.issue.comments_count === 1 ? '' : 's'}` +
    `${comments.length ? `; showing comments from #${first}` : ''}` +
    `${issue.body !== r.issue.body ? `; body cut to ${issue.body?.length ?? 0} of ${r.issue.body?.length ?? 0} characters (response budget)` : ''}` +
    `${next ? `; more: call again with cursor: ${next}` : ''}.`;
  return { structured, text: `${head}\n${await wrapUntrusted(issueBlock(issue, comments))}`, audit: call.audit };
}
