/**
 * Deterministic observation sets for test/vcs/forge-classify-pinned.test.ts: the inputs the pinned table and the
 * aggregate digests were generated from (by running the classifiers of commit c565c78, before the rule tables).
 * Pure data: changing anything here invalidates the pinned values.
 */
import type { GhObservation } from '../../src/vcs/github-classify.js';
import type { GlObservation } from '../../src/vcs/gitlab-classify.js';

/** The fixed clock of every case (ms since the epoch). */
export const NOW_MS = 1_800_000_000_000;
/** The classifier context of every case. */
export const CTX = { host: 'ghe.example', timeoutMs: 1000, maxOutputBytes: 4096, nowMs: NOW_MS };

export const STATUSES = [null, 0, 200, 204, 301, 307, 399, 400, 401, 403, 404, 409, 410, 422, 429, 499, 500, 503, 599];
export const HEADER_SETS: Record<string, string>[] = [
  {},
  { 'x-ratelimit-remaining': '0' },
  { 'retry-after': '30' },
  { 'retry-after': '30', 'x-ratelimit-remaining': '0' },
  { 'x-ratelimit-reset': String(NOW_MS / 1000 + 60) },
  { 'ratelimit-reset': String(NOW_MS / 1000 + 5) },
  { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' },
  { 'x-github-sso': 'required; url=https://ghe.example/sso' },
  { 'x-accepted-oauth-scopes': 'repo', 'x-oauth-scopes': 'read:org' },
  { 'x-accepted-oauth-scopes': 'public_repo', 'x-oauth-scopes': 'repo' },
  { 'x-accepted-oauth-scopes': 'read:org', 'x-oauth-scopes': 'admin:org' },
  { 'x-accepted-oauth-scopes': ' , ' },
  { location: 'https://evil.example:8443/x' },
  { location: '::bad' },
];
export const MESSAGES = [
  null,
  '',
  'API rate limit exceeded for user',
  'You have exceeded a secondary rate limit',
  'abuse detection mechanism',
  'Resource protected by organization SAML enforcement',
  'SSO required',
  'Resource not accessible by integration',
  'Not Found',
  'Validation Failed',
];
/** One stderr text per class of classifyCliStderr (and blank ones). */
export const STDERRS = [
  '',
  '  \n',
  'dial tcp 1.2.3.4:443: connect: connection refused',
  'lookup x: no such host',
  'x509: certificate signed by unknown authority',
  'proxyconnect tcp: EOF',
  'network is unreachable',
  'dial tcp: i/o',
  'context deadline exceeded',
  'read: connection reset by peer',
  'Post "x": EOF',
  'gh auth login required',
  'HTTP 401: Bad credentials',
  'API rate limit exceeded',
  'could not read hosts.yml',
  'something else',
];
export const SPAWN_ERRORS = [null, '', 'ENOENT', 'EACCES', 'ENOEXEC', 'EPERM', 'EAGAIN'];
export const TRANSPORT_CODES = [
  null,
  '',
  'ECONNREFUSED',
  'ENOTFOUND',
  'ERR_BAD_PORT',
  'NOT_SENT',
  'ECONNRESET',
  'UND_ERR_SOCKET',
  'ECANCELED',
  'EFETCH',
];

function gh(o: Partial<GhObservation>): GhObservation {
  return {
    exitCode: 1,
    spawnError: null,
    timedOut: false,
    outputLimited: false,
    status: null,
    headers: {},
    bodyMessage: null,
    stderr: '',
    ...o,
  };
}

function gl(o: Partial<GlObservation>): GlObservation {
  return {
    status: null,
    headers: {},
    bodyMessage: null,
    timedOut: false,
    outputLimited: false,
    transportCode: null,
    transportMessage: null,
    tokenSent: true,
    tokenWithheld: false,
    ...o,
  };
}

/**
 * classifyGh cases meant to reach every branch of the old if-chain and the orders between them: spawn errors (with
 * and without a timeout), timeout × output cap × status, every status × header set, the 401/403/429 statuses ×
 * messages, 403 × header set × message (rate limit vs SAML vs integration vs scope), and no status × exit × stderr.
 */
export function ghCases(): GhObservation[] {
  const out: GhObservation[] = [];
  for (const spawnError of SPAWN_ERRORS) for (const timedOut of [false, true]) out.push(gh({ spawnError, timedOut }));
  for (const timedOut of [false, true])
    for (const outputLimited of [false, true])
      for (const status of [null, 200, 403]) out.push(gh({ timedOut, outputLimited, status }));
  for (const status of STATUSES) for (const headers of HEADER_SETS) out.push(gh({ status, headers }));
  for (const status of [401, 403, 429]) for (const bodyMessage of MESSAGES) out.push(gh({ status, bodyMessage }));
  for (const headers of HEADER_SETS)
    for (const bodyMessage of MESSAGES) out.push(gh({ status: 403, headers, bodyMessage, exitCode: 4 }));
  for (const exitCode of [null, 0, 1, 4]) for (const stderr of STDERRS) out.push(gh({ exitCode, stderr }));
  for (const stderr of STDERRS) out.push(gh({ status: 200, exitCode: 4, stderr }));
  return out;
}

/**
 * classifyGitLab cases: timeout × output cap × status, every status × header set, 401/404 × token sent / withheld,
 * glab (exit code present) and HTTPS (absent) × transport code × stderr text, and statuses with a transport code.
 */
export function glCases(): GlObservation[] {
  const out: GlObservation[] = [];
  for (const timedOut of [false, true])
    for (const outputLimited of [false, true])
      for (const status of [null, 200, 404]) out.push(gl({ timedOut, outputLimited, status }));
  for (const status of STATUSES) for (const headers of HEADER_SETS) out.push(gl({ status, headers }));
  for (const status of [401, 403, 404, 429])
    for (const [tokenSent, tokenWithheld] of [
      [false, false],
      [true, false],
      [false, true],
    ])
      out.push(gl({ status, tokenSent, tokenWithheld, bodyMessage: '404 Project Not Found' }));
  for (const exitCode of [undefined, null, 1])
    for (const transportCode of TRANSPORT_CODES)
      for (const transportMessage of [null, 'glab auth login', 'connection refused', 'something else'])
        out.push(gl({ transportCode, transportMessage, ...(exitCode === undefined ? {} : { exitCode }) }));
  for (const status of [200, 302, 401, 422, 500]) out.push(gl({ status, transportCode: 'ECONNRESET', exitCode: 1 }));
  return out;
}

/** The larger products whose full results (messages, details, suggestions) are pinned as one digest each. */
export function* ghProduct(): Generator<GhObservation> {
  for (const outputLimited of [false, true])
    for (const status of STATUSES)
      for (const headers of HEADER_SETS)
        for (const bodyMessage of MESSAGES)
          for (const exitCode of [1, 4])
            for (const stderr of STDERRS.filter((_, i) => i % 3 === 0))
              yield gh({ outputLimited, status, headers, bodyMessage, exitCode, stderr });
}

export function* glProduct(): Generator<GlObservation> {
  for (const outputLimited of [false, true])
    for (const status of STATUSES)
      for (const headers of HEADER_SETS.filter((_, i) => i % 3 === 0))
        for (const bodyMessage of MESSAGES.filter((_, i) => i % 3 === 0))
          for (const transportCode of TRANSPORT_CODES.filter((_, i) => i % 2 === 0))
            for (const transportMessage of [null, 'glab auth login', 'connection refused'])
              for (const exitCode of [undefined, 1])
                for (const [tokenSent, tokenWithheld] of [
                  [false, false],
                  [true, false],
                  [false, true],
                ])
                  yield gl({
                    outputLimited,
                    status,
                    headers,
                    bodyMessage,
                    transportCode,
                    transportMessage,
                    tokenSent,
                    tokenWithheld,
                    ...(exitCode === undefined ? {} : { exitCode }),
                  });
}

/** The pinned summary of one failure: code, cause class and the details that name its branch. */
export function summary(f: {
  code: string;
  failure: string;
  details?: Record<string, unknown>;
  suggestion?: string;
}): string {
  const d = f.details ?? {};
  const keys = [
    'reason',
    'limit',
    'stderr_class',
    'errno',
    'retry_after_s',
    'request_sent',
    'token_withheld',
    'redirect_host',
  ];
  const parts = keys.filter((k) => d[k] !== undefined).map((k) => `${k}=${String(d[k])}`);
  return [f.code, f.failure, ...parts, f.suggestion ? 's' : '-'].join(' ');
}
