/**
 * Runs the view's `git status --porcelain=v2 --branch --untracked-files=all --ignore-submodules=all` for a large
 * index on a machine with a core to spare as two git processes side by side (docs/benchmarks.md "git_status (2026-12-04, session 16)"): the status
 * without its untracked walk (`--untracked-files=no`), and the walk alone (`ls-files --others --exclude-standard`,
 * the same dir.c walk: `fill_directory` with no flags, entries sorted by name, `index_name_is_other`, paths C-quoted as
 * status quotes them). Its output is assembled into the bytes the one status prints: the status' lines, then a
 * `? <path>` line per untracked path. Both children run through the view (same flags, environment, private index,
 * runner and timeout); if either fails, the other is stopped and the call fails as the one status would.
 */
import os from 'node:os';
import { VIEW_OUTPUT_BYTES, type GitView, type ViewRunOptions } from './git-view.js';
import type { CommandResult } from './run-command.js';

/** Arguments of the status whose output the status hash covers; then those of its two halves. */
export const STATUS_ARGS = [
  'status',
  '--porcelain=v2',
  '--branch',
  '--untracked-files=all',
  '--ignore-submodules=all',
] as const;
const TRACKED_ARGS = ['status', '--porcelain=v2', '--branch', '--untracked-files=no', '--ignore-submodules=all'];
const OTHERS_ARGS = ['ls-files', '--others', '--exclude-standard'];

/**
 * Index entries from which the status may run as two processes: below it the second process' start and index read
 * cost about what the overlap saves (docs/benchmarks.md "git_status (2026-12-04, session 16)").
 */
export const SPLIT_MIN_ENTRIES = 10_000;

/**
 * Whether the status of an index of `entries` entries runs as two processes: a large index, on a machine that is not
 * saturated (the 1-minute load average below twice the cores: it lags a minute and counts the caller's own work, so
 * an idle machine that has just been busy still splits, one with every core taken for a minute does not). Where every
 * core is taken the halves only compete for them, with about 10 % more CPU than the one status. The answer is the
 * same either way (test/vcs/git-status-split.test.ts); only the time differs.
 */
export function splitStatus(entries: number, load = os.loadavg()[0], cores = os.availableParallelism()): boolean {
  return cores >= 2 && entries >= SPLIT_MIN_ENTRIES && load < 2 * cores;
}

/**
 * The view's full status output, as one `git status` (STATUS_ARGS) prints it: one process when `split` is false (by
 * default `splitStatus`), else the two halves side by side. A failed run's result is returned as
 * it is (non-zero or null exit) for the caller to classify; for the halves, that of the first to fail, the other
 * stopped.
 * @throws ToolError from the view's runner (git_missing, git_timeout)
 */
export async function runFullStatus(
  view: GitView,
  options: ViewRunOptions,
  split = splitStatus(view.indexEntries),
): Promise<CommandResult> {
  if (!split) return view.run(STATUS_ARGS, options);
  const stopper = new AbortController();
  const onAbort = (): void => stopper.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) stopper.abort();
  // The first half to fail (non-zero exit, stopped, or a runner envelope) stops the other; its outcome is the call's.
  let firstFailed: 0 | 1 | null = null;
  const half = (args: readonly string[], which: 0 | 1): Promise<CommandResult> =>
    view.run(args, { ...options, signal: stopper.signal, what: 'status' }).then(
      (r) => {
        if (r.exitCode !== 0) failed(which);
        return r;
      },
      (error: unknown) => {
        failed(which);
        throw error;
      },
    );
  const failed = (which: 0 | 1): void => {
    if (firstFailed === null && !stopper.signal.aborted) firstFailed = which;
    stopper.abort();
  };
  try {
    const [tracked, others] = await Promise.allSettled([half(TRACKED_ARGS, 0), half(OTHERS_ARGS, 1)]);
    // A cancel from the caller (neither half failed first) is reported through the status half, as for one status.
    const outcome = firstFailed === 1 ? others : tracked;
    if (outcome.status === 'rejected') throw outcome.reason;
    if (outcome.value.exitCode !== 0) return outcome.value;
    // The status done, ls-files stopped by a cancel: the call fails with ls-files' result, never a partial list.
    if (others.status === 'rejected') throw others.reason;
    if (others.value.exitCode !== 0) return others.value;
    return assembled(outcome.value, others.value, options.maxOutputBytes ?? VIEW_OUTPUT_BYTES);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The one status' result from its halves: the status' output (branch headers, changed and unmerged lines), then
 * `? ` and each line ls-files printed (a path quoted exactly as status quotes it, in the same order). Over `cap` (the
 * one status' output cap, bytes), a capped result as the one status would have given.
 */
function assembled(tracked: CommandResult, others: CommandResult, cap: number): CommandResult {
  // One replace over the whole list, not a string per path: about half the CPU on the event loop (300,000 paths:
  // 80-110 ms against 165-390 ms), and no array of every path.
  const list = others.stdout.endsWith('\n') ? others.stdout.slice(0, -1) : others.stdout;
  const untracked = others.stdout === '' ? '' : `? ${list.replaceAll('\n', '\n? ')}\n`;
  const stdout = tracked.stdout + untracked;
  // Each line's `? ` is two ASCII bytes more than ls-files wrote (and its missing final newline, if any, one).
  const added = untracked.length - others.stdout.length;
  const durationMs = Math.max(tracked.durationMs, others.durationMs);
  // The bytes git wrote, as the one status' cap counts them (a byte that is not UTF-8 is 3 once decoded).
  const bytes = (r: CommandResult): number => r.stdoutBytes ?? Buffer.byteLength(r.stdout, 'utf8');
  const stdoutBytes = bytes(tracked) + bytes(others) + added;
  if (stdoutBytes > cap) {
    return { ...tracked, exitCode: null, stdout: '', stdoutBytes: 0, outputLimited: true, durationMs };
  }
  return { ...tracked, stdout, stdoutBytes, stderr: tracked.stderr + others.stderr, durationMs };
}
