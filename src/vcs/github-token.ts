/**
 * Which tokens reach gh, and how (docs/issue-tools.md: tokens only to the instance they belong to): the token policy
 * of a target host, gh's environment (target, paging, colour, debug and proxy-exemption variables removed; the
 * egress guard as its only proxy), and the private gh configuration that binds an enterprise token to one host
 * (src/fs/owned-temp.ts; swept at start-up from `ghTokenBases`).
 */
import { realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { makeOwnedTempDir, removeOwnedTempDir } from '../fs/owned-temp.js';
import { hostListed } from './forge-hosts.js';
import { isDotcomHost } from './github-target.js';
import { operatorNamedGitHubHosts } from './host-allow.js';
import type { IssueTarget } from './issues.js';

/** Variables removed from gh's environment: those that would pick the target, page, colour or log requests. */
const GH_ENV_REMOVED = [
  'GH_REPO',
  'GH_HOST',
  'GH_DEBUG',
  'DEBUG',
  'GH_FORCE_TTY',
  'CLICOLOR_FORCE',
  'GH_PAGER',
  'PAGER',
  // CODESPACES=true makes gh send GITHUB_TOKEN to enterprise hosts; the proxy exemptions would bypass the guard;
  // REQUEST_METHOD (CGI) makes Go ignore HTTP_PROXY.
  'CODESPACES',
  'NO_PROXY',
  'no_proxy',
  'REQUEST_METHOD',
  'ALL_PROXY',
  'all_proxy',
];
/** Tokens gh sends to github.com (and github.localhost): GH_TOKEN, GITHUB_TOKEN. */
const GH_DOTCOM_TOKENS = ['GH_TOKEN', 'GITHUB_TOKEN'];
/** Tokens gh sends to every other host: GH_ENTERPRISE_TOKEN, GITHUB_ENTERPRISE_TOKEN. */
const GH_ENTERPRISE_TOKENS = ['GH_ENTERPRISE_TOKEN', 'GITHUB_ENTERPRISE_TOKEN'];

/** Which tokens of the environment reach gh for a target (docs/issue-tools.md: tokens only to the instance they belong to). */
export interface GhTokenPolicy {
  /** GH_TOKEN/GITHUB_TOKEN kept: only for github.com, and for github.localhost when the operator named it. */
  dotcom: boolean;
  /** GH_ENTERPRISE_TOKEN/GITHUB_ENTERPRISE_TOKEN kept: only for a host the operator named (host-allow.ts). */
  enterprise: boolean;
}

/** The token policy for `target` under the raw `--git-remote-allow` entries `allow`. */
export function ghTokenPolicy(
  target: Pick<IssueTarget, 'host' | 'port'>,
  allow: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  isInsideRoots?: (absolute: string) => boolean,
): GhTokenPolicy {
  const named = (): boolean =>
    hostListed(operatorNamedGitHubHosts(allow, env, isInsideRoots), target.host, target.port);
  // github.com's tokens go to github.com; to github.localhost (gh sends them there too, over plain http to whatever
  // listens on api.github.localhost:80) only when the operator named it — `*` alone does not.
  if (target.host.toLowerCase() === 'github.com') return { dotcom: true, enterprise: false };
  if (isDotcomHost(target.host)) return { dotcom: named(), enterprise: false };
  return { dotcom: false, enterprise: named() };
}

/**
 * gh's environment (docs/issue-tools.md): the server's (config dir, CA settings, …) minus GH_REPO/GH_HOST, the variables that
 * would make gh page, colour or print debug logs (which may include headers), the proxy exemptions, and every token
 * `tokens` does not keep; with `guardUrl` as gh's only proxy (src/vcs/egress-guard.ts).
 */
export function ghEnvironment(
  tokens: GhTokenPolicy,
  guardUrl: string | null,
  base: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const key of GH_ENV_REMOVED) delete env[key];
  if (!tokens.dotcom) for (const key of GH_DOTCOM_TOKENS) delete env[key];
  if (!tokens.enterprise) for (const key of GH_ENTERPRISE_TOKENS) delete env[key];
  if (guardUrl !== null) {
    for (const key of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy']) env[key] = guardUrl;
  }
  return { ...env, GH_PROMPT_DISABLED: '1', GH_NO_UPDATE_NOTIFIER: '1', NO_COLOR: '1', GH_SPINNER_DISABLED: '1' };
}

/**
 * Prefix of the private gh configuration directories (under the OS temporary directory; the full name records the
 * owning process: src/fs/owned-temp.ts).
 */
export const GH_TOKEN_DIR_PREFIX = 'fs-tools-ghtoken-';

/** A private gh configuration directory holding the enterprise token for one host. */
export interface BoundToken {
  dir: string;
  env: NodeJS.ProcessEnv;
}

/**
 * Binds the environment's enterprise token to the target host for one gh run. gh sends GH_ENTERPRISE_TOKEN to EVERY
 * host but github.com — also to the target of a redirect gh follows without a proxy (Go never proxies loopback
 * addresses, so the egress guard cannot stop a redirect to http://127.0.0.1:…). So the token leaves the environment
 * and goes into a private GH_CONFIG_DIR (outside the roots, 0700, marked with this process: src/fs/owned-temp.ts;
 * hosts.yml 0600) as the `oauth_token` of the target host only; gh looks tokens up per request host, so any other
 * host gets none. The caller removes it when gh exits (`removeOwnedTempDir`); the process removes it on every exit
 * path it sees, and the next start sweeps one a killed server left (docs/security.md).
 * @param alwaysPrivate create the private directory even without a token (an empty gh configuration): gh's own
 *   configuration lies inside the roots, where the agent could have written it (forge-hosts.ts ghConfigReachable)
 * @returns null when no enterprise token is set and `alwaysPrivate` is false (gh's own configuration stays in force)
 */
export function bindEnterpriseToken(
  target: Pick<IssueTarget, 'host' | 'port' | 'explicitPort'>,
  env: NodeJS.ProcessEnv,
  isInsideRoots: (absolute: string) => boolean = () => false,
  alwaysPrivate = false,
): BoundToken | null {
  const token = env.GH_ENTERPRISE_TOKEN || env.GITHUB_ENTERPRISE_TOKEN;
  if (!token && !alwaysPrivate) return null;
  const keys = [target.host.toLowerCase()];
  // gh 2.23 looks the token up by host name without the port, later versions with it.
  if (target.explicitPort) keys.push(`${target.host.toLowerCase()}:${target.port}`);
  const dir = makeOwnedTempDir(privateTempBase(isInsideRoots), 'ghtoken');
  try {
    // JSON strings are YAML double-quoted scalars: no token character can break out of the value.
    const yaml = token
      ? keys
          .map(
            (k) =>
              `${JSON.stringify(k)}:\n    oauth_token: ${JSON.stringify(token)}\n    user: ${JSON.stringify('fs-tools')}\n`,
          )
          .join('')
      : '';
    writeFileSync(path.join(dir, 'hosts.yml'), yaml, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    removeOwnedTempDir(dir);
    throw error;
  }
  const out: NodeJS.ProcessEnv = { ...env, GH_CONFIG_DIR: dir };
  for (const key of GH_ENTERPRISE_TOKENS) delete out[key];
  return { dir, env: out };
}

/** Where private gh configurations may be made, in order of preference (the start-up sweep looks in all of them). */
export function ghTokenBases(): string[] {
  return [os.tmpdir(), '/dev/shm', '/var/tmp'];
}

/**
 * The first of os.tmpdir(), /dev/shm, /var/tmp (real paths) that is outside the roots: the token file must never be
 * where the agent can read it (TMPDIR may lie inside a root, e.g. a root at $HOME with TMPDIR=$HOME/tmp).
 * @throws ToolError VALIDATION reason no_private_dir when every candidate is inside the roots (nothing was sent)
 */
function privateTempBase(isInsideRoots: (absolute: string) => boolean): string {
  for (const candidate of ghTokenBases()) {
    let real: string;
    try {
      real = realpathSync(candidate);
    } catch {
      continue;
    }
    if (!isInsideRoots(real) && !isInsideRoots(path.join(real, `${GH_TOKEN_DIR_PREFIX}x`))) return real;
  }
  throw new ToolError(
    'VALIDATION',
    'Every temporary directory lies inside the allowed roots, so the enterprise token has nowhere private to be handed to gh; nothing was sent.',
    {
      details: { reason: 'no_private_dir' },
      suggestion: 'Ask the user to set TMPDIR to a directory outside the roots.',
    },
  );
}
