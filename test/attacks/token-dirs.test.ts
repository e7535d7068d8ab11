/**
 * Kill test: the private gh configuration holding the enterprise token (src/vcs/github-token.ts, src/fs/owned-temp.ts;
 * docs/security.md "The server's own code and token files"). The REAL gh runs against a TLS forge for
 * ghe.corp.example that reads the request and never answers (test/helpers/tls-forge.ts), so the server sits in the
 * gh call with `fs-tools-ghtoken-*` / hosts.yml (the token) on disk. Then the server is ended:
 * - SIGTERM, SIGINT, stdin closed (with the kernel wall, the default): the directory is gone once the process has
 *   exited (SIGTERM and stdin closed go through the graceful shutdown, which lets the gh call drain first);
 * - SIGKILL: it is left; a second server started meanwhile does not touch it while its owner lives (a live other
 *   server's directory is never removed) — after the kill, the next server removes it at start: with the wall, the
 *   dead server's whole run directory (where its TMPDIR and so the token directory lay); with --sandbox=off, the
 *   token directory itself in the temporary directory, said on stderr.
 * Afterwards no file under the temporary directory holds a byte of the token. TMPDIR is private to this test.
 * The servers ended during the gh call run the seams build with a shutdown grace of GRACE_MS instead of 10 s
 * (`--test-seams=shutdown-grace:MS`, src/cli/seam-flags.ts): the gh call never answers, so SIGTERM and stdin closed
 * wait out the whole grace and then cancel it, as with 10 s; the SIGKILL cases run the product build.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, SEAMS_CLI } from '../helpers/server.js';
import { TlsForge } from '../helpers/tls-forge.js';
import { makeTree } from '../helpers/tree.js';
import { GH_TOKEN_DIR_PREFIX } from '../../src/vcs/github-token.js';

const TOKEN = 'ghe_enterprise_token_KILLTEST_0123456789';
/** The shutdown grace (ms) of the servers ended gracefully during the gh call (the product's is 10 s). */
const GRACE_MS = 500;
const GH = execFileSync('sh', ['-c', 'command -v gh || true'], { encoding: 'utf8' }).trim();
const scratch = makeTree({ root: { 'a.txt': 'a\n' }, home: {}, ghcfg: {}, tmp: {}, state: {} }, 'fs-tools-tokdir-');
const TMP = path.join(scratch.dir, 'tmp');
let forge: TlsForge;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  forge = await TlsForge.start(['ghe.corp.example']);
  forge.answers.set('ghe.corp.example/api/v3/repos/o/r/issues', { status: 200, hang: true });
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await forge?.close();
  scratch.cleanup();
});

interface Server {
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  exited: Promise<void>;
}

/**
 * A server over raw stdio (2025 era: initialize, then calls), with TMPDIR private to this test. With the kernel wall
 * (`wall`, the default) the server's TMPDIR is its run directory `TMP/fs-tools-run-PID-XXXXXX` (src/cli/kernel-wall.ts),
 * so its token directories live there; with `--sandbox=off` directly in TMP. `shortGrace`: the seams build with a
 * shutdown grace of GRACE_MS.
 */
function start(wall: boolean, shortGrace = false): Server {
  const child = spawn(
    process.execPath,
    [
      ...(shortGrace ? [SEAMS_CLI, `--test-seams=shutdown-grace:${GRACE_MS}`] : [CLI]),
      wall ? '--sandbox=require' : '--sandbox=off',
      '--state-dir',
      path.join(scratch.dir, 'state'),
      scratch.dir + '/root',
    ],
    {
      env: {
        ...process.env,
        HOME: path.join(scratch.dir, 'home'),
        XDG_CONFIG_HOME: path.join(scratch.dir, 'home'),
        GH_CONFIG_DIR: path.join(scratch.dir, 'ghcfg'),
        TMPDIR: TMP,
        HTTPS_PROXY: forge.proxyUrl,
        https_proxy: forge.proxyUrl,
        NO_PROXY: '',
        no_proxy: '',
        SSL_CERT_FILE: forge.caFile,
        GH_HOST: 'ghe.corp.example',
        GH_TOKEN: '',
        GITHUB_TOKEN: '',
        GH_ENTERPRISE_TOKEN: TOKEN,
        GITHUB_ENTERPRISE_TOKEN: '',
      },
    },
  );
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  const send = (m: unknown) => child.stdin.write(`${JSON.stringify(m)}\n`);
  send({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'kill-test', version: '1' } },
  });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return { child, stderr: () => stderr, exited };
}

/** Asks for the enterprise host's issues: gh starts, with the token in its private configuration, and hangs. */
function listIssues(s: Server): void {
  s.child.stdin.write(
    `${JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'github_issues', arguments: { action: 'list', repo: 'o/r', hostname: 'ghe.corp.example' } },
    })}\n`,
  );
}

