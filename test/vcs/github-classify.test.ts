/**
 * The forge failure classifiers and the SPEC §3.2 retry semantics, table-driven (pure functions, no processes):
 * - classifyGh: each observation gh can produce (spawn ENOENT, timeout, output cap, 401, 403 rate limits primary /
 *   secondary / by message, 429, 403 SAML / integration / missing scope / plain, 404, 410, 5xx, 422, a 2xx with a
 *   failing gh, exit 4, transport text before and after sending, anything else) → code, cause class, details;
 * - retrySemantics / forgeError: reads retry rate limits and transient failures; writes never retry — transient or
 *   unknown outcome → check_already_applied with a "view first" suggestion, rate limit or not-sent → retry_later;
 *   a pre-write check failing → retry_later with write_sent false; environment → fix_environment; every write
 *   failure is pinned not retryable;
 * - classifyGitLab: 401, 403, 404, 429, 5xx, 3xx, 422, 2xx with an unreadable body, transport codes, timeout, cap;
 * - helpers: retryAfterSeconds (seconds, HTTP date, GitHub and GitLab reset headers), parseIncludeOutput (gh LF and
 *   glab CRLF), bodyMessage (GitHub and GitLab shapes).
 * - issue #12: no gh/glab stderr or transport text in any failure (only `stderr_class`), forge messages as safe
 *   snippets (one line, no control characters, redacted, capped).
 */
import { describe, expect, test } from 'vitest';
import { ALL_RECOVERIES } from '../../src/errors/codes.js';
import {
  bodyMessage,
  classifyCliStderr,
  forgeError,
  parseIncludeOutput,
  retryAfterSeconds,
  retrySemantics,
  SNIPPET_MAX_CHARS,
  type CallKind,
  type FailureClass,
} from '../../src/vcs/forge-errors.js';
import { classifyGh, type GhObservation } from '../../src/vcs/github-classify.js';
import { classifyGitLab, type GlObservation } from '../../src/vcs/gitlab-classify.js';

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);
const ctx = { host: 'github.com', timeoutMs: 30_000, maxOutputBytes: 1_048_576, nowMs: NOW };
const nowS = Math.floor(NOW / 1000);
const gl = (o: Partial<GlObservation>): GlObservation => ({
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
});
const glCtx = { host: 'gitlab.example.com', timeoutMs: 1000, maxOutputBytes: 4096, nowMs: NOW };

/** An observation: gh exited 1 after an HTTP answer, unless overridden. */
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
const http = (status: number, message: string | null, headers: Record<string, string> = {}): GhObservation =>
  gh({ status, bodyMessage: message, headers, stderr: message ? `gh: ${message} (HTTP ${status})\n` : '' });

