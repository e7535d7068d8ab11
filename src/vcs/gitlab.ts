/**
 * GitLab issues through the REST API v4 (SPEC §8): through `glab api` when `glab` is on PATH (it owns
 * authentication and hosts; same `-X`/`-i`/`--input -` discipline as gh, run by the one subprocess runner), else
 * directly over HTTPS with fetch and a token from GITLAB_TOKEN or GITLAB_PRIVATE_TOKEN (`PRIVATE-TOKEN` header) or
 * CI_JOB_TOKEN (`JOB-TOKEN` header).
 *
 * Rules (SPEC §8, and decisions where it is silent — see the README):
 * - Plain http only for loopback hosts (127.0.0.0/8, ::1, localhost), so a token never crosses a network
 *   unencrypted; anything else over http is VALIDATION reason insecure_http and nothing is sent.
 * - A token from the environment is sent only to its own instance (same scheme, host, port and path prefix):
 *   GITLAB_TOKEN/GITLAB_PRIVATE_TOKEN to GITLAB_HOST (gitlab.com when unset), CI_JOB_TOKEN to
 *   CI_SERVER_URL/CI_SERVER_HOST. A remote or a `hostname`
 *   pointing elsewhere is called without it (reads of public projects still work; writes are GL_AUTH_REQUIRED with
 *   nothing sent) — a repository's remote must not be able to collect the user's token.
 * - Redirects are not followed (a redirect would carry PRIVATE-TOKEN to another origin): GL_FAILED with the status
 *   and only the redirect's host. glab (Go) follows redirects and forwards PRIVATE-TOKEN, so it runs behind the
 *   egress guard (src/vcs/egress-guard.ts): a redirect to another host is GH_HOST_DENIED (reason redirect).
 * - No glab stderr and no transport error text in any envelope or log (issue #12): only a class / an errno code;
 *   GitLab's JSON error message only as a safe snippet (src/vcs/forge-errors.ts).
 * - The response body is read under the output cap (GH_OUTPUT_LIMIT), the whole request under the timeout.
 * - Codes: 401 GL_AUTH_REQUIRED, 403 GL_FORBIDDEN, 404 GL_NOT_FOUND, 429 GH_RATE_LIMIT, 5xx/transport/timeout
 *   GL_NETWORK, other statuses (400, 409, 422, 3xx) GL_FAILED with status and message; retry semantics per
 *   src/vcs/forge-errors.ts (reads may retry; writes never).
 */
import { ToolError } from '../errors/tool-error.js';
import {
  bodyMessage,
  classifyCliStderr,
  forgeError,
  hasNextLink,
  oneLine,
  parseIncludeOutput,
  retryAfterSeconds,
  type CallKind,
  type ForgeFailure,
} from './forge-errors.js';
import {
  describeTarget,
  hostArg,
  num,
  str,
  type ForgeCallOptions,
  type Issue,
  type IssueBackend,
  type IssueComment,
  type IssueFields,
  type IssuePage,
  type IssueTarget,
  type IssueWithComments,
} from './issues.js';
import { splitHostPort } from './remotes.js';
import { runCommand } from './run-command.js';
import { startEgressGuard } from './egress-guard.js';
import { findCli } from './find-cli.js';

/** A GitLab instance: scheme, host, port and an optional path prefix. */
export type GitLabInstance = Omit<IssueTarget, 'repo'>;

/**
 * Parses a GitLab instance spelling: `gitlab.example.com`, `gitlab.example.com:8443`, `https://gitlab.example.com`,
 * `http://127.0.0.1:8929`, `https://example.com/gitlab` (instance below a path). No scheme means https.
 * @returns null when it is not a plain http(s) origin (credentials, query, fragment, another scheme)
 */
