/**
 * One GitHub REST request through the `gh` CLI (docs/issue-tools.md):
 *   gh api --hostname HOST -X METHOD -i -H 'Accept: application/vnd.github+json' [--input -] ENDPOINT
 * run by the one subprocess runner (no shell, --forge-timeout-ms, --forge-output-bytes), REST only, `-X` always
 * explicit, request bodies as JSON on stdin, the target always explicit (GH_REPO/GH_HOST are removed from gh's
 * environment so they never decide it; endpoints carry no `{owner}`/`{repo}` placeholders). `-i` makes gh print the
 * status line and headers before the body — also on HTTP errors, where gh exits 1 and prints
 * "gh: <message> (HTTP 403)" on stderr — so the classifier (src/vcs/github-classify.ts) knows the status and the
 * rate-limit headers.
 *
 * gh behaviour relied on (gh 2.23): exit 4 when no token is configured; plain http only for `github.localhost`
 * (http://api.github.localhost/…); transport errors printed as Go errors ("Post \"…\": EOF", "dial tcp …: connect:
 * connection refused"); no retries of its own.
 *
 * Hosts and tokens: the allow-list has been checked before gh is started (src/vcs/host-allow.ts); which tokens gh
 * gets is src/vcs/github-token.ts; every run has the egress guard (src/vcs/egress-guard.ts) as its only proxy, so a
 * redirect to another host is neither followed nor believed (GH_HOST_DENIED, reason redirect). gh's stderr is never
 * copied into a result: only its class. Success, JSON bodies and redirect refusals are what both forges share
 * (src/vcs/forge-response.ts).
 */
import os from 'node:os';
import { removeOwnedTempDir } from '../fs/owned-temp.js';
import { startEgressGuard } from './egress-guard.js';
import { findCli } from './find-cli.js';
import { bodyMessage, forgeError } from './forge-errors.js';
import { ghConfigReachable } from './forge-hosts.js';
import { cliResponse, parseJsonBody, redirectDenied, type ForgeRequest, type ForgeResponse } from './forge-response.js';
import type { IncludedResponse } from './forge-errors.js';
import { classifyGh } from './github-classify.js';
import { ghApiAuthority, redirectAuthority } from './github-target.js';
import { bindEnterpriseToken, ghEnvironment, ghTokenPolicy, type GhTokenPolicy } from './github-token.js';
import { hostArg, type ForgeCallOptions, type IssueTarget } from './issues.js';
import { runCommand, type CommandResult } from './run-command.js';
import type { ToolError } from '../errors/tool-error.js';

/** One GitHub REST request (`apiPath` as `gh api` takes it, relative to the API root). */
export type GhRequest = ForgeRequest<'GET' | 'POST' | 'PATCH'>;

/**
 * Runs one `gh api` request for `target`.
 * @returns the answer's status, headers and parsed JSON body
 * @throws ToolError GH_CLI_MISSING (gh inside the roots), GH_HOST_DENIED (a redirect elsewhere), VALIDATION
 *   no_private_dir (src/vcs/github-token.ts), or the classified failure (src/vcs/github-classify.ts) with the retry
 *   semantics of `req.kind` (src/vcs/forge-errors.ts)
 */
export async function ghApi(target: IssueTarget, req: GhRequest, opts: ForgeCallOptions): Promise<ForgeResponse> {
  const host = hostArg(target);
  const args = ['api', '--hostname', host, '-X', req.method, '-i', '-H', 'Accept: application/vnd.github+json'];
  if (req.body !== undefined) args.push('--input', '-');
  args.push(req.apiPath);
  const file = ghExecutable(req, opts);
  const api = ghApiAuthority(target);
  const policy = ghTokenPolicy(target, opts.allow ?? [], process.env, opts.isInsideRoots);
  const guard = await startEgressGuard([api.authority], api.scheme);
  let result: CommandResult;
  try {
    result = await runGh(file, args, { target, policy, guardUrl: guard.url, body: req.body, opts });
  } finally {
    await guard.close();
  }
  if (guard.denied.length > 0) throw redirectDenied('GitHub', host, target, guard.denied[0], req.kind, req.subject);
  const { response, ok } = cliResponse(result);
  if (ok && response) {
    const data = parseJsonBody(response.body, response.status, {
      forge: 'GitHub',
      host,
      kind: req.kind,
      subject: req.subject,
      details: { exit_code: result.exitCode },
    });
    return { status: response.status, headers: response.headers, data };
  }
  throw ghFailure(result, response, { target, host, req, opts, guardUnreachable: guard.unreachable > 0 });
}

/**
 * The gh to run: PATH's, unless it lies inside the roots (agent-writable: never run).
 * @throws ToolError GH_CLI_MISSING reason inside_roots (nothing was sent)
 */
