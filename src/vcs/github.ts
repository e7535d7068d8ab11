/**
 * GitHub issues through the `gh` CLI (docs/issue-tools.md): every request is
 *   gh api --hostname HOST -X METHOD -i -H 'Accept: application/vnd.github+json' [--input -] ENDPOINT
 * run by the one subprocess runner (no shell, --forge-timeout-ms, --forge-output-bytes), REST only, `-X` always
 * explicit, request bodies as JSON on stdin, the target always explicit (GH_REPO/GH_HOST are removed from gh's
 * environment so they never decide it; endpoints carry no `{owner}`/`{repo}` placeholders). `-i` makes gh print the
 * status line and headers before the body — also on HTTP errors, where gh exits 1 and prints
 * "gh: <message> (HTTP 403)" on stderr — so the classifier knows the status and the rate-limit headers.
 *
 * gh behaviour relied on (gh 2.23): exit 4 when no token is configured; plain http only for `github.localhost`
 * (http://api.github.localhost/…); transport errors printed as Go errors ("Post \"…\": EOF", "dial tcp …: connect:
 * connection refused"); no retries of its own.
 *
 * Hosts and tokens: the allow-list has been checked before gh is started (src/vcs/host-allow.ts); gh
 * gets GH_TOKEN/GITHUB_TOKEN only for github.com (github.localhost: only when named) and the enterprise tokens only for a host the
 * operator named (ghTokenPolicy); every run has the egress guard (src/vcs/egress-guard.ts) as its only proxy, so a
 * redirect to another host is neither followed nor believed (GH_HOST_DENIED, reason redirect). gh's stderr is never
 * copied into a result: only its class (src/vcs/forge-errors.ts classifyCliStderr).
 *
 * Pull requests share the issue number space: `view` of a PR number and every write on one is GH_NOT_ISSUE (each
 * write first GETs the issue; the write itself is exactly one POST or PATCH); `list` leaves PRs out and counts them.
 */
import { realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCommand, type CommandResult } from './run-command.js';
import { parseAuthority, startEgressGuard, type Authority } from './egress-guard.js';
import { ghConfigReachable, hostListed } from './forge-hosts.js';
import { findCli } from './find-cli.js';
import { makeOwnedTempDir, removeOwnedTempDir } from '../fs/owned-temp.js';
import { operatorNamedGitHubHosts } from './host-allow.js';
import { ToolError } from '../errors/tool-error.js';
import {
  bodyMessage,
  classifyCliStderr,
  forgeError,
  retryAfterSeconds,
  STDERR_IN_TRANSIT,
  STDERR_NOT_SENT,
  type CallKind,
  type ForgeFailure,
  type StderrClass,
} from './forge-errors.js';
import {
  cliResponse,
  nextPageOf,
  parseJsonBody,
  redirectDenied,
  toComment,
  toIssue,
  type ForgeResponse,
  type IssueFieldNames,
} from './forge-response.js';
import {
  describeTarget,
  hostArg,
  str,
  type ForgeCallOptions,
  type Issue,
  type IssueBackend,
  type IssuePage,
  type IssueTarget,
  type IssueWithComments,
} from './issues.js';

/**
 * Everything the classifier knows about one failed `gh api` run.
 * `status`/`headers`/`bodyMessage` come from the `-i` output and are null/empty when gh got no response.
 */
export interface GhObservation {
  exitCode: number | null;
  /** errno of a spawn failure (ENOENT: gh not installed), else null. */
  spawnError: string | null;
  timedOut: boolean;
  outputLimited: boolean;
  status: number | null;
  /** Lower-cased response header names. */
  headers: Readonly<Record<string, string>>;
  /** `message` of the JSON error body. */
  bodyMessage: string | null;
  stderr: string;
}

/** Limits the classifier mentions in messages. */
export interface ClassifyContext {
  host: string;
  timeoutMs: number;
  maxOutputBytes: number;
  /** Current time, ms since the epoch (for x-ratelimit-reset). */
  nowMs: number;
}