export function parseGitLabInstance(raw: string): GitLabInstance | null {
  const m = /^(?:(https?):\/\/)?([^/?#@\s]+)(\/[^?#\s]*)?$/i.exec(raw.trim());
  if (!m) return null;
  const hp = splitHostPort(m[2]);
  if (!hp) return null;
  const scheme = (m[1]?.toLowerCase() ?? 'https') as 'https' | 'http';
  const basePath = (m[3] ?? '').replace(/\/+$/, '');
  if (basePath.split('/').some((s) => s === '.' || s === '..')) return null;
  return {
    scheme,
    host: hp.host,
    port: hp.port ?? (scheme === 'https' ? 443 : 80),
    explicitPort: hp.port !== null,
    basePath,
  };
}

/**
 * The instance named by GITLAB_HOST (host, host:port or URL), or null when unset or unparseable. SPEC §8: the
 * fallback instance when neither `hostname` nor a remote decides, and the instance GITLAB_TOKEN belongs to.
 */
export function gitlabHostFromEnv(env: NodeJS.ProcessEnv = process.env): GitLabInstance | null {
  return env.GITLAB_HOST ? parseGitLabInstance(env.GITLAB_HOST) : null;
}

/** True for 127.0.0.0/8, ::1 and localhost (SPEC §8: the only hosts plain http may reach). */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(?:\.\d{1,3}){3}$/.test(h);
}

/**
 * @throws ToolError VALIDATION reason insecure_http for plain http to a non-loopback host (nothing is sent)
 */
export function assertSecureInstance(instance: GitLabInstance, field: string | null): void {
  if (instance.scheme === 'http' && !isLoopbackHost(instance.host)) {
    throw new ToolError(
      'VALIDATION',
      `Plain http to ${instance.host} is refused: only loopback hosts may be reached without TLS.`,
      {
        details: { reason: 'insecure_http', field, host: instance.host },
        suggestion: `Use https://${instance.host}${instance.explicitPort ? `:${instance.port}` : ''} instead.`,
      },
    );
  }
}

/** A token and the header that carries it. */
interface GitLabToken {
  header: 'PRIVATE-TOKEN' | 'JOB-TOKEN';
  value: string;
  /** The environment variable it came from. */
  source: string;
}

/**
 * True when `b` is the instance `a` names: same scheme, host, port and path prefix. Host and port alone are not
 * enough: `https://example.com/gitlab` and `https://example.com/other` are different applications on one origin,
 * and a token of the first must not go to the second (nor over plain http to the port of an https instance).
 */
function sameInstance(a: GitLabInstance | null, b: GitLabInstance): boolean {
  return a !== null && a.scheme === b.scheme && a.host === b.host && a.port === b.port && a.basePath === b.basePath;
}

/**
 * The token for `instance` from the environment, or null (none set, or the token belongs to another instance).
 * @returns also `withheld`: a token exists but is bound to another host
 */
export function gitlabToken(
  instance: GitLabInstance,
  env: NodeJS.ProcessEnv = process.env,
): { token: GitLabToken | null; withheld: boolean } {
  const home = parseGitLabInstance(env.GITLAB_HOST || 'gitlab.com');
  const pat = env.GITLAB_TOKEN
    ? { value: env.GITLAB_TOKEN, source: 'GITLAB_TOKEN' }
    : env.GITLAB_PRIVATE_TOKEN
      ? { value: env.GITLAB_PRIVATE_TOKEN, source: 'GITLAB_PRIVATE_TOKEN' }
      : null;
  if (pat && sameInstance(home, instance)) return { token: { header: 'PRIVATE-TOKEN', ...pat }, withheld: false };
  const ciServer = env.CI_SERVER_URL
    ? parseGitLabInstance(env.CI_SERVER_URL)
    : env.CI_SERVER_HOST
      ? parseGitLabInstance(env.CI_SERVER_HOST)
      : null;
  if (env.CI_JOB_TOKEN && sameInstance(ciServer, instance)) {
    return { token: { header: 'JOB-TOKEN', value: env.CI_JOB_TOKEN, source: 'CI_JOB_TOKEN' }, withheld: false };
  }
  return { token: null, withheld: pat !== null || Boolean(env.CI_JOB_TOKEN) };
}

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
  /** The transport error message or glab's stderr: only classified, never reported (issue #12). */
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
 * Classifies a failed GitLab request (SPEC §3.2). Pure. Order: timeout → output cap → status (401, 403, 404, 429,
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
  // glab's stderr and transport error texts are never copied (issue #12): only a class / an errno code.
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

/** A successful response. */
interface GlResponse {
  status: number;
  headers: Record<string, string>;
  data: unknown;
}

/** Request description shared by both transports. */
interface GlRequest {
  method: 'GET' | 'POST' | 'PUT';
  /** Path below /api/v4/, query included. */
  apiPath: string;
  body?: unknown;
  kind: CallKind;
  subject: string;
}

/** glab's environment: the server's, minus GITLAB_REPO (never decides the target) and debug/colour switches. */
export function glabEnvironment(
  instance: GitLabInstance,
  base: NodeJS.ProcessEnv = process.env,
  guardUrl: string | null = null,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const key of [
    'GITLAB_REPO',
    'GLAB_DEBUG',
    'DEBUG',
    'GLAB_PAGER',
    'PAGER',
    'CLICOLOR_FORCE',
    'NO_PROXY',
    'no_proxy',
    'REQUEST_METHOD',
    'ALL_PROXY',
    'all_proxy',
  ])
    delete env[key];
  // glab (Go) follows redirects and forwards PRIVATE-TOKEN to the new host: the egress guard is its only proxy.
  if (guardUrl !== null)
    for (const key of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy']) env[key] = guardUrl;
  // The environment token belongs to its own instance only (see the module comment); glab's stored per-host
  // credentials still apply.
  if (!gitlabToken(instance, base).token) {
    for (const key of ['GITLAB_TOKEN', 'GITLAB_PRIVATE_TOKEN', 'OAUTH_TOKEN', 'CI_JOB_TOKEN']) delete env[key];
  }
  return { ...env, NO_PROMPT: '1', NO_COLOR: '1', GLAB_CHECK_UPDATE: 'false', GLAB_SEND_TELEMETRY: 'false' };
}

/** The outcome of trying glab: null when glab is not installed (ENOENT), so the HTTPS path runs instead. */
async function viaGlab(instance: GitLabInstance, req: GlRequest, opts: ForgeCallOptions): Promise<GlResponse | null> {
  // A glab inside the roots (agent-plantable, src/vcs/find-cli.ts) is never run: as if not installed (HTTPS path).
  const cli = findCli('glab', process.env, opts.isInsideRoots);
  if (cli.file === null || cli.insideRoots) return null;
  const args = [
    'api',
    '--hostname',
    hostArg({ ...instance, repo: '' }),
    '-X',
    req.method,
    '-i',
    '-H',
    'Accept: application/json',
  ];
  if (req.body !== undefined) args.push('-H', 'Content-Type: application/json', '--input', '-');
  args.push(req.apiPath);
  const guard = await startEgressGuard([{ host: instance.host, port: instance.port }], instance.scheme);
  let result;
  try {
    result = await runCommand(cli.file, args, {
      env: glabEnvironment(instance, process.env, guard.url),
      timeoutMs: opts.timeoutMs,
      maxOutputBytes: opts.maxOutputBytes,
      input: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: opts.signal,
    });
  } finally {
    await guard.close();
  }
  if (result.spawnError === 'ENOENT') return null;
  if (guard.denied.length > 0) {
    const d = guard.denied[0];
    throw forgeError(
      req.kind,
      {
        code: 'GH_HOST_DENIED',
        failure: 'arguments',
        message: `GitLab (${hostArg({ ...instance, repo: '' })}) redirected the request to another host (${d.host}); the redirect was not followed, nothing was sent there and no answer from it was used.`,
        details: {
          host: instance.host,
          port: instance.port,
          reason: 'redirect',
          redirect_host: d.host,
          redirect_port: d.port,
          redirect_kind: d.kind,
        },
      },
      req.subject,
    );
  }
  const response = parseIncludeOutput(result.stdout);
  if (
    result.exitCode === 0 &&
    !result.timedOut &&
    !result.outputLimited &&
    response &&
    response.status >= 200 &&
    response.status < 300
  ) {
    return {
      status: response.status,
      headers: response.headers,
      data: parseJsonOrThrow(response.body, response.status, instance, req),
    };
  }
  const transport = response ? null : classifyGlabStderr(result.stderr, result.spawnError);
  throw forgeError(
    req.kind,
    classifyGitLab(
      {
        status: response?.status ?? null,
        headers: response?.headers ?? {},
        bodyMessage: response ? bodyMessage(response.body) : null,
        timedOut: result.timedOut,
        outputLimited: result.outputLimited,
        transportCode: transport,
        transportMessage: result.stderr || null,
        exitCode: result.exitCode,
        tokenSent: true,
        tokenWithheld: false,
      },
      {
        host: hostArg({ ...instance, repo: '' }),
        timeoutMs: opts.timeoutMs,
        maxOutputBytes: opts.maxOutputBytes,
        nowMs: Date.now(),
      },
    ),
    req.subject,
  );
}

/** A transport class for glab's stderr (Go error text), or null when it names none. */
function classifyGlabStderr(stderr: string, spawnError: string | null): string | null {
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

function parseJsonOrThrow(body: string, status: number, instance: GitLabInstance, req: GlRequest): unknown {
  if (body.trim() === '') return null;
  try {
    return JSON.parse(body);
  } catch {
    throw forgeError(
      req.kind,
      {
        code: 'GL_FAILED',
        failure: 'unknown_outcome',
        message: `GitLab (${instance.host}) answered HTTP ${status} with a body that is not JSON.`,
        details: { status },
      },
      req.subject,
    );
  }
}

/** The first errno-like code in an error's cause chain. */
function transportCodeOf(error: unknown): string {
  for (let e: unknown = error, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code) return code;
    // fetch refuses "bad ports" (the Fetch standard's block list) before connecting.
    if (e instanceof Error && /^bad port$/i.test(e.message)) return 'ERR_BAD_PORT';
  }
  return 'EFETCH';
}

/** The most specific message in an error's cause chain. */
function transportMessageOf(error: unknown): string {
  let message = '';
  for (let e: unknown = error, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    if (e instanceof Error && e.message) message = e.message;
  }
  return oneLine(message);
}

/** One request over HTTPS (or loopback http) with fetch. */
async function viaHttps(instance: GitLabInstance, req: GlRequest, opts: ForgeCallOptions): Promise<GlResponse> {
  const { token, withheld } = gitlabToken(instance);
  const host = hostArg({ ...instance, repo: '' });
  const ctx = { host, timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes, nowMs: Date.now() };
  if (req.kind !== 'read' && !token) {
    // A write (or its checks) without a token would only be refused by the server: say so before sending.
    throw forgeError(
      req.kind,
      {
        code: 'GL_AUTH_REQUIRED',
        failure: 'environment',
        message: `No GitLab token for ${host}, and writes need one; nothing was sent.${withheld ? ` GITLAB_TOKEN belongs to the GITLAB_HOST instance (gitlab.com when unset), not ${host}.` : ''}`,
        details: { token_sent: false, write_sent: false, ...(withheld ? { token_withheld: true } : {}) },
        suggestion: withheld
          ? `Set GITLAB_HOST to ${instance.scheme}://${host} if GITLAB_TOKEN belongs to it.`
          : 'Set GITLAB_TOKEN (a personal access token with the api scope).',
      },
      req.subject,
    );
  }
  const url = `${instance.scheme}://${host}${instance.basePath}/api/v4/${req.apiPath}`;
  const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'fs-tools' };
  if (token) headers[token.header] = token.value;
  if (req.body !== undefined) headers['Content-Type'] = 'application/json';
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, opts.timeoutMs);
  const onAbort = (): void => controller.abort();
  opts.signal.addEventListener('abort', onAbort, { once: true });
  let status: number | null = null;
  const responseHeaders: Record<string, string> = {};
  try {
    const response = await fetch(url, {
      method: req.method,
      headers,
      redirect: 'manual',
      signal: controller.signal,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
    });
    status = response.status;
    response.headers.forEach((value, name) => {
      responseHeaders[name.toLowerCase()] = value;
    });
    const { text, limited } = await readCapped(response, opts.maxOutputBytes, controller);
    if (!limited && status >= 200 && status < 300) {
      return { status, headers: responseHeaders, data: parseJsonOrThrow(text, status, instance, req) };
    }
    throw forgeError(
      req.kind,
      classifyGitLab(
        {
          status,
          headers: responseHeaders,
          bodyMessage: limited ? null : bodyMessage(text),
          timedOut: false,
          outputLimited: limited,
          transportCode: null,
          transportMessage: null,
          tokenSent: token !== null,
          tokenWithheld: withheld,
        },
        ctx,
      ),
      req.subject,
    );
  } catch (error) {
    if (error instanceof ToolError) throw error;
    throw forgeError(
      req.kind,
      classifyGitLab(
        {
          status,
          headers: responseHeaders,
          bodyMessage: null,
          timedOut,
          outputLimited: false,
          transportCode: timedOut ? null : opts.signal.aborted ? 'ECANCELED' : transportCodeOf(error),
          transportMessage: transportMessageOf(error),
          tokenSent: token !== null,
          tokenWithheld: withheld,
        },
        ctx,
      ),
      req.subject,
    );
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener('abort', onAbort);
  }
}

