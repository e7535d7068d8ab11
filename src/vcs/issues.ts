/**
 * The forge-neutral issue model both backends return (docs/issue-tools.md results): GitHub REST issues and GitLab REST v4
 * issues are mapped onto these shapes, so the two tools share one output schema and one text rendering.
 */

import { z } from 'zod';

/**
 * An issue as the tools report it, one shape for the type and the output schema (the type is derived).
 * Times are ISO 8601 strings as the forge gave them; `body` is the body / description (empty string when none),
 * omitted in list results; `comments_count` is the number of (user) comments the forge reports.
 */
export const IssueSchema = z.object({
  number: z.number().int().describe('GitHub number / GitLab iid'),
  title: z.string(),
  state: z.enum(['open', 'closed']),
  state_reason: z.string().nullable().describe('GitHub: completed, not_planned, reopened; null on GitLab'),
  labels: z.array(z.string()),
  assignees: z.array(z.string()),
  author: z.string().nullable(),
  created_at: z.string().nullable(),
  updated_at: z.string().nullable(),
  closed_at: z.string().nullable(),
  url: z.string().nullable(),
  comments_count: z.number().int(),
  body: z.string().optional().describe('Absent in list results'),
});

/** An issue as the tools report it (derived from IssueSchema). */
export type Issue = z.infer<typeof IssueSchema>;

/** One comment (GitHub issue comment, GitLab non-system note). */
export interface IssueComment {
  id: number;
  author: string | null;
  created_at: string | null;
  updated_at: string | null;
  url: string | null;
  body: string;
}

/** Where a call goes: forge host (as given to the CLI / API), port and repository path. */
export interface IssueTarget {
  /** Host name without port, lower-case. */
  host: string;
  /** The port used (explicit, or the scheme default). */
  port: number;
  /** True when the port was given explicitly (it is then part of the host passed to gh/glab). */
  explicitPort: boolean;
  /** `https` (always for GitHub; gh decides itself) or `http` (GitLab on a loopback host only). */
  scheme: 'https' | 'http';
  /** Path prefix of a GitLab instance served below `/` (e.g. "/gitlab"), else "". */
  basePath: string;
  /** `owner/name` or `group/sub/name`. */
  repo: string;
}

/** A page of issues. */
export interface IssuePage {
  issues: Issue[];
  /** Pull requests the GitHub issues endpoint returned on this page and we left out (0 on GitLab). */
  pullRequestsOmitted: number;
  /** The next page number, or null when this was the last page. */
  nextPage: number | null;
}

/** An issue with one page of its comments. */
export interface IssueWithComments {
  issue: Issue;
  comments: IssueComment[];
  nextCommentsPage: number | null;
}

/** Fields of a create or edit (absent: unchanged / not set). */
export interface IssueFields {
  title?: string;
  body?: string;
  labels?: string[];
  assignees?: string[];
}

/** Per-call transport settings (docs/issue-tools.md bounds; from --forge-timeout-ms and --forge-output-bytes). */
export interface ForgeCallOptions {
  /** Per request, ms. */
  timeoutMs: number;
  /** Cap on one response (gh: its whole stdout incl. headers), bytes. */
  maxOutputBytes: number;
  signal: AbortSignal;
  /**
   * The raw `--git-remote-allow` entries (src/vcs/host-allow.ts); hosts named there may receive an enterprise token.
   * Absent: none named (only the operator-configured hosts).
   */
  allow?: readonly string[];
  /**
   * True for a path inside the sandbox roots: private files holding a token (gh's per-run configuration) are never
   * created there, where the agent could read them during the call. Absent: no path is inside.
   */
  isInsideRoots?: (absolute: string) => boolean;
}

/** One forge page: its number (from 1) and size (issues or comments per page). */
export interface IssuePageQuery {
  perPage: number;
  page: number;
}

/** One page of a `list`: the state and labels to match, and the page. */
export interface IssueListQuery extends IssuePageQuery {
  state: 'open' | 'closed' | 'all';
  labels?: string[];
}

/** What each forge backend implements. Every method throws ToolError with docs/issue-tools.md codes and semantics. */
export interface IssueBackend {
  list(target: IssueTarget, q: IssueListQuery): Promise<IssuePage>;
  view(target: IssueTarget, number: number, q: IssuePageQuery): Promise<IssueWithComments>;
  create(target: IssueTarget, fields: IssueFields): Promise<Issue>;
  /** `issue` is the issue as checked before the write (GitHub), or null when the backend did not fetch it (GitLab). */
  comment(target: IssueTarget, number: number, body: string): Promise<{ issue: Issue | null; comment: IssueComment }>;
  close(target: IssueTarget, number: number, reason: 'completed' | 'not_planned'): Promise<Issue>;
  reopen(target: IssueTarget, number: number): Promise<Issue>;
  edit(target: IssueTarget, number: number, fields: IssueFields): Promise<Issue>;
}

/** `host[:port]` as gh/glab take it. */
export function hostArg(target: IssueTarget): string {
  const host = target.host.includes(':') ? `[${target.host}]` : target.host;
  return target.explicitPort ? `${host}:${target.port}` : host;
}

/** "github.com/o/r" or "github.com/o/r#12", for messages. */
export function describeTarget(target: IssueTarget, number?: number): string {
  return `${hostArg(target)}/${target.repo}${number !== undefined ? `#${number}` : ''}`;
}

/** Reads a string field of an untyped JSON object. */
export function str(o: unknown, key: string): string | null {
  const v = (o as Record<string, unknown> | null)?.[key];
  return typeof v === 'string' ? v : null;
}

/** Reads a number field of an untyped JSON object. */
export function num(o: unknown, key: string): number | null {
  const v = (o as Record<string, unknown> | null)?.[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}
