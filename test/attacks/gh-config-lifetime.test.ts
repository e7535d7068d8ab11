/**
 * Review of merge e16277e (github.ts split): the private gh configuration holding the enterprise token
 * (src/vcs/github-request.ts runGh, src/vcs/github-token.ts bindEnterpriseToken) is now removed right after gh exits,
 * before the egress guard closes. Attacked in-process with the REAL gh against the TLS forge (test/helpers/tls-forge.ts),
 * through a gh wrapper outside any root that records, before and after the real gh ran, whether
 * $GH_CONFIG_DIR/hosts.yml held the token:
 * - while gh runs, and after it exits until the wrapper ends, the token file is there (not removed under gh);
 * - after every outcome — success, 404, 500, a cross-host redirect, a timeout, an abort, an output cap — no
 *   `fs-tools-ghtoken-*` directory is left in the (private) temporary directory, and no file there holds the token;
 * - the token reached only the enterprise host, and no failure envelope names the token or the directory.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { githubBackend } from '../../src/vcs/github.js';
import { GH_TOKEN_DIR_PREFIX } from '../../src/vcs/github-token.js';
import type { ForgeCallOptions, IssueTarget } from '../../src/vcs/issues.js';
import { TlsForge } from '../helpers/tls-forge.js';
import { makeTree } from '../helpers/tree.js';

const TOKEN = 'ghe_enterprise_token_LIFETIME_0123456789';
const GH = execFileSync('sh', ['-c', 'command -v gh || true'], { encoding: 'utf8' }).trim();
const scratch = makeTree({ home: {}, ghcfg: {}, tmp: {}, shim: {} }, 'fs-tools-ghlife-');
const TMP = path.join(scratch.dir, 'tmp');
const LOG = path.join(scratch.dir, 'shim.log');
const EXEC_MODE = path.join(scratch.dir, 'exec-mode');
const TARGET: IssueTarget = {
  host: 'ghe.corp.example',
  port: 443,
  explicitPort: false,
  scheme: 'https',
  basePath: '',
  repo: 'o/r',
};
const ISSUES_PATH = 'ghe.corp.example/api/v3/repos/o/r/issues';

let forge: TlsForge;
const savedEnv = { ...process.env };

beforeAll(async () => {
  forge = await TlsForge.start(['ghe.corp.example', 'evil.example']);
  const shim = path.join(scratch.dir, 'shim', 'gh');
  // Records whether the token file is readable before and after the real gh ran (not exec: the shell outlives gh).
  writeFileSync(
    shim,
    `#!/bin/sh\n` +
      // In exec mode (calls that are killed: timeout, abort) the real gh replaces the shell, so the kill reaches it.
      `if [ -e '${EXEC_MODE}' ]; then exec '${GH}' "$@"; fi\n` +
      `if grep -q '${TOKEN}' "$GH_CONFIG_DIR/hosts.yml" 2>/dev/null; then echo before-present >> '${LOG}'; else echo before-missing >> '${LOG}'; fi\n` +
      `'${GH}' "$@"; rc=$?\n` +
      `if grep -q '${TOKEN}' "$GH_CONFIG_DIR/hosts.yml" 2>/dev/null; then echo after-present >> '${LOG}'; else echo after-missing >> '${LOG}'; fi\n` +
      `exit $rc\n`,
  );
  chmodSync(shim, 0o755);
  Object.assign(process.env, {
    TMPDIR: TMP,
    HOME: path.join(scratch.dir, 'home'),
    XDG_CONFIG_HOME: path.join(scratch.dir, 'home'),
    GH_CONFIG_DIR: path.join(scratch.dir, 'ghcfg'),
    PATH: `${path.join(scratch.dir, 'shim')}:${process.env.PATH ?? ''}`,
    HTTPS_PROXY: forge.proxyUrl,
    https_proxy: forge.proxyUrl,
    SSL_CERT_FILE: forge.caFile,
    GH_ENTERPRISE_TOKEN: TOKEN,
    GITHUB_ENTERPRISE_TOKEN: '',
    GH_TOKEN: '',
    GITHUB_TOKEN: '',
  });
});
afterAll(async () => {
  for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
  Object.assign(process.env, savedEnv);
  await forge?.close();
  scratch.cleanup();
});
beforeEach(() => {
  forge.reset();
  writeFileSync(LOG, '');
});

function options(over: Partial<ForgeCallOptions> = {}): ForgeCallOptions {
  return {
    timeoutMs: 20_000,
    maxOutputBytes: 1 << 20,
    signal: new AbortController().signal,
    allow: ['ghe.corp.example'],
    isInsideRoots: () => false,
    ...over,
  };
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

/** Nothing of the token is left in the temporary directory, and it went only to the enterprise host. */
function expectNoTokenLeft(): void {
  expect(readdirSync(TMP).filter((n) => n.startsWith(GH_TOKEN_DIR_PREFIX))).toEqual([]);
  for (const f of filesUnder(TMP)) expect(readFileSync(f, 'utf8')).not.toContain(TOKEN);
  for (const r of forge.requests) if (r.authorization?.includes(TOKEN)) expect(r.host).toBe('ghe.corp.example');
}