/** Reads a response body as UTF-8, stopping (and aborting) once it exceeds `max` bytes. */
async function readCapped(
  response: Response,
  max: number,
  controller: AbortController,
): Promise<{ text: string; limited: boolean }> {
  if (!response.body) return { text: '', limited: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      controller.abort();
      await reader.cancel().catch(() => {});
      return { text: '', limited: true };
    }
    chunks.push(value);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), limited: false };
}

/** Maps a GitLab REST v4 issue. */
function toIssue(o: unknown, withBody: boolean): Issue {
  const labels = Array.isArray((o as { labels?: unknown }).labels) ? (o as { labels: unknown[] }).labels : [];
  const assignees = Array.isArray((o as { assignees?: unknown }).assignees)
    ? (o as { assignees: unknown[] }).assignees
    : [];
  const issue: Issue = {
    number: num(o, 'iid') ?? 0,
    title: str(o, 'title') ?? '',
    state: str(o, 'state') === 'closed' ? 'closed' : 'open',
    state_reason: null,
    labels: labels.map((l) => (typeof l === 'string' ? l : str(l, 'name'))).filter((l): l is string => l !== null),
    assignees: assignees.map((a) => str(a, 'username')).filter((a): a is string => a !== null),
    author: str((o as { author?: unknown }).author ?? null, 'username'),
    created_at: str(o, 'created_at'),
    updated_at: str(o, 'updated_at'),
    closed_at: str(o, 'closed_at'),
    url: str(o, 'web_url'),
    comments_count: num(o, 'user_notes_count') ?? 0,
  };
  if (withBody) issue.body = str(o, 'description') ?? '';
  return issue;
}

