/**
 * GitLab instances (docs/issue-tools.md): how an instance is spelled (`hostname`, GITLAB_HOST, CI_SERVER_URL), which instance a
 * git remote names, and the scheme rule: plain http only for loopback hosts (127.0.0.0/8, ::1, localhost), so a token
 * never crosses a network unencrypted; anything else over http is VALIDATION reason insecure_http and nothing is sent.
 */
import { ToolError } from '../errors/tool-error.js';
import type { IssueTarget } from './issues.js';
import { splitHostPort, type RepoCandidate } from './remotes.js';

/** A GitLab instance: scheme, host, port and an optional path prefix. */
export type GitLabInstance = Omit<IssueTarget, 'repo'>;

/**
 * Parses a GitLab instance spelling: `gitlab.example.com`, `gitlab.example.com:8443`, `https://gitlab.example.com`,
 * `http://127.0.0.1:8929`, `https://example.com/gitlab` (instance below a path). No scheme means https.
 * @returns null when it is not a plain http(s) origin (credentials, query, fragment, another scheme)
 */
export function parseGitLabInstance(raw: string): GitLabInstance | null {
  const m = /^(?:(https?):\/\/)?([^/?#@\s]+)(\/[^?#\s]*)?$/i.exec(raw.trim());
  if (!m) return null;
  const hp = splitHostPort(m[2]);
  if (!hp) return null;
  const scheme = (m[1]?.toLowerCase() ?? 'https') as 'https' | 'http';
  const basePath = (m[3] ?? '').replace(/\/+$/, '');
  if (basePath.split('/').some((s) => s === '.' || s === '..')) return null;
  return {
    scheme,
    host: hp.host,
    port: hp.port ?? (scheme === 'https' ? 443 : 80),
    explicitPort: hp.port !== null,
    basePath,
  };
}

/**
 * The instance named by GITLAB_HOST (host, host:port or URL), or null when unset or unparseable. docs/issue-tools.md: the
 * fallback instance when neither `hostname` nor a remote decides, and the instance GITLAB_TOKEN belongs to.
 */
export function gitlabHostFromEnv(env: NodeJS.ProcessEnv = process.env): GitLabInstance | null {
  return env.GITLAB_HOST ? parseGitLabInstance(env.GITLAB_HOST) : null;
}

/** True for 127.0.0.0/8, ::1 and localhost (docs/issue-tools.md: the only hosts plain http may reach). */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(?:\.\d{1,3}){3}$/.test(h);
}

/**
 * @throws ToolError VALIDATION reason insecure_http for plain http to a non-loopback host (nothing is sent)
 */
export function assertSecureInstance(instance: GitLabInstance, field: string | null): void {
  if (instance.scheme === 'http' && !isLoopbackHost(instance.host)) {
    throw new ToolError(
      'VALIDATION',
      `Plain http to ${instance.host} is refused: only loopback hosts may be reached without TLS.`,
      {
        details: { reason: 'insecure_http', field, host: instance.host },
        suggestion: `Use https://${instance.host}${instance.explicitPort ? `:${instance.port}` : ''} instead.`,
      },
    );
  }
}

/**
 * True when `b` is the instance `a` names: same scheme, host, port and path prefix. Host and port alone are not
 * enough: `https://example.com/gitlab` and `https://example.com/other` are different applications on one origin,
 * and a token of the first must not go to the second (nor over plain http to the port of an https instance).
 */
export function sameInstance(a: GitLabInstance | null, b: GitLabInstance): boolean {
  return a !== null && a.scheme === b.scheme && a.host === b.host && a.port === b.port && a.basePath === b.basePath;
}

/**
 * The instance a git remote names, when neither `hostname` nor GITLAB_HOST decides (docs/issue-tools.md): an http remote keeps
 * http only on a loopback host; anything else is reached over https — on the https remote's port, else the default
 * (an http remote's port is not an https port).
 */
export function instanceOfRemote(remote: Pick<RepoCandidate, 'scheme' | 'host' | 'port'>): GitLabInstance {
  const scheme = remote.scheme === 'http' && isLoopbackHost(remote.host) ? 'http' : 'https';
  const port = remote.scheme === scheme ? remote.port : null;
  return {
    scheme,
    host: remote.host,
    port: port ?? (scheme === 'http' ? 80 : 443),
    explicitPort: port !== null,
    basePath: '',
  };
}
