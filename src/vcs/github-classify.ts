/**
 * Classification of a failed `gh api` run (docs/issue-tools.md): spawn error, timeout, output cap, the HTTP status
 * and rate-limit headers `-i` printed, gh's exit code and its stderr class. gh's stderr is never copied into a result
 * (it may quote its config files, paths, tokens): only its class (src/vcs/forge-errors.ts classifyCliStderr); the
 * forge's JSON error message only as a safe snippet. Written as one ordered table of rules (`GH_RULES`).
 */
import {
  classifyCliStderr,
  firstFailure,
  retryAfterSeconds,
  STDERR_IN_TRANSIT,
  STDERR_NOT_SENT,
  type FailureRule,
  type ForgeFailure,
  type StderrClass,
} from './forge-errors.js';

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

/** Spawn errors that mean "gh cannot be run here" (GH_CLI_MISSING) rather than a failed start. */
const CLI_MISSING_ERRNOS: ReadonlySet<string> = new Set(['ENOENT', 'EACCES', 'ENOEXEC', 'EPERM']);

/** What the rules read: the observation, the context, and what is derived from them once. */
interface GhFacts {
  obs: GhObservation;
  ctx: ClassifyContext;
  /** The forge's error message ('' when none). */
  msg: string;
  stderrClass: StderrClass;
  /** `exit_code`, and `status` when gh got an answer: every failure's details start with these. */
  base: Record<string, unknown>;
  /** `{ retry_after_s }` when the headers name a wait, else empty. */
  withRetry: Record<string, unknown>;
}

/** The HTTP status, for rules that only run when gh got an answer. */
const statusOf = (f: GhFacts): number => f.obs.status ?? 0;
const answered = (f: GhFacts): boolean => f.obs.status !== null;
/** ": message" for a message, else ''. */
const withMsg = (f: GhFacts): string => (f.msg ? `: ${f.msg}` : '');

/** True for a 429, or a 403 that a primary or secondary rate limit caused. */
function rateLimited(f: GhFacts): boolean {
  const h = f.obs.headers;
  return (
    statusOf(f) === 429 ||
    (statusOf(f) === 403 &&
      (h['x-ratelimit-remaining'] === '0' ||
        /rate limit/i.test(f.msg) ||
        (h['retry-after'] !== undefined && /secondary|abuse/i.test(f.msg))))
  );
}

/** The reasons of a 403 that is not a rate limit, in order; the first that holds names it (else `forbidden`). */
const FORBIDDEN_REASONS: readonly {
  reason: string;
  when: (f: GhFacts) => boolean;
  suggestion: (f: GhFacts) => string;
}[] = [
  {
    reason: 'saml',
    when: (f) => f.obs.headers['x-github-sso'] !== undefined || /SAML|single sign-on|\bSSO\b/i.test(f.msg),
    suggestion: () =>
      'The organization enforces SAML single sign-on: ask the user to authorize the token for it (gh auth refresh, or the token settings page).',
  },
  {
    reason: 'integration',
    when: (f) => /not accessible by integration/i.test(f.msg),
    suggestion: () =>
      'The GitHub App / Actions token lacks the issues permission: grant it (e.g. `permissions: issues: write`) or use a user token.',
  },
  {
    reason: 'missing_scope',
    when: (f) =>
      !!f.obs.headers['x-accepted-oauth-scopes'] &&
      !scopesSatisfied(f.obs.headers['x-accepted-oauth-scopes'], f.obs.headers['x-oauth-scopes']),
    suggestion: (f) =>
      `The token lacks a scope (needs one of: ${f.obs.headers['x-accepted-oauth-scopes']}): run \`gh auth refresh -s repo\`.`,
  },
  {
    reason: 'forbidden',
    when: () => true,
    suggestion: () =>
      'The token lacks permission for this repository: ask the user to grant it (or use another account).',
  },
];

/** GH_FORBIDDEN for a 403 that is not a rate limit, with the reason `FORBIDDEN_REASONS` finds. */
function forbidden(f: GhFacts): ForgeFailure {
  const { reason, suggestion } = FORBIDDEN_REASONS.find((r) => r.when(f))!;
  return {
    code: 'GH_FORBIDDEN',
    failure: 'environment',
    message: `GitHub (${f.ctx.host}) denied the request (HTTP 403${withMsg(f)}).`,
    details: {
      ...f.base,
      reason,
      message: f.msg || null,
      ...(reason === 'missing_scope' ? { required_scopes: f.obs.headers['x-accepted-oauth-scopes'] } : {}),
    },
    suggestion: suggestion(f),
  };
}

