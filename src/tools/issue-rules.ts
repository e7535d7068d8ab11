/**
 * Per-action argument rules of the issue tools (docs/issue-tools.md step 2): what the schema cannot say because it is one
 * schema for all actions. Run as the tools' `validate` hook, so VALIDATION comes before READONLY and before anything
 * is resolved or sent.
 */
import { ToolError } from '../errors/tool-error.js';
import { assertSecureInstance } from '../vcs/gitlab-instance.js';
import type { Forge } from '../vcs/remotes.js';
import { githubHost, gitlabInstance } from './issue-hostname.js';
import { ACTION_FIELDS, type IssueAction, type IssueArgs } from './issue-schema.js';

/** Which optional parameters each action accepts (besides action, repo, hostname, path). */
const ACCEPTS: Record<IssueAction, ReadonlyArray<keyof IssueArgs>> = {
  list: ['state', 'labels', 'limit', 'cursor'],
  view: ['number', 'limit', 'cursor'],
  create: ['title', 'body', 'labels', 'assignees'],
  comment: ['number', 'body'],
  close: ['number', 'reason'],
  reopen: ['number'],
  edit: ['number', 'title', 'body', 'labels', 'assignees'],
};
/** Which parameters each action needs. */
const REQUIRES: Record<IssueAction, ReadonlyArray<keyof IssueArgs>> = {
  list: [],
  view: ['number'],
  create: ['title'],
  comment: ['number', 'body'],
  close: ['number'],
  reopen: ['number'],
  edit: ['number'],
};

/**
 * Per-action argument rules (docs/errors.md "Order of checks" step 2, so VALIDATION comes before READONLY and before anything is resolved):
 * required fields per action, fields that do not apply to the action (refused rather than ignored: `state: closed`
 * on edit would otherwise silently do nothing), repo vs path, an edit with nothing to change, an empty comment,
 * the hostname's syntax, and plain http to a non-loopback GitLab host (reason insecure_http).
 * @throws ToolError VALIDATION (details.reason: missing_field, not_applicable, conflicting, nothing_to_change,
 *   invalid_value, invalid_hostname, insecure_http)
 */
export function validateIssueArgs(forge: Forge, args: IssueArgs): void {
  const action = args.action;
  for (const field of REQUIRES[action]) {
    if (args[field] === undefined) {
      throw new ToolError('VALIDATION', `action ${action} needs '${field}'.`, {
        details: { reason: 'missing_field', field, action },
        suggestion: `Pass '${field}'.`,
      });
    }
  }
  for (const field of ACTION_FIELDS) {
    if (args[field] !== undefined && !ACCEPTS[action].includes(field)) {
      throw new ToolError('VALIDATION', `'${field}' does not apply to action ${action}.`, {
        details: { reason: 'not_applicable', field, action, accepted: [...ACCEPTS[action]] },
        suggestion:
          field === 'state' && action !== 'list'
            ? 'Use action close or reopen to change the state.'
            : `Leave '${field}' out.`,
      });
    }
  }
  if (args.repo !== undefined && args.path !== undefined) {
    throw new ToolError('VALIDATION', 'Pass repo or path, not both.', {
      details: { reason: 'conflicting', field: 'path', fields: ['repo', 'path'] },
      suggestion: "Keep repo to target a repository explicitly, or path to resolve it from the work tree's remotes.",
    });
  }
  if (args.repo !== undefined && args.repo.split('/').some((s) => s === '.' || s === '..')) {
    throw new ToolError('VALIDATION', "'repo' has a '.' or '..' segment.", {
      details: { reason: 'invalid_value', field: 'repo' },
    });
  }
  if (action === 'edit' && [args.title, args.body, args.labels, args.assignees].every((v) => v === undefined)) {
    throw new ToolError('VALIDATION', 'action edit needs at least one of title, body, labels, assignees.', {
      details: { reason: 'nothing_to_change', field: null, action },
    });
  }
  if (action === 'comment' && args.body !== undefined && args.body.trim() === '') {
    throw new ToolError('VALIDATION', 'A comment body must not be empty.', {
      details: { reason: 'invalid_value', field: 'body' },
    });
  }
  if (forge === 'gitlab' && args.labels?.some((l) => l.includes(','))) {
    throw new ToolError('VALIDATION', 'GitLab label names cannot contain a comma.', {
      details: { reason: 'invalid_value', field: 'labels' },
    });
  }
  if (args.hostname !== undefined) {
    if (forge === 'github') githubHost(args.hostname);
    else assertSecureInstance(gitlabInstance(args.hostname), 'hostname');
  }
}
