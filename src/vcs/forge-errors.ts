/**
 * What the two forge backends (src/vcs/github.ts, src/vcs/gitlab.ts) share: the read/write retry semantics of
 * docs/issue-tools.md, `retry_after_s` from response headers, and the parser of `gh api -i` / `glab api -i` output.
 *
 * docs/issue-tools.md in one place (the table in src/errors/codes.ts holds only defaults):
 * - reads (`list`, `view`): rate limits, transport failures, timeouts and 5xx are retryable, recovery retry_later;
 * - writes are never retryable: a write that failed in transit (or whose outcome is unknown) may already have been
 *   applied → check_already_applied, with a suggestion to view the issue first; a write refused by a rate limit was
 *   not applied → retry_later;
 * - a failure before the write was sent (the pre-write issue check of GitHub, a refused connection) applied nothing:
 *   not retryable (it is a write call), recovery retry_later for transient causes;
 * - missing CLI, authentication and 403s → fix_environment; everything else → fix_arguments.
 * The server never retries anything itself.
 */
import type { ErrorCode, Recovery } from '../errors/codes.js';
import { redact } from '../errors/redact.js';
import { ToolError } from '../errors/tool-error.js';

/**
 * Which request of a call failed:
 * - `read`: the request of a read action (list, view);
 * - `write`: the one POST/PATCH/PUT of a write action;
 * - `precheck`: a read made by a write action before its write (the issue-vs-pull-request check); nothing was written.
 */
export type CallKind = 'read' | 'write' | 'precheck';

/**
 * The cause class of a forge failure, which decides retryable/recovery together with the CallKind:
 * - `rate_limit`: refused by a rate limit (the request was not applied);
 * - `transient`: 5xx, transport failure, timeout — for a write, the outcome is unknown;
 * - `not_sent`: a transport failure known to have happened before the request left (connection refused, DNS);
 * - `unknown_outcome`: the request may have been applied but the answer is unusable (output cap hit on a 2xx, a
 *   killed CLI) — only matters for writes;
 * - `environment`: missing CLI, authentication, permission (403);
 * - `arguments`: everything else (404, 422, ambiguity …).
 */
export type FailureClass = 'rate_limit' | 'transient' | 'not_sent' | 'unknown_outcome' | 'environment' | 'arguments';

/** The retry semantics of one failure. */
export interface RetrySemantics {
  retryable: boolean;
  recovery: Recovery;
  /** True when the suggestion must say "view the issue before doing anything else". */
  mayBeApplied: boolean;
}

/**
 * docs/issue-tools.md retry semantics for a failure class of a request kind.
 * @returns retryable (reads only, for rate limits and transient failures), recovery, and whether a write may have
 *   been applied
 */
export function retrySemantics(kind: CallKind, failure: FailureClass): RetrySemantics {
  if (failure === 'environment') return { retryable: false, recovery: 'fix_environment', mayBeApplied: false };
  if (failure === 'arguments') return { retryable: false, recovery: 'fix_arguments', mayBeApplied: false };
  // A read (or a write's pre-check read) whose answer was unusable (output cap): narrowing is the only fix.
  if (failure === 'unknown_outcome' && kind !== 'write')
    return { retryable: false, recovery: 'fix_arguments', mayBeApplied: false };
  if (kind === 'read') return { retryable: true, recovery: 'retry_later', mayBeApplied: false };
  // A write action: never retryable (docs/issue-tools.md).
  if (kind === 'precheck' || failure === 'rate_limit' || failure === 'not_sent') {
    return { retryable: false, recovery: 'retry_later', mayBeApplied: false };
  }
  return { retryable: false, recovery: 'check_already_applied', mayBeApplied: true };
}

/** Fields of a forge failure before retry semantics are applied. */
export interface ForgeFailure {
  code: ErrorCode;
  failure: FailureClass;
  message: string;
  details?: Record<string, unknown>;
  /** The next step when the write was certainly not applied (a write that may be applied gets its own suggestion). */
  suggestion?: string;
}

/**
 * One rule of a forge failure classifier (src/vcs/github-classify.ts, src/vcs/gitlab-classify.ts): `when` tests the
 * facts of one failed request, `then` builds its failure. A classifier is an ordered table of rules; the first rule
 * that holds decides (see `firstFailure`).
 */
export interface FailureRule<F> {
  when: (facts: F) => boolean;
  then: (facts: F) => ForgeFailure;
}

/**
 * The failure of the first rule of `rules` that holds for `facts`. Pure.
 * @throws Error when no rule holds (a classifier's table ends with a rule that always holds)
 */
