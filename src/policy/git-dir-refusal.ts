/**
 * The refusals of the git-directory guard (docs/security.md "Execution-bearing files and git directories"):
 * FILE_POLICY_DENIED, source builtin, rule `git_dir` or `hooks_dir`, with the reason and the place concerned.
 */
import { ToolError } from '../errors/tool-error.js';

/** Why a path is refused. */
export type GitRefusal =
  | { rule: 'git_dir'; reason: 'inside_git_dir' | 'is_git_dir' | 'would_create_git_dir'; gitDir: string }
  | { rule: 'git_dir'; reason: 'included_config' | 'user_config'; config: string }
  | { rule: 'hooks_dir'; reason: 'core_hookspath'; hooksDir: string }
  | { rule: 'hooks_dir'; reason: 'config_undecidable'; repository: string }
  | { rule: 'hooks_dir'; reason: 'search_capped' };

export function refusal(requested: string, r: GitRefusal): ToolError {
  let message: string;
  const details: Record<string, unknown> = { source: 'builtin', rule: r.rule, reason: r.reason };
  if (r.rule === 'git_dir' && 'config' in r) {
    details.config = r.config;
    message =
      r.reason === 'user_config'
        ? `${requested} is, or holds, ${r.config}, the user's or the system's git configuration, which every ` +
          "repository's git reads; the file tools never change it."
        : `${requested} is, or holds, ${r.config}, a configuration file a repository's config includes ` +
          '(include.path / includeIf); git reads it as its own configuration, so the file tools never change it.';
  } else if ('gitDir' in r) {
    details.git_dir = r.gitDir;
    message =
      r.reason === 'would_create_git_dir'
        ? `Creating ${requested} would make ${r.gitDir} a git directory (it would hold two of HEAD, objects, refs, ` +
          'commondir); the file tools never build a repository.'
        : `${requested} is ${r.reason === 'is_git_dir' ? '' : 'inside '}a git directory (${r.gitDir} holds two of ` +
          'HEAD, objects, refs, commondir); the file tools never change a git directory.';
  } else if (r.reason === 'core_hookspath') {
    details.hooks_dir = r.hooksDir;
    message = `${requested} is in the hooks directory a repository's core.hooksPath names (${r.hooksDir}); its files run on git commands, so the file tools never change it.`;
  } else if (r.reason === 'search_capped') {
    message =
      `${requested} is named as a git hook, and the root holds more directories than the server searches for ` +
      'repositories (whose core.hooksPath could name this directory), so it is not written.';
  } else {
    details.repository = r.repository;
    message = `The configuration of the repository at ${r.repository} cannot be read to tell where its hooks are (core.hooksPath), so nothing in it is written.`;
  }
  return new ToolError('FILE_POLICY_DENIED', message, { path: requested, details });
}
