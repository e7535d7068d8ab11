/**
 * Which repository an issue call targets (docs/issue-tools.md "Target"): an explicit repo (on `hostname`, GITLAB_HOST or the
 * forge's default host), or the remotes of the work tree around `path` (default: the first root), resolved through
 * the roots policy. GitLab's scheme and port for a remote follow src/vcs/gitlab-instance.ts.
 */
import os from 'node:os';
import { ToolError } from '../errors/tool-error.js';
import { isInsideRoots } from '../policy/containment.js';
import { configuredForgeHosts, type ConfiguredHosts, type InsideRoots } from '../vcs/forge-hosts.js';
import {
  assertSecureInstance,
  gitlabHostFromEnv,
  instanceOfRemote,
  parseGitLabInstance,
  type GitLabInstance,
} from '../vcs/gitlab-instance.js';
import type { IssueTarget } from '../vcs/issues.js';
import { listRemotes, operatorRemoteConfig, resolveRepo, type Forge, type Remote } from '../vcs/remotes.js';
import type { ToolContext } from './define-tool.js';
import { openWorkTree } from './git-status.js';
import { githubHost, gitlabInstance } from './issue-hostname.js';
import type { IssueArgs } from './issue-schema.js';

/**
 * "Inside the sandbox roots" for this call: where the agent can read or write. gh's configuration there is not the
 * operator's (src/vcs/forge-hosts.ts), and token files are never created there (src/vcs/github-token.ts).
 */
export function insideRootsOf(ctx: ToolContext): InsideRoots {
  return (p: string) => isInsideRoots(ctx.policy.roots, p);
}

/** The GitHub target for host (+ optional port) and repo. gh uses plain http only for github.localhost. */
function githubTarget(host: string, port: number | null, repo: string): IssueTarget {
  const scheme = host === 'github.localhost' ? 'http' : 'https';
  return {
    host,
    port: port ?? (scheme === 'http' ? 80 : 443),
    explicitPort: port !== null,
    scheme,
    basePath: '',
    repo,
  };
}

/**
 * Resolves the target of a call (docs/issue-tools.md "Target").
 * @throws ToolError from path policy (ROOTS_EMPTY, NOT_ALLOWED, …), git, *_REPO_UNRESOLVED, *_AMBIGUOUS,
 *   VALIDATION insecure_http (GITLAB_HOST over http to a non-loopback host)
 */
export async function resolveTarget(forge: Forge, args: IssueArgs, ctx: ToolContext): Promise<IssueTarget> {
  // The operator's forge host configuration (gh's hosts.yml, GITLAB_HOST …): real process facts, not test switches.
  const configured = (): ConfiguredHosts => configuredForgeHosts(process.env, os.homedir(), insideRootsOf(ctx));
  if (forge === 'github') {
    const given = args.hostname !== undefined ? githubHost(args.hostname) : null;
    if (args.repo !== undefined) return githubTarget(given?.host ?? 'github.com', given?.port ?? null, args.repo);
    const candidate = resolveRepo(await remotesOf(forge, args.path, ctx), 'github', {
      hostname: given?.host ?? null,
      configured: configured(),
    });
    return githubTarget(candidate.host, given ? given.port : candidate.port, candidate.repo);
  }
  const given = args.hostname !== undefined ? gitlabInstance(args.hostname) : null;
  const home = gitlabHostFromEnv();
  let instance: GitLabInstance;
  let repo: string;
  if (args.repo !== undefined) {
    instance = given ?? home ?? (parseGitLabInstance('gitlab.com') as GitLabInstance);
    repo = args.repo;
  } else {
    const candidate = resolveRepo(await remotesOf(forge, args.path, ctx), 'gitlab', {
      hostname: given?.host ?? null,
      gitlabHost: home?.host ?? null,
      configured: configured(),
    });
    repo = candidate.repo;
    if (given) instance = given;
    else if (home && home.host === candidate.host) instance = home;
    else instance = instanceOfRemote(candidate);
  }
  assertSecureInstance(instance, given ? 'hostname' : null);
  return { ...instance, repo };
}

/**
 * The remotes of the work tree containing `requested` (default: the first root), found exactly as git_status finds
 * its repository: the same sanitized view (src/vcs/git-view.ts), so every location is verified inside the roots and
 * the repository's config is the one the view read through its verifier (a `.git/config` link leading outside is
 * NOT_ALLOWED git_location_outside_roots, naming the link, before anything of the outside file is read). The view
 * runs nothing here; the operator's global config adds its remotes and rewrites (`operatorRemoteConfig`). A path that
 * is not in a work tree determines no repository: *_REPO_UNRESOLVED (reason not_a_work_tree) rather than
 * git_status's VALIDATION, so the caller is told to pass repo. docs/security.md "Finding the repository and
 * continuation cursors".
 * @throws ToolError path policy codes, *_REPO_UNRESOLVED, every code git_status's view refuses a repository with
 *   (NOT_ALLOWED, SECRET_DENIED, VALIDATION unsupported_repository / dubious_ownership / git_inside_roots, IO_ERROR
 *   corrupt_repository), git_timeout / git_output_limit from the global config
 */
async function remotesOf(forge: Forge, requested: string | undefined, ctx: ToolContext): Promise<Remote[]> {
  let view;
  try {
    view = await openWorkTree(requested ?? '.', ctx);
  } catch (error) {
    if (error instanceof ToolError && error.code === 'VALIDATION' && error.details.reason === 'not_a_work_tree') {
      throw new ToolError(
        forge === 'github' ? 'GH_REPO_UNRESOLVED' : 'GL_REPO_UNRESOLVED',
        `${error.path ?? requested ?? 'The first root'} is not inside a git work tree, so no repository can be determined from remotes.`,
        {
          path: error.path,
          details: { reason: 'not_a_work_tree' },
          suggestion: `Pass repo (${forge === 'github' ? 'owner/name' : 'group/name'}), or a path inside a clone.`,
        },
      );
    }
    throw error;
  }
  const repositoryConfig = view.repositoryConfig;
  await view.dispose();
  const operator = await operatorRemoteConfig({
    timeoutMs: ctx.config.limits.gitTimeoutMs,
    signal: ctx.signal,
    isInside: insideRootsOf(ctx),
  });
  return listRemotes([operator, repositoryConfig]);
}
