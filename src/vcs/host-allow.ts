/**
 * `--git-remote-allow` (docs/cli.md): which forge hosts and repositories the issue tools may reach.
 *
 * - Flag absent (or empty): the hosts the operator configured (src/vcs/forge-hosts.ts: github.com, gh's hosts.yml
 *   hosts, GH_HOST, gitlab.com, GITLAB_HOST, CI_SERVER_URL/CI_SERVER_HOST), read from the environment at each call.
 * - Flag given: its entries REPLACE that default (so `github.com/acme` restricts to acme's repositories); the entry
 *   `default` puts the configured hosts back in (`default,ghe.corp.example` extends the default); the entry `*`
 *   allows every host.
 * - An entry is a host (`github.com`, `gitlab.example.com:8443`), a host with a path prefix (`github.com/acme`,
 *   `gitlab.com/group/sub`), or a repository URL in any form git accepts (`https://github.com/acme/tool.git`,
 *   `git@github.com:acme/tool.git`). Hosts compare exactly (case-insensitively, never by substring); a path prefix
 *   matches whole segments, case-insensitively; an entry with a port matches only that port, an entry without one only
 *   the default ports 443 and 80 (the target's port is its explicit one, else its scheme's default). An entry that
 *   cannot be parsed matches nothing (fail closed).
 *
 * Checked after the READONLY/budget gates and before anything is sent or any CLI is started; a denial is
 * GH_HOST_DENIED for both forges.
 */
import { ToolError } from '../errors/tool-error.js';
import os from 'node:os';
import { configuredForgeHosts, type HostPort, type InsideRoots } from './forge-hosts.js';
import { parseRemoteUrl, splitHostPort } from './remotes.js';

/** One parsed allow-list entry. */
export interface AllowEntry {
  host: string;
  port: number | null;
  /** Lower-case path segments the target's repository path must start with (empty: any repository). */
  segments: string[];
}

/** What a call is about to reach. */
export interface AllowTarget {
  host: string;
  /** The port actually used (explicit, else 443 for https / 80 for http). */
  port: number;
  /** Repository path (`owner/name`, `group/sub/name`). */
  repo: string;
}

