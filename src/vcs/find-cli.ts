/**
 * Where a forge CLI (gh, glab) would be found on PATH, and whether that lies inside the sandbox roots. A PATH entry
 * inside the roots (a project's `node_modules/.bin` added by `npm run`/`npx`, `~/bin` under a root at `$HOME`, a
 * relative or empty entry) lets the agent plant the program the server runs with the forge tokens in its environment:
 * write_file keeps an existing file's mode and move_path keeps a moved executable's, so an executable named `gh`
 * there is within its reach. Such a CLI is never run (issue #12).
 */
import { accessSync, constants as fsConstants, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

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
export function findCli(name: string, env: NodeJS.ProcessEnv, isInsideRoots: (absolute: string) => boolean = () => false): CliLocation {
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
    try { places.push(realpathSync(dir)); } catch { /* raced away: the lexical paths decide */ }
    try { places.push(realpathSync(file)); } catch { /* idem */ }
    return { file, insideRoots: places.some((p) => isInsideRoots(p)) };
  }
  return { file: null, insideRoots: false };
}
