/**
 * Classification of a failed GitLab request (docs/issue-tools.md), for both transports: HTTP status, timeout, output cap, glab's
 * exit and stderr class, fetch's transport errors. No glab stderr and no transport error text reaches an envelope or
 * a log: only a class or an errno code; GitLab's JSON error message only as a safe snippet
 * (src/vcs/forge-errors.ts). Codes: 401 GL_AUTH_REQUIRED, 403 GL_FORBIDDEN, 404 GL_NOT_FOUND, 429 GH_RATE_LIMIT,
 * 5xx/transport/timeout GL_NETWORK, other statuses (400, 409, 422, 3xx) GL_FAILED with status and message.
 */
import {
  classifyCliStderr,
  firstFailure,
  oneLine,
  retryAfterSeconds,
  type FailureRule,
  type ForgeFailure,
  type StderrClass,
} from './forge-errors.js';

/** Everything the classifier knows about one failed GitLab request (HTTPS or glab). */
export interface GlObservation {
  /** HTTP status, null when no response arrived. */
  status: number | null;
  /** Lower-cased names. */
  headers: Readonly<Record<string, string>>;
  bodyMessage: string | null;
  timedOut: boolean;
  outputLimited: boolean;
  /** errno-like code of a transport failure (ECONNREFUSED, UND_ERR_SOCKET …), or a glab stderr line's class. */
  transportCode: string | null;
  /** The transport error message or glab's stderr: only classified, never reported. */
  transportMessage: string | null;
  /** glab only: exit code. */
  exitCode?: number | null;
  /** True when a token was sent with the request. */
  tokenSent: boolean;
  /** True when a token exists but was withheld because it belongs to another instance. */
  tokenWithheld: boolean;
}

/** Transport error codes raised before the request left (nothing can have been applied). */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'EPROTO',
  'ERR_BAD_PORT',
  'NOT_SENT',
]);

/** What the rules read: the observation, the context, and what is derived from them once. */
interface GlFacts {
  obs: GlObservation;
  ctx: { host: string; timeoutMs: number; maxOutputBytes: number; nowMs: number };
  /** GitLab's error message ('' when none). */
  msg: string;
  /** `status` when an answer arrived, `exit_code` for glab: every failure's details start with these. */
  base: Record<string, unknown>;
  /** The sentence saying that GITLAB_TOKEN was withheld, or ''. */
  tokenHint: string;
  /** `{ retry_after_s }` when the headers name a wait, else empty. */
  withRetry: Record<string, unknown>;
  /** glab's stderr class (null for the HTTPS transport). */
  stderrClass: StderrClass | null;
}

/** The HTTP status, for rules that only run when an answer arrived. */
const statusOf = (f: GlFacts): number => f.obs.status ?? 0;
const answered = (f: GlFacts): boolean => f.obs.status !== null;
/** ": message" for a message, else ''. */
const withMsg = (f: GlFacts): string => (f.msg ? `: ${f.msg}` : '');

