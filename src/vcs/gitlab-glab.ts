/**
 * The glab transport of the GitLab backend (docs/issue-tools.md): `glab api --hostname HOST -X METHOD -i [--input -] PATH` when
 * glab is on PATH (it owns authentication and hosts; same `-X`/`-i`/`--input -` discipline as gh), run by the one
 * subprocess runner. glab (Go) follows redirects and forwards PRIVATE-TOKEN, so it runs behind the egress guard
 * (src/vcs/egress-guard.ts): a redirect to another host is GH_HOST_DENIED (reason redirect). A glab inside the roots
 * is never run (as if not installed: the HTTPS transport runs instead).
 */
import { startEgressGuard } from './egress-guard.js';
import { findCli } from './find-cli.js';
import { bodyMessage, forgeError } from './forge-errors.js';
import { cliResponse, parseJsonBody, redirectDenied, type ForgeResponse } from './forge-response.js';
import { classifyGitLab, classifyGlabStderr } from './gitlab-classify.js';
import type { GitLabInstance } from './gitlab-instance.js';
import type { GlRequest } from './gitlab-request.js';
import { gitlabToken } from './gitlab-token.js';
import { hostArg, type ForgeCallOptions } from './issues.js';
import { runCommand } from './run-command.js';

/** glab's environment: the server's, minus GITLAB_REPO (never decides the target) and debug/colour switches. */
export function glabEnvironment(
  instance: GitLabInstance,
  base: NodeJS.ProcessEnv = process.env,
  guardUrl: string | null = null,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const key of [
    'GITLAB_REPO',
    'GLAB_DEBUG',
    'DEBUG',
    'GLAB_PAGER',
    'PAGER',
    'CLICOLOR_FORCE',
    'NO_PROXY',
    'no_proxy',
    'REQUEST_METHOD',
    'ALL_PROXY',
    'all_proxy',
  ])
    delete env[key];
  // glab (Go) follows redirects and forwards PRIVATE-TOKEN to the new host: the egress guard is its only proxy.
  if (guardUrl !== null)
    for (const key of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy']) env[key] = guardUrl;
  // The environment token belongs to its own instance only (see the module comment); glab's stored per-host
  // credentials still apply.
  if (!gitlabToken(instance, base).token) {
    for (const key of ['GITLAB_TOKEN', 'GITLAB_PRIVATE_TOKEN', 'OAUTH_TOKEN', 'CI_JOB_TOKEN']) delete env[key];
  }
  return { ...env, NO_PROMPT: '1', NO_COLOR: '1', GLAB_CHECK_UPDATE: 'false', GLAB_SEND_TELEMETRY: 'false' };
}

/** The outcome of trying glab: null when glab is not installed (ENOENT), so the HTTPS path runs instead. */
export async function viaGlab(
  instance: GitLabInstance,
  req: GlRequest,
  opts: ForgeCallOptions,
): Promise<ForgeResponse | null> {
  // A glab inside the roots (agent-plantable, src/vcs/find-cli.ts) is never run: as if not installed (HTTPS path).
  const cli = findCli('glab', process.env, opts.isInsideRoots);
  if (cli.file === null || cli.insideRoots) return null;
  const args = [
    'api',
    '--hostname',
    hostArg({ ...instance, repo: '' }),
    '-X',
    req.method,
    '-i',
    '-H',
    'Accept: application/json',
  ];
  if (req.body !== undefined) args.push('-H', 'Content-Type: application/json', '--input', '-');
  args.push(req.apiPath);
  const guard = await startEgressGuard([{ host: instance.host, port: instance.port }], instance.scheme);
  let result;
  try {
    result = await runCommand(cli.file, args, {
      env: glabEnvironment(instance, process.env, guard.url),
      timeoutMs: opts.timeoutMs,
      maxOutputBytes: opts.maxOutputBytes,
      input: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: opts.signal,
    });
  } finally {
    await guard.close();
  }
  if (result.spawnError === 'ENOENT') return null;
  const host = hostArg({ ...instance, repo: '' });
  if (guard.denied.length > 0) throw redirectDenied('GitLab', host, instance, guard.denied[0], req.kind, req.subject);
  const { response, ok } = cliResponse(result);
  if (ok && response) {
    const data = parseJsonBody(response.body, response.status, {
      forge: 'GitLab',
      host: instance.host,
      kind: req.kind,
      subject: req.subject,
    });
    return { status: response.status, headers: response.headers, data };
  }
  const transport = response ? null : classifyGlabStderr(result.stderr, result.spawnError);
  throw forgeError(
    req.kind,
    classifyGitLab(
      {
        status: response?.status ?? null,
        headers: response?.headers ?? {},
        bodyMessage: response ? bodyMessage(response.body) : null,
        timedOut: result.timedOut,
        outputLimited: result.outputLimited,
        transportCode: transport,
        transportMessage: result.stderr || null,
        exitCode: result.exitCode,
        tokenSent: true,
        tokenWithheld: false,
      },
      { host, timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes, nowMs: Date.now() },
    ),
    req.subject,
  );
}