/** The servers' run directories in TMP (kernel wall on). */
const runDirs = (): string[] =>
  readdirSync(TMP)
    .filter((n) => n.startsWith('fs-tools-run-'))
    .map((n) => path.join(TMP, n));
/** Every token directory in TMP or in a run directory there (absolute paths). */
const tokenDirs = (): string[] =>
  [TMP, ...runDirs()].flatMap((base) =>
    readdirSync(base)
      .filter((n) => n.startsWith(GH_TOKEN_DIR_PREFIX))
      .map((n) => path.join(base, n)),
  );

/** Every file under `dir` holding a byte sequence of the token (its whole value). */
function filesWithToken(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) out.push(...filesWithToken(p));
    else if (st?.isFile() && readFileSync(p).includes(TOKEN)) out.push(p);
  }
  return out;
}

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts a server and waits until gh is blocked with the token on disk; returns the server and its directory. */
async function inGhCall(wall: boolean, shortGrace = false): Promise<{ s: Server; dir: string }> {
  const before = new Set(tokenDirs());
  forge.requests.length = 0;
  const s = start(wall, shortGrace);
  listIssues(s);
  let dir = '';
  await until('the token directory and the request', () => {
    dir = tokenDirs().find((d) => !before.has(d)) ?? '';
    return dir !== '' && forge.requests.length > 0;
  });
  // The token is there (this is what must not outlive the server), and it is this server's (marked with its pid).
  expect(readFileSync(path.join(dir, 'hosts.yml'), 'utf8')).toContain(TOKEN);
  expect(path.basename(dir)).toMatch(new RegExp(`^${GH_TOKEN_DIR_PREFIX}\\d+-${s.child.pid}-\\d+-\\w{6}$`));
  // With the wall, in this server's own run directory; without, in TMP itself.
  expect(path.dirname(dir)).toMatch(
    wall ? new RegExp(`^${TMP}/fs-tools-run-${s.child.pid}-\\w{6}$`) : new RegExp(`^${TMP}$`),
  );
  expect(statSync(dir).mode & 0o777).toBe(0o700);
  expect(forge.requests[0].authorization).toBe(`token ${TOKEN}`);
  return { s, dir };
}

describe.runIf(GH !== '')('gh token directories on every exit path (kernel wall on)', () => {
  it.each([
    ['SIGTERM', (s: Server) => s.child.kill('SIGTERM')],
    ['SIGINT', (s: Server) => s.child.kill('SIGINT')],
    ['stdin closed', (s: Server) => s.child.stdin.end()],
  ] as const)(
    '%s during a gh call: the directory is gone when the process has exited',
    async (_name, end) => {
      const { s, dir } = await inGhCall(true, true);
      expect(s.stderr()).toMatch(/kernel wall: .*enforced/);
      end(s);
      await s.exited;
      expect(existsSync(dir)).toBe(false);
      expect(filesWithToken(TMP)).toEqual([]);
    },
    60_000,
  );
});

describe.runIf(GH !== '')('gh token directories after SIGKILL', () => {
  it.each([
    ['kernel wall on: the next start removes the dead server’s run directory with its token directory', true],
    ['--sandbox=off: the next start sweeps the token directory from the temporary directory', false],
  ] as const)(
    '%s; a live other server leaves it alone',
    async (_name, wall) => {
      const { s, dir } = await inGhCall(wall);
      // Another server starting while the owner lives: the directory stays (its owner is alive).
      const other = start(wall);
      const otherTools = new Promise<void>((resolve) => other.child.stdout.once('data', () => resolve()));
      await otherTools; // it answered initialize: its start-up sweep is done
      expect(existsSync(dir)).toBe(true);
      other.child.stdin.end();
      await other.exited;
      expect(existsSync(dir)).toBe(true);

      s.child.kill('SIGKILL');
      await s.exited;
      expect(existsSync(dir)).toBe(true); // nothing can run at a SIGKILL
      const next = start(wall);
      await new Promise<void>((resolve) => next.child.stdout.once('data', () => resolve()));
      expect(existsSync(dir)).toBe(false);
      if (wall) {
        // The whole run directory of the dead server went (src/cli/kernel-wall.ts sweep); only the next one's is left.
        expect(existsSync(path.dirname(dir))).toBe(false);
        expect(runDirs()).toEqual([expect.stringMatching(new RegExp(`/fs-tools-run-${next.child.pid}-\\w{6}$`))]);
      } else {
        expect(next.stderr()).toContain(
          `fs-tools: removed ${dir}, a private directory left by a server that is no longer running`,
        );
      }
      expect(tokenDirs()).toEqual([]);
      expect(filesWithToken(TMP)).toEqual([]);
      next.child.stdin.end();
      await next.exited;
      mkdirSync(TMP, { recursive: true });
    },
    60_000,
  );
});