/** The rules of `classifyGitLab`, in order (see its docstring). */
const GL_RULES: readonly FailureRule<GlFacts>[] = [
  {
    when: (f) => f.obs.timedOut,
    then: (f) => ({
      code: 'GL_NETWORK',
      failure: 'transient',
      message: `GitLab (${f.ctx.host}) did not answer within ${f.ctx.timeoutMs} ms.`,
      details: { ...f.base, reason: 'timeout', timeout_ms: f.ctx.timeoutMs },
    }),
  },
  {
    when: (f) => f.obs.outputLimited && (f.obs.status === null || f.obs.status < 400),
    then: (f) => ({
      code: 'GH_OUTPUT_LIMIT',
      failure: 'unknown_outcome',
      message: `The GitLab response exceeded the cap of ${f.ctx.maxOutputBytes} bytes.`,
      details: { ...f.base, max_bytes: f.ctx.maxOutputBytes },
      suggestion: 'Narrow the request (a lower limit), or ask the user to raise --forge-output-bytes.',
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) === 401,
    then: (f) => ({
      code: 'GL_AUTH_REQUIRED',
      failure: 'environment',
      message: `GitLab (${f.ctx.host}) requires authentication (HTTP 401${withMsg(f)}).${f.tokenHint}`,
      details: {
        ...f.base,
        message: f.msg || null,
        token_sent: f.obs.tokenSent,
        ...(f.obs.tokenWithheld ? { token_withheld: true } : {}),
      },
      suggestion: f.obs.tokenWithheld
        ? `Set GITLAB_HOST to ${f.ctx.host} if GITLAB_TOKEN belongs to it, or run \`glab auth login --hostname ${f.ctx.host}\`.`
        : `Set GITLAB_TOKEN (a personal access token with the api scope) or run \`glab auth login --hostname ${f.ctx.host}\`.`,
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) === 403,
    then: (f) => ({
      code: 'GL_FORBIDDEN',
      failure: 'environment',
      message: `GitLab (${f.ctx.host}) denied the request (HTTP 403${withMsg(f)}).`,
      details: { ...f.base, message: f.msg || null },
      suggestion:
        'The token lacks a scope or a role on this project: ask the user to grant it (api scope, Reporter+ to comment).',
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) === 404,
    then: (f) => ({
      code: 'GL_NOT_FOUND',
      failure: 'arguments',
      message: `GitLab (${f.ctx.host}) found no such project or issue (HTTP 404${withMsg(f)}).${f.tokenHint}`,
      details: { ...f.base, message: f.msg || null, token_sent: f.obs.tokenSent },
      suggestion: f.obs.tokenSent
        ? 'Check repo (group/sub/name), hostname and number.'
        : 'Check repo, hostname and number; without a token a private project looks missing (set GITLAB_TOKEN).',
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) === 429,
    then: (f) => ({
      code: 'GH_RATE_LIMIT',
      failure: 'rate_limit',
      message: `GitLab (${f.ctx.host}) refused the request: rate limit (HTTP 429${withMsg(f)}).`,
      details: { ...f.base, ...f.withRetry, message: f.msg || null },
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) >= 500,
    then: (f) => ({
      code: 'GL_NETWORK',
      failure: 'transient',
      message: `GitLab (${f.ctx.host}) answered with a server error (HTTP ${statusOf(f)}).`,
      details: { ...f.base, reason: 'server_error', ...f.withRetry },
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) >= 200 && statusOf(f) < 300,
    then: (f) => ({
      code: 'GL_FAILED',
      failure: 'unknown_outcome',
      message: `GitLab (${f.ctx.host}) answered HTTP ${statusOf(f)} but the answer could not be read.`,
      details: { ...f.base },
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) >= 300 && statusOf(f) < 400,
    then: (f) => ({
      code: 'GL_FAILED',
      failure: 'arguments',
      message: `GitLab (${f.ctx.host}) redirected the request (HTTP ${statusOf(f)}); redirects are not followed.`,
      details: { ...f.base, redirect_host: redirectHost(f.obs.headers.location) },
      suggestion: "Pass hostname as the instance's final https URL (the redirect target).",
    }),
  },
  {
    when: answered,
    then: (f) => ({
      code: 'GL_FAILED',
      failure: 'arguments',
      message: `GitLab (${f.ctx.host}) refused the request (HTTP ${statusOf(f)}${withMsg(f)}).`,
      details: { ...f.base, message: f.msg || null },
      suggestion: 'Fix the arguments as the message says.',
    }),
  },
  {
    when: (f) => f.stderrClass === 'auth',
    then: (f) => ({
      code: 'GL_AUTH_REQUIRED',
      failure: 'environment',
      message: `glab is not authenticated for ${f.ctx.host}.`,
      details: { ...f.base, stderr_class: f.stderrClass },
      suggestion: `Run \`glab auth login --hostname ${f.ctx.host}\` or set GITLAB_TOKEN.`,
    }),
  },
  { when: (f) => f.obs.transportCode !== null, then: transportFailure },
  {
    when: () => true,
    then: (f) => ({
      code: 'GL_FAILED',
      failure: 'unknown_outcome',
      message: `The GitLab request failed${f.stderrClass ? ` (glab exit ${f.obs.exitCode}; its error text is not shown)` : ''}.`,
      details: { ...f.base, ...(f.stderrClass ? { stderr_class: f.stderrClass } : {}) },
    }),
  },
];

/** GL_NETWORK for a transport error code: not sent (nothing applied) or failed in transit. */
function transportFailure(f: GlFacts): ForgeFailure {
  const code = f.obs.transportCode ?? '';
  const notSent = NOT_SENT_CODES.has(code);
  return {
    code: 'GL_NETWORK',
    failure: notSent ? 'not_sent' : 'transient',
    message: notSent
      ? `Could not connect to GitLab (${f.ctx.host}): ${code}.`
      : `The connection to GitLab (${f.ctx.host}) failed during the request: ${code}.`,
    details: {
      ...f.base,
      reason: notSent ? 'connect' : 'transport',
      errno: code,
      ...(f.stderrClass ? { stderr_class: f.stderrClass } : {}),
      ...(notSent ? { request_sent: false } : {}),
    },
  };
}

/**
 * Classifies a failed GitLab request (docs/issue-tools.md). Pure. Order: timeout → output cap → status (401, 403, 404, 429,
 * 5xx, 2xx with a bad body, 3xx, others) → glab auth text → transport (not sent / in transit) → GL_FAILED.
 */
export function classifyGitLab(obs: GlObservation, ctx: GlFacts['ctx']): ForgeFailure {
  const retryAfter = obs.status !== null ? retryAfterSeconds(obs.headers, ctx.nowMs) : undefined;
  return firstFailure(GL_RULES, {
    obs,
    ctx,
    msg: obs.bodyMessage ?? '',
    base: {
      ...(obs.status !== null ? { status: obs.status } : {}),
      ...(obs.exitCode !== undefined ? { exit_code: obs.exitCode } : {}),
    },
    tokenHint: obs.tokenWithheld
      ? ` No token was sent: GITLAB_TOKEN belongs to the GITLAB_HOST instance (gitlab.com when unset), not ${ctx.host}.`
      : '',
    withRetry: retryAfter !== undefined ? { retry_after_s: retryAfter } : {},
    // glab's stderr and transport error texts are never copied: only a class / an errno code.
    stderrClass: obs.exitCode !== undefined ? classifyCliStderr(obs.transportMessage ?? '') : null,
  });
}

/** The host[:port] a redirect's Location names (null when absent or unparseable); never the rest of the URL. */
function redirectHost(location: string | undefined): string | null {
  if (!location) return null;
  try {
    return new URL(location).host || null;
  } catch {
    return null;
  }
}

/** A transport class for glab's stderr (Go error text), or null when it names none. */
export function classifyGlabStderr(stderr: string, spawnError: string | null): string | null {
  if (spawnError) return 'NOT_SENT';
  if (
    /connection refused|no such host|proxyconnect|network is unreachable|no route to host|dial tcp|x509: |tls: /i.test(
      stderr,
    )
  )
    return 'NOT_SENT';
  if (/\bEOF\b|connection reset|broken pipe|timeout|deadline exceeded/i.test(stderr)) return 'ECONNRESET';
  return null;
}

/** The first errno-like code in an error's cause chain. */
export function transportCodeOf(error: unknown): string {
  for (let e: unknown = error, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code) return code;
    // fetch refuses "bad ports" (the Fetch standard's block list) before connecting.
    if (e instanceof Error && /^bad port$/i.test(e.message)) return 'ERR_BAD_PORT';
  }
  return 'EFETCH';
}

/** The most specific message in an error's cause chain. */
export function transportMessageOf(error: unknown): string {
  let message = '';
  for (let e: unknown = error, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    if (e instanceof Error && e.message) message = e.message;
  }
  return oneLine(message);
}
