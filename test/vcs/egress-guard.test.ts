/**
 * The egress guard of gh/glab and gh's environment (issue #12, SPEC §8):
 * - the guard on real sockets: a CONNECT to any authority but the allowed one is refused (403) and recorded, and
 *   nothing reaches that host; the allowed one is tunnelled through the operator's upstream proxy; a plain-http
 *   request is forwarded only to the allowed authority, and a 3xx pointing to another authority is not passed on
 *   (502, recorded); an unreachable next hop is counted;
 * - noProxyMatches (Go's NO_PROXY rules) and upstreamProxy;
 * - ghEnvironment / ghTokenPolicy / ghApiAuthority: which tokens reach gh for which host, the guard as the only
 *   proxy, NO_PROXY/CODESPACES/GH_HOST/GH_REPO removed.
 * No mocks: real http servers on 127.0.0.1 stand in for the forge and for the operator's proxy.
 */
import { readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { noProxyMatches, startEgressGuard, upstreamProxy } from '../../src/vcs/egress-guard.js';
import { ghApiAuthority } from '../../src/vcs/github-target.js';
import { bindEnterpriseToken, ghEnvironment, ghTokenPolicy } from '../../src/vcs/github-token.js';
import { parseGhHostsYaml } from '../../src/vcs/forge-hosts.js';

/** A plain-http "forge" that records requests; /redirect-away answers 302 to another host, /redirect-here to itself. */
let forgeHits: string[] = [];
const forge = http.createServer((req, res) => {
  forgeHits.push(`${req.headers.host} ${req.url}`);
  if (req.url === '/redirect-away') res.writeHead(302, { location: 'http://evil.example/x' }).end();
  else if (req.url === '/redirect-here') res.writeHead(302, { location: '/ok' }).end();
  else res.writeHead(200, { 'content-type': 'text/plain' }).end('forge says hi');
});
/** The operator's proxy: maps every authority to the forge, records what it was asked for. */
let proxyLog: string[] = [];
const upstream = http.createServer((req, res) => {
  proxyLog.push(`GET ${req.url}`);
  const r = http.request(
    { host: '127.0.0.1', port: port(forge), path: new URL(req.url!).pathname, headers: req.headers },
    (a) => {
      res.writeHead(a.statusCode!, a.headers);
      a.pipe(res);
    },
  );
  req.pipe(r);
});
upstream.on('connect', (req: http.IncomingMessage, client: net.Socket) => {
  proxyLog.push(`CONNECT ${req.url}`);
  const s = net.connect(port(forge), '127.0.0.1', () => {
    client.write('HTTP/1.1 200 OK\r\n\r\n');
    s.pipe(client);
    client.pipe(s);
  });
  client.on('error', () => s.destroy());
});
const port = (s: http.Server): number => (s.address() as AddressInfo).port;

beforeAll(async () => {
  await new Promise<void>((r) => forge.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  forge.closeAllConnections();
  upstream.closeAllConnections();
  await new Promise((r) => forge.close(r));
  await new Promise((r) => upstream.close(r));
});

/** Sends a raw CONNECT to the guard and returns the status line. */
function rawConnect(guardUrl: string, authority: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const u = new URL(guardUrl);
    const s = net.connect(Number(u.port), u.hostname, () =>
      s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`),
    );
    let buf = '';
    s.on('data', (c) => {
      buf += c.toString('latin1');
      if (buf.includes('\r\n')) {
        resolve(buf.split('\r\n')[0]);
        s.destroy();
      }
    });
    s.on('error', reject);
  });
}

/** A GET through the guard as a proxy (absolute-form). */
function proxiedGet(guardUrl: string, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(guardUrl);
    http
      .get({ host: u.hostname, port: Number(u.port), path: url, headers: { host: new URL(url).host } }, (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      })
      .on('error', reject);
  });
}

describe('startEgressGuard', () => {
  const env = () => ({
    HTTPS_PROXY: `http://127.0.0.1:${port(upstream)}`,
    HTTP_PROXY: `http://127.0.0.1:${port(upstream)}`,
  });

  test('https: only the allowed authority is tunnelled (through the operator proxy); others are refused and recorded', async () => {
    proxyLog = [];
    const guard = await startEgressGuard([{ host: 'ghe.corp.example', port: 443 }], 'https', env());
    try {
      expect(await rawConnect(guard.url, 'ghe.corp.example:443')).toMatch(/^HTTP\/1\.1 200/);
      for (const other of [
        'evil.example:443',
        'ghe.corp.example:8443',
        'GHE.corp.example.evil:443',
        '127.0.0.1:443',
        'garbage',
      ]) {
        expect(await rawConnect(guard.url, other)).toMatch(/^HTTP\/1\.1 403/);
      }
      expect(proxyLog).toEqual(['CONNECT ghe.corp.example:443']);
      expect(guard.denied.map((d) => `${d.kind} ${d.host}:${d.port}`)).toEqual([
        'connect evil.example:443',
        'connect ghe.corp.example:8443',
        'connect ghe.corp.example.evil:443',
        'connect 127.0.0.1:443',
        'connect garbage:443',
      ]);
    } finally {
      await guard.close();
    }
  });

  test('http: forwards only to the allowed authority; a redirect to another host is not passed on', async () => {
    proxyLog = [];
    forgeHits = [];
    const guard = await startEgressGuard([{ host: 'api.github.localhost', port: 80 }], 'http', env());
    try {
      expect(await proxiedGet(guard.url, 'http://api.github.localhost/ok')).toEqual({
        status: 200,
        body: 'forge says hi',
      });
      expect((await proxiedGet(guard.url, 'http://api.github.localhost/redirect-here')).status).toBe(302);
      const away = await proxiedGet(guard.url, 'http://api.github.localhost/redirect-away');
      expect(away.status).toBe(502);
      expect((await proxiedGet(guard.url, 'http://evil.example/x')).status).toBe(403);
      expect(forgeHits.map((h) => h.split(' ')[1])).toEqual(['/ok', '/redirect-here', '/redirect-away']);
      expect(guard.denied.map((d) => `${d.kind} ${d.host}`)).toEqual(['redirect evil.example', 'request evil.example']);
      // A CONNECT in http mode is refused too.
      expect(await rawConnect(guard.url, 'api.github.localhost:443')).toMatch(/ 403/);
    } finally {
      await guard.close();
    }
  });

  test('review attacks: pipelined requests to another host, origin-form with a foreign Host, userinfo in CONNECT', async () => {
    proxyLog = [];
    forgeHits = [];
    const guard = await startEgressGuard([{ host: 'api.github.localhost', port: 80 }], 'http', env());
    try {
      const u = new URL(guard.url);
      const raw = await new Promise<string>((resolve, reject) => {
        const s = net.connect(Number(u.port), u.hostname, () =>
          s.write(
            'GET http://api.github.localhost/ok HTTP/1.1\r\nHost: api.github.localhost\r\n\r\n' +
              'GET http://evil.example/x HTTP/1.1\r\nHost: api.github.localhost\r\n\r\n' +
              'GET /y HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n',
          ),
        );
        let buf = '';
        s.on('data', (c) => {
          buf += c.toString('latin1');
        });
        s.on('close', () => resolve(buf));
        s.on('error', reject);
        setTimeout(() => s.destroy(), 3000);
      });
      const statuses = [...raw.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => m[1]);
      expect(statuses[0]).toBe('200');
      expect(statuses.slice(1).every((x) => x !== '200')).toBe(true);
      expect(forgeHits.map((h) => h.split(' ')[1])).toEqual(['/ok']);
      expect(proxyLog.every((l) => l.includes('api.github.localhost'))).toBe(true);
    } finally {
      await guard.close();
    }
    const tls = await startEgressGuard([{ host: 'ghe.corp.example', port: 443 }], 'https', env());
    try {
      for (const a of [
        'x@ghe.corp.example:443',
        'ghe.corp.example:443@evil.example',
        'ghe.corp.example:443/evil',
        'ghe.corp.example:',
      ]) {
        expect(await rawConnect(tls.url, a)).not.toMatch(/ 200/);
      }
    } finally {
      await tls.close();
    }
  });

  test('an unreachable next hop is counted (nothing reached the host), and an unsupported proxy scheme fails closed', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const guard = await startEgressGuard([{ host: 'ghe.corp.example', port: 443 }], 'https', {
      HTTPS_PROXY: `http://127.0.0.1:${deadPort}`,
    });
    try {
      expect(await rawConnect(guard.url, 'ghe.corp.example:443')).toMatch(/ 502/);
      expect(guard.unreachable).toBe(1);
    } finally {
      await guard.close();
    }
    expect(upstreamProxy('https', { host: 'h', port: 443 }, { HTTPS_PROXY: 'socks5://127.0.0.1:1080' })).toBe(
      'unsupported',
    );
    expect(upstreamProxy('https', { host: 'h', port: 443 }, { HTTPS_PROXY: 'proxy.corp:3128' })?.toString()).toBe(
      'http://proxy.corp:3128/',
    );
    expect(upstreamProxy('https', { host: 'h', port: 443 }, {})).toBeNull();
    expect(upstreamProxy('http', { host: 'h', port: 80 }, { http_proxy: 'http://p:1', NO_PROXY: 'h' })).toBeNull();
  });
});