export function firstFailure<F>(rules: readonly FailureRule<F>[], facts: F): ForgeFailure {
  for (const rule of rules) if (rule.when(facts)) return rule.then(facts);
  throw new Error('forge failure classifier: no rule matched');
}

/**
 * Builds the ToolError of a forge failure with the docs/issue-tools.md semantics of `kind`. A write that may have been applied
 * gets `details.may_be_applied: true` and a suggestion to view the issue first; a pre-write check failure gets
 * `details.write_sent: false`.
 * @param subject what to view when a write may have been applied, e.g. "github.com/o/r#12"
 */
export function forgeError(kind: CallKind, f: ForgeFailure, subject: string): ToolError {
  const s = retrySemantics(kind, f.failure);
  const details: Record<string, unknown> = { ...(f.details ?? {}) };
  let suggestion = f.suggestion;
  let message = f.message;
  if (s.mayBeApplied) {
    details.may_be_applied = true;
    message = `${message.replace(/\.?$/, '.')} The write may already have been applied.`;
    suggestion =
      `Do not repeat the write: view ${subject} first (action "view", or "list" for a created issue) and ` +
      'check whether the change is already there.';
  } else if (kind === 'precheck') {
    details.write_sent = false;
    message = `${message.replace(/\.?$/, '.')} Nothing was written (this failed while checking the issue before the write).`;
  } else if (kind === 'write' && (f.failure === 'rate_limit' || f.failure === 'not_sent')) {
    details.write_sent = false;
    message = `${message.replace(/\.?$/, '.')} The write was not applied.`;
  }
  if (s.recovery === 'retry_later' && !suggestion) {
    suggestion =
      typeof details.retry_after_s === 'number'
        ? `Wait ${details.retry_after_s} s, then call again.`
        : 'Wait a while, then call again.';
  }
  return new ToolError(f.code, message, { details, suggestion, retryable: s.retryable, recovery: s.recovery });
}

/**
 * Seconds to wait from response headers: `Retry-After` (seconds or an HTTP date), else a rate-limit reset time
 * (`x-ratelimit-reset` for GitHub, `ratelimit-reset` for GitLab: epoch seconds) minus `nowMs`. Never negative.
 * @param headers lower-cased header names
 * @returns whole seconds, or undefined when the server gave neither
 */
export function retryAfterSeconds(headers: Readonly<Record<string, string>>, nowMs: number): number | undefined {
  const retryAfter = headers['retry-after']?.trim();
  if (retryAfter) {
    if (/^\d+$/.test(retryAfter)) return Number(retryAfter);
    const date = Date.parse(retryAfter);
    if (!Number.isNaN(date)) return Math.max(0, Math.ceil((date - nowMs) / 1000));
  }
  const reset = (headers['x-ratelimit-reset'] ?? headers['ratelimit-reset'])?.trim();
  if (reset && /^\d+$/.test(reset)) return Math.max(0, Number(reset) - Math.floor(nowMs / 1000));
  return undefined;
}

/** An HTTP response as `gh api -i` / `glab api -i` print it. */
export interface IncludedResponse {
  status: number;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
}

/**
 * Parses `-i` output: "HTTP/1.1 403 Forbidden", header lines, a blank line, then the body (gh prints this also for
 * HTTP errors, then exits 1). Lines may end in CRLF (glab) or LF (gh).
 * @returns null when stdout does not start with a status line (gh failed before any response: transport, auth)
 */