async function failureOf(p: Promise<unknown>): Promise<ToolError> {
  const error = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ToolError);
  const text = JSON.stringify(error) + String((error as Error).message);
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain(GH_TOKEN_DIR_PREFIX);
  return error as ToolError;
}

describe.skipIf(!GH)('the private gh configuration lives exactly as long as gh', () => {
  it('control: gh reads the token from it while running; it is still there when gh exits; gone after the call', async () => {
    forge.answers.set(ISSUES_PATH, { status: 200, body: [] });
    const page = await githubBackend(options()).list(TARGET, { state: 'open', perPage: 5, page: 1 });
    expect(page.issues).toEqual([]);
    expect(readFileSync(LOG, 'utf8').split('\n').filter(Boolean)).toEqual(['before-present', 'after-present']);
    expect(forge.requests.map((r) => [r.host, r.authorization])).toEqual([['ghe.corp.example', `token ${TOKEN}`]]);
    expectNoTokenLeft();
  });

  it('HTTP failures (404, 500) and a cross-host redirect: gone after the call, no token in the envelope', async () => {
    forge.answers.set(ISSUES_PATH, { status: 500, body: { message: 'boom' } });
    expect((await failureOf(githubBackend(options()).list(TARGET, { state: 'open', perPage: 5, page: 1 }))).code).toBe(
      'GH_NETWORK',
    );
    expectNoTokenLeft();
    forge.answers.clear();
    expect((await failureOf(githubBackend(options()).view(TARGET, 7, { perPage: 5, page: 1 }))).code).toBe(
      'GH_NOT_FOUND',
    );
    expectNoTokenLeft();
    forge.answers.set(ISSUES_PATH, { status: 302, headers: { location: 'https://evil.example/steal' } });
    expect((await failureOf(githubBackend(options()).list(TARGET, { state: 'open', perPage: 5, page: 1 }))).code).toBe(
      'GH_HOST_DENIED',
    );
    expect(forge.requests.filter((r) => r.host !== 'ghe.corp.example')).toEqual([]);
    expect(readFileSync(LOG, 'utf8')).not.toContain('missing');
    expectNoTokenLeft();
  });

  it('a hanging forge: timeout and abort both leave nothing behind', async () => {
    forge.answers.set(ISSUES_PATH, { status: 200, hang: true });
    writeFileSync(EXEC_MODE, '');
    const timedOut = await failureOf(
      githubBackend(options({ timeoutMs: 1500 })).list(TARGET, { state: 'open', perPage: 5, page: 1 }),
    );
    expect(timedOut.code).toBe('GH_NETWORK');
    expectNoTokenLeft();
    const abort = new AbortController();
    const pending = githubBackend(options({ signal: abort.signal })).list(TARGET, {
      state: 'open',
      perPage: 5,
      page: 1,
    });
    for (let i = 0; i < 100 && forge.requests.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(forge.requests.length).toBe(2); // the abort lands while gh waits for the answer
    abort.abort();
    await failureOf(pending);
    expectNoTokenLeft();
    rmSync(EXEC_MODE);
  });

  it('an answer over the output cap: gone after the call', async () => {
    forge.answers.set(ISSUES_PATH, {
      status: 200,
      body: Array.from({ length: 200 }, (_, i) => ({ number: i, title: 'x'.repeat(200) })),
    });
    expect(
      (
        await failureOf(
          githubBackend(options({ maxOutputBytes: 4096 })).list(TARGET, { state: 'open', perPage: 5, page: 1 }),
        )
      ).code,
    ).toBe('GH_OUTPUT_LIMIT');
    expectNoTokenLeft();
  });
});
