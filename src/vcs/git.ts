/**
 * Running git safely and reading work-tree state (docs/security.md "What git may read"). `git_status`, `git_diff` and
 * `expected_status_hash` run git only through a sanitized view (`GitView`, src/vcs/git-view.ts): a private git dir
 * with a config the server writes, locations verified inside the roots, no system or global config. `runGit` is
 * left for queries that read no repository (the operator's global config); it refuses status and diff subcommands. git's
 * stderr never reaches an envelope: failures are classified (`throwGitFailure`). The status hash is sha256 over
 * the exact `git status --porcelain=v2 --branch --untracked-files=all --ignore-submodules=all` output of the view,
 * without the lines of policy-hidden paths.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { resolveGit } from './find-cli.js';
import { commandRunner, GitView, type GitRunner, type ViewAccess } from './git-view.js';
import { runFullStatus } from './git-status-run.js';
import { keptStatus, rememberStatus, type StatusTicket } from './git-status-watch.js';
import { parsePorcelainV2Kept, type BranchInfo, type StatusEntry } from './porcelain-v2.js';
import { runCommand, type CommandResult } from './run-command.js';

/** Config overrides that stop a repository's own config from running commands (docs/security.md "What git may read"). */
const SAFE_CONFIG = [
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.pager=cat',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'diff.external=',
  '-c',
  'core.sshCommand=false',
  '-c',
  'protocol.allow=never',
  '-c',
  'credential.helper=',
  '-c',
  'core.untrackedCache=false',
  '-c',
  'color.ui=false',
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
  /** True when an absolute path lies inside the roots in force (a git found there is never run: `resolveGit`). */
  isInside: (p: string) => boolean;
  timeoutMs: number;
  maxOutputBytes?: number;
  signal?: AbortSignal;
}

/** Subcommands that read work-tree content (and so could run filters, drivers, hooks): only through a GitView. */
const CONTENT_READERS = new Set(['status', 'diff', 'diff-files', 'diff-index', 'add', 'stash', 'checkout', 'commit']);

/** Throws the envelopes every git start shares: git missing, timeout. */
function assertStarted(result: CommandResult, what: string, timeoutMs: number): CommandResult {
  if (result.spawnError === 'ENOENT') {
    throw new ToolError('VALIDATION', 'git is not installed on this machine.', {
      details: { reason: 'git_missing' },
      suggestion: 'Install git, or do not use git features.',
    });
  }
  if (result.timedOut) {
    throw new ToolError('IO_ERROR', `git ${what} timed out after ${timeoutMs} ms.`, {
      details: { errno: 'ETIMEDOUT', reason: 'git_timeout' },
      suggestion: 'Call again later, or raise --git-timeout-ms for very large repositories.',
    });
  }
  return result;
}

/**
 * Runs `git <args>` in `cwd` with the safe configuration and `GIT_DIR=/dev/null`, for queries that read no repository
 * (the operator's global `config`): git discovers and reads no repository here. Status and diff must go through
 * `openRepository`; a repository's own config is read by the view (`GitView.repositoryConfig`).
 * @throws Error (programming error) for a content-reading subcommand; ToolError git_missing / git_timeout
 */
export async function runGit(args: readonly string[], options: GitOptions): Promise<CommandResult> {
  if (CONTENT_READERS.has(args[0])) throw new Error(`git ${args[0]} must run through a GitView (openRepository)`);
  const result = await runCommand(resolveGit(options.isInside), ['--no-optional-locks', ...SAFE_CONFIG, ...args], {
    cwd: options.cwd,
    // GIT_DIR=/dev/null: no repository is discovered or read, whatever cwd is (a repository's config is data the
    // sanitized view reads and verifies; docs/security.md "Finding the repository and continuation cursors").
    env: { ...gitEnvironment(), GIT_DIR: '/dev/null' },
    timeoutMs: options.timeoutMs,
    maxOutputBytes: options.maxOutputBytes ?? 64 * 1024 * 1024,
    signal: options.signal,
  });
  return assertStarted(result, args[0], options.timeoutMs);
}

