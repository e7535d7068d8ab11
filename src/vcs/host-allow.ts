/**
 * `--git-remote-allow` (SPEC §1, §8): which forge hosts and repositories the issue tools may reach. An entry is a
 * host (`github.com`, `gitlab.example.com:8443`), a host with a path prefix (`github.com/acme`,
 * `gitlab.com/group/sub`), or a repository URL in any form git accepts (`https://github.com/acme/tool.git`,
 * `git@github.com:acme/tool.git`). Hosts compare case-insensitively; a path prefix matches whole segments,
 * case-insensitively; an entry with a port matches only that port (the target's port is its explicit one, else its
 * scheme's default: 443 for https, 80 for http). An empty list allows every host. An entry that cannot be parsed
 * matches nothing (fail closed). Checked after the READONLY/budget gates and before anything is sent; a denial is
 * GH_HOST_DENIED for both forges.
 */
import { ToolError } from '../errors/tool-error.js';
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
  if (entry.port !== null && entry.port !== target.port) return false;
  const repo = target.repo.toLowerCase().split('/');
  return entry.segments.every((s, i) => repo[i] === s);
}

/** True when the allow list (raw `--git-remote-allow` entries) admits `target`; an empty list admits everything. */
export function isAllowed(allow: readonly string[], target: AllowTarget): boolean {
  if (allow.length === 0) return true;
  return allow.some((raw) => {
    const entry = parseAllowEntry(raw);
    return entry !== null && entryAllows(entry, target);
  });
}

/**
 * @throws ToolError GH_HOST_DENIED (details: host, port, repo, allowed) when `target` is outside the allow list —
 *   for both forges (SPEC §3.2)
 */
export function assertHostAllowed(allow: readonly string[], target: AllowTarget): void {
  if (isAllowed(allow, target)) return;
  throw new ToolError('GH_HOST_DENIED',
    `${target.host}${[80, 443].includes(target.port) ? '' : `:${target.port}`}/${target.repo} is not allowed by --git-remote-allow; nothing was sent.`, {
      details: { host: target.host, port: target.port, repo: target.repo, allowed: [...allow] },
      suggestion: 'Use a repository on an allowed host, or ask the user to add it to --git-remote-allow.',
    });
}
