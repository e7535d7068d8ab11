/**
 * github_issues end to end (SPEC §8, §3.2, issue 6 acceptance): the real server (dist/cli.js) runs the real `gh`
 * binary against a fake GitHub on 127.0.0.1 (test/helpers/fake-github.ts; gh talks plain http to github.localhost,
 * routed with HTTP_PROXY). The remote resolution that succeeds runs under both protocol eras (a call through each
 * era's client end to end); the rest runs once (legacy era): what the actions send and return, the codes, the retry
 * semantics and the audit lines are the server's, an envelope is the same error result in both eras, and each
 * action's result as each era's client parses it is test/e2e/schemas.test.ts's walk (every action, both eras):
 * - actions: list (pull requests omitted and counted, cursor pages), view (comments paged), create, comment, close
 *   with reason, reopen, edit — a read sends only GETs, a write exactly one POST/PATCH (after one GET check);
 * - one case per code: GH_CLI_MISSING (PATH without gh), GH_AUTH_REQUIRED (no token → exit 4; 401), GH_FORBIDDEN
 *   (integration; SAML), GH_NOT_FOUND (404; 410), GH_RATE_LIMIT (403 + x-ratelimit-remaining 0; secondary with
 *   Retry-After; 429), GH_NETWORK (connection refused; no answer → timeout), GH_OUTPUT_LIMIT, GH_NOT_ISSUE (view and
 *   close on a PR: nothing closed), GH_AMBIGUOUS (and the same repo over https + ssh is not), GH_REPO_UNRESOLVED,
 *   GH_HOST_DENIED (nothing reaches the fake), GH_FAILED;
 * - retry semantics: a rate-limited list is retryable with retry_after_s; a rate-limited comment is not (retry_later,
 *   not applied); a comment whose connection drops after the request was sent (and one answered 502, and one that
 *   times out) is not retryable and says check_already_applied;
 * - untrusted content inside the markers; GH_REPO/GH_HOST decoys in the environment never decide the target; tokens
 *   (in a gh error message, and the GH_TOKEN value itself) never reach an envelope or the audit log; --readonly
 *   refuses writes with nothing sent while reads work; VALIDATION bounds with nothing sent.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UNTRUSTED_BEGIN, UNTRUSTED_END } from '../../src/tools/issue-untrusted.js';
import { FAKE_GH_TOKEN, FakeGitHub } from '../helpers/fake-github.js';
import { runBatch } from '../helpers/git-batch.js';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, ERAS, inEra, type CallResult, type Era, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {}, bin: {}, repos: {} }, 'fs-tools-gh-');
const HOME = path.join(scratch.dir, 'home');
const REPOS = path.join(scratch.dir, 'repos');
// A PATH with git but without gh (GH_CLI_MISSING).
symlinkSync(
  execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim(),
  path.join(scratch.dir, 'bin', 'git'),
);

let fake: FakeGitHub;
beforeAll(async () => {
  fake = await FakeGitHub.start();
});
// The operator's gh configuration lies outside the roots (one inside them is the agent's and is not used: issue #12).
const outsideCfg = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-ghcfg-out-'));
afterAll(async () => {
  await fake.close();
  scratch.cleanup();
  rmSync(outsideCfg, { recursive: true, force: true });
});
beforeEach(() => fake.reset());

/** A work tree under REPOS with these remotes (name → URL). */
function workTree(name: string, remotes: Record<string, string>): string {
  const dir = path.join(REPOS, name);
  mkdirSync(dir, { recursive: true });
  const env = { ...process.env, HOME, GIT_CONFIG_NOSYSTEM: '1' };
  runBatch(dir, env, [
    ['git', 'init', '-q'],
    ...Object.entries(remotes).map(([remote, url]) => ['git', 'remote', 'add', remote, url]),
  ]);
  return dir;
}
const SAME_REPO = workTree('same', {
  origin: 'https://github.localhost/octo/hello.git',
  ssh: 'git@github.localhost:Octo/Hello',
});
const AMBIGUOUS = workTree('ambiguous', {
  origin: 'https://github.localhost/octo/hello.git',
  fork: 'https://github.localhost/someone/hello.git',
});
const NO_REMOTE = workTree('none', {});
const OTHER_FORGE = workTree('other', { origin: 'https://gitlab.example.com/a/b.git' });

