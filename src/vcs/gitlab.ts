/**
 * The GitLab issue backend (docs/issue-tools.md) over the REST API v4: what each action requests and how the answer maps onto
 * the issue model. The pieces it stands on, one concern each:
 * - src/vcs/gitlab-instance.ts: instance spelling, the instance a remote names, plain http only on loopback;
 * - src/vcs/gitlab-token.ts: which environment token may go to which instance;
 * - src/vcs/gitlab-glab.ts / src/vcs/gitlab-https.ts: the two transports (`glab api` when installed, else fetch);
 * - src/vcs/gitlab-classify.ts: failures → docs/issue-tools.md codes; retry semantics per src/vcs/forge-errors.ts (reads may
 *   retry; writes never);
 * - src/vcs/forge-response.ts: JSON bodies, paging headers and field mapping shared with GitHub.
 * Project paths are URL-encoded as one segment (nested groups: a%2Fb%2Fc).
 */
import { ToolError } from '../errors/tool-error.js';
import { nextPageOf, toComment, toIssue, type ForgeResponse, type IssueFieldNames } from './forge-response.js';
import { viaGlab } from './gitlab-glab.js';
import { viaHttps } from './gitlab-https.js';
import { assertSecureInstance, type GitLabInstance } from './gitlab-instance.js';
import type { GlRequest } from './gitlab-request.js';
import {
  describeTarget,
  hostArg,
  num,
  type ForgeCallOptions,
  type Issue,
  type IssueBackend,
  type IssueFields,
  type IssueListQuery,
  type IssuePageQuery,
  type IssuePage,
  type IssueTarget,
  type IssueWithComments,
} from './issues.js';

/** GitLab REST v4 field names (issues and notes). */
const GITLAB_FIELDS: IssueFieldNames = {
  number: 'iid',
  author: 'author',
  userName: 'username',
  url: 'web_url',
  commentsCount: 'user_notes_count',
  body: 'description',
  stateReason: null,
};

/** One request through glab when installed, else HTTPS; the instance is checked first (scheme/port policy). */
async function request(opts: ForgeCallOptions, target: IssueTarget, req: GlRequest): Promise<ForgeResponse> {
  const instance: GitLabInstance = target;
  assertSecureInstance(instance, null);
  return (await viaGlab(instance, req, opts)) ?? viaHttps(instance, req, opts);
}

/** The project's REST path: `projects/` and the path URL-encoded as one segment. */
const project = (t: IssueTarget): string => `projects/${encodeURIComponent(t.repo)}`;

/**
 * Usernames → user ids (GitLab assigns by id), as pre-write reads.
 * @throws ToolError GL_NOT_FOUND reason unknown_user (nothing written)
 */
async function userIds(
  opts: ForgeCallOptions,
  target: IssueTarget,
  usernames: string[],
  subject: string,
): Promise<number[]> {
  const ids: number[] = [];
  for (const username of usernames) {
    const r = await request(opts, target, {
      method: 'GET',
      apiPath: `users?${new URLSearchParams({ username })}`,
      kind: 'precheck',
      subject,
    });
    const id = Array.isArray(r.data) && r.data.length > 0 ? num(r.data[0], 'id') : null;
    if (id === null) {
      throw new ToolError(
        'GL_NOT_FOUND',
        `GitLab (${hostArg(target)}) has no user named ${username}; nothing was written.`,
        {
          details: { reason: 'unknown_user', username, write_sent: false },
          suggestion: 'Pass existing usernames in assignees (without @).',
        },
      );
    }
    ids.push(id);
  }
  return ids;
}

/** The REST body of `fields` (create and edit): only the fields given; assignees resolved to ids. */
async function fieldsBody(
  opts: ForgeCallOptions,
  target: IssueTarget,
  fields: IssueFields,
  subject: string,
): Promise<Record<string, unknown>> {
  const body: Record<string, unknown> = {};
  if (fields.title !== undefined) body.title = fields.title;
  if (fields.body !== undefined) body.description = fields.body;
  if (fields.labels !== undefined) body.labels = fields.labels.join(',');
  if (fields.assignees !== undefined) body.assignee_ids = await userIds(opts, target, fields.assignees, subject);
  return body;
}

