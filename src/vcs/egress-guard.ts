/**
 * The egress guard of `gh` (docs/issue-tools.md: no answer that redirects to another host is followed or believed). gh follows
 * HTTP redirects itself, and gh 2.23 attaches a token to the redirect target's request (GH_ENTERPRISE_TOKEN for any
 * host but github.com), so a redirect from the configured host to another one would carry the token there and its
 * answer would be returned as the issue data. gh has no switch to stop that; so every gh run gets this guard as its
 * only proxy:
 *
 * - a proxy on 127.0.0.1 (an ephemeral port, one per gh run, closed when gh exits) that gh reaches through
 *   HTTPS_PROXY/HTTP_PROXY (NO_PROXY removed from gh's environment, so no host is exempt);
 * - a CONNECT tunnel is opened only to the one allowed authority (the API host:port of the target, e.g.
 *   api.github.com:443 or ghe.example.com:443); any other CONNECT is refused with 403 before a byte reaches that host
 *   — the TLS handshake, and so any token, never starts;
 * - a plain-http request (gh uses http only for github.localhost) is forwarded only to the allowed authority; a 3xx
 *   answer whose Location names another authority is not passed on (gh gets a 502 instead), so gh cannot even try;
 * - every refusal is recorded (`denied`), and the caller turns a gh run with a refusal into GH_HOST_DENIED whatever gh
 *   printed — the answer of a run that was redirected elsewhere is never believed.
 *
 * The operator's own proxy still applies: the guard forwards allowed traffic through HTTPS_PROXY / HTTP_PROXY (an
 * http:// proxy, optional user:password) of the server's environment unless NO_PROXY exempts the host (Go's rules:
 * `*`, host or domain suffix, `.suffix`, IP, CIDR, optional port). Any other proxy scheme fails closed (502).
 *
 * Limit (documented in the README): Go never sends loopback destinations (127.0.0.0/8, ::1, localhost) to a proxy,
 * so a redirect from an allowed https host to a loopback address is followed by gh directly; it can only come from a
 * host the operator configured, and an https loopback target still needs a certificate the operator trusts.
 */
import type http from 'node:http';
import net from 'node:net';

/**
 * Node's `http`, taken at the first guard instead of at every start (about 4 ms of CPU: most processes never run gh or
 * glab). A built-in module, not a file: the program is a script without an import callback, so it asks the process
 * (docs/benchmarks.md "Server start-up").
 */
const nodeHttp = (): typeof http => process.getBuiltinModule('node:http');

/** One allowed host:port (host lower-case, IPv6 without brackets). */
export interface Authority {
  host: string;
  port: number;
}

/** One refused attempt. */
export interface Denial {
  /** connect: a CONNECT tunnel; request: a plain-http request; redirect: a 3xx answer pointing elsewhere. */
  kind: 'connect' | 'request' | 'redirect';
  host: string;
  port: number | null;
}

/** A running guard. */
export interface EgressGuard {
  /** `http://127.0.0.1:PORT`, for gh's HTTPS_PROXY/HTTP_PROXY. */
  readonly url: string;
  /** Refused attempts so far. */
  readonly denied: Denial[];
  /**
   * Allowed attempts whose next hop (the host, or the operator's proxy) could not be connected to — or whose
   * upstream proxy refused the tunnel: nothing of that attempt reached the host.
   */
  readonly unreachable: number;
  /** Stops listening and destroys every open connection. */
  close(): Promise<void>;
}

/** Splits `host:port` / `[v6]:port`; null when malformed. */
export function parseAuthority(raw: string, defaultPort: number | null = null): Authority | null {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:/?#[\]@]+))(?::(\d{1,5}))?$/.exec(raw.trim());
  if (!m) return null;
  const port = m[3] !== undefined ? Number(m[3]) : defaultPort;
  if (port === null || port < 1 || port > 65535) return null;
  return { host: (m[1] ?? m[2]).toLowerCase().replace(/\.$/, ''), port };
}

/**
 * The authority a redirect's Location names, resolved against `base` (the request's URL): its host and port (443 for
 * https, 80 for http when none is given). Pure.
 * @returns null when `location` is absent, unparseable or names a scheme other than http/https
 */
export function locationAuthority(location: string | undefined, base: string | URL): Authority | null {
  if (!location) return null;
  try {
    const to = new URL(location, base);
    if (to.protocol !== 'https:' && to.protocol !== 'http:') return null;
    return parseAuthority(to.host, to.protocol === 'https:' ? 443 : 80);
  } catch {
    return null;
  }
}

function allowedAuthority(allowed: readonly Authority[], a: Authority): boolean {
  return allowed.some((x) => x.host === a.host && x.port === a.port);
}

/**
 * True when NO_PROXY (Go's golang.org/x/net/http/httpproxy rules) exempts `target` from the proxy. Pure.
 * @param noProxy the NO_PROXY / no_proxy value
 */