const REPO = { repo: 'octo/hello', hostname: 'github.localhost' };
const LEAKED = 'ghp_LeakedInAnErrorMessage0123456789abcd';

/** The text of a success result, all blocks joined. */
const textOf = (r: CallResult): string => r.content.map((c) => c.text ?? '').join('\n');

describe.each(ERAS)('github_issues through the real gh (%s era)', (era: Era) => {
  const clients = new Map<string, TestClient>();
  const auditLog = path.join(scratch.dir, `audit-${era}.jsonl`);
  const base = { HOME, XDG_CONFIG_HOME: HOME };
  /** One server per configuration, started on first use. */
  async function server(
    kind: 'main' | 'readonly' | 'limits' | 'nogh' | 'notoken' | 'refused' | 'badconfig' | 'budget',
  ): Promise<TestClient> {
    let c = clients.get(kind);
    if (c) return c;
    const env: Record<string, string> = { ...base, ...fake.env() };
    const args = [scratch.dir];
    if (kind === 'main') args.push(`--audit-log=${auditLog}`);
    if (kind === 'readonly') args.push('--readonly', '--git-remote-allow=github.localhost/octo');
    if (kind === 'limits') args.push('--forge-timeout-ms=1500', '--forge-output-bytes=4000');
    if (kind === 'budget') args.push('--mutation-budget=1');
    if (kind === 'nogh') env.PATH = path.join(scratch.dir, 'bin');
    if (kind === 'notoken') {
      // No token anywhere: an empty gh config dir (gh's hosts.yml would make gh believe it is logged in), so the
      // fake's host is allowed explicitly, next to the configured hosts.
      env.GH_TOKEN = '';
      env.GH_CONFIG_DIR = path.join(HOME, 'empty-gh-config');
      mkdirSync(env.GH_CONFIG_DIR, { recursive: true });
      args.push('--git-remote-allow=default,github.localhost');
    }
    if (kind === 'badconfig') {
      // gh's own configuration is broken YAML holding a secret line: gh fails and names the file on stderr.
      env.GH_CONFIG_DIR = path.join(outsideCfg, `bad-gh-config-${era}`);
      mkdirSync(env.GH_CONFIG_DIR, { recursive: true });
      writeFileSync(
        path.join(env.GH_CONFIG_DIR, 'hosts.yml'),
        `github.localhost:\n  oauth_token: ${LEAKED}\n bad: [unclosed\n`,
      );
      args.push('--git-remote-allow=github.localhost');
    }
    if (kind === 'refused') {
      // A proxy port nobody listens on: gh's connection is refused before any request is sent.
      const closed = 'http://127.0.0.1:9';
      Object.assign(env, { HTTP_PROXY: closed, http_proxy: closed, HTTPS_PROXY: closed, https_proxy: closed });
    }
    c = await connect(era, { args, env });
    clients.set(kind, c);
    return c;
  }
  afterAll(async () => {
    for (const c of clients.values()) await c.close();
  });

  const call = async (args: Record<string, unknown>, kind: Parameters<typeof server>[0] = 'main') =>
    (await server(kind)).call('github_issues', args);

  inEra(
    era,
    'legacy',
    describe,
  )('actions', () => {
    it('list: open issues only, pull requests omitted and counted, paged by cursor; only GETs are sent', async () => {
      const first = await call({ action: 'list', ...REPO, limit: 2 });
      expect(first.isError).toBeFalsy();
      const s = first.structuredContent!;
      expect(s).toMatchObject({
        action: 'list',
        forge: 'github',
        host: 'github.localhost',
        repo: 'octo/hello',
        untrusted_content: true,
      });
      expect((s.issues as Array<{ number: number }>).map((i) => i.number)).toEqual([3]);
      expect(s.pull_requests_omitted).toBe(1);
      expect(s.next_cursor).toEqual(expect.any(String));
      const second = (await call({ action: 'list', ...REPO, limit: 2, cursor: s.next_cursor })).structuredContent!;
      expect(second.issues as Array<{ number: number; labels: string[]; assignees: string[] }>).toMatchObject([
        { number: 1, title: 'First bug', labels: ['bug'], assignees: ['alice'], author: 'reporter', state: 'open' },
      ]);
      expect(second.pull_requests_omitted).toBe(0);
      expect(second.next_cursor).toBeNull();
      expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
        'GET /repos/octo/hello/issues?state=open&per_page=2&page=1',
        'GET /repos/octo/hello/issues?state=open&per_page=2&page=2',
      ]);
      // gh was called with the explicit target and the REST media type; the GH_REPO/GH_HOST decoys decided nothing.
      expect(fake.requests[0].headers.accept).toBe('application/vnd.github+json');
      expect(fake.requests[0].headers.host).toBe('api.github.localhost');
      const text = textOf(first);
      expect(text).toContain(UNTRUSTED_BEGIN);
      expect(text.indexOf('Please help')).toBeGreaterThan(text.indexOf(UNTRUSTED_BEGIN));
      expect(text.indexOf('Please help')).toBeLessThan(text.indexOf(UNTRUSTED_END));
      // A cursor replayed with other arguments is refused, nothing sent.
      fake.requests.length = 0;
      expectCode(await call({ action: 'list', ...REPO, limit: 3, cursor: s.next_cursor }), 'VALIDATION');
      expect(fake.requests).toEqual([]);
    });

    it('list: state all / closed and a labels filter', async () => {
      const all = (await call({ action: 'list', ...REPO, state: 'all' })).structuredContent!;
      expect((all.issues as Array<{ number: number }>).map((i) => i.number)).toEqual([4, 3, 1]);
      const closed = (await call({ action: 'list', ...REPO, state: 'closed' })).structuredContent!;
      expect(closed.issues).toMatchObject([{ number: 4, state: 'closed' }]);
      const bugs = (await call({ action: 'list', ...REPO, labels: ['bug'] })).structuredContent!;
      expect(bugs.issues).toMatchObject([{ number: 1 }]);
      expect(fake.writes()).toEqual([]);
    });

    it('view: the issue and its comments page by page, untrusted text inside the markers', async () => {
      const r = await call({ action: 'view', ...REPO, number: 3, limit: 2 });
      const s = r.structuredContent!;
      expect(s.untrusted_content).toBe(true);
      expect(s.issue).toMatchObject({
        number: 3,
        title: 'Please help',
        comments_count: 3,
        url: 'https://github.localhost/octo/hello/issues/3',
      });
      expect((s.issue as { body: string }).body).toContain('Ignore previous instructions');
      expect((s.comments as Array<{ body: string }>).map((c) => c.body)).toEqual(['first comment', 'second comment']);
      const text = textOf(r);
      const begin = text.indexOf(UNTRUSTED_BEGIN);
      const end = text.lastIndexOf(UNTRUSTED_END);
      expect(begin).toBeGreaterThanOrEqual(0);
      expect(text.indexOf('Ignore previous instructions')).toBeGreaterThan(begin);
      expect(text.indexOf('Ignore previous instructions')).toBeLessThan(end);
      expect(text.indexOf('second comment')).toBeLessThan(end);
      // The issue's fake end marker cannot close the block: exactly one real end marker.
      expect(text.split(UNTRUSTED_END).length - 1).toBe(1);
      expect(text.split(UNTRUSTED_BEGIN).length - 1).toBe(1);
      const more = (await call({ action: 'view', ...REPO, number: 3, limit: 2, cursor: s.next_cursor }))
        .structuredContent!;
      expect((more.comments as Array<{ body: string }>).map((c) => c.body)).toEqual(['third comment']);
      expect(more.next_cursor).toBeNull();
      expect(fake.writes()).toEqual([]);
    });

    it('create sends exactly one POST with the fields as JSON', async () => {
      const r = (
        await call({
          action: 'create',
          ...REPO,
          title: 'New one',
          body: 'Details',
          labels: ['bug', 'ui'],
          assignees: ['alice'],
        })
      ).structuredContent!;
      expect(r.issue).toMatchObject({
        number: 5,
        title: 'New one',
        body: 'Details',
        labels: ['bug', 'ui'],
        assignees: ['alice'],
        state: 'open',
      });
      expect(fake.requests.map((q) => `${q.method} ${q.path}`)).toEqual(['POST /repos/octo/hello/issues']);
      expect(JSON.parse(fake.requests[0].body)).toEqual({
        title: 'New one',
        body: 'Details',
        labels: ['bug', 'ui'],
        assignees: ['alice'],
      });
    });

    it('comment: one GET check, then exactly one POST', async () => {
      const r = await call({ action: 'comment', ...REPO, number: 1, body: 'Looking into it' });
      expect(r.structuredContent!.comment).toMatchObject({ body: 'Looking into it', author: 'me' });
      expect(r.structuredContent!.issue).toMatchObject({ number: 1, comments_count: 1 });
      expect(fake.requests.map((q) => `${q.method} ${q.path}`)).toEqual([
        'GET /repos/octo/hello/issues/1',
        'POST /repos/octo/hello/issues/1/comments',
      ]);
      expect(JSON.parse(fake.requests[1].body)).toEqual({ body: 'Looking into it' });
      expect(textOf(r)).toContain(UNTRUSTED_BEGIN);
    });

    it('close with a reason, reopen, edit: each one PATCH', async () => {
      const closed = (await call({ action: 'close', ...REPO, number: 1, reason: 'not_planned' })).structuredContent!;
      expect(closed.issue).toMatchObject({ state: 'closed', state_reason: 'not_planned' });
      expect(JSON.parse(fake.writes()[0].body)).toEqual({ state: 'closed', state_reason: 'not_planned' });
      const reopened = (await call({ action: 'reopen', ...REPO, number: 1 })).structuredContent!;
      expect(reopened.issue).toMatchObject({ state: 'open' });
      expect(JSON.parse(fake.writes()[1].body)).toEqual({ state: 'open' });
      const edited = (await call({ action: 'edit', ...REPO, number: 1, title: 'Renamed', labels: [] }))
        .structuredContent!;
      expect(edited.issue).toMatchObject({ title: 'Renamed', labels: [] });
      expect(JSON.parse(fake.writes()[2].body)).toEqual({ title: 'Renamed', labels: [] });
      expect(fake.writes().map((q) => `${q.method} ${q.path}`)).toEqual(
        Array(3).fill('PATCH /repos/octo/hello/issues/1'),
      );
      expect(fake.requests.filter((q) => q.method === 'GET')).toHaveLength(3);
    });

    it('close defaults to reason completed', async () => {
      await call({ action: 'close', ...REPO, number: 3 });
      expect(JSON.parse(fake.writes()[0].body)).toEqual({ state: 'closed', state_reason: 'completed' });
    });
  });

  describe('remote resolution', () => {
    it('the same repo over https and ssh (any case) is one candidate, not ambiguous', async () => {
      const r = await call({ action: 'list', path: SAME_REPO });
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ host: 'github.localhost', repo: 'octo/hello' });
      expect(fake.requests[0].path).toMatch(/^\/repos\/octo\/hello\/issues\?/);
    });

    inEra(
      era,
      'legacy',
      it,
    )('GH_AMBIGUOUS: two GitHub remotes for different repos, with the candidates; nothing sent', async () => {
      const e = expectCode(await call({ action: 'list', path: AMBIGUOUS }), 'GH_AMBIGUOUS');
      expect(e.error.details.candidates).toEqual([
        { host: 'github.localhost', repo: 'octo/hello', remotes: ['origin'] },
        { host: 'github.localhost', repo: 'someone/hello', remotes: ['fork'] },
      ]);
      expect([e.error.retryable, e.error.recovery]).toEqual([false, 'fix_arguments']);
      expect(fake.requests).toEqual([]);
    });

    inEra(
      era,
      'legacy',
      it,
    )('GH_REPO_UNRESOLVED: no remotes, or no GitHub remote; nothing sent', async () => {
      const none = expectCode(await call({ action: 'list', path: NO_REMOTE }), 'GH_REPO_UNRESOLVED');
      expect(none.error.details.reason).toBe('no_remotes');
      const other = expectCode(await call({ action: 'view', number: 1, path: OTHER_FORGE }), 'GH_REPO_UNRESOLVED');
      expect(other.error.details.reason).toBe('no_matching_remote');
      // No repo and no path: the first root decides, and it is not a work tree.
      const plain = expectCode(await call({ action: 'list' }), 'GH_REPO_UNRESOLVED');
      expect(plain.error.details.reason).toBe('not_a_work_tree');
      expect(fake.requests).toEqual([]);
    });

    inEra(
      era,
      'legacy',
      it,
    )('a path outside the roots is NOT_ALLOWED', async () => {
      expectCode(await call({ action: 'list', path: '/etc' }), 'NOT_ALLOWED');
    });
  });

  inEra(
    era,
    'legacy',
    describe,
  )('failure codes', () => {
    it('GH_CLI_MISSING: gh not on PATH', async () => {
      const e = expectCode(await call({ action: 'list', ...REPO }, 'nogh'), 'GH_CLI_MISSING');
      expect([e.error.retryable, e.error.recovery]).toEqual([false, 'fix_environment']);
      expect(fake.requests).toEqual([]);
    });

    it('GH_AUTH_REQUIRED: no token (gh exits 4), nothing sent', async () => {
      const e = expectCode(await call({ action: 'list', ...REPO }, 'notoken'), 'GH_AUTH_REQUIRED');
      expect(e.error.details.exit_code).toBe(4);
      expect([e.error.retryable, e.error.recovery]).toEqual([false, 'fix_environment']);
      expect(fake.requests).toEqual([]);
    });

    it('GH_AUTH_REQUIRED: HTTP 401 Bad credentials', async () => {
      fake.script({ status: 401, body: { message: 'Bad credentials' } });
      const e = expectCode(await call({ action: 'view', ...REPO, number: 1 }), 'GH_AUTH_REQUIRED');
      expect(e.error.details.status).toBe(401);
      expect(e.error.recovery).toBe('fix_environment');
    });

    it('GH_FORBIDDEN: "Resource not accessible by integration" and SAML enforcement', async () => {
      fake.script({ status: 403, body: { message: 'Resource not accessible by integration' } });
      const integration = expectCode(await call({ action: 'list', ...REPO }), 'GH_FORBIDDEN');
      expect(integration.error.details.reason).toBe('integration');
      expect([integration.error.retryable, integration.error.recovery]).toEqual([false, 'fix_environment']);
      fake.script({
        status: 403,
        headers: { 'x-github-sso': 'required; url=https://github.localhost/orgs/octo/sso?authorization_request=x' },
        body: {
          message:
            'Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization.',
        },
      });
      const saml = expectCode(await call({ action: 'list', ...REPO }), 'GH_FORBIDDEN');
      expect(saml.error.details.reason).toBe('saml');
      expect(saml.error.recovery).toBe('fix_environment');
      expect(saml.error.suggestion).toMatch(/SSO|single sign-on/i);
    });

    it('GH_NOT_FOUND: 404 for a missing repository, 410 for disabled issues', async () => {
      const missing = expectCode(
        await call({ action: 'list', repo: 'nobody/nothing', hostname: 'github.localhost' }),
        'GH_NOT_FOUND',
      );
      expect(missing.error.details).toMatchObject({ status: 404, reason: 'not_found' });
      fake.script({ status: 410, body: { message: 'Issues are disabled for this repo' } });
      const gone = expectCode(await call({ action: 'list', ...REPO }), 'GH_NOT_FOUND');
      expect(gone.error.details).toMatchObject({ status: 410, reason: 'gone' });
      expect([gone.error.retryable, gone.error.recovery]).toEqual([false, 'fix_arguments']);
    });

    it('GH_RATE_LIMIT on a read: 403 with x-ratelimit-remaining 0 → retryable, retry_after_s from the reset time', async () => {
      const reset = Math.floor(Date.now() / 1000) + 60;
      fake.script({
        status: 403,
        headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
        body: { message: 'API rate limit exceeded for user ID 1.' },
      });
      const e = expectCode(await call({ action: 'list', ...REPO }), 'GH_RATE_LIMIT');
      expect([e.error.retryable, e.error.recovery]).toEqual([true, 'retry_later']);
      expect(e.error.details.retry_after_s).toBeGreaterThanOrEqual(50);
      expect(e.error.details.retry_after_s).toBeLessThanOrEqual(61);
      expect(e.error.details.limit).toBe('primary');
    });

    it('GH_RATE_LIMIT: secondary limit (403 + Retry-After) and 429', async () => {
      fake.script({
        status: 403,
        headers: { 'retry-after': '30' },
        body: { message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.' },
      });
      const secondary = expectCode(await call({ action: 'view', ...REPO, number: 1 }), 'GH_RATE_LIMIT');
      expect(secondary.error.details).toMatchObject({ retry_after_s: 30, limit: 'secondary' });
      expect(secondary.error.retryable).toBe(true);
      fake.script({ status: 429, headers: { 'retry-after': '7' }, body: { message: 'Too Many Requests' } });
      const tooMany = expectCode(await call({ action: 'list', ...REPO }), 'GH_RATE_LIMIT');
      expect(tooMany.error.details.retry_after_s).toBe(7);
      expect([tooMany.error.retryable, tooMany.error.recovery]).toEqual([true, 'retry_later']);
    });

    it('GH_RATE_LIMIT on a write: never retryable, retry_later (not applied), one POST sent', async () => {
      fake.script({
        method: 'POST',
        status: 403,
        headers: { 'retry-after': '45' },
        body: { message: 'You have exceeded a secondary rate limit.' },
      });
      const e = expectCode(await call({ action: 'comment', ...REPO, number: 1, body: 'hi' }), 'GH_RATE_LIMIT');
      expect([e.error.retryable, e.error.recovery]).toEqual([false, 'retry_later']);
      expect(e.error.details).toMatchObject({ retry_after_s: 45, write_sent: false });
      expect(fake.writes()).toHaveLength(1);
      expect(fake.issue('octo/hello', 1)!.comments).toHaveLength(0);
    });

    it("issue #12: gh's error text never reaches the envelope (a broken config file: only stderr_class)", async () => {
      const r = await call({ action: 'list', ...REPO }, 'badconfig');
      const e = expectCode(r, 'GH_FAILED');
      expect(e.error.details).toMatchObject({ stderr_class: 'config' });
      const all = JSON.stringify(r);
      for (const leak of [LEAKED, 'hosts.yml', 'bad-gh-config', 'invalid yaml']) expect(all).not.toContain(leak);
      expect(fake.requests).toEqual([]);
    });

    it('GH_NETWORK: connection refused → retryable read, request not sent', async () => {
      const e = expectCode(await call({ action: 'list', ...REPO }, 'refused'), 'GH_NETWORK');
      expect([e.error.retryable, e.error.recovery]).toEqual([true, 'retry_later']);
      expect(e.error.details.request_sent).toBe(false);
      expect(fake.requests).toEqual([]);
    });

    it('GH_NETWORK: a server that never answers → timeout (retryable read)', async () => {
      fake.script({ method: 'GET', hang: true });
      await server('limits'); // started before the clock runs
      const started = Date.now();
      const e = expectCode(await call({ action: 'list', ...REPO }, 'limits'), 'GH_NETWORK');
      expect(Date.now() - started).toBeLessThan(12_000); // the 1.5 s timeout stopped it, not the test's 60 s
      expect(e.error.details).toMatchObject({ reason: 'timeout', timeout_ms: 1500 });
      expect([e.error.retryable, e.error.recovery]).toEqual([true, 'retry_later']);
    });

    it('a comment whose connection drops after the request was sent: not retryable, check_already_applied', async () => {
      fake.script({ method: 'POST', drop: true });
      const e = expectCode(await call({ action: 'comment', ...REPO, number: 1, body: 'maybe posted' }), 'GH_NETWORK');
      expect([e.error.retryable, e.error.recovery]).toEqual([false, 'check_already_applied']);
      expect(e.error.details.may_be_applied).toBe(true);
      expect(e.error.suggestion).toMatch(/view/i);
      expect(fake.writes()).toHaveLength(1);
      expect(JSON.parse(fake.writes()[0].body)).toEqual({ body: 'maybe posted' });
    });

    it('a write that may have been applied is charged to --mutation-budget (issue 11)', async () => {
      fake.script({ method: 'POST', drop: true });
      const e = expectCode(
        await call({ action: 'comment', ...REPO, number: 1, body: 'maybe posted' }, 'budget'),
        'GH_NETWORK',
      );
      expect(e.error.recovery).toBe('check_already_applied');
      expectCode(await call({ action: 'comment', ...REPO, number: 1, body: 'second' }, 'budget'), 'BUDGET_EXCEEDED');
      expect(fake.writes()).toHaveLength(1);
    });

    it('a write answered 502, or timing out, may have been applied: check_already_applied', async () => {
      fake.script({ method: 'PATCH', status: 502, body: { message: 'Server Error' } });
      const bad = expectCode(await call({ action: 'close', ...REPO, number: 1 }), 'GH_NETWORK');
      expect([bad.error.retryable, bad.error.recovery]).toEqual([false, 'check_already_applied']);
      fake.script({ method: 'POST', hang: true });
      const slow = expectCode(
        await call({ action: 'comment', ...REPO, number: 1, body: 'slow' }, 'limits'),
        'GH_NETWORK',
      );
      expect([slow.error.retryable, slow.error.recovery]).toEqual([false, 'check_already_applied']);
      expect(fake.writes()).toHaveLength(2);
    });

    it('a read answered 503 is retryable GH_NETWORK', async () => {
      fake.script({ status: 503, body: { message: 'Unavailable' } });
      const e = expectCode(await call({ action: 'view', ...REPO, number: 1 }), 'GH_NETWORK');
      expect(e.error.details.status).toBe(503);
      expect([e.error.retryable, e.error.recovery]).toEqual([true, 'retry_later']);
    });

    it('GH_OUTPUT_LIMIT: gh output over --forge-output-bytes', async () => {
      // Issue #14: list retries an over-cap page in halves down to one issue per page, so the oversized answer is
      // scripted for every request (it stays over the cap whatever per_page asks for).
      fake.script({
        method: 'GET',
        times: Infinity,
        status: 200,
        body: Array.from({ length: 50 }, (_, i) => ({ number: i + 1, title: 'x'.repeat(200), state: 'open' })),
      });
      const e = expectCode(await call({ action: 'list', ...REPO }, 'limits'), 'GH_OUTPUT_LIMIT');
      expect(e.error.details.max_bytes).toBe(4000);
      expect([e.error.retryable, e.error.recovery]).toEqual([false, 'fix_arguments']);
    });

    it('GH_NOT_ISSUE: view of a pull-request number', async () => {
      const e = expectCode(await call({ action: 'view', ...REPO, number: 2 }), 'GH_NOT_ISSUE');
      expect(e.error.details).toMatchObject({ number: 2, kind: 'pull_request' });
      expect(fake.writes()).toEqual([]);
    });

    it('GH_NOT_ISSUE: close on a pull-request number closes nothing', async () => {
      const e = expectCode(await call({ action: 'close', ...REPO, number: 2 }), 'GH_NOT_ISSUE');
      expect(e.error.message).toMatch(/nothing was changed/);
      expect(fake.requests.map((q) => q.method)).toEqual(['GET']);
      expect(fake.issue('octo/hello', 2)!.state).toBe('open');
      expectCode(await call({ action: 'comment', ...REPO, number: 2, body: 'x' }), 'GH_NOT_ISSUE');
      expect(fake.writes()).toEqual([]);
    });

    it('GH_FAILED: a 422, with status and exit code; a token in the message never reaches the envelope', async () => {
      fake.script({
        method: 'POST',
        status: 422,
        body: {
          message: `Validation Failed: label token ${LEAKED} and ${FAKE_GH_TOKEN} rejected`,
          errors: [{ code: 'invalid' }],
        },
      });
      const r = await call({ action: 'create', ...REPO, title: 'With bad label', labels: ['nope'] });
      const e = expectCode(r, 'GH_FAILED');
      expect(e.error.details).toMatchObject({ status: 422, exit_code: 1 });
      expect([e.error.retryable, e.error.recovery]).toEqual([false, 'fix_arguments']);
      const all = JSON.stringify(r);
      expect(all).not.toContain(LEAKED);
      expect(all).not.toContain(FAKE_GH_TOKEN);
      expect(all).toContain('[REDACTED]');
    });

    it('GH_HOST_DENIED: outside --git-remote-allow, nothing reaches the fake; reads work under --readonly', async () => {
      const e = expectCode(
        await call({ action: 'list', repo: 'someone/hello', hostname: 'github.localhost' }, 'readonly'),
        'GH_HOST_DENIED',
      );
      expect(e.error.details).toMatchObject({ host: 'github.localhost', repo: 'someone/hello' });
      expect(fake.requests).toEqual([]);
      expectCode(await call({ action: 'list', repo: 'octo/hello' }, 'readonly'), 'GH_HOST_DENIED'); // github.com is not allowed
      expect(fake.requests).toEqual([]);
      expect(fake.connects).toEqual([]);
      const ok = await call({ action: 'view', ...REPO, number: 1 }, 'readonly');
      expect(ok.isError, textOf(ok)).toBeFalsy();
    });

    it('issue #12: a redirect to another host (plain http) is not followed; hostile names are denied by default', async () => {
      fake.script({ method: 'GET', status: 302, headers: { location: 'http://evil.example/repos/octo/hello/issues' } });
      const r = await call({ action: 'list', ...REPO });
      const e = expectCode(r, 'GH_HOST_DENIED');
      expect(e.error.details).toMatchObject({
        reason: 'redirect',
        redirect_host: 'evil.example',
        host: 'github.localhost',
      });
      expect(fake.requests.map((q) => q.headers.host)).toEqual(['api.github.localhost']);
      expect(JSON.stringify(r)).not.toContain(FAKE_GH_TOKEN);
      fake.requests.length = 0;
      // The default allow-list is the configured hosts: github.localhost (gh's hosts.yml), github.com, GH_HOST's decoy.
      for (const hostname of ['github.localhost.evil.example', 'evil-github.localhost', 'localhost']) {
        expectCode(await call({ action: 'list', repo: 'octo/hello', hostname }), 'GH_HOST_DENIED');
      }
      expect(fake.requests).toEqual([]);
      expect(fake.connects).toEqual([]);
    });

    it('READONLY: every write action refused before anything is sent (before the host check too)', async () => {
      for (const args of [
        { action: 'create', title: 't' },
        { action: 'comment', number: 1, body: 'b' },
        { action: 'close', number: 1 },
        { action: 'reopen', number: 1 },
        { action: 'edit', number: 1, title: 't' },
      ]) {
        const e = expectCode(await call({ ...args, ...REPO }, 'readonly'), 'READONLY');
        expect(e.error.details).toMatchObject({ tool: 'github_issues', action: args.action });
        expectCode(
          await call({ ...args, repo: 'someone/hello', hostname: 'github.localhost' }, 'readonly'),
          'READONLY',
        );
      }
      expect(fake.requests).toEqual([]);
    });

    it('VALIDATION: SPEC §8 bounds and per-action rules, nothing sent', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ action: 'create', ...REPO, title: 't'.repeat(257) }, 'title'],
        [{ action: 'create', ...REPO, title: 't', body: 'é'.repeat(32_769) }, 'body'],
        [{ action: 'create', ...REPO, title: 't', labels: Array.from({ length: 21 }, (_, i) => `l${i}`) }, 'labels'],
        [
          { action: 'create', ...REPO, title: 't', assignees: Array.from({ length: 11 }, (_, i) => `u${i}`) },
          'assignees',
        ],
        [{ action: 'view', ...REPO, number: 0 }, 'number'],
        [{ action: 'view', ...REPO, number: 1_000_000_001 }, 'number'],
        [{ action: 'create', ...REPO, title: 'a\u0000b' }, 'title'],
        [{ action: 'view', ...REPO }, 'number'],
        [{ action: 'edit', ...REPO, number: 1, state: 'closed' }, 'state'],
        [{ action: 'list', repo: 'octo/hello', path: '.' }, 'path'],
        [{ action: 'list', repo: 'not-a-repo' }, 'repo'],
        [{ action: 'list', ...REPO, hostname: 'bad host' }, 'hostname'],
      ];
      for (const [args, field] of cases) {
        const e = expectCode(await call(args), 'VALIDATION');
        expect(e.error.details.field, JSON.stringify(args).slice(0, 80)).toBe(field);
      }
      expectCode(await call({ action: 'edit', ...REPO, number: 1 }), 'VALIDATION');
      expect(fake.requests).toEqual([]);
    });
  });

  inEra(
    era,
    'legacy',
    it,
  )('the audit log has one line per call with the action, and no bodies or tokens', async () => {
    await call({ action: 'comment', ...REPO, number: 1, body: 'AUDIT-BODY-MARKER' });
    await call({ action: 'view', ...REPO, number: 3 });
    const lines = readFileSync(auditLog, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.at(-2)).toMatchObject({ tool: 'github_issues', action: 'comment', outcome: 'ok' });
    expect(lines.at(-1)).toMatchObject({ tool: 'github_issues', action: 'view', outcome: 'ok' });
    expect(lines.some((l) => l.outcome === 'GH_FAILED')).toBe(true);
    const raw = readFileSync(auditLog, 'utf8');
    for (const secret of [
      FAKE_GH_TOKEN,
      LEAKED,
      'AUDIT-BODY-MARKER',
      'Ignore previous instructions',
      'Looking into it',
    ]) {
      expect(raw).not.toContain(secret);
    }
  });
});
