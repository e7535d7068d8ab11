/**
 * Which GitLab token a request may carry (docs/issue-tools.md): a token from the environment is sent only to its own
 * instance (same scheme, host, port and path prefix): GITLAB_TOKEN/GITLAB_PRIVATE_TOKEN to GITLAB_HOST (gitlab.com
 * when unset), CI_JOB_TOKEN to CI_SERVER_URL/CI_SERVER_HOST. A remote or a `hostname` pointing elsewhere is called
 * without it — a repository's remote must not be able to collect the user's token.
 */
import { parseGitLabInstance, sameInstance, type GitLabInstance } from './gitlab-instance.js';

/** A token and the header that carries it. */
export interface GitLabToken {
  header: 'PRIVATE-TOKEN' | 'JOB-TOKEN';
  value: string;
  /** The environment variable it came from. */
  source: string;
}

/**
 * The token for `instance` from the environment, or null (none set, or the token belongs to another instance).
 * @returns also `withheld`: a token exists but is bound to another host
 */
export function gitlabToken(
  instance: GitLabInstance,
  env: NodeJS.ProcessEnv = process.env,
): { token: GitLabToken | null; withheld: boolean } {
  const home = parseGitLabInstance(env.GITLAB_HOST || 'gitlab.com');
  const pat = env.GITLAB_TOKEN
    ? { value: env.GITLAB_TOKEN, source: 'GITLAB_TOKEN' }
    : env.GITLAB_PRIVATE_TOKEN
      ? { value: env.GITLAB_PRIVATE_TOKEN, source: 'GITLAB_PRIVATE_TOKEN' }
      : null;
  if (pat && sameInstance(home, instance)) return { token: { header: 'PRIVATE-TOKEN', ...pat }, withheld: false };
  const ciServer = env.CI_SERVER_URL
    ? parseGitLabInstance(env.CI_SERVER_URL)
    : env.CI_SERVER_HOST
      ? parseGitLabInstance(env.CI_SERVER_HOST)
      : null;
  if (env.CI_JOB_TOKEN && sameInstance(ciServer, instance)) {
    return { token: { header: 'JOB-TOKEN', value: env.CI_JOB_TOKEN, source: 'CI_JOB_TOKEN' }, withheld: false };
  }
  return { token: null, withheld: pat !== null || Boolean(env.CI_JOB_TOKEN) };
}
