/**
 * Many test-side commands in one child process. Every `execFileSync` from a vitest worker costs ~15–20 ms of CPU
 * before the program runs (measured 2026-12-04: the fork of a large process, paid by parent and child alike, even for
 * `true`), more than a small git command itself; a shell started once forks from a small process instead. Test files
 * that build repositories with dozens of git commands run them through here in a few batches.
 */
import { execFileSync } from 'node:child_process';

/** `word` quoted for a POSIX shell. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** One command line: the program and its arguments, each quoted. */
export const commandLine = (argv: readonly string[]): string => argv.map(shellQuote).join(' ');

/**
 * Runs `commands` (each an argv, e.g. `['git', 'add', '-A']`) one after another in `cwd` with `env`, in one `sh`,
 * stopping at the first that fails; returns their stdout, concatenated.
 * @throws the child's error (with its status and stderr) when a command exits non-zero
 */
export function runBatch(cwd: string, env: NodeJS.ProcessEnv, commands: ReadonlyArray<readonly string[]>): string {
  if (commands.length === 0) return '';
  const script = commands.map(commandLine).join(' && ');
  return execFileSync('sh', ['-c', script], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Like `runBatch`, but each command runs whatever the previous ones did (its exit status and output are dropped),
 * within `timeoutS` seconds each (coreutils `timeout`): for plain git, as a user would run it, in repositories whose
 * configuration may make it fail or hang.
 */
export function runEach(
  cwd: string,
  env: NodeJS.ProcessEnv,
  commands: ReadonlyArray<{ cwd: string; argv: readonly string[] }>,
  timeoutS = 20,
): void {
  if (commands.length === 0) return;
  const script = commands
    .map((c) => `(cd ${shellQuote(c.cwd)} && timeout ${timeoutS} ${commandLine(c.argv)}) </dev/null >/dev/null 2>&1`)
    .join('\n');
  execFileSync('sh', ['-c', `${script}\nexit 0`], { cwd, env, stdio: 'ignore' });
}