describe('classifyGh', () => {
  test.each<[string, GhObservation, string, FailureClass, Record<string, unknown>]>([
    [
      'gh not installed',
      gh({ exitCode: null, spawnError: 'ENOENT' }),
      'GH_CLI_MISSING',
      'environment',
      { errno: 'ENOENT' },
    ],
    [
      'timeout',
      gh({ exitCode: null, timedOut: true }),
      'GH_NETWORK',
      'transient',
      { reason: 'timeout', timeout_ms: 30_000 },
    ],
    [
      'output cap',
      gh({ exitCode: null, outputLimited: true, status: 200 }),
      'GH_OUTPUT_LIMIT',
      'unknown_outcome',
      { max_bytes: 1_048_576 },
    ],
    [
      'no token: exit 4',
      gh({ exitCode: 4, stderr: 'To get started with GitHub CLI, please run:  gh auth login\n' }),
      'GH_AUTH_REQUIRED',
      'environment',
      { exit_code: 4 },
    ],
    ['401', http(401, 'Bad credentials'), 'GH_AUTH_REQUIRED', 'environment', { status: 401 }],
    [
      'bad credentials without a status',
      gh({ stderr: 'HTTP 401: Bad credentials (https://api.github.com/graphql)' }),
      'GH_AUTH_REQUIRED',
      'environment',
      {},
    ],
    [
      '403 primary rate limit',
      http(403, 'API rate limit exceeded for user ID 1.', {
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(nowS + 90),
      }),
      'GH_RATE_LIMIT',
      'rate_limit',
      { retry_after_s: 90, limit: 'primary' },
    ],
    [
      '403 secondary rate limit with Retry-After',
      http(403, 'You have exceeded a secondary rate limit.', { 'retry-after': '60' }),
      'GH_RATE_LIMIT',
      'rate_limit',
      { retry_after_s: 60, limit: 'secondary' },
    ],
    [
      '403 rate limit by message only',
      http(403, 'API rate limit exceeded'),
      'GH_RATE_LIMIT',
      'rate_limit',
      { status: 403 },
    ],
    [
      '429',
      http(429, 'Too Many Requests', { 'retry-after': '5' }),
      'GH_RATE_LIMIT',
      'rate_limit',
      { retry_after_s: 5 },
    ],
    [
      '403 SAML',
      http(403, 'Resource protected by organization SAML enforcement.', { 'x-github-sso': 'required; url=https://x' }),
      'GH_FORBIDDEN',
      'environment',
      { reason: 'saml' },
    ],
    [
      '403 integration',
      http(403, 'Resource not accessible by integration'),
      'GH_FORBIDDEN',
      'environment',
      { reason: 'integration' },
    ],
    [
      '403 missing scope',
      http(403, 'Forbidden', { 'x-accepted-oauth-scopes': 'repo', 'x-oauth-scopes': 'read:user' }),
      'GH_FORBIDDEN',
      'environment',
      { reason: 'missing_scope', required_scopes: 'repo' },
    ],
    [
      '403 with repo scope present is plain forbidden',
      http(403, 'Must have admin rights', { 'x-accepted-oauth-scopes': 'public_repo', 'x-oauth-scopes': 'repo' }),
      'GH_FORBIDDEN',
      'environment',
      { reason: 'forbidden' },
    ],
    ['404', http(404, 'Not Found'), 'GH_NOT_FOUND', 'arguments', { status: 404, reason: 'not_found' }],
    [
      '410',
      http(410, 'Issues are disabled for this repo'),
      'GH_NOT_FOUND',
      'arguments',
      { status: 410, reason: 'gone' },
    ],
    ['500', http(500, null), 'GH_NETWORK', 'transient', { status: 500, reason: 'server_error' }],
    [
      '502 with an HTML body',
      gh({ status: 502, stderr: "invalid character '<' looking for beginning of value" }),
      'GH_NETWORK',
      'transient',
      { status: 502 },
    ],
    [
      '422',
      http(422, 'Validation Failed'),
      'GH_FAILED',
      'arguments',
      { status: 422, exit_code: 1, message: 'Validation Failed' },
    ],
    [
      '201 but gh failed',
      gh({ status: 201, stderr: 'unexpected end of JSON input' }),
      'GH_FAILED',
      'unknown_outcome',
      { status: 201 },
    ],
    [
      'connection refused',
      gh({
        stderr:
          'Get "http://api.github.localhost/x": proxyconnect tcp: dial tcp 127.0.0.1:9: connect: connection refused',
      }),
      'GH_NETWORK',
      'not_sent',
      { reason: 'connect', request_sent: false },
    ],
    [
      'DNS failure',
      gh({ stderr: 'Get "https://api.github.com/x": dial tcp: lookup api.github.com: no such host' }),
      'GH_NETWORK',
      'not_sent',
      {},
    ],
    [
      'EOF after the request',
      gh({ stderr: 'Post "http://api.github.localhost/repos/o/r/issues/1/comments": EOF' }),
      'GH_NETWORK',
      'transient',
      { reason: 'transport' },
    ],
    [
      'reset',
      gh({ stderr: 'read tcp 1.2.3.4:5->6.7.8.9:443: read: connection reset by peer' }),
      'GH_NETWORK',
      'transient',
      {},
    ],
    [
      'unknown failure',
      gh({ stderr: 'something odd happened' }),
      'GH_FAILED',
      'unknown_outcome',
      { exit_code: 1, stderr_class: 'other' },
    ],
    [
      'a config file error',
      gh({ stderr: "failed to read configuration: yaml: line 2: could not find expected ':'\n  oauth_token: gho_x" }),
      'GH_FAILED',
      'unknown_outcome',
      { stderr_class: 'config' },
    ],
    ['killed by a signal', gh({ exitCode: null }), 'GH_FAILED', 'unknown_outcome', { exit_code: null }],
  ])('%s → %s', (_label, obs, code, failure, details) => {
    const f = classifyGh(obs, ctx);
    expect(f.code).toBe(code);
    expect(f.failure).toBe(failure);
    expect(f.details).toMatchObject(details);
    expect(f.message.length).toBeGreaterThan(10);
  });

  test('the output cap on an HTTP error still classifies by status', () => {
    expect(classifyGh(gh({ status: 404, outputLimited: true }), ctx).code).toBe('GH_NOT_FOUND');
  });
});

