/**
 * Issue #12 acceptance, forge part: the REAL gh, with GH_ENTERPRISE_TOKEN and GH_TOKEN set and default flags, never
 * carries a token to a host the operator did not name, and nothing another host answers is returned.
 *
 * Set-up (test/helpers/tls-forge.ts): a local CA (openssl) trusted through SSL_CERT_FILE, one TLS server on
 * 127.0.0.1 answering for ghe.corp.example (the operator's enterprise host, named by GH_HOST), api.github.com and
 * evil.example, and an "internet" CONNECT proxy (the server's HTTPS_PROXY) that records every tunnel. gh is reached
 * through a PATH shim that logs each start, so "no CLI is started" is asserted too.
 *
 * Cases: a `hostname` naming another host; hostile remotes (`github.attacker.example`, a host merely containing
 * "github"; and evil.example); the configured enterprise host and api.github.com answering 302 to evil.example.
 * Positive controls prove the set-up reaches hosts at all (so the negative assertions can fail): a list on the
 * enterprise host carries the enterprise token, a list on github.com carries GH_TOKEN and not the enterprise token.
 * With `--git-remote-allow=*` another host is reachable, but no token goes there.
 *
 * One era only: nothing here depends on the protocol era (the era matrix is covered by github-issues.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { runBatch } from '../helpers/git-batch.js';
import { connect, type CallResult, type TestClient } from '../helpers/server.js';
import { TlsForge } from '../helpers/tls-forge.js';
import { GH_TOKEN_DIR_PREFIX } from '../../src/vcs/github-token.js';
import { makeTree } from '../helpers/tree.js';

const ENT_TOKEN = 'ghe_enterprise_token_0123456789_SECRET';
const DOTCOM_TOKEN = 'ghp_DotcomToken0123456789abcdefghijklmn';
const EVIL_MARKER = 'EVIL-HOST-DATA';
const HOSTS = ['ghe.corp.example', 'api.github.com', 'evil.example', 'github.attacker.example'];

const scratch = makeTree({ home: {}, ghcfg: {}, shim: {}, repos: {} }, 'fs-tools-ghhosts-');
const HOME = path.join(scratch.dir, 'home');
// gh configurations the operator wrote: outside the roots (one inside them is the agent's and is not used).
const outsideCfg = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-ghcfg-out-'));
const LOG = path.join(scratch.dir, 'gh-starts.log');
const GH = execFileSync('sh', ['-c', 'command -v gh || true'], { encoding: 'utf8' }).trim();

let forge: TlsForge;
const clients: TestClient[] = [];
beforeAll(async () => {
  forge = await TlsForge.start(HOSTS);
  // A gh that logs its start, then runs the real one.
  // Outside the roots: a gh inside them is never run (the agent could have planted it).
  mkdirSync(path.join(outsideCfg, 'shim'), { recursive: true });
  const shim = path.join(outsideCfg, 'shim', 'gh');
  writeFileSync(shim, `#!/bin/sh\necho "start $GH_CONFIG_DIR" >> '${LOG}'\nexec '${GH}' "$@"\n`);
  chmodSync(shim, 0o755);
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await forge?.close();
  scratch.cleanup();
  rmSync(outsideCfg, { recursive: true, force: true });
});
beforeEach(() => {
  forge?.reset();
  writeFileSync(LOG, '');
});

const starts = (): number => readFileSync(LOG, 'utf8').split('\n').filter(Boolean).length;

/** A work tree with these remotes. */
function workTree(name: string, remotes: Record<string, string>): string {
  const dir = path.join(scratch.dir, 'repos', name);
  mkdirSync(dir, { recursive: true });
  const env = { ...process.env, HOME, GIT_CONFIG_NOSYSTEM: '1' };
  runBatch(dir, env, [
    ['git', 'init', '-q'],
    ...Object.entries(remotes).map(([remote, url]) => ['git', 'remote', 'add', remote, url]),
  ]);
  return dir;
}
const ATTACKER = workTree('attacker', { origin: 'https://github.attacker.example/o/r.git' });
const EVIL = workTree('evil', { origin: 'git@evil.example:o/r.git' });