export function noProxyMatches(noProxy: string, target: Authority): boolean {
  const host = target.host;
  for (const rawEntry of noProxy.split(',')) {
    let entry = rawEntry.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return true;
    if (entry.includes('/')) {
      const [addr, bits] = entry.split('/');
      const family = net.isIP(addr);
      if (family && net.isIP(host) === family && /^\d+$/.test(bits)) {
        const list = new net.BlockList();
        try {
          list.addSubnet(addr, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
          if (list.check(host, family === 4 ? 'ipv4' : 'ipv6')) return true;
        } catch {
          /* malformed: no match */
        }
      }
      continue;
    }
    let port: number | null = null;
    const withPort = /^(.*[^:]):(\d{1,5})$/.exec(entry);
    if (withPort && !net.isIP(entry)) {
      entry = withPort[1];
      port = Number(withPort[2]);
    }
    entry = entry.replace(/^\[|\]$/g, '');
    if (port !== null && port !== target.port) continue;
    if (net.isIP(entry)) {
      if (entry === host) return true;
      continue;
    }
    if (entry.startsWith('*.')) entry = entry.slice(1);
    if (entry.startsWith('.')) {
      if (host.endsWith(entry)) return true;
    } else if (host === entry || host.endsWith(`.${entry}`)) {
      return true;
    }
  }
  return false;
}

/** The operator's upstream proxy for `target` (from the server's environment), or null to connect directly. */
export function upstreamProxy(
  scheme: 'https' | 'http',
  target: Authority,
  env: NodeJS.ProcessEnv,
): URL | 'unsupported' | null {
  const raw = scheme === 'https' ? env.HTTPS_PROXY || env.https_proxy : env.HTTP_PROXY || env.http_proxy;
  if (!raw) return null;
  if (noProxyMatches(env.NO_PROXY || env.no_proxy || '', target)) return null;
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`);
  } catch {
    return 'unsupported';
  }
  return url.protocol === 'http:' ? url : 'unsupported';
}

function proxyAuthorization(proxy: URL): Record<string, string> {
  if (!proxy.username) return {};
  const user = decodeURIComponent(proxy.username);
  const pass = decodeURIComponent(proxy.password);
  return { 'Proxy-Authorization': `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` };
}

function hostHeader(a: Authority): string {
  return `${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
}

/** Opens a TCP connection to `target`, directly or through an upstream CONNECT; resolves once bytes may flow. */
function openTunnel(
  target: Authority,
  proxy: URL | null,
  signal: AbortSignal,
): Promise<{ socket: net.Socket; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const port = proxy ? Number(proxy.port || 80) : target.port;
    const host = proxy ? proxy.hostname.replace(/^\[|\]$/g, '') : target.host;
    const socket = net.connect({ host, port });
    const fail = (error: Error): void => {
      socket.destroy();
      reject(error);
    };
    const onAbort = (): void => fail(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('error', fail);
    socket.once('connect', () => {
      if (!proxy) {
        signal.removeEventListener('abort', onAbort);
        socket.removeListener('error', fail);
        resolve({ socket, rest: Buffer.alloc(0) });
        return;
      }
      const headers = { Host: hostHeader(target), ...proxyAuthorization(proxy) };
      socket.write(
        `CONNECT ${hostHeader(target)} HTTP/1.1\r\n${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}\r\n`,
      );
      let buf = Buffer.alloc(0);
      const onData = (chunk: Buffer): void => {
        buf = Buffer.concat([buf, chunk]);
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) {
          if (buf.length > 16 * 1024) fail(new Error('upstream proxy answer too long'));
          return;
        }
        socket.removeListener('data', onData);
        signal.removeEventListener('abort', onAbort);
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(buf.subarray(0, end).toString('latin1'));
        if (!status || !status[1].startsWith('2')) {
          fail(new Error('upstream proxy refused the tunnel'));
          return;
        }
        socket.removeListener('error', fail);
        socket.pause();
        resolve({ socket, rest: buf.subarray(end + 4) });
      };
      socket.on('data', onData);
    });
  });
}

/** The state of one running guard, shared by its handlers. */
interface GuardState {
  readonly allowed: readonly Authority[];
  readonly scheme: 'https' | 'http';
  /** The server's environment (the operator's upstream proxy). */
  readonly env: NodeJS.ProcessEnv;
  readonly denied: Denial[];
  unreachable: number;
  /** Every open connection (client and upstream), destroyed on close. */
  readonly sockets: Set<net.Socket>;
  /** Aborted on close: stops pending tunnels and forwarded requests. */
  readonly closing: AbortController;
}

const BAD_GATEWAY = 'HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

/** Keeps `socket` in the guard's set until it closes. */
function track(state: GuardState, socket: net.Socket): void {
  state.sockets.add(socket);
  socket.on('close', () => state.sockets.delete(socket));
}