function ghExecutable(req: GhRequest, opts: ForgeCallOptions): string {
  const cli = findCli('gh', process.env, opts.isInsideRoots);
  if (cli.insideRoots) {
    throw forgeError(
      req.kind,
      {
        code: 'GH_CLI_MISSING',
        failure: 'environment',
        message:
          'The gh found on PATH lies inside the allowed roots, where the agent can write; it is not run (nothing was sent).',
        details: { reason: 'inside_roots' },
        suggestion: 'Ask the user to install gh outside the roots, or to remove the PATH entry inside them.',
      },
      req.subject,
    );
  }
  return cli.file ?? 'gh';
}

/**
 * Runs gh once with its environment (src/vcs/github-token.ts) and the guard as its proxy. gh's own configuration
 * inside the roots is the agent's, not the operator's: gh then gets a private, empty one. A private configuration
 * (enterprise token or empty) is removed when gh exits.
 */
async function runGh(
  file: string,
  args: string[],
  run: { target: IssueTarget; policy: GhTokenPolicy; guardUrl: string; body: unknown; opts: ForgeCallOptions },
): Promise<CommandResult> {
  const { opts } = run;
  let env = ghEnvironment(run.policy, run.guardUrl);
  const reachable = ghConfigReachable(process.env, os.homedir(), opts.isInsideRoots);
  const bound =
    run.policy.enterprise || reachable ? bindEnterpriseToken(run.target, env, opts.isInsideRoots, reachable) : null;
  if (bound) env = bound.env;
  try {
    return await runCommand(file, args, {
      env,
      timeoutMs: opts.timeoutMs,
      maxOutputBytes: opts.maxOutputBytes,
      input: run.body === undefined ? undefined : JSON.stringify(run.body),
      signal: opts.signal,
    });
  } finally {
    if (bound) removeOwnedTempDir(bound.dir);
  }
}

/**
 * The error of a gh run that did not succeed: the guard could not reach the host (GH_NETWORK not sent), a redirect gh
 * did not follow (GH_HOST_DENIED when it names another authority, else GH_FAILED), else `classifyGh`.
 */
function ghFailure(
  result: CommandResult,
  response: IncludedResponse | null,
  at: { target: IssueTarget; host: string; req: GhRequest; opts: ForgeCallOptions; guardUnreachable: boolean },
): ToolError {
  const { host, req } = at;
  if (at.guardUnreachable && !result.timedOut && result.spawnError === null) {
    // The guard could not reach the host (or the operator's proxy): gh only saw the guard's 502.
    return forgeError(
      req.kind,
      {
        code: 'GH_NETWORK',
        failure: 'not_sent',
        message: `gh could not connect to ${host} (the host or the configured proxy refused the connection).`,
        details: { exit_code: result.exitCode, reason: 'connect', request_sent: false },
      },
      req.subject,
    );
  }
  if (response !== null && response.status >= 300 && response.status < 400) {
    return unfollowedRedirect(result, response, at);
  }
  const failure = classifyGh(
    {
      exitCode: result.exitCode,
      spawnError: result.spawnError,
      timedOut: result.timedOut,
      outputLimited: result.outputLimited,
      status: response?.status ?? null,
      headers: response?.headers ?? {},
      bodyMessage: response ? bodyMessage(response.body) : null,
      stderr: result.stderr,
    },
    { host, timeoutMs: at.opts.timeoutMs, maxOutputBytes: at.opts.maxOutputBytes, nowMs: Date.now() },
  );
  return forgeError(req.kind, failure, req.subject);
}

/**
 * A 3xx gh did not follow (a 307/308 of a request with a body): never followed or believed either way —
 * GH_HOST_DENIED when its Location names another authority (or none that parses), else GH_FAILED.
 */
function unfollowedRedirect(
  result: CommandResult,
  response: IncludedResponse,
  at: { target: IssueTarget; host: string; req: GhRequest },
): ToolError {
  const { target, host, req } = at;
  const api = ghApiAuthority(target);
  const to = redirectAuthority(response.headers.location, api);
  if (to === null || to.host !== api.authority.host || to.port !== api.authority.port) {
    return redirectDenied(
      'GitHub',
      host,
      target,
      { kind: 'redirect', host: to?.host ?? '(unparseable)', port: to?.port ?? null },
      req.kind,
      req.subject,
    );
  }
  return forgeError(
    req.kind,
    {
      code: 'GH_FAILED',
      failure: 'arguments',
      message: `GitHub (${host}) answered with a redirect (HTTP ${response.status}) that was not followed; nothing was changed by it.`,
      details: { status: response.status, exit_code: result.exitCode },
    },
    req.subject,
  );
}