/** The runner views use: the one subprocess runner (the git resolved for the roots), plus the git-missing and timeout envelopes. */
const viewRunner =
  (program: string): GitRunner =>
  async (args, env, options) => {
    const what =
      options.what ??
      args.find((a, i) => i > 0 && args[i - 1] !== '-c' && !a.startsWith('-') && !a.includes('=')) ??
      'git';
    return assertStarted(await commandRunner(program)(args, env, options), what, options.timeoutMs);
  };

/**
 * Verifies the repository whose work tree contains the real directory `dir` (every location git would read inside
 * the roots) and builds its sanitized view. Dispose the view when done (`withRepository` does).
 * @throws ToolError as GitView.open; VALIDATION git_missing / git_inside_roots (`resolveGit`)
 */
export async function openRepository(
  dir: string,
  access: ViewAccess,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<GitView> {
  // Resolved before the view exists: a git inside the roots (or none) fails the call before anything is created.
  return GitView.open(dir, access, options, viewRunner(resolveGit(access.isInside)));
}

/** Opens the view, runs `fn`, disposes the view. */
export async function withRepository<T>(
  dir: string,
  access: ViewAccess,
  options: { timeoutMs: number; signal?: AbortSignal },
  fn: (view: GitView) => Promise<T>,
): Promise<T> {
  const view = await openRepository(dir, access, options);
  try {
    return await fn(view);
  } finally {
    await view.dispose();
  }
}

/**
 * Classifies a failed git call into a clear envelope. Never copies git's stderr (it can quote file content, e.g.
 * "unexpected line in packed-refs: <line>"): the envelope names the failure's kind and the file concerned.
 * @param where the work tree (or directory) git ran for; `view` the repository's locations when known
 * @throws ToolError always
 */
export function throwGitFailure(result: CommandResult, where: string, what: string, view?: GitView): never {
  const err = result.stderr;
  if (/dubious ownership/i.test(err)) {
    throw new ToolError('VALIDATION', `git refuses the repository at ${where}: dubious ownership.`, {
      path: where,
      details: { reason: 'dubious_ownership' },
      suggestion:
        'The repository belongs to another user; the owner must run git config --global --add safe.directory.',
    });
  }
  if (/must be run in a work tree/i.test(err)) {
    throw new ToolError('VALIDATION', `${where} is inside a git directory or a bare repository, not a work tree.`, {
      path: where,
      details: { reason: 'not_a_work_tree' },
      suggestion: 'Pass a path inside the work tree (the directory that contains .git), not .git itself.',
    });
  }
  if (!view && /not a git repository/i.test(err)) {
    throw new ToolError('VALIDATION', `${where} is not inside a git work tree (or its repository cannot be read).`, {
      path: where,
      details: { reason: 'not_a_work_tree' },
      suggestion: 'Pass a path inside a git work tree, or run `git status` there to see what git reports.',
    });
  }
  if (result.outputLimited) {
    throw new ToolError('IO_ERROR', `git ${what} produced more output than the cap allows.`, {
      path: where,
      details: { errno: 'EGIT', reason: 'git_output_limit' },
      suggestion: 'Narrow the call (git_diff paths) and call again.',
    });
  }
  const loc = view?.locations;
  const failure = (
    file: string,
    message: string,
    reason = 'corrupt_repository',
    code: 'IO_ERROR' | 'VALIDATION' = 'IO_ERROR',
  ): ToolError =>
    new ToolError(code, message, {
      path: file,
      details: { reason, file, exit_code: result.exitCode, ...(code === 'IO_ERROR' ? { errno: 'EGIT' } : {}) },
      suggestion:
        reason === 'unsupported_repository'
          ? 'Use git directly for this repository.'
          : `Run \`git status\` (or \`git fsck\`) in ${where} to see what git reports, repair it, then call again.`,
    });
  if (loc) {
    const index = loc.index ?? path.join(loc.gitDir, 'index');
    if (/sharedindex|split.index/i.test(err))
      throw failure(
        index,
        `${index} is a split index, which the git tools do not read.`,
        'unsupported_repository',
        'VALIDATION',
      );
    if (/\bindex\b/i.test(err))
      throw failure(index, `git ${what} cannot read the index ${index} (corrupt or of an unsupported version).`);
    if (/object|pack|loose|sha1 file|bad tree|bad commit|unable to read|invalid sha/i.test(err)) {
      throw failure(loc.objectsDir, `git ${what} cannot read an object in ${loc.objectsDir} (missing or corrupt).`);
    }
    throw failure(
      loc.gitDir,
      `git ${what} failed (exit ${result.exitCode}) for the repository at ${loc.workTree}.`,
      'git_failed',
    );
  }
  throw failure(where, `git ${what} failed (exit ${result.exitCode}) in ${where}.`, 'git_failed');
}

/** Arguments of the status whose output the status hash covers. */
export { STATUS_ARGS } from './git-status-run.js';

/**
 * Says whether a work-tree-relative path (`/`-separated, as git prints it) is hidden from the caller. Decided by
 * policy (src/policy/git-access.ts `hiddenInWorkTree`); a primitive only asks.
 */
export type HidesPath = (relative: string) => boolean;

/**
 * The view's status, parsed once: its hash (`statusHashOf`, leaving out what `hides` hides), the branch facts and the
 * entries `hides` leaves (neither side of a rename or copy hidden), and git's raw output.
 * `options.split`: run git as two processes or one (`runFullStatus`; default by the index's size and the load).
 * `options.reuse`: the call's ticket (git-status-watch.ts `statusTicket`, taken before the view was opened): the
 * previous output is used instead of running git while the repository's watches prove nothing changed, and git's
 * output is kept for the next call; without it git always runs.
 * @throws ToolError classified git failures; NOT_ALLOWED / SECRET_DENIED from `verifyNestedRepositories`
 */
export async function gitStatus(
  view: GitView,
  options: { timeoutMs: number; signal?: AbortSignal; split?: boolean; reuse?: StatusTicket },
  hides?: HidesPath,
): Promise<{ raw: string; statusHash: string; branch: BranchInfo; entries: StatusEntry[] }> {
  const { split, reuse, ...run } = options;
  let raw = reuse ? keptStatus(reuse, view.locations, view.inputs) : null;
  if (raw === null) {
    const r = await runFullStatus(view, run, split);
    if (r.exitCode !== 0) throwGitFailure(r, view.workTree, 'status', view);
    raw = r.stdout;
    if (reuse) rememberStatus(reuse, view.locations, raw, view.inputs);
  }
  const parsed = parsePorcelainV2Kept(raw, visibleTo(hides));
  // An untracked nested repository is shown by what git found at the git dir its `.git` names: that must lie inside.
  // A policy-hidden path is left out (its line is in no answer and no hash, and a refusal would name it).
  view.verifyNestedRepositories(parsed.untracked.filter((p) => !hides?.(p.replace(/\/$/, ''))));
  return { raw, statusHash: hashOfText(parsed.text), branch: parsed.branch, entries: parsed.entries };
}

/** Keeps an entry when `hides` hides neither of its paths. */
const visibleTo =
  (hides?: HidesPath) =>
  (e: StatusEntry): boolean =>
    !hides || (!hides(e.path) && (e.orig_path === undefined || !hides(e.orig_path)));

/** `sha256:` and the hex sha256 of `text` (UTF-8). */
const hashOfText = (text: string): string => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

/**
 * The status hash: `sha256:` over the exact porcelain v2 output, without the entry lines that name a hidden path
 * (either side of a rename or copy). With nothing hidden it is the hash of git's output byte for byte. A hidden
 * path's line is left out, not replaced by anything derived from it: a hash over it would let a caller confirm a
 * guessed hidden name by computing the hash of the output it expects (docs/security.md "Finding the repository and
 * continuation cursors").
 */
export function statusHashOf(raw: string, hides?: HidesPath): string {
  return hashOfText(parsePorcelainV2Kept(raw, visibleTo(hides)).text);
}