describe('noProxyMatches (Go rules)', () => {
  test.each<[string, string, number, boolean]>([
    ['*', 'anything.example', 443, true],
    ['corp.example', 'corp.example', 443, true],
    ['corp.example', 'ghe.corp.example', 443, true],
    ['corp.example', 'notcorp.example', 443, false],
    ['.corp.example', 'ghe.corp.example', 443, true],
    ['*.corp.example', 'ghe.corp.example', 443, true],
    ['corp.example:8443', 'corp.example', 443, false],
    ['corp.example:443', 'corp.example', 443, true],
    ['10.0.0.0/8', '10.1.2.3', 443, true],
    ['10.0.0.0/8', '11.1.2.3', 443, false],
    ['10.1.2.3', '10.1.2.3', 443, true],
    ['', 'x', 443, false],
  ])('%j vs %s:%i → %s', (list, host, p, expected) => {
    expect(noProxyMatches(list, { host, port: p })).toBe(expected);
  });
});

describe('gh environment and tokens (issue #12)', () => {
  const base = {
    GH_TOKEN: 'dotcom-token',
    GITHUB_TOKEN: 'dotcom-token-2',
    GH_ENTERPRISE_TOKEN: 'ent-token',
    GITHUB_ENTERPRISE_TOKEN: 'ent-2',
    GH_HOST: 'ghe.corp.example',
    GH_REPO: 'a/b',
    NO_PROXY: '*',
    no_proxy: '*',
    CODESPACES: 'true',
    REQUEST_METHOD: 'GET',
    HTTPS_PROXY: 'http://corp-proxy:3128',
    SSL_CERT_FILE: '/ca.pem',
    GH_CONFIG_DIR: '/nonexistent-gh-config',
  };
  const t = (host: string, port = 443) => ({ host, port, explicitPort: port !== 443 });

  test.each<[string, string[], boolean, boolean]>([
    ['github.com', [], true, false],
    // github.localhost gets github.com's token only when the operator named it (plain http to a local port).
    ['github.localhost', [], false, false],
    ['github.localhost', ['*'], false, false],
    ['github.localhost', ['default', 'github.localhost'], true, false],
    ['ghe.corp.example', [], false, true], // GH_HOST: configured by the operator
    ['evil.example', [], false, false],
    ['evil.example', ['*'], false, false], // "any host" is not "give it the token"
    ['other-ghe.example', ['default', 'other-ghe.example'], false, true], // named explicitly
    ['gitlab.com', ['gitlab.com'], false, false], // a GitLab host never gets a GitHub token
    ['api.github.com', [], false, false],
  ])('%s with --git-remote-allow=%j: GH_TOKEN %s, GH_ENTERPRISE_TOKEN %s', (host, allow, dotcom, enterprise) => {
    expect(ghTokenPolicy(t(host), allow, base)).toEqual({ dotcom, enterprise });
    const env = ghEnvironment(ghTokenPolicy(t(host), allow, base), 'http://127.0.0.1:1234', base);
    expect([env.GH_TOKEN !== undefined, env.GITHUB_TOKEN !== undefined]).toEqual([dotcom, dotcom]);
    expect([env.GH_ENTERPRISE_TOKEN !== undefined, env.GITHUB_ENTERPRISE_TOKEN !== undefined]).toEqual([
      enterprise,
      enterprise,
    ]);
  });

  test('the guard is the only proxy; exemptions and target-deciding variables are gone; CA settings stay', () => {
    const env = ghEnvironment({ dotcom: true, enterprise: false }, 'http://127.0.0.1:1234', base);
    expect([env.HTTPS_PROXY, env.https_proxy, env.HTTP_PROXY, env.http_proxy]).toEqual(
      Array(4).fill('http://127.0.0.1:1234'),
    );
    for (const k of ['NO_PROXY', 'no_proxy', 'CODESPACES', 'REQUEST_METHOD', 'GH_HOST', 'GH_REPO'])
      expect(env[k]).toBeUndefined();
    expect(env.SSL_CERT_FILE).toBe('/ca.pem');
  });

  test('bindEnterpriseToken: the enterprise token moves into a private hosts.yml for the target host only', () => {
    const token = 'ent"\n  evil.example:\n    oauth_token: x';
    const b = bindEnterpriseToken(
      { host: 'GHE.corp.example', port: 8443, explicitPort: true },
      { GH_ENTERPRISE_TOKEN: token, GITHUB_ENTERPRISE_TOKEN: 'y', PATH: '/bin' },
    )!;
    try {
      expect(b.env.GH_CONFIG_DIR).toBe(b.dir);
      expect([b.env.GH_ENTERPRISE_TOKEN, b.env.GITHUB_ENTERPRISE_TOKEN, b.env.PATH]).toEqual([
        undefined,
        undefined,
        '/bin',
      ]);
      expect(statSync(b.dir).mode & 0o777).toBe(0o700);
      const file = path.join(b.dir, 'hosts.yml');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      // Only the target's keys are top-level hosts; the hostile token cannot add one.
      expect(parseGhHostsYaml(readFileSync(file, 'utf8'))).toEqual([
        { host: 'ghe.corp.example', port: null },
        { host: 'ghe.corp.example', port: 8443 },
      ]);
    } finally {
      rmSync(b.dir, { recursive: true, force: true });
    }
    expect(bindEnterpriseToken({ host: 'h', port: 443, explicitPort: false }, { GH_TOKEN: 'x' })).toBeNull();
  });

  test("ghApiAuthority follows gh's REST prefix", () => {
    expect(ghApiAuthority(t('github.com'))).toEqual({
      scheme: 'https',
      authority: { host: 'api.github.com', port: 443 },
    });
    expect(ghApiAuthority({ host: 'github.localhost', port: 80, explicitPort: false })).toEqual({
      scheme: 'http',
      authority: { host: 'api.github.localhost', port: 80 },
    });
    expect(ghApiAuthority(t('ghe.corp.example'))).toEqual({
      scheme: 'https',
      authority: { host: 'ghe.corp.example', port: 443 },
    });
    expect(ghApiAuthority(t('ghe.corp.example', 8443))).toEqual({
      scheme: 'https',
      authority: { host: 'ghe.corp.example', port: 8443 },
    });
    expect(ghApiAuthority(t('garage.github.com')).authority.host).toBe('garage.github.com');
  });
});
