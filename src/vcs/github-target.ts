/**
 * Where a GitHub request goes (docs/issue-tools.md): which hosts gh treats as github.com-like, the one API authority
 * gh talks to for a target host (gh's ghinstance.RESTPrefix), the repository as a REST path, and the authority a
 * redirect names. Pure.
 */
import { locationAuthority, type Authority } from './egress-guard.js';
import type { IssueTarget } from './issues.js';

/** True for the hosts gh treats as github.com-like and sends GH_TOKEN/GITHUB_TOKEN to (exact names). */
export function isDotcomHost(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'github.com' || h === 'github.localhost';
}

/**
 * The one authority gh talks to for `target` (gh's ghinstance.RESTPrefix): api.github.com:443 for github.com (and
 * api.HOST for *.github.com), api.github.localhost:80 over plain http for github.localhost, HOST[:port] (443) for an
 * enterprise host (its REST API is https://HOST/api/v3/).
 */
export function ghApiAuthority(target: Pick<IssueTarget, 'host' | 'port' | 'explicitPort'>): {
  scheme: 'https' | 'http';
  authority: Authority;
} {
  const h = target.host.toLowerCase();
  const localhost = h === 'github.localhost';
  const dotcomLike =
    h !== 'garage.github.com' &&
    (h === 'github.com' || h.endsWith('.github.com') || localhost || h.endsWith('.github.localhost'));
  const scheme = localhost ? 'http' : 'https';
  const port = target.explicitPort ? target.port : scheme === 'http' ? 80 : 443;
  return { scheme, authority: { host: dotcomLike ? `api.${h}` : h, port } };
}

/** `owner/name` as REST path segments, each URL-encoded. */
export function repoPath(target: Pick<IssueTarget, 'repo'>): string {
  return target.repo.split('/').map(encodeURIComponent).join('/');
}

/** The authority a Location header names (relative to the API authority); null when absent or unparseable. */
export function redirectAuthority(
  location: string | undefined,
  api: ReturnType<typeof ghApiAuthority>,
): Authority | null {
  const host = api.authority.host.includes(':') ? `[${api.authority.host}]` : api.authority.host;
  return locationAuthority(location, `${api.scheme}://${host}:${api.authority.port}/`);
}