describe('retry semantics (SPEC §3.2)', () => {
  const classes: FailureClass[] = [
    'rate_limit',
    'transient',
    'not_sent',
    'unknown_outcome',
    'environment',
    'arguments',
  ];
  test.each<[CallKind, FailureClass, boolean, string]>([
    ['read', 'rate_limit', true, 'retry_later'],
    ['read', 'transient', true, 'retry_later'],
    ['read', 'not_sent', true, 'retry_later'],
    ['read', 'unknown_outcome', false, 'fix_arguments'],
    ['read', 'environment', false, 'fix_environment'],
    ['read', 'arguments', false, 'fix_arguments'],
    ['write', 'rate_limit', false, 'retry_later'],
    ['write', 'transient', false, 'check_already_applied'],
    ['write', 'not_sent', false, 'retry_later'],
    ['write', 'unknown_outcome', false, 'check_already_applied'],
    ['write', 'environment', false, 'fix_environment'],
    ['write', 'arguments', false, 'fix_arguments'],
    ['precheck', 'rate_limit', false, 'retry_later'],
    ['precheck', 'transient', false, 'retry_later'],
    ['precheck', 'unknown_outcome', false, 'fix_arguments'],
    ['precheck', 'environment', false, 'fix_environment'],
  ])('%s + %s → retryable %s, %s', (kind, failure, retryable, recovery) => {
    const s = retrySemantics(kind, failure);
    expect([s.retryable, s.recovery]).toEqual([retryable, recovery]);
  });

  test('no write (or pre-write check) is ever retryable; every recovery is in the SPEC vocabulary', () => {
    for (const kind of ['write', 'precheck'] as const) {
      for (const failure of classes) expect(retrySemantics(kind, failure).retryable, `${kind} ${failure}`).toBe(false);
    }
    for (const kind of ['read', 'write', 'precheck'] as const) {
      for (const failure of classes) expect(ALL_RECOVERIES).toContain(retrySemantics(kind, failure).recovery);
    }
  });

  test('a write that may have been applied says so and tells the caller to view the issue first', () => {
    const e = forgeError(
      'write',
      { code: 'GH_NETWORK', failure: 'transient', message: 'The connection failed.' },
      'github.com/o/r#7',
    );
    expect([e.code, e.retryable, e.recovery]).toEqual(['GH_NETWORK', false, 'check_already_applied']);
    expect(e.details.may_be_applied).toBe(true);
    expect(e.message).toMatch(/may already have been applied/);
    expect(e.suggestion).toMatch(/view github\.com\/o\/r#7 first/);
  });

  test('a rate-limited write was not applied: retry_later with retry_after_s', () => {
    const e = forgeError(
      'write',
      { code: 'GH_RATE_LIMIT', failure: 'rate_limit', message: 'Rate limit.', details: { retry_after_s: 30 } },
      'x',
    );
    expect([e.retryable, e.recovery, e.details.write_sent]).toEqual([false, 'retry_later', false]);
    expect(e.suggestion).toMatch(/30 s/);
  });

  test('a failing pre-write check wrote nothing', () => {
    const e = forgeError('precheck', { code: 'GH_NETWORK', failure: 'transient', message: 'Timed out' }, 'x');
    expect([e.retryable, e.recovery, e.details.write_sent]).toEqual([false, 'retry_later', false]);
    expect(e.message).toMatch(/Nothing was written/);
  });
});

describe('classifyGitLab', () => {
  test.each<[string, GlObservation, string, FailureClass, Record<string, unknown>]>([
    [
      '401',
      gl({ status: 401, bodyMessage: '401 Unauthorized' }),
      'GL_AUTH_REQUIRED',
      'environment',
      { status: 401, token_sent: true },
    ],
    [
      '401 with the token withheld',
      gl({ status: 401, tokenSent: false, tokenWithheld: true }),
      'GL_AUTH_REQUIRED',
      'environment',
      { token_withheld: true },
    ],
    ['403', gl({ status: 403 }), 'GL_FORBIDDEN', 'environment', { status: 403 }],
    ['404', gl({ status: 404 }), 'GL_NOT_FOUND', 'arguments', { status: 404 }],
    [
      '429 Retry-After',
      gl({ status: 429, headers: { 'retry-after': '12' } }),
      'GH_RATE_LIMIT',
      'rate_limit',
      { retry_after_s: 12 },
    ],
    [
      '429 RateLimit-Reset',
      gl({ status: 429, headers: { 'ratelimit-reset': String(nowS + 40) } }),
      'GH_RATE_LIMIT',
      'rate_limit',
      { retry_after_s: 40 },
    ],
    ['500', gl({ status: 500 }), 'GL_NETWORK', 'transient', { status: 500 }],
    [
      '302',
      gl({ status: 302, headers: { location: 'https://elsewhere/x?private_token=abc' } }),
      'GL_FAILED',
      'arguments',
      { status: 302, redirect_host: 'elsewhere' },
    ],
    [
      '409',
      gl({ status: 409, bodyMessage: 'conflict' }),
      'GL_FAILED',
      'arguments',
      { status: 409, message: 'conflict' },
    ],
    ['422', gl({ status: 422, bodyMessage: 'title is too long' }), 'GL_FAILED', 'arguments', { status: 422 }],
    [
      '201 unreadable',
      gl({ status: 201, transportMessage: 'terminated' }),
      'GL_FAILED',
      'unknown_outcome',
      { status: 201 },
    ],
    [
      'refused',
      gl({ transportCode: 'ECONNREFUSED', transportMessage: 'connect ECONNREFUSED 127.0.0.1:9' }),
      'GL_NETWORK',
      'not_sent',
      { request_sent: false },
    ],
    [
      'socket closed',
      gl({ transportCode: 'UND_ERR_SOCKET', transportMessage: 'other side closed' }),
      'GL_NETWORK',
      'transient',
      { errno: 'UND_ERR_SOCKET' },
    ],
    ['timeout', gl({ timedOut: true }), 'GL_NETWORK', 'transient', { reason: 'timeout', timeout_ms: 1000 }],
    ['cap', gl({ status: 200, outputLimited: true }), 'GH_OUTPUT_LIMIT', 'unknown_outcome', { max_bytes: 4096 }],
    [
      'glab not logged in',
      gl({ exitCode: 1, transportMessage: 'glab: 401 Unauthorized' }),
      'GL_AUTH_REQUIRED',
      'environment',
      {},
    ],
  ])('%s → %s', (_label, obs, code, failure, details) => {
    const f = classifyGitLab(obs, glCtx);
    expect([f.code, f.failure]).toEqual([code, failure]);
    expect(f.details).toMatchObject(details);
  });
});

describe('issue #12: no CLI stderr or transport text in any message or detail', () => {
  const FILE_LINE = 'DB_PASSWORD=hunter2-from-a-dotenv-file';
  const stderrs = [
    `failed to parse /root/.config/gh/hosts.yml: yaml: line 1: ${FILE_LINE}`,
    `open /work/.env: ${FILE_LINE}`,
    `Get "https://api.github.com/x": dial tcp: lookup ${FILE_LINE}: no such host`,
    `${FILE_LINE}\nsecond line`,
  ];
  test.each(stderrs)('gh stderr %#', (stderr) => {
    for (const obs of [
      gh({ stderr }),
      gh({ stderr, exitCode: 4 }),
      gh({ stderr, status: 201 }),
      gh({ stderr, status: 422 }),
    ]) {
      const f = classifyGh(obs, ctx);
      expect(JSON.stringify(f)).not.toContain('hunter2');
    }
  });
  test.each(stderrs)('glab stderr / transport message %#', (text) => {
    for (const obs of [
      gl({ exitCode: 1, transportMessage: text }),
      gl({ transportCode: 'ECONNREFUSED', transportMessage: text }),
      gl({ status: 201, transportMessage: text }),
      gl({ exitCode: 1, transportCode: 'NOT_SENT', transportMessage: text }),
    ]) {
      const f = classifyGitLab(obs, glCtx);
      expect(JSON.stringify(f)).not.toContain('hunter2');
    }
  });
  test('classifyCliStderr maps Go error texts to fixed words', () => {
    expect(classifyCliStderr('')).toBe('none');
    expect(classifyCliStderr('Get "https://evil.example/x": Forbidden')).toBe('proxy');
    expect(classifyCliStderr('x509: certificate signed by unknown authority')).toBe('tls');
    expect(classifyCliStderr('yaml: unmarshal errors')).toBe('config');
  });
  test('a forge body message is one redacted line of at most 200 characters without control characters', () => {
    const m = bodyMessage(
      JSON.stringify({
        message: `bad \u001b[31mred\u202e token ghp_${'a'.repeat(36)}\nsecond line ${'x'.repeat(500)}`,
      }),
    )!;
    expect(m).toBe('bad [31mred token [REDACTED]');
    expect(bodyMessage(JSON.stringify({ message: 'y'.repeat(500) }))!.length).toBe(SNIPPET_MAX_CHARS);
  });
});

describe('helpers', () => {
  test.each<[Record<string, string>, number | undefined]>([
    [{ 'retry-after': '30' }, 30],
    [{ 'retry-after': new Date(NOW + 15_000).toUTCString() }, 15],
    [{ 'x-ratelimit-reset': String(nowS + 120) }, 120],
    [{ 'x-ratelimit-reset': String(nowS - 5) }, 0],
    [{ 'ratelimit-reset': String(nowS + 9) }, 9],
    [{}, undefined],
  ])('retryAfterSeconds(%j) = %s', (headers, expected) => {
    expect(retryAfterSeconds(headers, NOW)).toBe(expected);
  });

  test('parseIncludeOutput: gh (LF) and glab (CRLF), repeated headers joined', () => {
    expect(
      parseIncludeOutput('HTTP/1.1 403 Forbidden\nX-Ratelimit-Remaining: 0\nLink: a\nLink: b\n\n{"message":"x"}'),
    ).toEqual({ status: 403, headers: { 'x-ratelimit-remaining': '0', link: 'a, b' }, body: '{"message":"x"}' });
    expect(parseIncludeOutput('HTTP/2.0 200 OK\r\nContent-Type: application/json\r\n\r\n[1]')).toEqual({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '[1]',
    });
    expect(parseIncludeOutput('')).toBeNull();
    expect(parseIncludeOutput('gh: not a response')).toBeNull();
  });

  test('bodyMessage: GitHub and GitLab error shapes', () => {
    expect(bodyMessage('{"message":"Not Found","documentation_url":"x"}')).toBe('Not Found');
    expect(bodyMessage('{"message":{"title":["is too long"],"labels":["bad"]}}')).toBe('title is too long; labels bad');
    expect(bodyMessage('{"error":"invalid_token","error_description":"expired"}')).toBe('invalid_token: expired');
    expect(bodyMessage('<html>')).toBeNull();
  });
});
