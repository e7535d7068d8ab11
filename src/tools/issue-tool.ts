/**
 * What an issue tool does when called (docs/issue-tools.md): resolve the target (src/tools/issue-target.ts) → the host
 * allow-list (GH_HOST_DENIED) → the forge backend in src/vcs (network) → the result: list and view pages fitted to the
 * response budget (src/tools/issue-pages.ts), every piece of issue text rendered (src/tools/issue-render.ts) between
 * the untrusted-content markers (src/tools/issue-untrusted.ts).
 * `defineIssueTool` builds each forge's tool from its contract (github-issues.ts, gitlab-issues.ts).
 *
 * Order inside a call (after docs/errors.md "Order of checks" steps 1–3 in call-tool: lookup, VALIDATION incl. `validateIssueArgs`,
 * READONLY/BUDGET for write actions): resolve the target (path → roots policy → work tree → remotes →
 * *_REPO_UNRESOLVED/*_AMBIGUOUS) → GH_HOST_DENIED → backend (network).
 */
import { githubBackend } from '../vcs/github.js';
import { gitlabBackend } from '../vcs/gitlab.js';
import { assertHostAllowed } from '../vcs/host-allow.js';
import { describeTarget, hostArg } from '../vcs/issues.js';
import type { Forge } from '../vcs/remotes.js';
import { queryFingerprint } from './cursor.js';
import { defineTool, type ToolContext, type ToolOutcome } from './define-tool.js';
import { listAction, viewAction, type IssueCall } from './issue-pages.js';
import { commentBlock, issueLine } from './issue-render.js';
import { validateIssueArgs } from './issue-rules.js';
import { issueInput, IssueOutput, WRITE_ACTIONS, type IssueArgs, type IssueResult } from './issue-schema.js';
import { insideRootsOf, resolveTarget } from './issue-target.js';
import { wrapUntrusted } from './issue-untrusted.js';

/**
 * Resolves and allows the target of one call and sets up what every action needs (backend, result base, cursor
 * fingerprint).
 * @throws ToolError (see resolveTarget, and GH_HOST_DENIED from assertHostAllowed)
 */
async function prepareCall(forge: Forge, tool: string, args: IssueArgs, ctx: ToolContext): Promise<IssueCall> {
  const target = await resolveTarget(forge, args, ctx);
  // process.env: the operator's allow-list defaults (GH_HOST, GITLAB_HOST …), not a test switch.
  assertHostAllowed(
    ctx.config.gitRemoteAllow,
    { host: target.host, port: target.port, repo: target.repo },
    process.env,
    insideRootsOf(ctx),
  );
  const callOpts = {
    timeoutMs: ctx.config.limits.forgeTimeoutMs,
    maxOutputBytes: ctx.config.limits.forgeOutputBytes,
    signal: ctx.signal,
    allow: ctx.config.gitRemoteAllow,
    isInsideRoots: insideRootsOf(ctx),
  };
  const host = hostArg(target);
  const fingerprint = queryFingerprint({
    tool,
    action: args.action,
    host,
    repo: target.repo.toLowerCase(),
    state: args.state ?? 'open',
    labels: args.labels ?? [],
    number: args.number ?? null,
    limit: args.limit ?? 30,
  });
  return {
    forge,
    target,
    backend: forge === 'github' ? githubBackend(callOpts) : gitlabBackend(callOpts),
    base: { action: args.action, forge, host, repo: target.repo, untrusted_content: true as const },
    audit: { action: args.action, paths: args.path !== undefined ? [args.path] : [] },
    fingerprint,
    perPage: args.limit ?? 30,
    where: describeTarget(target, args.number),
  };
}

/** A write action's result: the structured fields after the base, and the text's first line before the issue text. */
async function written(
  call: IssueCall,
  fields: Omit<IssueResult, keyof IssueCall['base']>,
  head: string,
  untrusted: string,
): Promise<ToolOutcome<IssueResult>> {
  return {
    structured: { ...call.base, ...fields },
    text: `${head}\n${await wrapUntrusted(untrusted)}`,
    audit: call.audit,
  };
}

/** The write actions: create, comment, close, reopen, edit (each one write through the backend). */
async function writeAction(call: IssueCall, args: IssueArgs): Promise<ToolOutcome<IssueResult>> {
  const { backend, target, where, forge } = call;
  const fields = { title: args.title, body: args.body, labels: args.labels, assignees: args.assignees };
  switch (args.action) {
    case 'create': {
      const issue = await backend.create(target, fields);
      return written(call, { issue }, `Created ${describeTarget(target, issue.number)}.`, issueLine(issue));
    }
    case 'comment': {
      const r = await backend.comment(target, args.number!, args.body!);
      const head = `Commented on ${where} (comment ${r.comment.id}).`;
      return written(
        call,
        { comment: r.comment, ...(r.issue ? { issue: r.issue } : {}) },
        head,
        commentBlock(r.comment),
      );
    }
    case 'close': {
      const reason = args.reason ?? 'completed';
      const issue = await backend.close(target, args.number!, reason);
      const warnings =
        forge === 'gitlab' && reason === 'not_planned'
          ? ['GitLab records no close reason; not_planned was not stored.']
          : undefined;
      const head = `Closed ${where}${forge === 'github' ? ` as ${reason}` : ''}.${warnings ? ` Warning: ${warnings[0]}` : ''}`;
      return written(call, { issue, ...(warnings ? { warnings } : {}) }, head, issueLine(issue));
    }
    case 'reopen': {
      const issue = await backend.reopen(target, args.number!);
      return written(call, { issue }, `Reopened ${where}.`, issueLine(issue));
    }
    default: {
      // edit (list and view never reach here: runIssueAction sends them to issue-pages.ts)
      const issue = await backend.edit(target, args.number!, fields);
      const changed = (['title', 'body', 'labels', 'assignees'] as const).filter((k) => args[k] !== undefined);
      return written(call, { issue }, `Edited ${where} (${changed.join(', ')}).`, issueLine(issue));
    }
  }
}

/**
 * Runs one action of `forge`'s tool.
 * @throws ToolError (see validateIssueArgs, resolveTarget, GH_HOST_DENIED, and the backends' docs/issue-tools.md codes)
 */
export async function runIssueAction(
  forge: Forge,
  tool: string,
  args: IssueArgs,
  ctx: ToolContext,
): Promise<ToolOutcome<IssueResult>> {
  const call = await prepareCall(forge, tool, args, ctx);
  if (args.action === 'list') return listAction(call, args);
  if (args.action === 'view') return viewAction(call, args);
  return writeAction(call, args);
}

/**
 * One forge's issue tool: its name, title and description on top of the shared schemas, rules and handler. Both
 * tools are open-world and may write (the most dangerous action decides the annotations); a write action is
 * mutating (READONLY, budget).
 */
export function defineIssueTool(forge: Forge, contract: { name: string; title: string; description: string }) {
  return defineTool({
    ...contract,
    group: 'issues',
    input: issueInput(forge),
    output: IssueOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    mutating: (a) => WRITE_ACTIONS.has(a.action),
    validate: (a) => validateIssueArgs(forge, a),
    pathsOf: (a) => (a.path !== undefined ? [a.path] : []),
    // One forge call at a time per slot; the git view that finds the repository from a path counts as part of it.
    heavy: () => ['forge'],
    run: (args, ctx) => runIssueAction(forge, contract.name, args, ctx),
  });
}