async function server(extraArgs: string[] = [], overrides: Record<string, string> = {}): Promise<TestClient> {
  const env: Record<string, string> = {
    HOME,
    XDG_CONFIG_HOME: HOME,
    GH_CONFIG_DIR: path.join(scratch.dir, 'ghcfg'),
    PATH: `${path.join(outsideCfg, 'shim')}:${process.env.PATH ?? ''}`,
    HTTPS_PROXY: forge.proxyUrl,
    https_proxy: forge.proxyUrl,
    HTTP_PROXY: forge.proxyUrl,
    http_proxy: forge.proxyUrl,
    // An operator's NO_PROXY must not let gh around the guard either.
    NO_PROXY: 'evil.example',
    no_proxy: 'evil.example',
    SSL_CERT_FILE: forge.caFile,
    GH_HOST: 'ghe.corp.example',
    GH_TOKEN: DOTCOM_TOKEN,
    GITHUB_TOKEN: '',
    GH_ENTERPRISE_TOKEN: ENT_TOKEN,
    GITHUB_ENTERPRISE_TOKEN: '',
    GH_REPO: 'decoy/decoy',
    CODESPACES: 'true',
    ...overrides,
  };
  const c = await connect('modern', { args: [scratch.dir, ...extraArgs], env });
  clients.push(c);
  return c;
}
let main: TestClient | null = null;
const call = async (args: Record<string, unknown>): Promise<CallResult> => {
  main ??= await server();
  return main.call('github_issues', args);
};
let anyHost: TestClient | null = null;
/**
 * The server with `--git-remote-allow=*` (shared by the cases that need no more): gh must believe it is logged in
 * somewhere (a hosts.yml entry without a token), or it would not run at all without a token; and no NO_PROXY, so the
 * guard forwards any host through the "internet" proxy.
 */
async function anyHostServer(): Promise<TestClient> {
  if (anyHost) return anyHost;
  const cfg = path.join(outsideCfg, 'ghcfg-any');
  mkdirSync(cfg, { recursive: true });
  writeFileSync(path.join(cfg, 'hosts.yml'), 'ghe.corp.example:\n    user: me\n');
  anyHost = await server(['--git-remote-allow=*'], { GH_CONFIG_DIR: cfg, NO_PROXY: '', no_proxy: '' });
  return anyHost;
}

const issues = (title: string): unknown[] => [
  { number: 1, title, state: 'open', labels: [], assignees: [], user: { login: 'x' }, comments: 0 },
];
const textOf = (r: CallResult): string => JSON.stringify(r);

/** Nothing reached evil.example: no tunnel, no request, no token anywhere but where it belongs. */
function expectNothingElsewhere(): void {
  expect(forge.connects.filter((c) => !c.startsWith('ghe.corp.example:') && !c.startsWith('api.github.com:'))).toEqual(
    [],
  );
  expect(forge.requests.filter((r) => r.host !== 'ghe.corp.example' && r.host !== 'api.github.com')).toEqual([]);
  expect(forge.plain).toEqual([]);
  for (const r of forge.requests) {
    if (r.authorization?.includes(ENT_TOKEN)) expect(r.host).toBe('ghe.corp.example');
    if (r.authorization?.includes(DOTCOM_TOKEN)) expect(r.host).toBe('api.github.com');
  }
}

