/**
 * The GitHub issue backend (docs/issue-tools.md): what each action requests and how the answer maps onto the issue
 * model. The pieces it stands on, one concern each:
 * - src/vcs/github-target.ts: the API authority of a host, the repository as a REST path;
 * - src/vcs/github-token.ts: which environment token reaches gh for which host, gh's environment;
 * - src/vcs/github-request.ts: one `gh api` run behind the egress guard;
 * - src/vcs/github-classify.ts: failures → docs/issue-tools.md codes; retry semantics per src/vcs/forge-errors.ts
 *   (reads may retry; writes never);
 * - src/vcs/forge-response.ts: JSON bodies, paging headers and field mapping shared with GitLab.
 *
 * Pull requests share the issue number space: `view` of a PR number and every write on one is GH_NOT_ISSUE (each
 * write first GETs the issue; the write itself is exactly one POST or PATCH); `list` leaves PRs out and counts them.
 */
import { ToolError } from '../errors/tool-error.js';
import type { CallKind } from './forge-errors.js';
import { nextPageOf, toComment, toIssue, type ForgeResponse, type IssueFieldNames } from './forge-response.js';
import { ghApi, type GhRequest } from './github-request.js';
import { repoPath } from './github-target.js';
import {
  describeTarget,
  str,
  type ForgeCallOptions,
  type Issue,
  type IssueBackend,
  type IssueFields,
  type IssuePage,
  type IssueTarget,
  type IssueWithComments,
} from './issues.js';

/** GitHub REST field names (issues and issue comments). */
const GITHUB_FIELDS: IssueFieldNames = {
  number: 'number',
  author: 'user',
  userName: 'login',
  url: 'html_url',
  commentsCount: 'comments',
  body: 'body',
  stateReason: 'state_reason',
};

/** True when a REST issue object is a pull request. */
function isPullRequest(o: unknown): boolean {
  return o !== null && typeof o === 'object' && (o as { pull_request?: unknown }).pull_request != null;
}

/** GH_NOT_ISSUE for `number`. */
function notIssue(target: IssueTarget, number: number, o: unknown, writing: boolean): ToolError {
  return new ToolError(
    'GH_NOT_ISSUE',
    `${describeTarget(target, number)} is a pull request, not an issue${writing ? '; nothing was changed' : ''}.`,
    {
      details: { number, kind: 'pull_request', url: str(o, 'html_url') },
      suggestion: 'Use an issue number (github_issues list shows issues only); pull requests need a pull-request tool.',
    },
  );
}

/** The REST body of `fields` (create and edit): only the fields given. */
function fieldsBody(fields: IssueFields): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (fields.title !== undefined) body.title = fields.title;
  if (fields.body !== undefined) body.body = fields.body;
  if (fields.labels !== undefined) body.labels = fields.labels;
  if (fields.assignees !== undefined) body.assignees = fields.assignees;
  return body;
}

/**
 * The GitHub backend (docs/issue-tools.md) over `gh api`.
 * @throws ToolError with docs/issue-tools.md codes (see classifyGh), GH_NOT_ISSUE for pull-request numbers
 */
export function githubBackend(opts: ForgeCallOptions): IssueBackend {
  const call = (target: IssueTarget, req: GhRequest): Promise<ForgeResponse> => ghApi(target, req, opts);
  const issuePath = (target: IssueTarget, number: number): string => `repos/${repoPath(target)}/issues/${number}`;

  /** GETs issue `number` (kind read or precheck) and refuses a pull request. */
  async function getIssue(target: IssueTarget, number: number, kind: CallKind): Promise<Issue> {
    const subject = describeTarget(target, number);
    const r = await call(target, { method: 'GET', apiPath: issuePath(target, number), kind, subject });
    if (isPullRequest(r.data)) throw notIssue(target, number, r.data, kind !== 'read');
    return toIssue(r.data, GITHUB_FIELDS, true);
  }

  async function patch(target: IssueTarget, number: number, body: Record<string, unknown>): Promise<Issue> {
    await getIssue(target, number, 'precheck');
    const subject = describeTarget(target, number);
    const r = await call(target, { method: 'PATCH', apiPath: issuePath(target, number), body, kind: 'write', subject });
    return toIssue(r.data, GITHUB_FIELDS, true);
  }

  return {
    async list(target, q): Promise<IssuePage> {
      const params = new URLSearchParams({ state: q.state, per_page: String(q.perPage), page: String(q.page) });
      if (q.labels?.length) params.set('labels', q.labels.join(','));
      const apiPath = `repos/${repoPath(target)}/issues?${params}`;
      const r = await call(target, { method: 'GET', apiPath, kind: 'read', subject: describeTarget(target) });
      const items = Array.isArray(r.data) ? r.data : [];
      const issues = items.filter((o) => !isPullRequest(o)).map((o) => toIssue(o, GITHUB_FIELDS, false));
      // GitHub sends a Link header with rel="next" whenever another page exists.
      return { issues, pullRequestsOmitted: items.length - issues.length, nextPage: nextPageOf(r.headers, q.page) };
    },

    async view(target, number, q): Promise<IssueWithComments> {
      const issue = await getIssue(target, number, 'read');
      if (issue.comments_count === 0 && q.page === 1) return { issue, comments: [], nextCommentsPage: null };
      const params = new URLSearchParams({ per_page: String(q.perPage), page: String(q.page) });
      const apiPath = `${issuePath(target, number)}/comments?${params}`;
      const r = await call(target, { method: 'GET', apiPath, kind: 'read', subject: describeTarget(target, number) });
      const items = Array.isArray(r.data) ? r.data : [];
      return {
        issue,
        comments: items.map((o) => toComment(o, GITHUB_FIELDS)),
        nextCommentsPage: nextPageOf(r.headers, q.page),
      };
    },

    async create(target, fields): Promise<Issue> {
      const r = await call(target, {
        method: 'POST',
        apiPath: `repos/${repoPath(target)}/issues`,
        body: fieldsBody(fields),
        kind: 'write',
        subject: `the newest issues of ${describeTarget(target)}`,
      });
      return toIssue(r.data, GITHUB_FIELDS, true);
    },

    async comment(target, number, text) {
      const issue = await getIssue(target, number, 'precheck');
      const r = await call(target, {
        method: 'POST',
        apiPath: `${issuePath(target, number)}/comments`,
        body: { body: text },
        kind: 'write',
        subject: describeTarget(target, number),
      });
      return {
        issue: { ...issue, comments_count: issue.comments_count + 1 },
        comment: toComment(r.data, GITHUB_FIELDS),
      };
    },

    close: (target, number, reason) => patch(target, number, { state: 'closed', state_reason: reason }),
    reopen: (target, number) => patch(target, number, { state: 'open' }),
    edit: (target, number, fields) => patch(target, number, fieldsBody(fields)),
  };
}