/** The rules of `classifyGh`, in order (see its docstring). */
const GH_RULES: readonly FailureRule<GhFacts>[] = [
  {
    when: (f) => !!f.obs.spawnError && CLI_MISSING_ERRNOS.has(f.obs.spawnError),
    then: (f) => ({
      code: 'GH_CLI_MISSING',
      failure: 'environment',
      message: `The GitHub CLI (gh) cannot be run: ${f.obs.spawnError === 'ENOENT' ? 'it is not installed (not found on PATH)' : f.obs.spawnError}.`,
      details: { errno: f.obs.spawnError },
      suggestion:
        'Install the GitHub CLI (gh, https://cli.github.com) and authenticate it (gh auth login or GH_TOKEN).',
    }),
  },
  {
    when: (f) => !!f.obs.spawnError,
    then: (f) => ({
      code: 'GH_FAILED',
      failure: 'not_sent',
      message: `gh could not be started (${f.obs.spawnError}).`,
      details: { errno: f.obs.spawnError },
    }),
  },
  {
    when: (f) => f.obs.timedOut,
    then: (f) => ({
      code: 'GH_NETWORK',
      failure: 'transient',
      message: `gh api did not finish within ${f.ctx.timeoutMs} ms (talking to ${f.ctx.host}).`,
      details: { ...f.base, reason: 'timeout', timeout_ms: f.ctx.timeoutMs },
    }),
  },
  {
    when: (f) => f.obs.outputLimited && (f.obs.status === null || f.obs.status < 400),
    then: (f) => ({
      code: 'GH_OUTPUT_LIMIT',
      failure: 'unknown_outcome',
      message: `gh output exceeded the cap of ${f.ctx.maxOutputBytes} bytes.`,
      details: { ...f.base, max_bytes: f.ctx.maxOutputBytes },
      suggestion: 'Narrow the request (a lower limit), or ask the user to raise --forge-output-bytes.',
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) === 401,
    then: (f) => ({
      code: 'GH_AUTH_REQUIRED',
      failure: 'environment',
      message: `GitHub (${f.ctx.host}) rejected the credentials (HTTP 401${withMsg(f)}).`,
      details: { ...f.base, message: f.msg || null },
      suggestion: `Run \`gh auth login --hostname ${f.ctx.host}\` or set GH_TOKEN to a valid token.`,
    }),
  },
  {
    when: (f) => answered(f) && rateLimited(f),
    then: (f) => {
      const secondary =
        /secondary|abuse/i.test(f.msg) ||
        (f.obs.headers['retry-after'] !== undefined && f.obs.headers['x-ratelimit-remaining'] !== '0');
      return {
        code: 'GH_RATE_LIMIT',
        failure: 'rate_limit',
        message: `GitHub (${f.ctx.host}) refused the request: ${secondary ? 'secondary ' : ''}rate limit (HTTP ${statusOf(f)}${withMsg(f)}).`,
        details: { ...f.base, ...f.withRetry, limit: secondary ? 'secondary' : 'primary', message: f.msg || null },
      };
    },
  },
  { when: (f) => answered(f) && statusOf(f) === 403, then: forbidden },
  {
    when: (f) => answered(f) && statusOf(f) === 404,
    then: (f) => ({
      code: 'GH_NOT_FOUND',
      failure: 'arguments',
      message: `GitHub (${f.ctx.host}) found no such repository or issue (HTTP 404${withMsg(f)}).`,
      details: { ...f.base, reason: 'not_found', message: f.msg || null },
      suggestion:
        'Check repo (owner/name), hostname and number; a private repository also looks missing to a token without access.',
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) === 410,
    then: (f) => ({
      code: 'GH_NOT_FOUND',
      failure: 'arguments',
      message: `GitHub (${f.ctx.host}) says the resource is gone (HTTP 410${withMsg(f)}); issues may be disabled for the repository.`,
      details: { ...f.base, reason: 'gone', message: f.msg || null },
      suggestion: 'Issues are disabled or the issue was deleted; check the repository settings.',
    }),
  },
  {
    when: (f) => answered(f) && statusOf(f) >= 500,
    then: (f) => ({
      code: 'GH_NETWORK',
      failure: 'transient',
      message: `GitHub (${f.ctx.host}) answered with a server error (HTTP ${statusOf(f)}).`,
      details: { ...f.base, reason: 'server_error', ...f.withRetry },
    }),
  },
  {
    // A 2xx/3xx answer but gh failed (unparseable body, …): a write may have been applied.
    when: (f) => answered(f) && statusOf(f) < 400,
    then: (f) => ({
      code: 'GH_FAILED',
      failure: 'unknown_outcome',
      message: `gh api failed after GitHub answered HTTP ${statusOf(f)} (exit ${f.obs.exitCode}).`,
      details: { ...f.base, stderr_class: f.stderrClass },
    }),
  },
  {
    when: answered,
    then: (f) => ({
      code: 'GH_FAILED',
      failure: 'arguments',
      message: `GitHub (${f.ctx.host}) refused the request (HTTP ${statusOf(f)}${withMsg(f)}).`,
      details: { ...f.base, message: f.msg || null },
      suggestion:
        'Fix the arguments as the message says (e.g. an unknown label or assignee, a title that is too long).',
    }),
  },
  {
    when: (f) => f.obs.exitCode === 4 || f.stderrClass === 'auth',
    then: (f) => ({
      code: 'GH_AUTH_REQUIRED',
      failure: 'environment',
      message: `gh is not authenticated for ${f.ctx.host}${f.obs.exitCode === 4 ? ' (exit 4)' : ''}.`,
      details: { ...f.base, stderr_class: f.stderrClass },
      suggestion: `Run \`gh auth login --hostname ${f.ctx.host}\` or set GH_TOKEN.`,
    }),
  },
  {
    when: (f) => f.stderrClass === 'rate_limit',
    then: (f) => ({
      code: 'GH_RATE_LIMIT',
      failure: 'rate_limit',
      message: `GitHub (${f.ctx.host}) refused the request: rate limit.`,
      details: { ...f.base, stderr_class: f.stderrClass },
    }),
  },
  {
    when: (f) => STDERR_NOT_SENT.has(f.stderrClass),
    then: (f) => ({
      code: 'GH_NETWORK',
      failure: 'not_sent',
      message: `gh could not connect to ${f.ctx.host} (${STDERR_WORDS[f.stderrClass]}).`,
      details: { ...f.base, reason: 'connect', request_sent: false, stderr_class: f.stderrClass },
    }),
  },
  {
    when: (f) => STDERR_IN_TRANSIT.has(f.stderrClass),
    then: (f) => ({
      code: 'GH_NETWORK',
      failure: 'transient',
      message: `The connection to ${f.ctx.host} failed during the request (${STDERR_WORDS[f.stderrClass]}).`,
      details: { ...f.base, reason: 'transport', stderr_class: f.stderrClass },
    }),
  },
  {
    when: () => true,
    then: (f) => ({
      code: 'GH_FAILED',
      failure: 'unknown_outcome',
      message: `gh api failed (exit ${f.obs.exitCode ?? 'none: killed'}${f.stderrClass === 'config' ? ', gh reported a problem with its configuration' : ''}); its error text is not shown (it may quote files).`,
      details: { ...f.base, stderr_class: f.stderrClass },
      ...(f.stderrClass === 'config'
        ? { suggestion: "Ask the user to check gh's configuration (gh auth status)." }
        : {}),
    }),
  },
];

/**
 * Classifies a failed `gh api` run into a docs/issue-tools.md failure (code, cause class, message, details). Pure.
 * Order: spawn error → timeout → output cap → HTTP status (401, 403/429 rate limits, other 403, 404/410, 5xx,
 * other 4xx, a 2xx with a failing gh) → no status: exit 4, auth text, rate-limit text, transport text → GH_FAILED.
 */
export function classifyGh(obs: GhObservation, ctx: ClassifyContext): ForgeFailure {
  const retryAfter = obs.status !== null ? retryAfterSeconds(obs.headers, ctx.nowMs) : undefined;
  return firstFailure(GH_RULES, {
    obs,
    ctx,
    msg: obs.bodyMessage ?? '',
    stderrClass: classifyCliStderr(obs.stderr),
    base: { exit_code: obs.exitCode, ...(obs.status !== null ? { status: obs.status } : {}) },
    withRetry: retryAfter !== undefined ? { retry_after_s: retryAfter } : {},
  });
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
