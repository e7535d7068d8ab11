/**
 * What the GitHub and GitLab backends do alike with a forge's answer (one place instead of two copies):
 * decide whether a `gh api -i` / `glab api -i` run succeeded, parse a JSON body, refuse a redirect the egress guard
 * stopped (GH_HOST_DENIED), and map REST issue and comment objects onto the forge-neutral model of src/vcs/issues.ts
 * (the two APIs differ only in field names).
 */
import type { ToolError } from '../errors/tool-error.js';
import type { Denial } from './egress-guard.js';
import { forgeError, hasNextLink, parseIncludeOutput, type CallKind, type IncludedResponse } from './forge-errors.js';
import { num, str, type Issue, type IssueComment } from './issues.js';
import type { CommandResult } from './run-command.js';

/** A successful forge answer: HTTP status, lower-cased headers, and the parsed JSON body (null when empty). */
export interface ForgeResponse {
  status: number;
  headers: Record<string, string>;
  data: unknown;
}

/**
 * One REST request of a forge backend, as its transports take it (`gh api`; `glab api` or fetch).
 * @typeParam M the HTTP methods the forge's actions use
 */
export interface ForgeRequest<M extends string> {
  method: M;
  /** Path below the API root (GitHub: as `gh api` takes it; GitLab: below /api/v4/), query included. */
  apiPath: string;
  /** The JSON request body (sent on stdin or as the fetch body), undefined for none. */
  body?: unknown;
  kind: CallKind;
  /** What to view when a write may have been applied (see forgeError). */
  subject: string;
}

/** The display name of a forge in messages. */
export type ForgeName = 'GitHub' | 'GitLab';

/**
 * The `-i` output of a CLI run, and whether the run succeeded: started, exit 0, within the timeout and the output
 * cap, and a 2xx status line.
 * @returns `response` null when stdout has no status line (the CLI failed before any answer)
 */
export function cliResponse(result: CommandResult): { response: IncludedResponse | null; ok: boolean } {
  const response = parseIncludeOutput(result.stdout);
  const ok =
    result.exitCode === 0 &&
    !result.timedOut &&
    !result.outputLimited &&
    result.spawnError === null &&
    response !== null &&
    response.status >= 200 &&
    response.status < 300;
  return { response, ok };
}

/**
 * Parses a successful answer's body as JSON (an empty body is null).
 * @throws ToolError `${GH|GL}_FAILED` (unknown outcome: the request may have been applied) when it is not JSON;
 *   `details` carries the status and what the caller adds (e.g. gh's exit code)
 */
export function parseJsonBody(
  body: string,
  status: number,
  at: { forge: ForgeName; host: string; kind: CallKind; subject: string; details?: Record<string, unknown> },
): unknown {
  if (body.trim() === '') return null;
  try {
    return JSON.parse(body);
  } catch {
    throw forgeError(
      at.kind,
      {
        code: at.forge === 'GitHub' ? 'GH_FAILED' : 'GL_FAILED',
        failure: 'unknown_outcome',
        message: `${at.forge} (${at.host}) answered HTTP ${status} with a body that is not JSON.`,
        details: { status, ...at.details },
      },
      at.subject,
    );
  }
}

/**
 * GH_HOST_DENIED for a CLI run the egress guard stopped: the configured host answered with a redirect to another
 * host (or the CLI tried another host). Nothing was sent there; whatever the CLI printed is not used.
 * @param host the host (and port) as passed to the CLI, for the message
 * @param target where the call was meant to go (`repo` when known)
 */
export function redirectDenied(
  forge: ForgeName,
  host: string,
  target: { host: string; port: number; repo?: string },
  denial: Denial,
  kind: CallKind,
  subject: string,
): ToolError {
  const to = `${denial.host}${denial.port !== null && denial.port !== 443 && denial.port !== 80 ? `:${denial.port}` : ''}`;
  return forgeError(
    kind,
    {
      code: 'GH_HOST_DENIED',
      failure: 'arguments',
      message:
        `${forge} (${host}) redirected the request to another host (${to}); the redirect was not followed, ` +
        'nothing was sent there and no answer from it was used.',
      details: {
        host: target.host,
        port: target.port,
        ...(target.repo !== undefined ? { repo: target.repo } : {}),
        reason: 'redirect',
        redirect_host: denial.host,
        redirect_port: denial.port,
        redirect_kind: denial.kind,
      },
      suggestion:
        `Pass hostname as the instance the API really lives on, if ${to} is it, and ask the user to allow it; ` +
        'otherwise the configured host is misbehaving.',
    },
    subject,
  );
}

/**
 * The next page number of a paged answer: GitLab's `x-next-page` header when `useNextPageHeader`, else the page
 * after `page` when the `Link` header has rel="next" (both forges), else null (last page).
 */
export function nextPageOf(headers: Record<string, string>, page: number, useNextPageHeader = false): number | null {
  const next = useNextPageHeader ? headers['x-next-page']?.trim() : undefined;
  if (next && /^\d+$/.test(next)) return Number(next);
  return hasNextLink(headers.link) ? page + 1 : null;
}

/** The REST field names of one forge's issue and comment objects. */
export interface IssueFieldNames {
  /** GitHub `number`, GitLab `iid`. */
  number: string;
  /** The object naming the author: GitHub `user`, GitLab `author`. */
  author: string;
  /** The user name inside author/assignee objects: GitHub `login`, GitLab `username`. */
  userName: string;
  /** GitHub `html_url`, GitLab `web_url`. */
  url: string;
  /** GitHub `comments`, GitLab `user_notes_count`. */
  commentsCount: string;
  /** GitHub `body`, GitLab `description`. */
  body: string;
  /** GitHub `state_reason`; null: the forge has none (GitLab). */
  stateReason: string | null;
}

const listOf = (o: unknown, key: string): unknown[] => {
  const v = (o as Record<string, unknown> | null)?.[key];
  return Array.isArray(v) ? v : [];
};
const userOf = (o: unknown, names: IssueFieldNames): string | null =>
  str((o as Record<string, unknown> | null)?.[names.author] ?? null, names.userName);

/** Maps a REST issue object (`withBody`: keep the body/description, else leave it out as list results do). */
export function toIssue(o: unknown, names: IssueFieldNames, withBody: boolean): Issue {
  const issue: Issue = {
    number: num(o, names.number) ?? 0,
    title: str(o, 'title') ?? '',
    state: str(o, 'state') === 'closed' ? 'closed' : 'open',
    state_reason: names.stateReason === null ? null : str(o, names.stateReason),
    labels: listOf(o, 'labels')
      .map((l) => (typeof l === 'string' ? l : str(l, 'name')))
      .filter((l): l is string => l !== null),
    assignees: listOf(o, 'assignees')
      .map((a) => str(a, names.userName))
      .filter((a): a is string => a !== null),
    author: userOf(o, names),
    created_at: str(o, 'created_at'),
    updated_at: str(o, 'updated_at'),
    closed_at: str(o, 'closed_at'),
    url: str(o, names.url),
    comments_count: num(o, names.commentsCount) ?? 0,
  };
  if (withBody) issue.body = str(o, names.body) ?? '';
  return issue;
}

/** Maps a REST comment object (GitHub issue comment, GitLab note); `url` replaces the object's own URL field. */
export function toComment(o: unknown, names: IssueFieldNames, url?: string | null): IssueComment {
  return {
    id: num(o, 'id') ?? 0,
    author: userOf(o, names),
    created_at: str(o, 'created_at'),
    updated_at: str(o, 'updated_at'),
    url: url !== undefined ? url : str(o, names.url),
    body: str(o, 'body') ?? '',
  };
}