/** A CONNECT (gh over https): a tunnel only to an allowed authority, else 403 before a byte reaches the host. */
function onConnect(state: GuardState, req: http.IncomingMessage, client: net.Socket, head: Buffer): void {
  client.on('error', () => {});
  const target = parseAuthority(req.url ?? '', 443);
  if (!target || state.scheme !== 'https' || !allowedAuthority(state.allowed, target)) {
    state.denied.push({ kind: 'connect', host: target?.host ?? '(malformed)', port: target?.port ?? null });
    client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    return;
  }
  const proxy = upstreamProxy('https', target, state.env);
  if (proxy === 'unsupported') {
    client.end(BAD_GATEWAY);
    return;
  }
  openTunnel(target, proxy, state.closing.signal).then(
    ({ socket, rest }) => {
      track(state, socket);
      socket.on('error', () => client.destroy());
      client.on('close', () => socket.destroy());
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (rest.length) client.write(rest);
      if (head.length) socket.write(head);
      socket.pipe(client);
      client.pipe(socket);
      socket.resume();
    },
    () => {
      state.unreachable++;
      client.end(BAD_GATEWAY);
    },
  );
}

/** A plain-http request (gh for github.localhost): forwarded only to an allowed authority, else 403. */
function onRequest(state: GuardState, req: http.IncomingMessage, res: http.ServerResponse): void {
  const refuse = (status: number, denial: Denial | null): void => {
    if (denial) state.denied.push(denial);
    req.resume();
    res.writeHead(status, { 'Content-Length': '0', Connection: 'close' }).end();
  };
  let url: URL;
  try {
    url = new URL(req.url ?? '');
  } catch {
    refuse(400, null);
    return;
  }
  const target = url.protocol === 'http:' ? parseAuthority(url.host, 80) : null;
  if (!target || state.scheme !== 'http' || !allowedAuthority(state.allowed, target)) {
    refuse(403, { kind: 'request', host: target?.host ?? url.hostname.toLowerCase(), port: target?.port ?? null });
    return;
  }
  const proxy = upstreamProxy('http', target, state.env);
  if (proxy === 'unsupported') {
    refuse(502, null);
    return;
  }
  forward(state, req, res, { url, target, proxy, refuse });
}

/**
 * Forwards an allowed plain-http request (through the operator's proxy when one applies). A 3xx answer whose
 * Location names another authority is not passed on: 502 and a `redirect` denial.
 */
function forward(
  state: GuardState,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  to: { url: URL; target: Authority; proxy: URL | null; refuse: (status: number, denial: Denial | null) => void },
): void {
  const { url, target, proxy } = to;
  const headers = { ...req.headers };
  delete headers['proxy-connection'];
  delete headers['proxy-authorization'];
  const upstream = nodeHttp().request(
    {
      host: proxy ? proxy.hostname.replace(/^\[|\]$/g, '') : target.host,
      port: proxy ? Number(proxy.port || 80) : target.port,
      method: req.method,
      path: proxy ? url.href : `${url.pathname}${url.search}`,
      headers: { ...headers, ...(proxy ? proxyAuthorization(proxy) : {}) },
      signal: state.closing.signal,
    },
    (answer) => {
      const location = answer.headers.location;
      if (answer.statusCode !== undefined && answer.statusCode >= 300 && answer.statusCode < 400 && location) {
        const next = locationAuthority(location, url);
        if (!next || next.host !== target.host || next.port !== target.port) {
          answer.resume();
          to.refuse(502, { kind: 'redirect', host: next?.host ?? '(unparseable)', port: next?.port ?? null });
          return;
        }
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  let connected = false;
  upstream.on('socket', (sock: net.Socket) => {
    if (!sock.connecting) connected = true;
    else
      sock.once('connect', () => {
        connected = true;
      });
  });
  upstream.on('error', () => {
    if (!connected) state.unreachable++;
    if (!res.headersSent) res.writeHead(502, { 'Content-Length': '0', Connection: 'close' }).end();
    else res.destroy();
  });
  req.pipe(upstream);
}

/**
 * Starts a guard that lets through only `allowed` (see the module comment).
 * @param scheme how gh reaches the target: https (CONNECT tunnels) or http (github.localhost: forwarded requests)
 * @param env the server's environment (for the operator's upstream proxy)
 */
export async function startEgressGuard(
  allowed: readonly Authority[],
  scheme: 'https' | 'http',
  env: NodeJS.ProcessEnv = process.env,
): Promise<EgressGuard> {
  const state: GuardState = {
    allowed,
    scheme,
    env,
    denied: [],
    unreachable: 0,
    sockets: new Set<net.Socket>(),
    closing: new AbortController(),
  };
  const server = nodeHttp().createServer();
  server.on('connection', (s: net.Socket) => track(state, s));
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) =>
    onConnect(state, req, client, head),
  );
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => onRequest(state, req, res));
  server.on('clientError', (_e, s) => s.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    denied: state.denied,
    get unreachable() {
      return state.unreachable;
    },
    close: () =>
      new Promise<void>((resolve) => {
        state.closing.abort();
        for (const s of state.sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