describe.skipIf(!GH)('issue #12: the real gh never takes a token, or data, to a host the operator did not name', () => {
  it('control: the enterprise host gets the enterprise token; github.com gets GH_TOKEN and not the enterprise token', async () => {
    forge.answers.set('ghe.corp.example/api/v3/repos/o/r/issues', { status: 200, body: issues('from GHE') });
    forge.answers.set('api.github.com/repos/o/r/issues', { status: 200, body: issues('from github.com') });
    const ghe = await call({ action: 'list', repo: 'o/r', hostname: 'ghe.corp.example' });
    expect(ghe.isError, textOf(ghe)).toBeFalsy();
    expect(ghe.structuredContent!.issues).toMatchObject([{ title: 'from GHE' }]);
    const dotcom = await call({ action: 'list', repo: 'o/r' });
    expect(dotcom.isError, textOf(dotcom)).toBeFalsy();
    expect(dotcom.structuredContent!.issues).toMatchObject([{ title: 'from github.com' }]);
    expect(forge.requests.map((r) => [r.host, r.authorization])).toEqual([
      ['ghe.corp.example', `token ${ENT_TOKEN}`],
      ['api.github.com', `token ${DOTCOM_TOKEN}`],
    ]);
    expect(forge.connects).toEqual(['ghe.corp.example:443', 'api.github.com:443']);
    expect(starts()).toBe(2);
  });

  it('a hostname naming another host: GH_HOST_DENIED, gh never started, nothing sent', async () => {
    for (const hostname of [
      'evil.example',
      'github.attacker.example',
      'api.github.com.evil.example',
      'ghe.corp.example.evil.example',
    ]) {
      const e = expectCode(await call({ action: 'list', repo: 'o/r', hostname }), 'GH_HOST_DENIED');
      expect(e.error.details).toMatchObject({ host: hostname });
    }
    expectCode(
      await call({ action: 'comment', repo: 'o/r', hostname: 'evil.example', number: 1, body: 'hi' }),
      'GH_HOST_DENIED',
    );
    expect(starts()).toBe(0);
    expect(forge.connects).toEqual([]);
    expect(forge.requests).toEqual([]);
  });

  it('hostile remotes: a host containing "github" is not GitHub; an unconfigured remote host is denied; gh never started', async () => {
    const unresolved = expectCode(await call({ action: 'list', path: ATTACKER }), 'GH_REPO_UNRESOLVED');
    expect(unresolved.error.details).toMatchObject({ reason: 'no_matching_remote' });
    expectCode(await call({ action: 'list', path: ATTACKER, hostname: 'github.attacker.example' }), 'GH_HOST_DENIED');
    expectCode(await call({ action: 'list', path: EVIL, hostname: 'evil.example' }), 'GH_HOST_DENIED');
    expect(starts()).toBe(0);
    expect(forge.connects).toEqual([]);
    expect(forge.requests).toEqual([]);
  });

  it('the configured enterprise host redirects to another host: not followed, no token there, its data not returned', async () => {
    forge.answers.set('ghe.corp.example/api/v3/repos/o/r/issues', {
      status: 302,
      headers: { location: 'https://evil.example/api/v3/repos/o/r/issues' },
    });
    forge.answers.set('evil.example/api/v3/repos/o/r/issues', { status: 200, body: issues(EVIL_MARKER) });
    const r = await call({ action: 'list', repo: 'o/r', hostname: 'ghe.corp.example' });
    const e = expectCode(r, 'GH_HOST_DENIED');
    expect(e.error.details).toMatchObject({
      reason: 'redirect',
      redirect_host: 'evil.example',
      host: 'ghe.corp.example',
    });
    expect(textOf(r)).not.toContain(EVIL_MARKER);
    expect(forge.requests.map((q) => q.host)).toEqual(['ghe.corp.example']);
    expectNothingElsewhere();
  });

  it('github.com redirects to another host (only GH_TOKEN applies): not followed, its data not returned', async () => {
    forge.answers.set('api.github.com/repos/o/r/issues', {
      status: 301,
      headers: { location: 'https://evil.example/repos/o/r/issues' },
    });
    forge.answers.set('evil.example/repos/o/r/issues', { status: 200, body: issues(EVIL_MARKER) });
    const r = await call({ action: 'list', repo: 'o/r' });
    expect(expectCode(r, 'GH_HOST_DENIED').error.details).toMatchObject({
      reason: 'redirect',
      redirect_host: 'evil.example',
    });
    expect(textOf(r)).not.toContain(EVIL_MARKER);
    expect(forge.requests.map((q) => q.host)).toEqual(['api.github.com']);
    expectNothingElsewhere();
  });

  it('a redirect to a loopback address (Go never proxies those, so the guard cannot see it) carries no token', async () => {
    // The documented residual: gh follows it directly and its answer is used; but the enterprise token is bound to the
    // configured host (a private gh config for the run), so nothing secret goes there.
    const seen: Array<string | null> = [];
    const local = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? null);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(issues('loopback')));
    });
    await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
    try {
      const to = `http://127.0.0.1:${(local.address() as AddressInfo).port}/api/v3/repos/o/r/issues`;
      forge.answers.set('ghe.corp.example/api/v3/repos/o/r/issues', { status: 302, headers: { location: to } });
      await call({ action: 'list', repo: 'o/r', hostname: 'ghe.corp.example' });
      expect(forge.requests.map((q) => [q.host, q.authorization])).toEqual([
        ['ghe.corp.example', `token ${ENT_TOKEN}`],
      ]);
      expect(seen.length).toBeLessThanOrEqual(1);
      expect(seen.filter((a) => a !== null)).toEqual([]);
      // The private gh configuration that held the token is gone.
      expect(readdirSync(os.tmpdir()).filter((n) => n.startsWith(GH_TOKEN_DIR_PREFIX))).toEqual([]);
    } finally {
      local.closeAllConnections();
      await new Promise((r) => local.close(r));
    }
  });

  it('a write answered with a cross-host 307: not re-sent elsewhere', async () => {
    forge.answers.set('ghe.corp.example/api/v3/repos/o/r/issues/1', { status: 200, body: issues('x')[0] });
    forge.answers.set('ghe.corp.example/api/v3/repos/o/r/issues/1/comments', {
      status: 307,
      headers: { location: 'https://evil.example/c' },
    });
    const e = expectCode(
      await call({ action: 'comment', repo: 'o/r', hostname: 'ghe.corp.example', number: 1, body: 'hello' }),
      'GH_HOST_DENIED',
    );
    expect(e.error.retryable).toBe(false);
    expect(forge.requests.map((q) => `${q.method} ${q.host}`)).toEqual([
      'GET ghe.corp.example',
      'POST ghe.corp.example',
    ]);
    expectNothingElsewhere();
  });

  it('with --git-remote-allow=* another host is reachable, but neither token goes there', async () => {
    const any = await anyHostServer();
    forge.answers.set('evil.example/api/v3/repos/o/r/issues', { status: 200, body: issues('public') });
    const r = await any.call('github_issues', { action: 'list', repo: 'o/r', hostname: 'evil.example' });
    expect(r.isError, textOf(r)).toBeFalsy();
    expect(forge.requests.map((q) => [q.host, q.authorization])).toEqual([['evil.example', null]]);
    expect(forge.connects).toEqual(['evil.example:443']);
  });

  it('attack: with --git-remote-allow=* the github.com token does not go to github.localhost (plain http) unless named', async () => {
    // gh sends GH_TOKEN to github.localhost as to github.com, over plain http to api.github.localhost:80 — whatever
    // listens there. `*` allows the host, but the token belongs to github.com only.
    const any = await anyHostServer();
    await any.call('github_issues', { action: 'list', repo: 'o/r', hostname: 'github.localhost' });
    // Positive control: the request did reach the "internet" (so a token would have been seen).
    expect(forge.plain).toEqual(['http://api.github.localhost/repos/o/r/issues?state=open&per_page=30&page=1']);
    expect(forge.plainAuthorization).toEqual([null]);
    // Named by the operator, the token goes there (gh's own rule).
    forge.reset();
    const named = await server(['--git-remote-allow=*,github.localhost'], {
      GH_CONFIG_DIR: path.join(outsideCfg, 'ghcfg-any'),
      NO_PROXY: '',
      no_proxy: '',
    });
    await named.call('github_issues', { action: 'list', repo: 'o/r', hostname: 'github.localhost' });
    expect(forge.plainAuthorization).toEqual([`token ${DOTCOM_TOKEN}`]);
  });

  it('attack: with TMPDIR inside a root, the private gh config holding the enterprise token is not created there', async () => {
    // The agent could read it (read_file) while gh runs; it must be where no root reaches.
    const tmp = path.join(scratch.dir, 'repos', 'tmp-in-root');
    mkdirSync(tmp, { recursive: true });
    const c = await server([], { TMPDIR: tmp });
    forge.answers.set('ghe.corp.example/api/v3/repos/o/r/issues', { status: 200, body: issues('from GHE') });
    const r = await c.call('github_issues', { action: 'list', repo: 'o/r', hostname: 'ghe.corp.example' });
    expect(r.isError, textOf(r)).toBeFalsy();
    expect(forge.requests.map((q) => [q.host, q.authorization])).toEqual([['ghe.corp.example', `token ${ENT_TOKEN}`]]);
    const dirs = readFileSync(LOG, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice('start '.length));
    expect(dirs).toHaveLength(1);
    expect(dirs[0]).toContain(GH_TOKEN_DIR_PREFIX);
    expect(path.relative(scratch.dir, dirs[0]).startsWith('..')).toBe(true);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('attack: the agent writes gh\'s hosts.yml inside the roots to make its host "configured": still denied, no token', async () => {
    // GH_CONFIG_DIR (scratch/ghcfg) lies inside the root (scratch). A host the agent adds there is not the operator's.
    const cfgFile = path.join(scratch.dir, 'ghcfg', 'hosts.yml');
    main ??= await server();
    try {
      const w = await main.call('write_file', { path: cfgFile, content: 'evil.example:\n    user: me\n' });
      expect(w.isError, textOf(w)).toBeFalsy();
      forge.answers.set('evil.example/api/v3/repos/o/r/issues', { status: 200, body: issues(EVIL_MARKER) });
      const r = await call({ action: 'list', repo: 'o/r', hostname: 'evil.example' });
      expect(textOf(r)).not.toContain(EVIL_MARKER);
      expectCode(r, 'GH_HOST_DENIED');
      expect(starts()).toBe(0);
      expect(forge.connects).toEqual([]);
      expect(forge.requests).toEqual([]);
    } finally {
      rmSync(cfgFile, { force: true });
    }
  });

  it("attack: the agent writes http_unix_socket into gh's config.yml inside the roots: gh does not use it, the guard stays", async () => {
    // gh 2.23 sends every request (token included) to that socket, around any proxy. A config the agent can write is
    // not the operator's: gh runs with a private one.
    const sockDir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-sock-'));
    const sock = path.join(sockDir, 's');
    const seen: Array<string | null> = [];
    const local = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? null);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(issues(EVIL_MARKER)));
    });
    await new Promise<void>((r) => local.listen(sock, r));
    const cfgFile = path.join(scratch.dir, 'ghcfg', 'config.yml');
    main ??= await server();
    try {
      const w = await main.call('write_file', { path: cfgFile, content: `http_unix_socket: ${sock}\n` });
      expect(w.isError, textOf(w)).toBeFalsy();
      forge.answers.set('api.github.com/repos/o/r/issues', { status: 200, body: issues('from github.com') });
      const r = await call({ action: 'list', repo: 'o/r' });
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(textOf(r)).not.toContain(EVIL_MARKER);
      expect(r.structuredContent!.issues).toMatchObject([{ title: 'from github.com' }]);
      expect(seen).toEqual([]);
      expect(forge.requests.map((q) => [q.host, q.authorization])).toEqual([
        ['api.github.com', `token ${DOTCOM_TOKEN}`],
      ]);
    } finally {
      rmSync(cfgFile, { force: true });
      local.closeAllConnections();
      await new Promise((r) => local.close(r));
      rmSync(sockDir, { recursive: true, force: true });
    }
  });

  it('attack: a gh planted in a PATH directory inside the roots is never run', async () => {
    // E.g. a project's node_modules/.bin on PATH (npm run / npx): write_file keeps an existing executable's mode.
    const bin = path.join(scratch.dir, 'repos', 'node_modules', '.bin');
    mkdirSync(bin, { recursive: true });
    const marker = path.join(scratch.dir, 'planted-ran');
    writeFileSync(path.join(bin, 'gh'), `#!/bin/sh\necho "$GH_TOKEN $GH_ENTERPRISE_TOKEN" > '${marker}'\n`);
    chmodSync(path.join(bin, 'gh'), 0o755);
    const c = await server([], { PATH: `${bin}:${process.env.PATH ?? ''}` });
    const e = expectCode(await c.call('github_issues', { action: 'list', repo: 'o/r' }), 'GH_CLI_MISSING');
    expect(e.error.details).toMatchObject({ reason: 'inside_roots' });
    expect(JSON.stringify(e)).not.toContain(bin);
    expect(() => readFileSync(marker)).toThrow();
    expect(forge.requests).toEqual([]);
  });
});
