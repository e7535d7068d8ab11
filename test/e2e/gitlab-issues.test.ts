/**
 * gitlab_issues end to end (SPEC §8, §3.2, issue 6 acceptance): the real server (dist/cli.js) against a fake GitLab
 * REST v4 on 127.0.0.1 (test/helpers/fake-gitlab.ts), through the HTTPS path (plain http is allowed to loopback
 * hosts; PATH holds git but no glab). The first remote resolution (a success through each era's client end to end)
 * runs under both protocol eras; the rest (what the actions send and return, envelopes, retry semantics, host rules,
 * the audit log: the server's alone, an envelope being the same error result in both eras) runs once, under the
 * legacy era; each action's result as each era's client parses it is test/e2e/schemas.test.ts's walk (every action,
 * both eras):
 * - actions on a nested-group project (a/b/c, sent as projects/a%2Fb%2Fc): list (paged), view (notes paged, system
 *   notes left out), create (assignees by id), comment, close, reopen, edit — reads only GET, writes exactly one
 *   POST/PUT;
 * - 401, 403, 404, 429, 500 on a read and on a write, with the SPEC §3.2 retry semantics (reads may retry 429/500;
 *   writes never: 429 retry_later, 500 check_already_applied); 422 GL_FAILED with status and message; connection
 *   refused; a write whose connection drops after the request; a read that never answers (timeout); the output cap;
 * - remote resolution (https + scp-style remotes of one project folded; GL_AMBIGUOUS; GL_REPO_UNRESOLVED), host
 *   denial (nothing sent), plain http to a non-loopback host (VALIDATION insecure_http, nothing sent), --readonly;
 * - untrusted content inside the markers; the GITLAB_TOKEN value never reaches an envelope or the audit log, and is
 *   sent only to its own instance (GITLAB_HOST).
 * The `glab api` path runs against the same fake with the real glab when it is installed; otherwise that test is
 * skipped and says why (glab cannot be installed on these machines).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UNTRUSTED_BEGIN, UNTRUSTED_END } from '../../src/tools/issue-untrusted.js';
import { FAKE_GITLAB_TOKEN, FakeGitLab } from '../helpers/fake-gitlab.js';
import { runBatch } from '../helpers/git-batch.js';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, ERAS, inEra, type CallResult, type Era, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {}, repos: {} }, 'fs-tools-gl-');
// PATH's directory lies outside the roots: a git found inside the roots is refused (git_inside_roots, issue 12).
const binTree = makeTree({}, 'fs-tools-gl-bin-');
const HOME = path.join(scratch.dir, 'home');
const REPOS = path.join(scratch.dir, 'repos');
const BIN = binTree.dir;
const which = (cmd: string): string | null => {
  try {
    return execFileSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
};
// git but no glab: the HTTPS path is what these tests pin.
symlinkSync(which('git')!, path.join(BIN, 'git'));
const GLAB = which('glab');

let fake: FakeGitLab;
beforeAll(async () => {
  fake = await FakeGitLab.start();
});
afterAll(async () => {
  await fake.close();
  scratch.cleanup();
  binTree.cleanup();
});
beforeEach(() => fake.reset());

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

const textOf = (r: CallResult): string => r.content.map((c) => c.text ?? '').join('\n');

/** A loopback port nobody listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe.each(ERAS)('gitlab_issues over HTTPS against a fake GitLab (%s era)', (era: Era) => {
  const clients = new Map<string, TestClient>();
  const auditLog = path.join(scratch.dir, `audit-${era}.jsonl`);
  let HOST: string;
  let REPO: { repo: string; hostname: string };
  let trees: { same: string; ambiguous: string; none: string };
  beforeAll(() => {
    HOST = fake.url;
    REPO = { repo: 'a/b/c', hostname: HOST };
    trees = {
      // The same project over http (with the API port) and scp-style ssh: one candidate.
      same: workTree(`same-${era}`, { origin: `${HOST}/a/b/c.git`, ssh: 'git@127.0.0.1:A/B/C.git' }),
      ambiguous: workTree(`ambiguous-${era}`, { origin: `${HOST}/a/b/c.git`, other: 'git@127.0.0.1:x/y.git' }),
      none: workTree(`none-${era}`, { origin: 'https://github.com/o/r.git' }),
    };
  });

  async function server(kind: 'main' | 'readonly' | 'limits' | 'anyhost'): Promise<TestClient> {
    let c = clients.get(kind);
    if (c) return c;
    const env = {
      HOME,
      XDG_CONFIG_HOME: HOME,
      PATH: BIN,
      GITLAB_TOKEN: FAKE_GITLAB_TOKEN,
      GITLAB_HOST: HOST,
      GITLAB_PRIVATE_TOKEN: '',
      CI_JOB_TOKEN: '',
      GITLAB_REPO: 'decoy/decoy',
    };
    const args = [scratch.dir];
    if (kind === 'main') args.push(`--audit-log=${auditLog}`);
    if (kind === 'readonly') args.push('--readonly', `--git-remote-allow=127.0.0.1:${fake.port}/a`);
    if (kind === 'limits') args.push('--forge-timeout-ms=1500', '--forge-output-bytes=3000');
    // Issue #12: the default allow-list is the configured hosts (here GITLAB_HOST = 127.0.0.1:PORT); `*` admits any.
    if (kind === 'anyhost') args.push('--git-remote-allow=*');
    c = await connect(era, { args, env });
    clients.set(kind, c);
    return c;
  }
  afterAll(async () => {
    for (const c of clients.values()) await c.close();
  });
  const call = async (args: Record<string, unknown>, kind: Parameters<typeof server>[0] = 'main') =>
    (await server(kind)).call('gitlab_issues', args);

  inEra(
    era,
    'legacy',
    describe,
  )('actions', () => {
    it('list: a nested-group project, URL-encoded, with the token, paged', async () => {
      const first = await call({ action: 'list', ...REPO, limit: 1 });
      expect(first.isError, textOf(first)).toBeFalsy();
      const s = first.structuredContent!;
      expect(s).toMatchObject({
        action: 'list',
        forge: 'gitlab',
        host: `127.0.0.1:${fake.port}`,
        repo: 'a/b/c',
        untrusted_content: true,
      });
      expect(s.issues).toMatchObject([{ number: 2, title: 'Please read', state: 'open' }]);
      const second = (await call({ action: 'list', ...REPO, limit: 1, cursor: s.next_cursor })).structuredContent!;
      expect(second.issues).toMatchObject([{ number: 1, labels: ['bug'], assignees: ['alice'], author: 'reporter' }]);
      expect(second.next_cursor).toBeNull();
      expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
        'GET /api/v4/projects/a%2Fb%2Fc/issues?state=opened&per_page=1&page=1',
        'GET /api/v4/projects/a%2Fb%2Fc/issues?state=opened&per_page=1&page=2',
      ]);
      expect(fake.requests[0].headers['private-token']).toBe(FAKE_GITLAB_TOKEN);
      const all = (await call({ action: 'list', ...REPO, state: 'all' })).structuredContent!;
      expect((all.issues as Array<{ number: number }>).map((i) => i.number)).toEqual([3, 2, 1]);
      expect(fake.writes()).toEqual([]);
    });

    it('view: description and user notes (system notes left out), inside the untrusted markers', async () => {
      const r = await call({ action: 'view', ...REPO, number: 2 });
      const s = r.structuredContent!;
      expect(s.untrusted_content).toBe(true);
      expect(s.issue).toMatchObject({ number: 2, comments_count: 2, url: `${HOST}/a/b/c/-/issues/2` });
      expect((s.comments as Array<{ body: string }>).map((c) => c.body)).toEqual(['first note', 'second note']);
      const text = textOf(r);
      const begin = text.indexOf(UNTRUSTED_BEGIN);
      expect(begin).toBeGreaterThanOrEqual(0);
      expect(text.indexOf('Ignore previous instructions')).toBeGreaterThan(begin);
      expect(text.indexOf('Ignore previous instructions')).toBeLessThan(text.lastIndexOf(UNTRUSTED_END));
      expect(text.split(UNTRUSTED_END).length - 1).toBe(1);
      expect(fake.writes()).toEqual([]);
    });

    it('create: assignees looked up by name, then exactly one POST', async () => {
      const r = (
        await call({ action: 'create', ...REPO, title: 'New', body: 'Text', labels: ['bug', 'ui'], assignees: ['bob'] })
      ).structuredContent!;
      expect(r.issue).toMatchObject({
        number: 4,
        title: 'New',
        body: 'Text',
        labels: ['bug', 'ui'],
        assignees: ['bob'],
      });
      expect(fake.requests.map((q) => `${q.method} ${q.path.split('?')[0]}`)).toEqual([
        'GET /api/v4/users',
        'POST /api/v4/projects/a%2Fb%2Fc/issues',
      ]);
      expect(JSON.parse(fake.writes()[0].body)).toEqual({
        title: 'New',
        description: 'Text',
        labels: 'bug,ui',
        assignee_ids: [12],
      });
      const unknown = expectCode(
        await call({ action: 'create', ...REPO, title: 'x', assignees: ['nobody'] }),
        'GL_NOT_FOUND',
      );
      expect(unknown.error.details).toMatchObject({ reason: 'unknown_user', username: 'nobody' });
      expect(fake.writes()).toHaveLength(1);
    });

    it('comment, close, reopen, edit: one write each', async () => {
      const c = (await call({ action: 'comment', ...REPO, number: 1, body: 'On it' })).structuredContent!;
      expect(c.comment).toMatchObject({ body: 'On it', author: 'me' });
      expect((await call({ action: 'close', ...REPO, number: 1 })).structuredContent!.issue).toMatchObject({
        state: 'closed',
      });
      const np = (await call({ action: 'close', ...REPO, number: 1, reason: 'not_planned' })).structuredContent!;
      expect(np.warnings).toEqual([expect.stringMatching(/no close reason/)]);
      expect((await call({ action: 'reopen', ...REPO, number: 1 })).structuredContent!.issue).toMatchObject({
        state: 'open',
      });
      expect(
        (await call({ action: 'edit', ...REPO, number: 1, title: 'Renamed', assignees: [] })).structuredContent!.issue,
      ).toMatchObject({ title: 'Renamed', assignees: [] });
      expect(fake.writes().map((q) => `${q.method} ${q.path} ${q.body}`)).toEqual([
        'POST /api/v4/projects/a%2Fb%2Fc/issues/1/notes {"body":"On it"}',
        'PUT /api/v4/projects/a%2Fb%2Fc/issues/1 {"state_event":"close"}',
        'PUT /api/v4/projects/a%2Fb%2Fc/issues/1 {"state_event":"close"}',
        'PUT /api/v4/projects/a%2Fb%2Fc/issues/1 {"state_event":"reopen"}',
        'PUT /api/v4/projects/a%2Fb%2Fc/issues/1 {"title":"Renamed","assignee_ids":[]}',
      ]);
    });
  });

  describe('remote resolution and host rules', () => {
    it('the same project over http and scp-style ssh is one candidate; the instance comes from GITLAB_HOST', async () => {
      const r = await call({ action: 'list', path: trees.same });
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ repo: 'a/b/c', host: `127.0.0.1:${fake.port}` });
      const withHost = await call({ action: 'view', number: 1, path: trees.same, hostname: HOST });
      expect(withHost.isError, textOf(withHost)).toBeFalsy();
    });

    inEra(
      era,
      'legacy',
      it,
    )('GL_AMBIGUOUS and GL_REPO_UNRESOLVED, nothing sent', async () => {
      const e = expectCode(await call({ action: 'list', path: trees.ambiguous }), 'GL_AMBIGUOUS');
      expect((e.error.details.candidates as Array<{ repo: string }>).map((c) => c.repo)).toEqual(['a/b/c', 'x/y']);
      expectCode(await call({ action: 'list', path: trees.none }), 'GL_REPO_UNRESOLVED');
      expect(fake.requests).toEqual([]);
    });

    inEra(
      era,
      'legacy',
      it,
    )('VALIDATION insecure_http: plain http to a non-loopback host, nothing sent', async () => {
      const e = expectCode(
        await call({ action: 'list', repo: 'a/b/c', hostname: 'http://gitlab.example.com' }),
        'VALIDATION',
      );
      expect(e.error.details).toMatchObject({ reason: 'insecure_http', field: 'hostname' });
      expect(fake.requests).toEqual([]);
    });

    inEra(
      era,
      'legacy',
      it,
    )('GH_HOST_DENIED outside --git-remote-allow (the port counts), nothing sent; READONLY before it', async () => {
      const denied = expectCode(
        await call({ action: 'list', repo: 'x/y', hostname: HOST }, 'readonly'),
        'GH_HOST_DENIED',
      );
      expect(denied.error.details).toMatchObject({ host: '127.0.0.1', port: fake.port, repo: 'x/y' });
      expectCode(
        await call({ action: 'list', repo: 'a/b/c', hostname: 'http://127.0.0.1:1' }, 'readonly'),
        'GH_HOST_DENIED',
      );
      expect(fake.requests).toEqual([]);
      const ok = await call({ action: 'list', ...REPO }, 'readonly');
      expect(ok.isError, textOf(ok)).toBeFalsy();
      fake.requests.length = 0;
      expectCode(await call({ action: 'comment', ...REPO, number: 1, body: 'x' }, 'readonly'), 'READONLY');
      expectCode(await call({ action: 'close', repo: 'x/y', hostname: HOST, number: 1 }, 'readonly'), 'READONLY');
      expect(fake.requests).toEqual([]);
    });

    inEra(
      era,
      'legacy',
      it,
    )('another spelling of the host is not a configured host: GH_HOST_DENIED by default, nothing sent', async () => {
      const e = expectCode(
        await call({ action: 'list', repo: 'a/b/c', hostname: `http://localhost:${fake.port}` }),
        'GH_HOST_DENIED',
      );
      expect(e.error.details).toMatchObject({ host: 'localhost', port: fake.port });
      expect(e.error.details.allowed).toContain(`127.0.0.1:${fake.port}`);
      expect(fake.requests).toEqual([]);
    });

    inEra(
      era,
      'legacy',
      it,
    )(
      'the token goes only to its own instance (even with --git-remote-allow=*): another spelling reads anonymously, cannot write',
      async () => {
        const other = `http://localhost:${fake.port}`;
        const r = await call({ action: 'list', repo: 'a/b/c', hostname: other }, 'anyhost');
        expect(r.isError, textOf(r)).toBeFalsy();
        expect(fake.requests[0].headers['private-token']).toBeUndefined();
        fake.requests.length = 0;
        const e = expectCode(
          await call({ action: 'comment', repo: 'a/b/c', hostname: other, number: 1, body: 'x' }, 'anyhost'),
          'GL_AUTH_REQUIRED',
        );
        expect(e.error.details).toMatchObject({ token_withheld: true, write_sent: false });
        expect(fake.requests).toEqual([]);
      },
    );
  });

  inEra(
    era,
    'legacy',
    describe,
  )('status codes on a read and on a write', () => {
    const cases: Array<[number, string, Record<string, string>]> = [
      [401, 'GL_AUTH_REQUIRED', {}],
      [403, 'GL_FORBIDDEN', {}],
      [404, 'GL_NOT_FOUND', {}],
      [429, 'GH_RATE_LIMIT', { 'retry-after': '12' }],
      [500, 'GL_NETWORK', {}],
    ];
    const readSemantics: Record<number, [boolean, string]> = {
      401: [false, 'fix_environment'],
      403: [false, 'fix_environment'],
      404: [false, 'fix_arguments'],
      429: [true, 'retry_later'],
      500: [true, 'retry_later'],
    };
    const writeSemantics: Record<number, [boolean, string]> = {
      401: [false, 'fix_environment'],
      403: [false, 'fix_environment'],
      404: [false, 'fix_arguments'],
      429: [false, 'retry_later'],
      500: [false, 'check_already_applied'],
    };
    it.each(cases)('HTTP %i → %s', async (status, code, headers) => {
      fake.script({ method: 'GET', status, headers, body: { message: `${status} from the fake` } });
      const read = expectCode(await call({ action: 'list', ...REPO }), code);
      expect(read.error.details.status).toBe(status);
      expect([read.error.retryable, read.error.recovery]).toEqual(readSemantics[status]);
      if (status === 429) expect(read.error.details.retry_after_s).toBe(12);

      fake.script({ method: 'POST', status, headers, body: { message: `${status} from the fake` } });
      const write = expectCode(await call({ action: 'comment', ...REPO, number: 1, body: 'x' }), code);
      expect([write.error.retryable, write.error.recovery]).toEqual(writeSemantics[status]);
      if (status === 500) expect(write.error.suggestion).toMatch(/view/i);
      if (status === 429) expect(write.error.details).toMatchObject({ retry_after_s: 12, write_sent: false });
      expect(fake.writes()).toHaveLength(1);
    });

    it('GL_FAILED: 422 with status and message; the token in the message is redacted', async () => {
      fake.script({ method: 'POST', status: 422, body: { message: { labels: [`invalid for ${FAKE_GITLAB_TOKEN}`] } } });
      const r = await call({ action: 'create', ...REPO, title: 'x' });
      const e = expectCode(r, 'GL_FAILED');
      expect(e.error.details).toMatchObject({ status: 422 });
      expect(e.error.message).toContain('labels invalid');
      expect([e.error.retryable, e.error.recovery]).toEqual([false, 'fix_arguments']);
      expect(JSON.stringify(r)).not.toContain(FAKE_GITLAB_TOKEN);
    });

    it('GL_NETWORK: connection refused (read retryable, nothing sent)', async () => {
      const e = expectCode(
        await call({ action: 'list', repo: 'a/b/c', hostname: `http://127.0.0.1:${await closedPort()}` }, 'anyhost'),
        'GL_NETWORK',
      );
      expect([e.error.retryable, e.error.recovery]).toEqual([true, 'retry_later']);
      expect(e.error.details).toMatchObject({ request_sent: false, errno: 'ECONNREFUSED' });
    });

    it('a write whose connection drops after the request: GL_NETWORK, not retryable, check_already_applied', async () => {
      fake.script({ method: 'POST', drop: true });
      const e = expectCode(await call({ action: 'comment', ...REPO, number: 1, body: 'lost?' }), 'GL_NETWORK');
      expect([e.error.retryable, e.error.recovery]).toEqual([false, 'check_already_applied']);
      expect(fake.writes()).toHaveLength(1);
    });

    it('timeout (no answer) and the output cap', async () => {
      fake.script({ method: 'GET', hang: true });
      const slow = expectCode(await call({ action: 'view', ...REPO, number: 1 }, 'limits'), 'GL_NETWORK');
      expect(slow.error.details).toMatchObject({ reason: 'timeout', timeout_ms: 1500 });
      expect(slow.error.retryable).toBe(true);
      // Issue #14: list retries an over-cap page in halves, so the oversized answer is scripted for every request.
      fake.script({
        method: 'GET',
        times: Infinity,
        status: 200,
        body: Array.from({ length: 40 }, (_, i) => ({ iid: i + 1, title: 'y'.repeat(100), state: 'opened' })),
      });
      const big = expectCode(await call({ action: 'list', ...REPO }, 'limits'), 'GH_OUTPUT_LIMIT');
      expect(big.error.details.max_bytes).toBe(3000);
    });
  });

  inEra(
    era,
    'legacy',
    it,
  )('the audit log names the actions and holds no token or issue text', async () => {
    await call({ action: 'comment', ...REPO, number: 1, body: 'GITLAB-AUDIT-MARKER' });
    const raw = readFileSync(auditLog, 'utf8');
    const lines = raw
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.at(-1)).toMatchObject({ tool: 'gitlab_issues', action: 'comment', outcome: 'ok' });
    expect(lines.some((l) => l.outcome === 'GL_FAILED')).toBe(true);
    for (const secret of [FAKE_GITLAB_TOKEN, 'GITLAB-AUDIT-MARKER', 'Ignore previous instructions'])
      expect(raw).not.toContain(secret);
  });
});

describe('gitlab_issues through `glab api`', () => {
  if (!GLAB) {
    // Printed so the skip is visible in the test output (glab cannot be installed on these machines).
    process.stderr.write('gitlab-issues.test.ts: glab is not installed; the `glab api` path test is skipped.\n');
  }
  it.skipIf(!GLAB)(
    'lists a nested-group project through the real glab against the fake (skipped: glab not installed)',
    async () => {
      const config = mkdtempSync(path.join(scratch.dir, 'glab-'));
      const host = `127.0.0.1:${fake.port}`;
      const env = { HOME, GLAB_CONFIG_DIR: config, GITLAB_TOKEN: FAKE_GITLAB_TOKEN, GITLAB_HOST: fake.url };
      execFileSync(GLAB!, ['config', 'set', '--host', host, 'api_protocol', 'http'], {
        env: { ...process.env, ...env },
      });
      const client = await connect('modern', { args: [scratch.dir], env });
      try {
        const r = await client.call('gitlab_issues', { action: 'list', repo: 'a/b/c', hostname: fake.url });
        expect(r.isError, textOf(r)).toBeFalsy();
        expect(r.structuredContent!.issues).toMatchObject([{ number: 2 }, { number: 1 }]);
        expect(fake.requests[0].path).toMatch(/^\/api\/v4\/projects\/a%2Fb%2Fc\/issues\?/);
      } finally {
        await client.close();
      }
    },
  );
});