/** The one PUT of close, reopen and edit. */
async function put(
  opts: ForgeCallOptions,
  target: IssueTarget,
  number: number,
  body: Record<string, unknown>,
): Promise<Issue> {
  const r = await request(opts, target, {
    method: 'PUT',
    apiPath: `${project(target)}/issues/${number}`,
    body,
    kind: 'write',
    subject: describeTarget(target, number),
  });
  return toIssue(r.data, GITLAB_FIELDS, true);
}

/** `list`: one page of the project's issues (GitLab calls open issues `opened`). */
async function listIssues(opts: ForgeCallOptions, target: IssueTarget, q: IssueListQuery): Promise<IssuePage> {
  const params = new URLSearchParams({
    state: q.state === 'open' ? 'opened' : q.state,
    per_page: String(q.perPage),
    page: String(q.page),
  });
  if (q.labels?.length) params.set('labels', q.labels.join(','));
  const r = await request(opts, target, {
    method: 'GET',
    apiPath: `${project(target)}/issues?${params}`,
    kind: 'read',
    subject: describeTarget(target),
  });
  const items = Array.isArray(r.data) ? r.data : [];
  return {
    issues: items.map((o) => toIssue(o, GITLAB_FIELDS, false)),
    pullRequestsOmitted: 0,
    nextPage: nextPageOf(r.headers, q.page, true),
  };
}

/** `view`: the issue, then one page of its notes (oldest first, system notes left out). */
async function viewIssue(
  opts: ForgeCallOptions,
  target: IssueTarget,
  number: number,
  q: IssuePageQuery,
): Promise<IssueWithComments> {
  const subject = describeTarget(target, number);
  const r = await request(opts, target, {
    method: 'GET',
    apiPath: `${project(target)}/issues/${number}`,
    kind: 'read',
    subject,
  });
  const issue = toIssue(r.data, GITLAB_FIELDS, true);
  if (issue.comments_count === 0 && q.page === 1) return { issue, comments: [], nextCommentsPage: null };
  const params = new URLSearchParams({
    sort: 'asc',
    order_by: 'created_at',
    per_page: String(q.perPage),
    page: String(q.page),
  });
  const n = await request(opts, target, {
    method: 'GET',
    apiPath: `${project(target)}/issues/${number}/notes?${params}`,
    kind: 'read',
    subject,
  });
  const notes = (Array.isArray(n.data) ? n.data : []).filter((o) => (o as { system?: unknown }).system !== true);
  return {
    issue,
    comments: notes.map((o) =>
      toComment(o, GITLAB_FIELDS, issue.url ? `${issue.url}#note_${num(o, 'id') ?? 0}` : null),
    ),
    nextCommentsPage: nextPageOf(n.headers, q.page, true),
  };
}

/**
 * The GitLab backend (docs/issue-tools.md). `project` paths are URL-encoded as one segment (nested groups: a%2Fb%2Fc).
 * @throws ToolError with docs/issue-tools.md codes (see classifyGitLab); GL_NOT_FOUND reason unknown_user for an assignee
 *   username that does not exist (nothing written)
 */
export function gitlabBackend(opts: ForgeCallOptions): IssueBackend {
  return {
    list: (target, q) => listIssues(opts, target, q),
    view: (target, number, q) => viewIssue(opts, target, number, q),

    async create(target, fields): Promise<Issue> {
      const subject = `the newest issues of ${describeTarget(target)}`;
      const body = await fieldsBody(opts, target, fields, subject);
      const r = await request(opts, target, {
        method: 'POST',
        apiPath: `${project(target)}/issues`,
        body,
        kind: 'write',
        subject,
      });
      return toIssue(r.data, GITLAB_FIELDS, true);
    },

    async comment(target, number, text) {
      const r = await request(opts, target, {
        method: 'POST',
        apiPath: `${project(target)}/issues/${number}/notes`,
        body: { body: text },
        kind: 'write',
        subject: describeTarget(target, number),
      });
      return { issue: null, comment: toComment(r.data, GITLAB_FIELDS, null) };
    },

    close: (target, number) => put(opts, target, number, { state_event: 'close' }),
    reopen: (target, number) => put(opts, target, number, { state_event: 'reopen' }),
    async edit(target, number, fields) {
      return put(opts, target, number, await fieldsBody(opts, target, fields, describeTarget(target, number)));
    },
  };
}
