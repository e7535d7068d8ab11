/**
 * Running git safely and reading work-tree state (SPEC §7). Every git call goes through `runGit`: no shell, a
 * timeout, an output cap, no pager, no prompts, no external diff or textconv, no fsmonitor hook, no optional locks,
 * and no system config. The status hash is sha256 over the exact `git status --porcelain=v2 --branch
 * --untracked-files=all` output.
 */
import { createHash } from 'node:crypto';
import { ToolError } from '../errors/tool-error.js';
import { runCommand, type CommandResult } from './run-command.js';

/** Config overrides that stop a repository's own config from running commands (SPEC §7; issue 5). */
const SAFE_CONFIG = [
  '-c', 'core.fsmonitor=false',
  '-c', 'core.pager=cat',
  '-c', 'core.hooksPath=/dev/null',
  '-c', 'diff.external=',
  '-c', 'core.sshCommand=false',
  '-c', 'protocol.allow=never',
  '-c', 'credential.helper=',
  '-c', 'core.untrackedCache=false',
  '-c', 'color.ui=false',
];

/** The environment git runs with: inherited, minus what could prompt, page or redirect it. */
export function gitEnvironment(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const key of Object.keys(env)) {
    // GIT_DIR/GIT_WORK_TREE etc. from the environment must not redirect our view of a path's repository.
    if (key.startsWith('GIT_') && key !== 'GIT_SSL_CAINFO' && key !== 'GIT_SSL_NO_VERIFY') delete env[key];
  }
  return {
    ...env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    PAGER: 'cat',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_EXTERNAL_DIFF: '',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    LC_ALL: 'C',
  };
}

/** Options for one git call. */
export interface GitOptions {
  cwd: string;
  timeoutMs: number;
  maxOutputBytes?: number;
  signal?: AbortSignal;
}

/** Runs `git <args>` with the safe configuration. */
export async function runGit(args: readonly string[], options: GitOptions): Promise<CommandResult> {
  const result = await runCommand('git', ['--no-optional-locks', ...SAFE_CONFIG, ...args], {
    cwd: options.cwd,
    env: gitEnvironment(),
    timeoutMs: options.timeoutMs,
    maxOutputBytes: options.maxOutputBytes ?? 64 * 1024 * 1024,
    signal: options.signal,
  });
  if (result.spawnError === 'ENOENT') {
    throw new ToolError('VALIDATION', 'git is not installed on this machine.', {
      details: { reason: 'git_missing' }, suggestion: 'Install git, or do not use git features.',
    });
  }
  if (result.timedOut) {
    throw new ToolError('IO_ERROR', `git ${args[0]} timed out after ${options.timeoutMs} ms.`, {
      details: { errno: 'ETIMEDOUT', reason: 'git_timeout' },
    });
  }
  return result;
}

/**
 * Classifies a failed git call into a clear envelope (not a work tree, dubious ownership, corrupt repository).
 * @throws ToolError always
 */
export function throwGitFailure(result: CommandResult, cwd: string, what: string): never {
  const first = result.stderr.split('\n').find((l) => l.trim()) ?? '';
  if (/dubious ownership/i.test(result.stderr)) {
    throw new ToolError('VALIDATION', `git refuses the repository at ${cwd}: dubious ownership.`, {
      path: cwd, details: { reason: 'dubious_ownership', stderr: first },
      suggestion: 'The repository belongs to another user; the owner must run git config --global --add safe.directory.',
    });
  }
  if (/not a git repository/i.test(result.stderr)) {
    throw new ToolError('VALIDATION', `${cwd} is not inside a git work tree.`, {
      path: cwd, details: { reason: 'not_a_work_tree' },
    });
  }
  throw new ToolError('IO_ERROR', `git ${what} failed (exit ${result.exitCode}): ${first}`, {
    path: cwd, details: { errno: 'EGIT', reason: 'git_failed', exit_code: result.exitCode, stderr: first },
  });
}

/** The top of the work tree containing `dir`. @throws ToolError VALIDATION not_a_work_tree and git failures */
export async function workTreeRoot(dir: string, options: Omit<GitOptions, 'cwd'>): Promise<string> {
  const r = await runGit(['rev-parse', '--show-toplevel'], { ...options, cwd: dir });
  if (r.exitCode !== 0) throwGitFailure(r, dir, 'rev-parse');
  return r.stdout.trim();
}

/** `git status --porcelain=v2 --branch --untracked-files=all` output and its hash. */
export async function gitStatus(workTree: string, options: Omit<GitOptions, 'cwd'>): Promise<{ raw: string; statusHash: string }> {
  const r = await runGit(['status', '--porcelain=v2', '--branch', '--untracked-files=all'], { ...options, cwd: workTree });
  if (r.exitCode !== 0) throwGitFailure(r, workTree, 'status');
  return { raw: r.stdout, statusHash: statusHashOf(r.stdout) };
}

/** SPEC §7: sha256 over the exact porcelain v2 output. */
export function statusHashOf(raw: string): string {
  return `sha256:${createHash('sha256').update(raw, 'utf8').digest('hex')}`;
}
