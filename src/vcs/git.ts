/**
 * Running git safely and reading work-tree state (SPEC §7). Every git call goes through `runGit`: no shell, a
 * timeout, an output cap, no pager, no prompts, no external diff or textconv, no fsmonitor hook, no clean/smudge/
 * process filter drivers, no optional locks, and no system config. The status hash is sha256 over the exact `git status --porcelain=v2 --branch
 * --untracked-files=all` output.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
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

/** Subcommands that read work-tree file contents, and so would run a repository's clean/process filters. */
const CONTENT_READERS = new Set(['status', 'diff', 'diff-files', 'diff-index']);

/**
 * Config (as GIT_CONFIG_COUNT/KEY/VALUE environment entries, which take any key and reach child gits such as
 * submodule status) that disables every filter driver configured for `cwd`: `filter.<drv>.clean`/`process` are
 * arbitrary commands a repository's .git/config (or .gitattributes + config) makes `git status` and `git diff` run
 * whenever a file's stat data is dirty. There is no global switch for filters, so each configured driver is
 * emptied by name (an empty command means "no filter"; `required=false` so git does not die for lack of one).
 */
async function filterOverrides(options: GitOptions): Promise<NodeJS.ProcessEnv> {
  const r = await runCommand('git', [...SAFE_CONFIG, 'config', '--null', '--get-regexp', '^filter\\.'], {
    cwd: options.cwd, env: gitEnvironment(), timeoutMs: options.timeoutMs, maxOutputBytes: 1024 * 1024, signal: options.signal,
  });
  const drivers = new Set<string>();
  for (const record of r.stdout.split('\0')) {
    const key = record.split('\n', 1)[0];
    const m = /^filter\.(.+)\.[^.]+$/s.exec(key);
    if (m) drivers.add(m[1]);
  }
  const env: NodeJS.ProcessEnv = {};
  let n = 0;
  for (const drv of drivers) {
    for (const [variable, value] of [['clean', ''], ['smudge', ''], ['process', ''], ['required', 'false']]) {
      env[`GIT_CONFIG_KEY_${n}`] = `filter.${drv}.${variable}`;
      env[`GIT_CONFIG_VALUE_${n}`] = value;
      n++;
    }
  }
  if (n > 0) env.GIT_CONFIG_COUNT = String(n);
  return env;
}

/** Runs `git <args>` with the safe configuration. */
export async function runGit(args: readonly string[], options: GitOptions): Promise<CommandResult> {
  const overrides = CONTENT_READERS.has(args[0]) ? await filterOverrides(options) : {};
  const result = await runCommand('git', ['--no-optional-locks', ...SAFE_CONFIG, ...args], {
    cwd: options.cwd,
    env: { ...gitEnvironment(), ...overrides },
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

const GIT_FAILED_SUGGESTION = 'The repository looks damaged: run `git status` (or `git fsck`) in it to see what git '
  + 'reports, repair it, then call again.';

/** The nearest `.git` entry at or above `dir`, or null. */
function nearestDotGit(dir: string): string | null {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const candidate = path.join(d, '.git');
    if (existsSync(candidate)) return candidate;
    if (path.dirname(d) === d) return null;
  }
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
    // git says "not a git repository" also when a .git is there but unreadable as one (an empty or garbage HEAD):
    // name that instead of claiming there is no repository.
    const dotGit = nearestDotGit(cwd);
    if (dotGit) {
      throw new ToolError('IO_ERROR', `${dotGit} exists but git cannot read it as a repository (corrupt or incomplete, e.g. a damaged HEAD).`, {
        path: cwd, details: { errno: 'EGIT', reason: 'corrupt_repository', git_dir: dotGit, exit_code: result.exitCode, stderr: first },
        suggestion: GIT_FAILED_SUGGESTION,
      });
    }
    throw new ToolError('VALIDATION', `${cwd} is not inside a git work tree.`, {
      path: cwd, details: { reason: 'not_a_work_tree' },
      suggestion: 'Pass a path inside a git work tree (git_status on a plain directory has nothing to report).',
    });
  }
  if (/must be run in a work tree/i.test(result.stderr)) {
    // Inside the .git directory itself (or a bare repository): there is a repository but no work tree here.
    throw new ToolError('VALIDATION', `${cwd} is inside a git directory or a bare repository, not a work tree.`, {
      path: cwd, details: { reason: 'not_a_work_tree' },
      suggestion: 'Pass a path inside the work tree (the directory that contains .git), not .git itself.',
    });
  }
  if (result.outputLimited) {
    throw new ToolError('IO_ERROR', `git ${what} produced more output than the cap allows.`, {
      path: cwd, details: { errno: 'EGIT', reason: 'git_output_limit' },
      suggestion: 'Narrow the call (git_diff paths) and call again.',
    });
  }
  throw new ToolError('IO_ERROR', `git ${what} failed (exit ${result.exitCode}): ${first}`, {
    path: cwd, details: { errno: 'EGIT', reason: 'git_failed', exit_code: result.exitCode, stderr: first },
    suggestion: GIT_FAILED_SUGGESTION,
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