/** Parses one `--git-remote-allow` entry. @returns null when malformed */
export function parseAllowEntry(entry: string): AllowEntry | null {
  const raw = entry.trim();
  if (!raw) return null;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    // A URL: its path may be just "/" (host only); parseRemoteUrl needs a path, so handle the bare host first.
    const bare = /^([a-z][a-z0-9+.-]*):\/\/(?:[^/@]*@)?([^/]+)\/*$/i.exec(raw);
    if (bare) {
      const hp = splitHostPort(bare[2]);
      return hp ? { host: hp.host, port: hp.port, segments: [] } : null;
    }
    const parsed = parseRemoteUrl(raw);
    return parsed ? { host: parsed.host, port: parsed.port, segments: parsed.path.toLowerCase().split('/') } : null;
  }
  // host[:port][/path…]: a colon followed by digits (and then "/" or the end) is a port, otherwise scp-style.
  const plain = /^([^/:\s]+|\[[0-9a-fA-F:.]+\])(?::(\d{1,5}))?(?:\/(.*))?$/.exec(raw);
  if (plain) {
    const hp = splitHostPort(plain[2] ? `${plain[1]}:${plain[2]}` : plain[1]);
    if (!hp) return null;
    const rest = (plain[3] ?? '').replace(/\/+$/, '').replace(/\.git$/i, '');
    const segments = rest ? rest.toLowerCase().split('/') : [];
    if (segments.some((s) => s === '' || s === '.' || s === '..')) return null;
    return { host: hp.host, port: hp.port, segments };
  }
  const scp = parseRemoteUrl(raw);
  return scp ? { host: scp.host, port: null, segments: scp.path.toLowerCase().split('/') } : null;
}

/** True when `entry` admits `target`. */
export function entryAllows(entry: AllowEntry, target: AllowTarget): boolean {
  if (entry.host !== target.host.toLowerCase()) return false;
  // An entry without a port admits only the default ports (443, 80): `github.com` does not admit github.com:8443.
  if (entry.port !== null ? entry.port !== target.port : target.port !== 443 && target.port !== 80) return false;
  const repo = target.repo.toLowerCase().split('/');
  return entry.segments.every((s, i) => repo[i] === s);
}

/** The entry that puts the operator-configured hosts into a given list. */
export const ALLOW_DEFAULT_ENTRY = 'default';
/** The entry that allows every host. */
export const ALLOW_ANY_ENTRY = '*';

/** The default entries: every configured host of both forges, any repository. */
export function defaultAllowEntries(env: NodeJS.ProcessEnv = process.env, isInsideRoots?: InsideRoots): AllowEntry[] {
  const hosts = configuredForgeHosts(env, os.homedir(), isInsideRoots);
  return [...hosts.github, ...hosts.gitlab].map((h: HostPort) => ({ host: h.host, port: h.port, segments: [] }));
}

/**
 * The effective allow list: null for "any host" (`*`), else the parsed entries (the default when `allow` is empty,
 * the default added where `default` appears). Malformed entries are dropped (they match nothing).
 */
export function effectiveAllowEntries(
  allow: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  isInsideRoots?: InsideRoots,
): AllowEntry[] | null {
  const raw = allow.map((a) => a.trim()).filter(Boolean);
  if (raw.includes(ALLOW_ANY_ENTRY)) return null;
  if (raw.length === 0) return defaultAllowEntries(env, isInsideRoots);
  const entries: AllowEntry[] = [];
  for (const item of raw) {
    if (item.toLowerCase() === ALLOW_DEFAULT_ENTRY) entries.push(...defaultAllowEntries(env, isInsideRoots));
    else {
      const e = parseAllowEntry(item);
      if (e) entries.push(e);
    }
  }
  return entries;
}

/**
 * Hosts the operator named: the configured GitHub hosts plus the hosts of explicit `--git-remote-allow` entries
 * (not `*`), minus the configured GitLab hosts unless also configured for GitHub. An enterprise GitHub token may be
 * given to gh only for one of these (src/vcs/github-token.ts).
 */
export function operatorNamedGitHubHosts(
  allow: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  isInsideRoots?: InsideRoots,
): HostPort[] {
  const hosts = configuredForgeHosts(env, os.homedir(), isInsideRoots);
  const out: HostPort[] = [...hosts.github];
  for (const item of allow.map((a) => a.trim())) {
    if (!item || item === ALLOW_ANY_ENTRY || item.toLowerCase() === ALLOW_DEFAULT_ENTRY) continue;
    const e = parseAllowEntry(item);
    if (!e) continue;
    const gitlab = hosts.gitlab.some((g) => g.host === e.host);
    if (!gitlab && !out.some((h) => h.host === e.host && h.port === e.port)) out.push({ host: e.host, port: e.port });
  }
  return out;
}

/**
 * True when the allow list (raw `--git-remote-allow` entries, semantics in the module comment) admits `target`.
 */
export function isAllowed(
  allow: readonly string[],
  target: AllowTarget,
  env: NodeJS.ProcessEnv = process.env,
  isInsideRoots?: InsideRoots,
): boolean {
  const entries = effectiveAllowEntries(allow, env, isInsideRoots);
  return entries === null || entries.some((entry) => entryAllows(entry, target));
}

/**
 * @throws ToolError GH_HOST_DENIED (details: host, port, repo, allowed) when `target` is outside the allow list —
 *   for both forges (docs/issue-tools.md). `allowed` lists the effective entries (host[:port][/prefix]; "*" for any).
 */
export function assertHostAllowed(
  allow: readonly string[],
  target: AllowTarget,
  env: NodeJS.ProcessEnv = process.env,
  isInsideRoots?: InsideRoots,
): void {
  if (isAllowed(allow, target, env, isInsideRoots)) return;
  const entries = effectiveAllowEntries(allow, env, isInsideRoots) ?? [];
  const allowed = entries.map(
    (e) =>
      `${e.host.includes(':') ? `[${e.host}]` : e.host}${e.port !== null ? `:${e.port}` : ''}${e.segments.length ? `/${e.segments.join('/')}` : ''}`,
  );
  throw new ToolError(
    'GH_HOST_DENIED',
    `${target.host}${[80, 443].includes(target.port) ? '' : `:${target.port}`}/${target.repo} is not allowed by --git-remote-allow ` +
      `(${allow.length === 0 ? 'default: the hosts the operator configured' : 'as given'}); nothing was sent.`,
    {
      details: { host: target.host, port: target.port, repo: target.repo, allowed: [...new Set(allowed)] },
      suggestion:
        'Use a repository on an allowed host, or ask the user to add it to --git-remote-allow ' +
        '(e.g. --git-remote-allow=default,HOST; "*" allows any host).',
    },
  );
}