/** Words for the stderr classes in messages. */
const STDERR_WORDS: Readonly<Record<StderrClass, string>> = {
  connection_refused: 'connection refused',
  dns: 'host name not found',
  tls: 'TLS or certificate error',
  proxy: 'the proxy refused the connection',
  network_unreachable: 'network unreachable',
  connect_failed: 'could not connect',
  eof: 'connection closed early',
  reset: 'connection reset',
  timeout: 'timeout',
  auth: 'authentication',
  rate_limit: 'rate limit',
  config: 'configuration',
  none: 'no error text',
  other: 'unclassified error',
};

/**
 * Classifies a failed `gh api` run into a docs/issue-tools.md failure (code, cause class, message, details). Pure.
 * Order: spawn error → timeout → output cap → HTTP status (401, 403/429 rate limits, other 403, 404/410, 5xx,
 * other 4xx, a 2xx with a failing gh) → no status: exit 4, auth text, rate-limit text, transport text → GH_FAILED.
 */
export function classifyGh(obs: GhObservation, ctx: ClassifyContext): ForgeFailure {
  const msg = obs.bodyMessage ?? '';
  // gh's stderr is never copied (it may quote its config files, paths, tokens): only its class.
  const stderrClass = classifyCliStderr(obs.stderr);
  const base: Record<string, unknown> = {
    exit_code: obs.exitCode,
    ...(obs.status !== null ? { status: obs.status } : {}),
  };
  if (obs.spawnError) {
    if (['ENOENT', 'EACCES', 'ENOEXEC', 'EPERM'].includes(obs.spawnError)) {
      return {
        code: 'GH_CLI_MISSING',
        failure: 'environment',
        message: `The GitHub CLI (gh) cannot be run: ${obs.spawnError === 'ENOENT' ? 'it is not installed (not found on PATH)' : obs.spawnError}.`,
        details: { errno: obs.spawnError },
        suggestion:
          'Install the GitHub CLI (gh, https://cli.github.com) and authenticate it (gh auth login or GH_TOKEN).',
      };
    }
    return {
      code: 'GH_FAILED',
      failure: 'not_sent',
      message: `gh could not be started (${obs.spawnError}).`,
      details: { errno: obs.spawnError },
    };
  }
  if (obs.timedOut) {
    return {
      code: 'GH_NETWORK',
      failure: 'transient',
      message: `gh api did not finish within ${ctx.timeoutMs} ms (talking to ${ctx.host}).`,
      details: { ...base, reason: 'timeout', timeout_ms: ctx.timeoutMs },
    };
  }
  if (obs.outputLimited && (obs.status === null || obs.status < 400)) {
    return {
      code: 'GH_OUTPUT_LIMIT',
      failure: 'unknown_outcome',
      message: `gh output exceeded the cap of ${ctx.maxOutputBytes} bytes.`,
      details: { ...base, max_bytes: ctx.maxOutputBytes },
      suggestion: 'Narrow the request (a lower limit), or ask the user to raise --forge-output-bytes.',
    };
  }
  const status = obs.status;
  if (status !== null) {
    const retryAfter = retryAfterSeconds(obs.headers, ctx.nowMs);
    const withRetry = retryAfter !== undefined ? { retry_after_s: retryAfter } : {};
    if (status === 401) {
      return {
        code: 'GH_AUTH_REQUIRED',
        failure: 'environment',
        message: `GitHub (${ctx.host}) rejected the credentials (HTTP 401${msg ? `: ${msg}` : ''}).`,
        details: { ...base, message: msg || null },
        suggestion: `Run \`gh auth login --hostname ${ctx.host}\` or set GH_TOKEN to a valid token.`,
      };
    }
    const rateLimited =
      status === 429 ||
      (status === 403 &&
        (obs.headers['x-ratelimit-remaining'] === '0' ||
          /rate limit/i.test(msg) ||
          (obs.headers['retry-after'] !== undefined && /secondary|abuse/i.test(msg))));
    if (rateLimited) {
      const secondary =
        /secondary|abuse/i.test(msg) ||
        (obs.headers['retry-after'] !== undefined && obs.headers['x-ratelimit-remaining'] !== '0');
      return {
        code: 'GH_RATE_LIMIT',
        failure: 'rate_limit',
        message: `GitHub (${ctx.host}) refused the request: ${secondary ? 'secondary ' : ''}rate limit (HTTP ${status}${msg ? `: ${msg}` : ''}).`,
        details: { ...base, ...withRetry, limit: secondary ? 'secondary' : 'primary', message: msg || null },
      };
    }
    if (status === 403) {
      let reason = 'forbidden';
      let suggestion =
        'The token lacks permission for this repository: ask the user to grant it (or use another account).';
      if (obs.headers['x-github-sso'] !== undefined || /SAML|single sign-on|\bSSO\b/i.test(msg)) {
        reason = 'saml';
        suggestion =
          'The organization enforces SAML single sign-on: ask the user to authorize the token for it (gh auth refresh, or the token settings page).';
      } else if (/not accessible by integration/i.test(msg)) {
        reason = 'integration';
        suggestion =
          'The GitHub App / Actions token lacks the issues permission: grant it (e.g. `permissions: issues: write`) or use a user token.';
      } else if (
        obs.headers['x-accepted-oauth-scopes'] &&
        !scopesSatisfied(obs.headers['x-accepted-oauth-scopes'], obs.headers['x-oauth-scopes'])
      ) {
        reason = 'missing_scope';
        suggestion = `The token lacks a scope (needs one of: ${obs.headers['x-accepted-oauth-scopes']}): run \`gh auth refresh -s repo\`.`;
      }
      return {
        code: 'GH_FORBIDDEN',
        failure: 'environment',
        message: `GitHub (${ctx.host}) denied the request (HTTP 403${msg ? `: ${msg}` : ''}).`,
        details: {
          ...base,
          reason,
          message: msg || null,
          ...(reason === 'missing_scope' ? { required_scopes: obs.headers['x-accepted-oauth-scopes'] } : {}),
        },
        suggestion,
      };
    }
    if (status === 404 || status === 410) {
      return {
        code: 'GH_NOT_FOUND',
        failure: 'arguments',
        message:
          status === 410
            ? `GitHub (${ctx.host}) says the resource is gone (HTTP 410${msg ? `: ${msg}` : ''}); issues may be disabled for the repository.`
            : `GitHub (${ctx.host}) found no such repository or issue (HTTP 404${msg ? `: ${msg}` : ''}).`,
        details: { ...base, reason: status === 410 ? 'gone' : 'not_found', message: msg || null },
        suggestion:
          status === 410
            ? 'Issues are disabled or the issue was deleted; check the repository settings.'
            : 'Check repo (owner/name), hostname and number; a private repository also looks missing to a token without access.',
      };
    }
    if (status >= 500) {
      return {
        code: 'GH_NETWORK',
        failure: 'transient',
        message: `GitHub (${ctx.host}) answered with a server error (HTTP ${status}).`,
        details: { ...base, reason: 'server_error', ...withRetry },
      };
    }
    if (status < 400) {
      // A 2xx/3xx answer but gh failed (unparseable body, …): a write may have been applied.
      return {
        code: 'GH_FAILED',
        failure: 'unknown_outcome',
        message: `gh api failed after GitHub answered HTTP ${status} (exit ${obs.exitCode}).`,
        details: { ...base, stderr_class: stderrClass },
      };
    }
    return {
      code: 'GH_FAILED',
      failure: 'arguments',
      message: `GitHub (${ctx.host}) refused the request (HTTP ${status}${msg ? `: ${msg}` : ''}).`,
      details: { ...base, message: msg || null },
      suggestion:
        'Fix the arguments as the message says (e.g. an unknown label or assignee, a title that is too long).',
    };
  }
  if (obs.exitCode === 4 || stderrClass === 'auth') {
    return {
      code: 'GH_AUTH_REQUIRED',
      failure: 'environment',
      message: `gh is not authenticated for ${ctx.host}${obs.exitCode === 4 ? ' (exit 4)' : ''}.`,
      details: { ...base, stderr_class: stderrClass },
      suggestion: `Run \`gh auth login --hostname ${ctx.host}\` or set GH_TOKEN.`,
    };
  }
  if (stderrClass === 'rate_limit') {
    return {
      code: 'GH_RATE_LIMIT',
      failure: 'rate_limit',
      message: `GitHub (${ctx.host}) refused the request: rate limit.`,
      details: { ...base, stderr_class: stderrClass },
    };
  }
  if (STDERR_NOT_SENT.has(stderrClass)) {
    return {
      code: 'GH_NETWORK',
      failure: 'not_sent',
      message: `gh could not connect to ${ctx.host} (${STDERR_WORDS[stderrClass]}).`,
      details: { ...base, reason: 'connect', request_sent: false, stderr_class: stderrClass },
    };
  }
  if (STDERR_IN_TRANSIT.has(stderrClass)) {
    return {
      code: 'GH_NETWORK',
      failure: 'transient',
      message: `The connection to ${ctx.host} failed during the request (${STDERR_WORDS[stderrClass]}).`,
      details: { ...base, reason: 'transport', stderr_class: stderrClass },
    };
  }
  return {
    code: 'GH_FAILED',
    failure: 'unknown_outcome',
    message: `gh api failed (exit ${obs.exitCode ?? 'none: killed'}${stderrClass === 'config' ? ', gh reported a problem with its configuration' : ''}); its error text is not shown (it may quote files).`,
    details: { ...base, stderr_class: stderrClass },
    ...(stderrClass === 'config' ? { suggestion: "Ask the user to check gh's configuration (gh auth status)." } : {}),
  };
}

