/**
 * https forge hosts on 127.0.0.1 for the real `gh` (issue #12 acceptance): a local CA and one leaf certificate for
 * a set of host names (openssl, generated per run), one TLS server that answers for all of them and records every
 * request with the Host it was meant for, and an "internet" CONNECT proxy that maps every host:443 to that server and
 * records each tunnel's authority. The server under test gets HTTPS_PROXY/HTTP_PROXY pointing at the proxy and
 * SSL_CERT_FILE at the CA (Go, and so gh, reads it), so gh believes it talks to ghe.corp.example, api.github.com or
 * evil.example over verified TLS — and nothing leaves 127.0.0.1. Plain (non-CONNECT) proxy requests are recorded and
 * refused.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** One request the TLS server received. */
export interface TlsRequest {
  /** The Host header (lower-case), e.g. "ghe.corp.example". */
  host: string;
  method: string;
  path: string;
  authorization: string | null;
}

/** A scripted answer: status, headers, JSON body; `hang`: the request is read and never answered. */
export interface TlsAnswer {
  status: number;
  hang?: boolean;
  headers?: Record<string, string>;
  body?: unknown;
}

/** The CA, the TLS server and the proxy. */
export class TlsForge {
  readonly requests: TlsRequest[] = [];
  /** Authorities of CONNECT tunnels the proxy opened (or refused). */
  readonly connects: string[] = [];
  /** Plain-http requests the proxy received (absolute URLs); always refused. */
  readonly plain: string[] = [];
  /** The Authorization header of each plain-http request (same order as `plain`; null when absent). */
  readonly plainAuthorization: Array<string | null> = [];
  /** Answers by `host + path` (path without query); unscripted requests get 404. */
  readonly answers = new Map<string, TlsAnswer>();

  private constructor(
    readonly dir: string,
    readonly caFile: string,
    private tls: https.Server,
    private proxy: http.Server,
  ) {}

  /** `http://127.0.0.1:PORT` of the CONNECT proxy. */
  get proxyUrl(): string {
    return `http://127.0.0.1:${(this.proxy.address() as AddressInfo).port}`;
  }

  /** Generates the CA and leaf for `hosts`, starts both servers. */
  static async start(hosts: readonly string[]): Promise<TlsForge> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-tls-'));
    const f = (n: string): string => path.join(dir, n);
    const ssl = (...args: string[]): void => {
      execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    };
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    ssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      f('ca.key'),
      '-out',
      f('ca.pem'),
      '-days',
      '2',
      '-subj',
      '/CN=fs-tools test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
    ssl('req', ...ec, '-keyout', f('leaf.key'), '-out', f('leaf.csr'), '-subj', '/CN=fs-tools test leaf');
    writeFileSync(
      f('ext.cnf'),
      `subjectAltName=${hosts.map((h) => `DNS:${h}`).join(',')}\nbasicConstraints=CA:FALSE\n` +
        'keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n',
    );
    ssl(
      'x509',
      '-req',
      '-in',
      f('leaf.csr'),
      '-CA',
      f('ca.pem'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f('leaf.pem'),
      '-days',
      '2',
      '-extfile',
      f('ext.cnf'),
    );

    let forge: TlsForge | null = null;
    const tls = https.createServer(
      { key: readFileSync(f('leaf.key')), cert: readFileSync(f('leaf.pem')) },
      (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const host = String(req.headers.host ?? '')
            .toLowerCase()
            .replace(/:443$/, '');
          const p = (req.url ?? '/').split('?')[0];
          forge!.requests.push({
            host,
            method: req.method ?? '',
            path: req.url ?? '',
            authorization: req.headers.authorization ?? null,
          });
          const answer = forge!.answers.get(`${host}${p}`) ?? { status: 404, body: { message: 'Not Found' } };
          if (answer.hang) return;
          const body = answer.body === undefined ? '' : JSON.stringify(answer.body);
          res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
          res.end(body);
        });
      },
    );
    const proxy = http.createServer((req, res) => {
      forge!.plain.push(req.url ?? '');
      forge!.plainAuthorization.push(req.headers.authorization ?? null);
      res.writeHead(403).end();
    });
    proxy.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      forge!.connects.push((req.url ?? '').toLowerCase());
      client.on('error', () => {});
      const upstream = net.connect((tls.address() as AddressInfo).port, '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    forge = new TlsForge(dir, f('ca.pem'), tls, proxy);
    return forge;
  }

  /** Forgets requests, tunnels and answers. */
  reset(): void {
    this.requests.length = 0;
    this.connects.length = 0;
    this.plain.length = 0;
    this.plainAuthorization.length = 0;
    this.answers.clear();
  }

  /** Stops both servers and removes the key material. */
  async close(): Promise<void> {
    this.tls.closeAllConnections();
    this.proxy.closeAllConnections();
    await new Promise<void>((r) => this.tls.close(() => r()));
    await new Promise<void>((r) => this.proxy.close(() => r()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
