/**
 * git for building test repositories, isolated from the machine it runs on: no GIT_* variable of the test run's
 * environment (a GIT_DIR or GIT_INDEX_FILE exported by a hook running the tests would redirect it), no system
 * configuration, `home` as HOME (so no global configuration but the test's own), and a fixed author and committer.
 */
import { execFileSync } from 'node:child_process';

/** The environment `isolatedGit` runs git with: the test run's, less GIT_*, plus the isolation above. */
export function isolatedGitEnv(home: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_') && v !== undefined) env[k] = v;
  return {
    ...env,
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@e.invalid',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@e.invalid',
  };
}

/**
 * Runs `git ARGS` in `cwd` with `isolatedGitEnv(home)`; returns its stdout.
 * @throws the child's error (with its status and stderr) when git exits non-zero
 */
export function isolatedGit(cwd: string, home: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: isolatedGitEnv(home) });
}
