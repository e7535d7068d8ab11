/**
 * Resolving the forge repository of a git work tree from its remotes (docs/issue-tools.md "Target"): list the remotes with
 * `insteadOf` applied (as git does, from the config the sanitized view verified plus the operator's global one; no
 * include is followed, so a hostile config's includes decide nothing), parse https,
 * ssh:// and scp-style URLs (with ports and GitLab nested groups), keep the remotes of the wanted forge, and fold
 * duplicates of the same repository (same host and path, case-insensitive, `.git` stripped — https and ssh remotes
 * of one repo are one candidate). Zero candidates → *_REPO_UNRESOLVED, several → *_AMBIGUOUS with the candidates:
 * unlike gh and glab, which silently pick a remote, we never guess.
 */
import os from 'node:os';
import { ToolError } from '../errors/tool-error.js';
import { configuredForgeHosts, hostListed, type ConfiguredHosts, type HostPort } from './forge-hosts.js';
import type { ConfigList } from './git-config.js';
import { runGit, throwGitFailure, type GitOptions } from './git.js';

/** The forges the issue tools talk to. */
export type Forge = 'github' | 'gitlab';

/** A remote URL reduced to what identifies a repository. */
export interface ParsedRemoteUrl {
  /** `https`/`http` for web URLs; `ssh` for ssh:// and scp-style; `git` for git://. */
  scheme: 'https' | 'http' | 'ssh' | 'git';
  /** Lower-case host name (IPv6 without brackets); well-known ssh aliases mapped (ssh.github.com → github.com). */
  host: string;
  /** The explicit port of the URL, or null. */
  port: number | null;
  /** Repository path: segments joined by "/", no leading or trailing slash, `.git` suffix stripped. */
  path: string;
}

/** One configured remote. `url` is after `insteadOf`; it may carry credentials and is never reported as is. */
export interface Remote {
  name: string;
  url: string;
  parsed: ParsedRemoteUrl | null;
}

/** A repository found among the remotes (after folding duplicates). */
export interface RepoCandidate {
  host: string;
  /** The port of an http(s) remote (the web/API port); null for ssh remotes or when none was given. */
  port: number | null;
  /** How the first remote of this repo reaches it; `http` only for an http:// remote. */
  scheme: ParsedRemoteUrl['scheme'];
  /** `owner/name` (GitHub) or `group/sub/name` (GitLab), spelled as in the first remote. */
  repo: string;
  /** Names of the remotes that point at this repository. */
  remotes: string[];
}

/** Host aliases that name the same forge (ssh over port 443). */
const HOST_ALIASES: Readonly<Record<string, string>> = {
  'ssh.github.com': 'github.com',
  'www.github.com': 'github.com',
  'altssh.gitlab.com': 'gitlab.com',
};

/** Splits `host[:port]` (IPv6 in brackets). @returns null for a malformed authority */
export function splitHostPort(authority: string): { host: string; port: number | null } | null {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:/?#[\]@]+))(?::(\d{1,5}))?$/.exec(authority);
  if (!m) return null;
  const host = (m[1] ?? m[2]).toLowerCase();
  const port = m[3] === undefined ? null : Number(m[3]);
  if (port !== null && (port < 1 || port > 65535)) return null;
  return { host: HOST_ALIASES[host] ?? host, port };
}

/** Normalizes a repository path. @returns null when it has empty, `.` or `..` segments */
function normalizePath(raw: string): string | null {
  let p = raw;
  try {
    p = decodeURIComponent(p);
  } catch {
    /* keep as given */
  }
  p = p
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/i, '')
    .replace(/\/+$/, '');
  if (!p) return null;
  const segments = p.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..' || /[\s\0?#]/.test(s))) return null;
  return segments.join('/');
}

const URL_SCHEMES: Readonly<Record<string, ParsedRemoteUrl['scheme']>> = {
  https: 'https',
  http: 'http',
  ssh: 'ssh',
  'git+ssh': 'ssh',
  'ssh+git': 'ssh',
  git: 'git',
};

/**
 * Parses a git remote URL: `https://[user[:pw]@]host[:port]/path[.git]`, `http://…`, `ssh://[user@]host[:port]/path`
 * (also git+ssh://, ssh+git://), `git://host/path`, and scp-style `[user@]host:path` (git's rule: a colon before
 * any slash, and not a one-letter "host", which is a Windows drive).
 * @returns null for local paths, file:// and anything unparseable
 */