export function parseIncludeOutput(stdout: string): IncludedResponse | null {
  const status = /^HTTP\/[\d.]+ (\d{3})\b[^\n]*\n/.exec(stdout);
  if (!status) return null;
  const headers: Record<string, string> = {};
  let rest = stdout.slice(status[0].length);
  for (;;) {
    const nl = rest.indexOf('\n');
    const line = (nl < 0 ? rest : rest.slice(0, nl)).replace(/\r$/, '');
    rest = nl < 0 ? '' : rest.slice(nl + 1);
    if (line === '') break;
    const colon = line.indexOf(':');
    if (colon > 0) {
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    if (nl < 0) break;
  }
  return { status: Number(status[1]), headers, body: rest };
}

/**
 * The `message` of a JSON error body (GitHub `{message}`, GitLab `{message}` — a string, or an object of field
 * errors — or `{error, error_description}`) as a safe snippet (see `safeSnippet`).
 *
 * Why a forge's message may be kept at all (decided for "no file text in errors"): it is text the forge
 * server wrote about our request; the server never sees local files, so it cannot carry their content — only what the
 * agent itself sent (its own title/body). What it could carry is a credential (a hostile server echoing a header), a
 * multi-line dump or terminal control characters: the snippet is redacted, one line, control characters removed and
 * capped at 200 characters.
 */
export function bodyMessage(body: string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return null;
  }
  if (!parsed || typeof parsed !== 'object') return null;
  const o = parsed as Record<string, unknown>;
  let text: string | null = null;
  if (typeof o.message === 'string') text = o.message;
  else if (o.message && typeof o.message === 'object') {
    text = Object.entries(o.message as Record<string, unknown>)
      .map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(', ') : String(v)}`)
      .join('; ');
  } else if (typeof o.error === 'string') {
    text = typeof o.error_description === 'string' ? `${o.error}: ${o.error_description}` : o.error;
  }
  return text === null ? null : safeSnippet(text) || null;
}

/** Most characters of a snippet of forge text kept in an envelope. */
export const SNIPPET_MAX_CHARS = 200;

/**
 * A forge-written text reduced to what may enter an envelope, log or audit line: the first non-empty line, C0/C1
 * control and bidi/zero-width characters removed, credentials redacted (src/errors/redact.ts), at most
 * SNIPPET_MAX_CHARS characters. Never used for CLI stderr (see classifyCliStderr).
 */
export function safeSnippet(text: string): string {
  /* eslint-disable no-control-regex -- control characters are what this strips */
  const line = oneLine(
    text.replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, ' '),
  );
  /* eslint-enable no-control-regex */
  const clean = redact(line.replace(/\s+/g, ' ').trim());
  return clean.length > SNIPPET_MAX_CHARS ? `${clean.slice(0, SNIPPET_MAX_CHARS - 3)}...` : clean;
}

/** The first non-empty line of `text`, at most 300 characters. */
export function oneLine(text: string): string {
  const line =
    text
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l) ?? '';
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

/**
 * What a forge CLI's (gh, glab) stderr said, as a fixed word. The stderr itself never enters an envelope, a log or
 * the audit log: gh and glab print YAML parse errors of their configuration files (which hold tokens),
 * paths and file names, and whatever a server sent, so none of it is copied — only this class.
 */
export type StderrClass =
  | 'connection_refused'
  | 'dns'
  | 'tls'
  | 'proxy'
  | 'network_unreachable'
  | 'connect_failed'
  | 'eof'
  | 'reset'
  | 'timeout'
  | 'auth'
  | 'rate_limit'
  | 'config'
  | 'none'
  | 'other';

/** Classifies CLI stderr (Go error texts of gh 2.x / glab 1.x). Pure. */
export function classifyCliStderr(stderr: string): StderrClass {
  if (stderr.trim() === '') return 'none';
  if (
    /proxyconnect|proxy ?(?:error|authentication)|Proxy Authentication Required|: Forbidden\s*$|: Bad Gateway\s*$/im.test(
      stderr,
    )
  )
    return 'proxy';
  if (/connection refused/i.test(stderr)) return 'connection_refused';
  if (/no such host|server misbehaving|lookup .*: /i.test(stderr)) return 'dns';
  if (/x509: |tls: |certificate (?:signed|is not|has expired)/i.test(stderr)) return 'tls';
  if (/network is unreachable|no route to host/i.test(stderr)) return 'network_unreachable';
  if (/dial tcp|connect: /i.test(stderr)) return 'connect_failed';
  if (/timeout|timed out|deadline exceeded/i.test(stderr)) return 'timeout';
  if (/connection reset|broken pipe|server closed|http2: |stream error|error connecting to/i.test(stderr))
    return 'reset';
  if (/\bEOF\b|unexpected end/i.test(stderr)) return 'eof';
  if (
    /bad credentials|authentication required|auth login|GH_TOKEN|GITLAB_TOKEN|requires authentication|HTTP 401|unauthori[sz]ed|not authenticated|no token/i.test(
      stderr,
    )
  )
    return 'auth';
  if (/rate limit/i.test(stderr)) return 'rate_limit';
  if (/yaml|config(?:uration)? file|hosts\.yml|config\.yml/i.test(stderr)) return 'config';
  return 'other';
}

/** Classes of `classifyCliStderr` that happen before a request leaves. */
export const STDERR_NOT_SENT: ReadonlySet<StderrClass> = new Set([
  'connection_refused',
  'dns',
  'tls',
  'proxy',
  'network_unreachable',
  'connect_failed',
]);
/** Classes of `classifyCliStderr` whose request may have reached the server. */
export const STDERR_IN_TRANSIT: ReadonlySet<StderrClass> = new Set(['eof', 'reset', 'timeout']);

/** True when a `Link` header has a rel="next" entry (GitHub and GitLab pagination). */
export function hasNextLink(link: string | undefined): boolean {
  return link !== undefined && /<[^>]*>\s*;\s*rel="?next"?/i.test(link);
}
