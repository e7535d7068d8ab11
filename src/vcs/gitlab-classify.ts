/**
 * Classification of a failed GitLab request (docs/issue-tools.md), for both transports: HTTP status, timeout, output cap, glab's
 * exit and stderr class, fetch's transport errors. No glab stderr and no transport error text reaches an envelope or
 * a log: only a class or an errno code; GitLab's JSON error message only as a safe snippet
 * (src/vcs/forge-errors.ts). Codes: 401 GL_AUTH_REQUIRED, 403 GL_FORBIDDEN, 404 GL_NOT_FOUND, 429 GH_RATE_LIMIT,
 * 5xx/transport/timeout GL_NETWORK, other statuses (400, 409, 422, 3xx) GL_FAILED with status and message.
 */
import { classifyCliStderr, oneLine, retryAfterSeconds, type ForgeFailure } from './forge-errors.js';

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
const NOT_SENT_CODES = new Set([
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

/**
 * Classifies a failed GitLab request (docs/issue-tools.md). Pure. Order: timeout → output cap → status (401, 403, 404, 429,
 * 5xx, 2xx with a bad body, others) → glab auth text → transport (not sent / in transit) → GL_FAILED.
 */
export function classifyGitLab(
  obs: GlObservation,
  ctx: { host: string; timeoutMs: number; maxOutputBytes: number; nowMs: number },
): ForgeFailure {
  const msg = obs.bodyMessage ?? '';
  const base: Record<string, unknown> = {
    ...(obs.status !== null ? { status: obs.status } : {}),
    ...(obs.exitCode !== undefined ? { exit_code: obs.exitCode } : {}),
  };
  const tokenHint = obs.tokenWithheld
    ? ` No token was sent: GITLAB_TOKEN belongs to the GITLAB_HOST instance (gitlab.com when unset), not ${ctx.host}.`
    : '';
  if (obs.timedOut) {
    return {
      code: 'GL_NETWORK',
      failure: 'transient',
      message: `GitLab (${ctx.host}) did not answer within ${ctx.timeoutMs} ms.`,
      details: { ...base, reason: 'timeout', timeout_ms: ctx.timeoutMs },
    };
  }
  if (obs.outputLimited && (obs.status === null || obs.status < 400)) {
    return {
      code: 'GH_OUTPUT_LIMIT',
      failure: 'unknown_outcome',
      message: `The GitLab response exceeded the cap of ${ctx.maxOutputBytes} bytes.`,
      details: { ...base, max_bytes: ctx.maxOutputBytes },
      suggestion: 'Narrow the request (a lower limit), or ask the user to raise --forge-output-bytes.',
    };
  }
  const status = obs.status;
  if (status !== null) {
    const retryAfter = retryAfterSeconds(obs.headers, ctx.nowMs);
    const withMsg = msg ? `: ${msg}` : '';
    if (status === 401) {
      return {
        code: 'GL_AUTH_REQUIRED',
        failure: 'environment',
        message: `GitLab (${ctx.host}) requires authentication (HTTP 401${withMsg}).${tokenHint}`,
        details: {
          ...base,
          message: msg || null,
          token_sent: obs.tokenSent,
          ...(obs.tokenWithheld ? { token_withheld: true } : {}),
        },
        suggestion: obs.tokenWithheld
          ? `Set GITLAB_HOST to ${ctx.host} if GITLAB_TOKEN belongs to it, or run \`glab auth login --hostname ${ctx.host}\`.`
          : `Set GITLAB_TOKEN (a personal access token with the api scope) or run \`glab auth login --hostname ${ctx.host}\`.`,
      };
    }
    if (status === 403) {
      return {
        code: 'GL_FORBIDDEN',
        failure: 'environment',
        message: `GitLab (${ctx.host}) denied the request (HTTP 403${withMsg}).`,
        details: { ...base, message: msg || null },
        suggestion:
          'The token lacks a scope or a role on this project: ask the user to grant it (api scope, Reporter+ to comment).',
      };
    }
    if (status === 404) {
      return {
        code: 'GL_NOT_FOUND',
        failure: 'arguments',
        message: `GitLab (${ctx.host}) found no such project or issue (HTTP 404${withMsg}).${tokenHint}`,
        details: { ...base, message: msg || null, token_sent: obs.tokenSent },
        suggestion: obs.tokenSent
          ? 'Check repo (group/sub/name), hostname and number.'
          : 'Check repo, hostname and number; without a token a private project looks missing (set GITLAB_TOKEN).',
      };
    }
    if (status === 429) {
      return {
        code: 'GH_RATE_LIMIT',
        failure: 'rate_limit',
        message: `GitLab (${ctx.host}) refused the request: rate limit (HTTP 429${withMsg}).`,
        details: { ...base, ...(retryAfter !== undefined ? { retry_after_s: retryAfter } : {}), message: msg || null },
      };
    }
    if (status >= 500) {
      return {
        code: 'GL_NETWORK',
        failure: 'transient',
        message: `GitLab (${ctx.host}) answered with a server error (HTTP ${status}).`,
        details: {
          ...base,
          reason: 'server_error',
          ...(retryAfter !== undefined ? { retry_after_s: retryAfter } : {}),
        },
      };
    }
    if (status >= 200 && status < 300) {
      return {
        code: 'GL_FAILED',
        failure: 'unknown_outcome',
        message: `GitLab (${ctx.host}) answered HTTP ${status} but the answer could not be read.`,
        details: { ...base },
      };
    }
    if (status >= 300 && status < 400) {
      return {
        code: 'GL_FAILED',
        failure: 'arguments',
        message: `GitLab (${ctx.host}) redirected the request (HTTP ${status}); redirects are not followed.`,
        details: { ...base, redirect_host: redirectHost(obs.headers.location) },
        suggestion: "Pass hostname as the instance's final https URL (the redirect target).",
      };
    }
    return {
      code: 'GL_FAILED',
      failure: 'arguments',
      message: `GitLab (${ctx.host}) refused the request (HTTP ${status}${withMsg}).`,
      details: { ...base, message: msg || null },
      suggestion: 'Fix the arguments as the message says.',
    };
  }
  // glab's stderr and transport error texts are never copied: only a class / an errno code.
  const stderrClass = obs.exitCode !== undefined ? classifyCliStderr(obs.transportMessage ?? '') : null;
  if (stderrClass === 'auth') {
    return {
      code: 'GL_AUTH_REQUIRED',
      failure: 'environment',
      message: `glab is not authenticated for ${ctx.host}.`,
      details: { ...base, stderr_class: stderrClass },
      suggestion: `Run \`glab auth login --hostname ${ctx.host}\` or set GITLAB_TOKEN.`,
    };
  }
  const code = obs.transportCode;
  if (code !== null) {
    const notSent = NOT_SENT_CODES.has(code);
    return {
      code: 'GL_NETWORK',
      failure: notSent ? 'not_sent' : 'transient',
      message: notSent
        ? `Could not connect to GitLab (${ctx.host}): ${code}.`
        : `The connection to GitLab (${ctx.host}) failed during the request: ${code}.`,
      details: {
        ...base,
        reason: notSent ? 'connect' : 'transport',
        errno: code,
        ...(stderrClass ? { stderr_class: stderrClass } : {}),
        ...(notSent ? { request_sent: false } : {}),
      },
    };
  }
  return {
    code: 'GL_FAILED',
    failure: 'unknown_outcome',
    message: `The GitLab request failed${stderrClass ? ` (glab exit ${obs.exitCode}; its error text is not shown)` : ''}.`,
    details: { ...base, ...(stderrClass ? { stderr_class: stderrClass } : {}) },
  };
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