export function parseRemoteUrl(url: string): ParsedRemoteUrl | null {
  const trimmed = url.trim();
  const withScheme = /^([a-z][a-z0-9+.-]*):\/\/([^/]*)(\/.*)?$/i.exec(trimmed);
  if (withScheme) {
    const scheme = URL_SCHEMES[withScheme[1].toLowerCase()];
    if (!scheme) return null;
    const authority = withScheme[2].slice(withScheme[2].lastIndexOf('@') + 1);
    const hp = splitHostPort(authority);
    const path = normalizePath(withScheme[3] ?? '');
    if (!hp || !path || path.startsWith('~')) return null;
    return { scheme, host: hp.host, port: hp.port, path };
  }
  const scp = /^(?:[^@/\s]+@)?(\[[0-9a-fA-F:.]+\]|[^:/\s[\]]+):(?!\/\/)(.+)$/.exec(trimmed);
  if (scp && scp[1].length > 1) {
    const hp = splitHostPort(scp[1]);
    const path = normalizePath(scp[2]);
    if (!hp || !path || path.startsWith('~')) return null;
    return { scheme: 'ssh', host: hp.host, port: null, path };
  }
  return null;
}

/**
 * The remotes of a repository with `insteadOf` applied, from its configuration as already read: `configs` in git's
 * order (the operator's global config first, then the repository's own — the one the sanitized view verified and
 * parsed, src/vcs/git-view.ts `repositoryConfig`). No git process reads the repository's config for this, and no
 * include is followed anywhere: `include.path` / `includeIf` of a hostile repository's config may name any file
 * (another repository's config outside the roots, with a private project and its host), and neither a remote nor a
 * rewrite from such a file may decide where a forge call goes. `insteadOf` is applied as git does (the longest
 * matching prefix wins, `pushInsteadOf` is for pushes only); a remote with several urls is its first one (git's fetch
 * url). Legacy `.git/remotes/` files and a linked worktree's `config.worktree` are not read. Pure.
 */
export function listRemotes(configs: readonly ConfigList[]): Remote[] {
  const urls = new Map<string, string>();
  const rewrites: Array<{ base: string; prefix: string }> = [];
  for (const config of configs) {
    for (const [key, values] of config) {
      const remote = /^remote\.(.+)\.url$/s.exec(key);
      if (remote) {
        if (!urls.has(remote[1]) && values.length > 0) urls.set(remote[1], values[0]);
        continue;
      }
      const rewrite = /^url\.(.+)\.insteadof$/s.exec(key);
      if (rewrite) for (const v of values) if (v !== '') rewrites.push({ base: rewrite[1], prefix: v });
    }
  }
  return [...urls].map(([name, raw]) => {
    let best: { base: string; prefix: string } | null = null;
    for (const r of rewrites) if (raw.startsWith(r.prefix) && (!best || r.prefix.length > best.prefix.length)) best = r;
    const url = best ? best.base + raw.slice(best.prefix.length) : raw;
    return { name, url, parsed: parseRemoteUrl(url) };
  });
}

/** Most bytes of the operator's remote settings read from the global config; more is refused, never used in part. */
const GLOBAL_REMOTES_MAX_BYTES = 1024 * 1024;

/**
 * The remote urls and `insteadOf` rewrites of the operator's global git config (`~/.gitconfig`, the XDG one), from
 * ONE `git config --global --no-includes -z --get-regexp` run outside any repository (`runGit`: `GIT_DIR=/dev/null`,
 * the repository's own config comes from the verified view), no include followed, nothing run.
 * @returns the settings as a ConfigList (keys as git prints them)
 * @throws ToolError from runGit (git missing or inside the roots, timeout); IO_ERROR git_output_limit when the
 *   settings exceed 1 MiB (a dropped rewrite would change the answer), git_failed when git refuses the file
 */
export async function operatorRemoteConfig(options: Omit<GitOptions, 'cwd'>): Promise<ConfigList> {
  const where = os.tmpdir();
  const result = await runGit(
    ['config', '--global', '--no-includes', '-z', '--get-regexp', '^(remote\\..*\\.url|url\\..*\\.insteadof)$'],
    { ...options, cwd: where, maxOutputBytes: GLOBAL_REMOTES_MAX_BYTES },
  );
  // exit 1 with no output: nothing of it is configured (or no global config at all).
  if (result.outputLimited || (result.exitCode !== 0 && !(result.exitCode === 1 && result.stdout === ''))) {
    throwGitFailure(result, where, 'config');
  }
  const out: ConfigList = new Map();
  // -z: each entry is "key\nvalue\0" (a key without value has no "\n": skipped).
  for (const entry of result.stdout.split('\0')) {
    const nl = entry.indexOf('\n');
    if (nl < 0) continue;
    const key = entry.slice(0, nl);
    const values = out.get(key);
    if (values) values.push(entry.slice(nl + 1));
    else out.set(key, [entry.slice(nl + 1)]);
  }
  return out;
}

/**
 * True for a GitHub host: exactly github.com, github.localhost (gh's development host), or a host the operator
 * configured for GitHub (`configured`, default: GH_HOST and gh's hosts.yml — src/vcs/forge-hosts.ts). Never a
 * substring test: `github.attacker.example` is not GitHub.
 */
