/**
 * The state directory's check at start-up (docs/security.md "The server's own code and token files"). The mutation
 * journal and the undo history live there, and a server restarted after a crash replays the journal, so it must be a
 * real directory that only this user can change. Before the first request is read, the configured or default
 * directory is created when absent (mode 0700, with its missing parents) — unless it lies inside a root, where it is
 * made only when first needed (nothing appears in a served tree at start-up; the kernel wall's root rule covers it)
 * and only the first rule below is checked until then — and must then be:
 *   - outside /proc, /sys and /dev (but /dev/shm, an ordinary tmpfs), in its given and its real spelling (kernel file
 *     systems accept some writes and hang or fail others: the server once wrote a file and then waited forever on a
 *     lock there);
 *   - a directory (a symbolic link to one is followed; its real path is what is checked);
 *   - readable, writable and searchable by this process;
 *   - owned by this user and not writable by group or others (anyone who can write it can plant a journal that the
 *     next start replays).
 * Anything else is a UsageError (exit 2, one line on stderr) naming the directory and what is wrong.
 */
import { accessSync, constants, existsSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../errors/usage-error.js';
import { isWithin } from './path-within.js';

/** Kernel file systems no state may live on (Linux). */
const KERNEL_TREES = ['/proc', '/sys', '/dev'];

function underKernelTree(p: string): string | undefined {
  if (isWithin('/dev/shm', p)) return undefined; // POSIX shared memory: an ordinary tmpfs
  return KERNEL_TREES.find((t) => isWithin(t, p));
}

/** `p`'s real path, resolving the longest existing prefix (the rest is appended as given). */
function realSpelling(p: string): string {
  let existing = p;
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(realpathSync(existing), ...rest);
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) return p;
      rest.unshift(path.basename(existing));
      existing = parent;
    }
  }
}

/**
 * Checks (and creates when absent) the state directory; see the module comment for the rules.
 * @param dir absolute path (config.stateDir)
 * @param flag how to name it in a message: `--state-dir` when the operator gave it, else the default's note
 * @param insideRoots whether a real path lies inside the roots (an absent directory there is not created)
 * @returns the directory's real path (for an absent one inside the roots, its real spelling)
 * @throws UsageError when it cannot serve as the state directory
 */
export function prepareStateDir(
  dir: string,
  flag: string,
  insideRoots: (real: string) => boolean = () => false,
): string {
  const fail = (why: string) => new UsageError(`${flag}: ${dir} ${why}`);
  const spelled = realSpelling(dir);
  const kernel = underKernelTree(dir) ?? underKernelTree(spelled);
  if (kernel) throw fail(`is under ${kernel}, a kernel file system; give a directory on disk`);
  if (insideRoots(spelled) && !existsSync(dir)) return spelled;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw fail(`cannot be created (${code}); give an existing, writable directory`);
  }
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (error) {
    throw fail(`cannot be resolved (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const kernelReal = underKernelTree(real);
  if (kernelReal) throw fail(`resolves under ${kernelReal}, a kernel file system; give a directory on disk`);
  const st = statSync(real);
  if (!st.isDirectory()) throw fail('is not a directory');
  try {
    accessSync(real, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    throw fail(`is not writable by this user (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (process.platform !== 'win32') {
    const uid = typeof process.getuid === 'function' ? process.getuid() : null;
    if (uid !== null && st.uid !== uid) throw fail(`belongs to another user (uid ${st.uid}); give one of your own`);
    if ((st.mode & 0o022) !== 0) {
      throw fail(
        `is writable by group or others (mode ${(st.mode & 0o777).toString(8)}); another user could plant a journal there (chmod go-w, or give another directory)`,
      );
    }
  }
  return real;
}