/** Maps a GitLab note; `issueUrl` builds its anchor URL. */
function toComment(o: unknown, issueUrl: string | null): IssueComment {
  const id = num(o, 'id') ?? 0;
  return {
    id,
    author: str((o as { author?: unknown }).author ?? null, 'username'),
    created_at: str(o, 'created_at'),
    updated_at: str(o, 'updated_at'),
    url: issueUrl ? `${issueUrl}#note_${id}` : null,
    body: str(o, 'body') ?? '',
  };
}

/** The next page from GitLab's `x-next-page` header, else a Link rel="next". */
function nextPage(headers: Record<string, string>, page: number): number | null {
  const next = headers['x-next-page']?.trim();
  if (next && /^\d+$/.test(next)) return Number(next);
  return hasNextLink(headers.link) ? page + 1 : null;
}

/**
 * The GitLab backend (SPEC §8). `project` paths are URL-encoded as one segment (nested groups: a%2Fb%2Fc).
 * @throws ToolError with SPEC §3.2 codes (see classifyGitLab); GL_NOT_FOUND reason unknown_user for an assignee
 *   username that does not exist (nothing written)
 */
export function gitlabBackend(opts: ForgeCallOptions): IssueBackend {
  async function request(target: IssueTarget, req: GlRequest): Promise<GlResponse> {
    const instance: GitLabInstance = target;
    assertSecureInstance(instance, null);
    return (await viaGlab(instance, req, opts)) ?? viaHttps(instance, req, opts);
  }
  const project = (t: IssueTarget): string => `projects/${encodeURIComponent(t.repo)}`;

  /** Usernames → user ids (GitLab assigns by id), as pre-write reads. */
  async function userIds(target: IssueTarget, usernames: string[], subject: string): Promise<number[]> {
    const ids: number[] = [];
    for (const username of usernames) {
      const r = await request(target, {
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

  async function fieldsBody(
    target: IssueTarget,
    fields: IssueFields,
    subject: string,
  ): Promise<Record<string, unknown>> {
    const body: Record<string, unknown> = {};
    if (fields.title !== undefined) body.title = fields.title;
    if (fields.body !== undefined) body.description = fields.body;
    if (fields.labels !== undefined) body.labels = fields.labels.join(',');
    if (fields.assignees !== undefined) body.assignee_ids = await userIds(target, fields.assignees, subject);
    return body;
  }

  async function put(target: IssueTarget, number: number, body: Record<string, unknown>): Promise<Issue> {
    const r = await request(target, {
      method: 'PUT',
      apiPath: `${project(target)}/issues/${number}`,
      body,
      kind: 'write',
      subject: describeTarget(target, number),
    });
    return toIssue(r.data, true);
  }

  return {
    async list(target, q): Promise<IssuePage> {
      const params = new URLSearchParams({
        state: q.state === 'open' ? 'opened' : q.state,
        per_page: String(q.perPage),
        page: String(q.page),
      });
      if (q.labels?.length) params.set('labels', q.labels.join(','));
      const r = await request(target, {
        method: 'GET',
        apiPath: `${project(target)}/issues?${params}`,
        kind: 'read',
        subject: describeTarget(target),
      });
      const items = Array.isArray(r.data) ? r.data : [];
      return {
        issues: items.map((o) => toIssue(o, false)),
        pullRequestsOmitted: 0,
        nextPage: nextPage(r.headers, q.page),
      };
    },

    async view(target, number, q): Promise<IssueWithComments> {
      const subject = describeTarget(target, number);
      const r = await request(target, {
        method: 'GET',
        apiPath: `${project(target)}/issues/${number}`,
        kind: 'read',
        subject,
      });
      const issue = toIssue(r.data, true);
      if (issue.comments_count === 0 && q.page === 1) return { issue, comments: [], nextCommentsPage: null };
      const params = new URLSearchParams({
        sort: 'asc',
        order_by: 'created_at',
        per_page: String(q.perPage),
        page: String(q.page),
      });
      const n = await request(target, {
        method: 'GET',
        apiPath: `${project(target)}/issues/${number}/notes?${params}`,
        kind: 'read',
        subject,
      });
      const notes = (Array.isArray(n.data) ? n.data : []).filter((o) => (o as { system?: unknown }).system !== true);
      return {
        issue,
        comments: notes.map((o) => toComment(o, issue.url)),
        nextCommentsPage: nextPage(n.headers, q.page),
      };
    },

    async create(target, fields): Promise<Issue> {
      const subject = `the newest issues of ${describeTarget(target)}`;
      const body = await fieldsBody(target, fields, subject);
      const r = await request(target, {
        method: 'POST',
        apiPath: `${project(target)}/issues`,
        body,
        kind: 'write',
        subject,
      });
      return toIssue(r.data, true);
    },

    async comment(target, number, text) {
      const r = await request(target, {
        method: 'POST',
        apiPath: `${project(target)}/issues/${number}/notes`,
        body: { body: text },
        kind: 'write',
        subject: describeTarget(target, number),
      });
      return { issue: null, comment: toComment(r.data, null) };
    },

    close: (target, number) => put(target, number, { state_event: 'close' }),
    reopen: (target, number) => put(target, number, { state_event: 'reopen' }),
    async edit(target, number, fields) {
      return put(target, number, await fieldsBody(target, fields, describeTarget(target, number)));
    },
  };
}
