/**
 * The issue tools' `hostname` argument (docs/issue-tools.md): a GitHub host (gh decides the scheme) or a GitLab instance (host,
 * host:port or http(s) URL, src/vcs/gitlab-instance.ts). Used by the argument rules and by target resolution.
 */
import { ToolError } from '../errors/tool-error.js';
import { parseGitLabInstance, type GitLabInstance } from '../vcs/gitlab-instance.js';
import { splitHostPort } from '../vcs/remotes.js';

/** Parses a GitHub `hostname` (host or host:port; an https:// or http:// prefix is dropped: gh decides the scheme). */
export function githubHost(raw: string): { host: string; port: number | null } {
  const bare = raw.replace(/^https?:\/\//i, '').replace(/\/+$/, '');
  const hp = splitHostPort(bare);
  if (!hp) {
    throw new ToolError('VALIDATION', `'hostname' is not a host name: ${raw}.`, {
      details: { reason: 'invalid_hostname', field: 'hostname' },
      suggestion: 'Pass a host such as github.com or ghe.example.com.',
    });
  }
  return hp;
}

/**
 * Parses a GitLab `hostname` (host, host:port, or an http(s) URL with an optional path prefix).
 * @throws ToolError VALIDATION invalid_hostname
 */
export function gitlabInstance(raw: string): GitLabInstance {
  const instance = parseGitLabInstance(raw);
  if (!instance) {
    throw new ToolError('VALIDATION', `'hostname' is not a GitLab host or http(s) URL: ${raw}.`, {
      details: { reason: 'invalid_hostname', field: 'hostname' },
      suggestion: 'Pass a host (gitlab.example.com), host:port, or a URL such as https://gitlab.example.com.',
    });
  }
  return instance;
}