/** True when the token's scopes (`x-oauth-scopes`) include one of the accepted ones (`x-accepted-oauth-scopes`). */
function scopesSatisfied(accepted: string, granted: string | undefined): boolean {
  const need = accepted
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (need.length === 0) return true;
  const have = new Set(
    (granted ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  // "repo" implies "public_repo"; "admin:org" implies "read:org"/"write:org".
  return need.some(
    (s) =>
      have.has(s) ||
      (s === 'public_repo' && have.has('repo')) ||
      (/^(read|write):org$/.test(s) && have.has('admin:org')),
  );
}

/** Variables removed from gh's environment: those that would pick the target, page, colour or log requests. */
const GH_ENV_REMOVED = [
  'GH_REPO',
  'GH_HOST',
  'GH_DEBUG',
  'DEBUG',
  'GH_FORCE_TTY',
  'CLICOLOR_FORCE',
  'GH_PAGER',
  'PAGER',
  // CODESPACES=true makes gh send GITHUB_TOKEN to enterprise hosts; the proxy exemptions would bypass the guard;
  // REQUEST_METHOD (CGI) makes Go ignore HTTP_PROXY.
  'CODESPACES',
  'NO_PROXY',
  'no_proxy',
  'REQUEST_METHOD',
  'ALL_PROXY',
  'all_proxy',
];
/** Tokens gh sends to github.com (and github.localhost): GH_TOKEN, GITHUB_TOKEN. */
const GH_DOTCOM_TOKENS = ['GH_TOKEN', 'GITHUB_TOKEN'];
/** Tokens gh sends to every other host: GH_ENTERPRISE_TOKEN, GITHUB_ENTERPRISE_TOKEN. */
const GH_ENTERPRISE_TOKENS = ['GH_ENTERPRISE_TOKEN', 'GITHUB_ENTERPRISE_TOKEN'];

/** True for the hosts gh treats as github.com-like and sends GH_TOKEN/GITHUB_TOKEN to (exact names). */
export function isDotcomHost(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'github.com' || h === 'github.localhost';
}

/**
 * The one authority gh talks to for `target` (gh's ghinstance.RESTPrefix): api.github.com:443 for github.com (and
 * api.HOST for *.github.com), api.github.localhost:80 over plain http for github.localhost, HOST[:port] (443) for an
 * enterprise host (its REST API is https://HOST/api/v3/).
 */
export function ghApiAuthority(target: Pick<IssueTarget, 'host' | 'port' | 'explicitPort'>): {
  scheme: 'https' | 'http';
  authority: Authority;
} {
  const h = target.host.toLowerCase();
  const localhost = h === 'github.localhost';
  const dotcomLike =
    h !== 'garage.github.com' &&
    (h === 'github.com' || h.endsWith('.github.com') || localhost || h.endsWith('.github.localhost'));
  const scheme = localhost ? 'http' : 'https';
  const port = target.explicitPort ? target.port : scheme === 'http' ? 80 : 443;
  return { scheme, authority: { host: dotcomLike ? `api.${h}` : h, port } };
}

/** Which tokens of the environment reach gh for a target (docs/issue-tools.md: tokens only to the instance they belong to). */
export interface GhTokenPolicy {
  /** GH_TOKEN/GITHUB_TOKEN kept: only for github.com, and for github.localhost when the operator named it. */
  dotcom: boolean;
  /** GH_ENTERPRISE_TOKEN/GITHUB_ENTERPRISE_TOKEN kept: only for a host the operator named (host-allow.ts). */
  enterprise: boolean;
}

/** The token policy for `target` under the raw `--git-remote-allow` entries `allow`. */
export function ghTokenPolicy(
  target: Pick<IssueTarget, 'host' | 'port'>,
  allow: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  isInsideRoots?: (absolute: string) => boolean,
): GhTokenPolicy {
  const named = (): boolean =>
    hostListed(operatorNamedGitHubHosts(allow, env, isInsideRoots), target.host, target.port);
  // github.com's tokens go to github.com; to github.localhost (gh sends them there too, over plain http to whatever
  // listens on api.github.localhost:80) only when the operator named it — `*` alone does not.
  if (target.host.toLowerCase() === 'github.com') return { dotcom: true, enterprise: false };
  if (isDotcomHost(target.host)) return { dotcom: named(), enterprise: false };
  return { dotcom: false, enterprise: named() };
}

/**
 * gh's environment (docs/issue-tools.md): the server's (config dir, CA settings, …) minus GH_REPO/GH_HOST, the variables that
 * would make gh page, colour or print debug logs (which may include headers), the proxy exemptions, and every token
 * `tokens` does not keep; with `guardUrl` as gh's only proxy (src/vcs/egress-guard.ts).
 */
export function ghEnvironment(
  tokens: GhTokenPolicy,
  guardUrl: string | null,
  base: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const key of GH_ENV_REMOVED) delete env[key];
  if (!tokens.dotcom) for (const key of GH_DOTCOM_TOKENS) delete env[key];
  if (!tokens.enterprise) for (const key of GH_ENTERPRISE_TOKENS) delete env[key];
  if (guardUrl !== null) {
    for (const key of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy']) env[key] = guardUrl;
  }
  return { ...env, GH_PROMPT_DISABLED: '1', GH_NO_UPDATE_NOTIFIER: '1', NO_COLOR: '1', GH_SPINNER_DISABLED: '1' };
}

/**
 * Prefix of the private gh configuration directories (under the OS temporary directory; the full name records the
 * owning process: src/fs/owned-temp.ts).
 */
export const GH_TOKEN_DIR_PREFIX = 'fs-tools-ghtoken-';

/** A private gh configuration directory holding the enterprise token for one host. */
interface BoundToken {
  dir: string;
  env: NodeJS.ProcessEnv;
}

/**
 * Binds the environment's enterprise token to the target host for one gh run. gh sends GH_ENTERPRISE_TOKEN to EVERY
 * host but github.com — also to the target of a redirect gh follows without a proxy (Go never proxies loopback
 * addresses, so the egress guard cannot stop a redirect to http://127.0.0.1:…). So the token leaves the environment
 * and goes into a private GH_CONFIG_DIR (outside the roots, 0700, marked with this process: src/fs/owned-temp.ts;
 * hosts.yml 0600) as the `oauth_token` of the target host only; gh looks tokens up per request host, so any other
 * host gets none. The caller removes it when gh exits (`removeOwnedTempDir`); the process removes it on every exit
 * path it sees, and the next start sweeps one a killed server left (docs/security.md).
 * @param alwaysPrivate create the private directory even without a token (an empty gh configuration): gh's own
 *   configuration lies inside the roots, where the agent could have written it (forge-hosts.ts ghConfigReachable)
 * @returns null when no enterprise token is set and `alwaysPrivate` is false (gh's own configuration stays in force)
 */
export function bindEnterpriseToken(
  target: Pick<IssueTarget, 'host' | 'port' | 'explicitPort'>,
  env: NodeJS.ProcessEnv,
  isInsideRoots: (absolute: string) => boolean = () => false,
  alwaysPrivate = false,
): BoundToken | null {
  const token = env.GH_ENTERPRISE_TOKEN || env.GITHUB_ENTERPRISE_TOKEN;
  if (!token && !alwaysPrivate) return null;
  const keys = [target.host.toLowerCase()];
  // gh 2.23 looks the token up by host name without the port, later versions with it.
  if (target.explicitPort) keys.push(`${target.host.toLowerCase()}:${target.port}`);
  const dir = makeOwnedTempDir(privateTempBase(isInsideRoots), 'ghtoken');
  try {
    // JSON strings are YAML double-quoted scalars: no token character can break out of the value.
    const yaml = token
      ? keys
          .map(
            (k) =>
              `${JSON.stringify(k)}:\n    oauth_token: ${JSON.stringify(token)}\n    user: ${JSON.stringify('fs-tools')}\n`,
          )
          .join('')
      : '';
    writeFileSync(path.join(dir, 'hosts.yml'), yaml, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    removeOwnedTempDir(dir);
    throw error;
  }
  const out: NodeJS.ProcessEnv = { ...env, GH_CONFIG_DIR: dir };
  for (const key of GH_ENTERPRISE_TOKENS) delete out[key];
  return { dir, env: out };
}

/** Where private gh configurations may be made, in order of preference (the start-up sweep looks in all of them). */
export function ghTokenBases(): string[] {
  return [os.tmpdir(), '/dev/shm', '/var/tmp'];
}

/**
 * The first of os.tmpdir(), /dev/shm, /var/tmp (real paths) that is outside the roots: the token file must never be
 * where the agent can read it (TMPDIR may lie inside a root, e.g. a root at $HOME with TMPDIR=$HOME/tmp).
 * @throws ToolError VALIDATION reason no_private_dir when every candidate is inside the roots (nothing was sent)
 */
function privateTempBase(isInsideRoots: (absolute: string) => boolean): string {
  for (const candidate of ghTokenBases()) {
    let real: string;
    try {
      real = realpathSync(candidate);
    } catch {
      continue;
    }
    if (!isInsideRoots(real) && !isInsideRoots(path.join(real, `${GH_TOKEN_DIR_PREFIX}x`))) return real;
  }
  throw new ToolError(
    'VALIDATION',
    'Every temporary directory lies inside the allowed roots, so the enterprise token has nowhere private to be handed to gh; nothing was sent.',
    {
      details: { reason: 'no_private_dir' },
      suggestion: 'Ask the user to set TMPDIR to a directory outside the roots.',
    },
  );
}

/** Runs one `gh api` request; throws the classified ToolError on failure. */
async function ghApi(
  target: IssueTarget,
  method: 'GET' | 'POST' | 'PATCH',
  endpoint: string,
  body: unknown,
  kind: CallKind,
  opts: ForgeCallOptions,
  subject: string,
): Promise<ForgeResponse> {
  const host = hostArg(target);
  const args = ['api', '--hostname', host, '-X', method, '-i', '-H', 'Accept: application/vnd.github+json'];
  if (body !== undefined) args.push('--input', '-');
  args.push(endpoint);
  const cli = findCli('gh', process.env, opts.isInsideRoots);
  if (cli.insideRoots) {
    throw forgeError(
      kind,
      {
        code: 'GH_CLI_MISSING',
        failure: 'environment',
        message:
          'The gh found on PATH lies inside the allowed roots, where the agent can write; it is not run (nothing was sent).',
        details: { reason: 'inside_roots' },
        suggestion: 'Ask the user to install gh outside the roots, or to remove the PATH entry inside them.',
      },
      subject,
    );
  }
  const api = ghApiAuthority(target);
  const policy = ghTokenPolicy(target, opts.allow ?? [], process.env, opts.isInsideRoots);
  const guard = await startEgressGuard([api.authority], api.scheme);
  let bound: BoundToken | null = null;
  let result: CommandResult;
  try {
    let env = ghEnvironment(policy, guard.url);
    // gh's own configuration inside the roots is the agent's, not the operator's: gh gets a private, empty one.
    const reachable = ghConfigReachable(process.env, os.homedir(), opts.isInsideRoots);
    bound = policy.enterprise || reachable ? bindEnterpriseToken(target, env, opts.isInsideRoots, reachable) : null;
    if (bound) env = bound.env;
    result = await runCommand(cli.file ?? 'gh', args, {
      env,
      timeoutMs: opts.timeoutMs,
      maxOutputBytes: opts.maxOutputBytes,
      input: body === undefined ? undefined : JSON.stringify(body),
      signal: opts.signal,
    });
  } finally {
    await guard.close();
    if (bound) removeOwnedTempDir(bound.dir);
  }
  if (guard.denied.length > 0) throw redirectDenied('GitHub', host, target, guard.denied[0], kind, subject);
  const guardUnreachable = guard.unreachable > 0;
  const { response, ok } = cliResponse(result);
  if (ok && response) {
    const data = parseJsonBody(response.body, response.status, {
      forge: 'GitHub',
      host,
      kind,
      subject,
      details: { exit_code: result.exitCode },
    });
    return { status: response.status, headers: response.headers, data };
  }
  if (guardUnreachable && !result.timedOut && result.spawnError === null) {
    // The guard could not reach the host (or the operator's proxy): gh only saw the guard's 502.
    throw forgeError(
      kind,
      {
        code: 'GH_NETWORK',
        failure: 'not_sent',
        message: `gh could not connect to ${host} (the host or the configured proxy refused the connection).`,
        details: { exit_code: result.exitCode, reason: 'connect', request_sent: false },
      },
      subject,
    );
  }
  if (response !== null && response.status >= 300 && response.status < 400) {
    // gh did not follow this redirect (a 307/308 of a request with a body): never followed or believed either way.
    const to = redirectAuthority(response.headers.location, api);
    if (to === null || to.host !== api.authority.host || to.port !== api.authority.port) {
      throw redirectDenied(
        'GitHub',
        host,
        target,
        { kind: 'redirect', host: to?.host ?? '(unparseable)', port: to?.port ?? null },
        kind,
        subject,
      );
    }
    throw forgeError(
      kind,
      {
        code: 'GH_FAILED',
        failure: 'arguments',
        message: `GitHub (${host}) answered with a redirect (HTTP ${response.status}) that was not followed; nothing was changed by it.`,
        details: { status: response.status, exit_code: result.exitCode },
      },
      subject,
    );
  }
  const failure = classifyGh(
    {
      exitCode: result.exitCode,
      spawnError: result.spawnError,
      timedOut: result.timedOut,
      outputLimited: result.outputLimited,
      status: response?.status ?? null,
      headers: response?.headers ?? {},
      bodyMessage: response ? bodyMessage(response.body) : null,
      stderr: result.stderr,
    },
    { host, timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes, nowMs: Date.now() },
  );
  throw forgeError(kind, failure, subject);
}

/** The authority a Location header names (relative to the API authority); null when unparseable. */
function redirectAuthority(location: string | undefined, api: ReturnType<typeof ghApiAuthority>): Authority | null {
  if (!location) return null;
  try {
    const base = `${api.scheme}://${api.authority.host.includes(':') ? `[${api.authority.host}]` : api.authority.host}:${api.authority.port}/`;
    const to = new URL(location, base);
    if (to.protocol !== 'https:' && to.protocol !== 'http:') return null;
    return parseAuthority(to.host, to.protocol === 'https:' ? 443 : 80);
  } catch {
    return null;
  }
}

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

function repoPath(target: IssueTarget): string {
  return target.repo.split('/').map(encodeURIComponent).join('/');
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

/**
 * The GitHub backend (docs/issue-tools.md) over `gh api`.
 * @throws ToolError with docs/issue-tools.md codes (see classifyGh), GH_NOT_ISSUE for pull-request numbers
 */
export function githubBackend(opts: ForgeCallOptions): IssueBackend {
  /** GETs issue `number` (kind read or precheck) and refuses a pull request. */
  async function getIssue(target: IssueTarget, number: number, kind: CallKind): Promise<Issue> {
    const subject = describeTarget(target, number);
    const r = await ghApi(target, 'GET', `repos/${repoPath(target)}/issues/${number}`, undefined, kind, opts, subject);
    if (isPullRequest(r.data)) throw notIssue(target, number, r.data, kind !== 'read');
    return toIssue(r.data, GITHUB_FIELDS, true);
  }

  async function patch(target: IssueTarget, number: number, body: Record<string, unknown>): Promise<Issue> {
    await getIssue(target, number, 'precheck');
    const r = await ghApi(
      target,
      'PATCH',
      `repos/${repoPath(target)}/issues/${number}`,
      body,
      'write',
      opts,
      describeTarget(target, number),
    );
    return toIssue(r.data, GITHUB_FIELDS, true);
  }

  return {
    async list(target, q): Promise<IssuePage> {
      const params = new URLSearchParams({ state: q.state, per_page: String(q.perPage), page: String(q.page) });
      if (q.labels?.length) params.set('labels', q.labels.join(','));
      const r = await ghApi(
        target,
        'GET',
        `repos/${repoPath(target)}/issues?${params}`,
        undefined,
        'read',
        opts,
        describeTarget(target),
      );
      const items = Array.isArray(r.data) ? r.data : [];
      const issues = items.filter((o) => !isPullRequest(o)).map((o) => toIssue(o, GITHUB_FIELDS, false));
      // GitHub sends a Link header with rel="next" whenever another page exists.
      return { issues, pullRequestsOmitted: items.length - issues.length, nextPage: nextPageOf(r.headers, q.page) };
    },

    async view(target, number, q): Promise<IssueWithComments> {
      const issue = await getIssue(target, number, 'read');
      if (issue.comments_count === 0 && q.page === 1) return { issue, comments: [], nextCommentsPage: null };
      const params = new URLSearchParams({ per_page: String(q.perPage), page: String(q.page) });
      const r = await ghApi(
        target,
        'GET',
        `repos/${repoPath(target)}/issues/${number}/comments?${params}`,
        undefined,
        'read',
        opts,
        describeTarget(target, number),
      );
      const items = Array.isArray(r.data) ? r.data : [];
      return {
        issue,
        comments: items.map((o) => toComment(o, GITHUB_FIELDS)),
        nextCommentsPage: nextPageOf(r.headers, q.page),
      };
    },

    async create(target, fields): Promise<Issue> {
      const body: Record<string, unknown> = { title: fields.title };
      if (fields.body !== undefined) body.body = fields.body;
      if (fields.labels !== undefined) body.labels = fields.labels;
      if (fields.assignees !== undefined) body.assignees = fields.assignees;
      const r = await ghApi(
        target,
        'POST',
        `repos/${repoPath(target)}/issues`,
        body,
        'write',
        opts,
        `the newest issues of ${describeTarget(target)}`,
      );
      return toIssue(r.data, GITHUB_FIELDS, true);
    },

    async comment(target, number, text) {
      const issue = await getIssue(target, number, 'precheck');
      const r = await ghApi(
        target,
        'POST',
        `repos/${repoPath(target)}/issues/${number}/comments`,
        { body: text },
        'write',
        opts,
        describeTarget(target, number),
      );
      return {
        issue: { ...issue, comments_count: issue.comments_count + 1 },
        comment: toComment(r.data, GITHUB_FIELDS),
      };
    },

    close: (target, number, reason) => patch(target, number, { state: 'closed', state_reason: reason }),
    reopen: (target, number) => patch(target, number, { state: 'open' }),
    edit(target, number, fields) {
      const body: Record<string, unknown> = {};
      if (fields.title !== undefined) body.title = fields.title;
      if (fields.body !== undefined) body.body = fields.body;
      if (fields.labels !== undefined) body.labels = fields.labels;
      if (fields.assignees !== undefined) body.assignees = fields.assignees;
      return patch(target, number, body);
    },
  };
}