export function isGitHubHost(host: string, configured: readonly HostPort[] = configuredForgeHosts().github): boolean {
  const h = host.toLowerCase();
  return h === 'github.com' || h === 'github.localhost' || hostListed(configured, h);
}

/**
 * True for a GitLab host: exactly gitlab.com, the host of GITLAB_HOST (`gitlabHost`), or a host the operator
 * configured for GitLab (`configured`, default: GITLAB_HOST and CI_SERVER_URL/CI_SERVER_HOST). Never a substring test.
 */
export function isGitLabHost(
  host: string,
  gitlabHost: string | null,
  configured: readonly HostPort[] = configuredForgeHosts().gitlab,
): boolean {
  const h = host.toLowerCase();
  return h === 'gitlab.com' || (gitlabHost !== null && h === gitlabHost.toLowerCase()) || hostListed(configured, h);
}

/** Options of `resolveRepo`. */
export interface ResolveOptions {
  /** Host of the `hostname` parameter: when given, only remotes on this host count (whatever its name). */
  hostname: string | null;
  /** GitLab only: the host of GITLAB_HOST, which also counts as a GitLab host. */
  gitlabHost?: string | null;
  /** The operator-configured hosts (default: from the environment, src/vcs/forge-hosts.ts). */
  configured?: ConfiguredHosts;
}

/**
 * Picks the one repository of `forge` among `remotes` (docs/issue-tools.md).
 * @returns the candidate, duplicates (same host + path, case-insensitive) folded
 * @throws ToolError GH_REPO_UNRESOLVED / GL_REPO_UNRESOLVED (details.reason no_remotes | no_matching_remote,
 *   details.remotes: [{name, host}]), GH_AMBIGUOUS / GL_AMBIGUOUS (details.candidates: [{host, repo, remotes}])
 */
export function resolveRepo(remotes: readonly Remote[], forge: Forge, options: ResolveOptions): RepoCandidate {
  const wanted = options.hostname?.toLowerCase() ?? null;
  const byKey = new Map<string, RepoCandidate>();
  const configured = wanted === null ? (options.configured ?? configuredForgeHosts()) : null;
  for (const remote of remotes) {
    const p = remote.parsed;
    if (!p) continue;
    const onForge =
      wanted !== null
        ? p.host === wanted
        : forge === 'github'
          ? isGitHubHost(p.host, configured!.github)
          : isGitLabHost(p.host, options.gitlabHost ?? null, configured!.gitlab);
    if (!onForge) continue;
    const segments = p.path.split('/').length;
    if (forge === 'github' ? segments !== 2 : segments < 2) continue;
    const key = `${p.host}/${p.path.toLowerCase()}`;
    const existing = byKey.get(key);
    if (existing) {
      existing.remotes.push(remote.name);
      // Prefer the web URL's port and scheme (an ssh remote's port is not the API's).
      if (existing.scheme === 'ssh' || existing.scheme === 'git') {
        if (p.scheme === 'https' || p.scheme === 'http') Object.assign(existing, { scheme: p.scheme, port: p.port });
      }
      continue;
    }
    byKey.set(key, {
      host: p.host,
      port: p.scheme === 'https' || p.scheme === 'http' ? p.port : null,
      scheme: p.scheme,
      repo: p.path,
      remotes: [remote.name],
    });
  }
  const prefix = forge === 'github' ? 'GH' : 'GL';
  const forgeName = forge === 'github' ? 'GitHub' : 'GitLab';
  const candidates = [...byKey.values()];
  if (candidates.length === 0) {
    const seen = remotes.map((r) => ({ name: r.name, host: r.parsed?.host ?? null }));
    throw new ToolError(
      `${prefix}_REPO_UNRESOLVED`,
      remotes.length === 0
        ? `The work tree has no git remotes, so no ${forgeName} repository can be determined.`
        : `None of the work tree's remotes (${remotes.map((r) => r.name).join(', ')}) is a ${forgeName} repository${wanted ? ` on ${wanted}` : ''}.`,
      {
        details: {
          reason: remotes.length === 0 ? 'no_remotes' : 'no_matching_remote',
          remotes: seen,
          ...(wanted ? { hostname: wanted } : {}),
        },
        suggestion: `Pass repo explicitly (${forge === 'github' ? 'owner/name' : 'group/name'})${forge === 'gitlab' || wanted ? ' and hostname' : ''}.`,
      },
    );
  }
  if (candidates.length > 1) {
    throw new ToolError(
      `${prefix}_AMBIGUOUS`,
      `The work tree's remotes point at ${candidates.length} different ${forgeName} repositories: ` +
        `${candidates.map((c) => `${c.host}/${c.repo}`).join(', ')}.`,
      {
        details: { candidates: candidates.map((c) => ({ host: c.host, repo: c.repo, remotes: c.remotes })) },
        suggestion: `Pass repo (and hostname) for the one you mean, e.g. repo: "${candidates[0].repo}".`,
      },
    );
  }
  return candidates[0];
}
