/**
 * Where a forge CLI (gh, glab) would be found on PATH, and whether that lies inside the sandbox roots. A PATH entry
 * inside the roots (a project's `node_modules/.bin` added by `npm run`/`npx`, `~/bin` under a root at `$HOME`, a
 * relative or empty entry) lets the agent plant the program the server runs with the forge tokens in its environment:
 * write_file keeps an existing file's mode and move_path keeps a moved executable's, so an executable named `gh`
 * there is within its reach. Such a CLI is never run.
 */
import { accessSync, constants as fsConstants, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';

/** The result of a PATH lookup. */
export interface CliLocation {
  /** Absolute path of the first executable regular file named `name` on PATH (execvp's order), or null. */
  file: string | null;
  /** True when that file, its real path, or its PATH directory's real path lies inside the roots. */
  insideRoots: boolean;
}

/**
 * Looks `name` up on `env.PATH` as execvp does (empty entries mean the current directory, relative entries are
 * relative to it). Pure apart from stat/access/realpath.
 */
export function findCli(
  name: string,
  env: NodeJS.ProcessEnv,
  isInsideRoots: (absolute: string) => boolean = () => false,
): CliLocation {
  for (const entry of (env.PATH ?? '').split(path.delimiter)) {
    const dir = path.resolve(entry === '' ? '.' : entry);
    const file = path.join(dir, name);
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, fsConstants.X_OK);
    } catch {
      continue;
    }
    const places = [dir, file];
    try {
      places.push(realpathSync(dir));
    } catch {
      /* raced away: the lexical paths decide */
    }
    try {
      places.push(realpathSync(file));
    } catch {
      /* idem */
    }
    return { file, insideRoots: places.some((p) => isInsideRoots(p)) };
  }
  return { file: null, insideRoots: false };
}

/**
 * The absolute path of the `git` every git run uses (status, diff, the status hash, remotes, safe.directory): the
 * first on PATH as execvp finds it, resolved against the server's own working directory (so a relative or empty PATH
 * entry never means the repository git runs in). A git found inside the roots is never run: the agent can plant an
 * executable there (write_file keeps an existing file's mode, move_path a moved executable's; a cloned hostile
 * repository brings its own), and git runs with the server's environment, forge tokens included.
 * @param isInside true when an absolute path lies inside the roots in force
 * @throws ToolError VALIDATION git_missing (no git on PATH) or git_inside_roots (the git found lies inside the roots)
 */
export function resolveGit(isInside: (absolute: string) => boolean): string {
  const cli = findCli('git', process.env, isInside);
  if (cli.file === null) {
    throw new ToolError('VALIDATION', 'git is not installed on this machine.', {
      details: { reason: 'git_missing' },
      suggestion: 'Install git, or do not use git features.',
    });
  }
  if (cli.insideRoots) {
    throw new ToolError(
      'VALIDATION',
      'The git found on PATH lies inside the allowed roots, where the agent can write; it is not run.',
      {
        details: { reason: 'git_inside_roots' },
        suggestion: 'Ask the user to install git outside the roots, or to remove the PATH entry inside them.',
      },
    );
  }
  return cli.file;
}
