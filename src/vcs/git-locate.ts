/**
 * Finding the repository of a work tree through verified locations (docs/security.md "What git may read"): the
 * work-tree top (the nearest ancestor holding `.git`), the git dir (a `.git` directory, link or `gitdir:` file), the
 * common dir (`commondir`), the objects directory and the index, each a real path inside the roots; and git's
 * ownership rule (safe.directory), which git does not apply to an explicit GIT_DIR.
 */

import os from 'node:os';
import path from 'node:path';
import { realpathSync } from 'node:fs';
import { ToolError } from '../errors/tool-error.js';
import { resolveGit } from './find-cli.js';
import { runCommand } from './run-command.js';
import {
  lstatOrNull,
  outsideError,
  realPathInside,
  repoError,
  Verifier,
  VIEW_CAPS,
  type ViewAccess,
} from './git-verifier.js';
import { processSlot } from '../process-slots.js';

/** The verified locations of one repository. */
export interface RepositoryLocations {
  /** Real path of the work-tree top (the directory holding `.git`). */
  workTree: string;
  /** Real path of the git dir (`.git`, or where a `.git` file or link leads). */
  gitDir: string;
  /** Real path of the common dir (the git dir, or a linked worktree's main git dir). */
  commonDir: string;
  /** Real path of the objects directory. */
  objectsDir: string;
  /** Real path of the index, or null when there is none yet. */
  index: string | null;
}

/** VALIDATION not_a_work_tree for `dir`. */
export function notAWorkTree(dir: string, insideGitDir = false): ToolError {
  return insideGitDir
    ? new ToolError('VALIDATION', `${dir} is inside a git directory or a bare repository, not a work tree.`, {
        path: dir,
        details: { reason: 'not_a_work_tree' },
        suggestion: 'Pass a path inside the work tree (the directory that contains .git), not .git itself.',
      })
    : new ToolError('VALIDATION', `${dir} is not inside a git work tree.`, {
        path: dir,
        details: { reason: 'not_a_work_tree' },
        suggestion: 'Pass a path inside a git work tree (git_status on a plain directory has nothing to report).',
      });
}

/** The top of the work tree containing real directory `dir`: the nearest ancestor holding a `.git` entry. */
export function findWorkTreeTop(dir: string): string {
  const parts = dir.split(path.sep);
  if (parts.includes('.git')) throw notAWorkTree(dir, true);
  for (let d = dir; ; d = path.dirname(d)) {
    if (lstatOrNull(path.join(d, '.git'))) return d;
    // A bare repository (or a git dir by another name): git would refuse to run here for lack of a work tree.
    if (
      lstatOrNull(path.join(d, 'HEAD'))?.isFile() &&
      lstatOrNull(path.join(d, 'objects'))?.isDirectory() &&
      lstatOrNull(path.join(d, 'refs'))?.isDirectory()
    )
      throw notAWorkTree(dir, true);
    if (path.dirname(d) === d) throw notAWorkTree(dir);
  }
}

/**
 * The verified locations of the repository whose work tree contains the real directory `dir`: the work-tree top,
 * git dir (through a `.git` file or link), common dir, objects directory and index, each a real path inside the roots.
 * Reads only small metadata files (`.git` file, commondir); runs nothing.
 * @throws ToolError VALIDATION not_a_work_tree / dubious_ownership, NOT_ALLOWED work_tree_outside_roots /
 *   git_location_outside_roots, SECRET_DENIED, IO_ERROR corrupt_repository, VALIDATION unsupported_repository
 */
export async function locateRepository(dir: string, access: ViewAccess): Promise<RepositoryLocations> {
  const verify = new Verifier(access);
  const top = findWorkTreeTop(dir);
  if (!verify.isInside(top)) {
    throw new ToolError('NOT_ALLOWED', `The git work tree of ${dir} is rooted above the allowed roots.`, {
      path: dir,
      details: { reason: 'work_tree_outside_roots' },
      suggestion: "Add the repository's top directory as a root, or use paths in a repository inside the roots.",
    });
  }
  const gitDir = locateGitDir(top, verify);
  await checkOwnership(top, gitDir, access.isInside);
  const commonDir = locateCommonDir(gitDir, verify);
  const objectsDir = verify.directory(path.join(commonDir, 'objects'), 'objects directory');
  const indexPath = path.join(gitDir, 'index');
  const indexFound = verify.locate(indexPath, 'index');
  if (indexFound && !indexFound.stats.isFile())
    throw repoError('corrupt_repository', indexPath, `${indexPath} is not a regular file.`);
  return { workTree: top, gitDir, commonDir, objectsDir, index: indexFound?.real ?? null };
}

/** The git dir of work-tree top `top`: `.git` as a directory, a link, or a `gitdir:` file; verified inside roots. */
function locateGitDir(top: string, verify: Verifier): string {
  const dotGit = path.join(top, '.git');
  const found = verify.locate(dotGit, '.git link');
  if (!found) throw repoError('corrupt_repository', dotGit, `${dotGit} is a link that leads nowhere.`);
  let gitDir: string;
  if (found.stats.isDirectory()) gitDir = found.real;
  else if (found.stats.isFile()) {
    // Read as git reads it (read_gitfile_gently): the whole file less its trailing CRs and LFs, "gitdir: " and the
    // rest is the path. A path with a line break, CR or NUL left in it is refused: git and the server must not be able
    // to read different directories out of one file.
    const text = verify
      .read(dotGit, '.git file', VIEW_CAPS.small)!
      .toString('utf8')
      .replace(/[\r\n]+$/, '');
    const value = text.startsWith('gitdir: ') ? text.slice('gitdir: '.length) : '';
    if (value === '' || /[\r\n\0]/.test(value))
      throw repoError('corrupt_repository', dotGit, `${dotGit} is a .git file without a valid "gitdir:" line.`);
    const lexical = path.resolve(top, value);
    let real: string;
    try {
      real = realpathSync(lexical);
    } catch {
      if (!verify.isInside(lexical)) throw outsideError(dotGit, '.git file');
      throw repoError('corrupt_repository', dotGit, `${dotGit} names a git directory that does not exist.`);
    }
    if (!verify.isInside(real)) throw outsideError(dotGit, '.git file');
    gitDir = real;
  } else throw repoError('corrupt_repository', dotGit, `${dotGit} is neither a directory nor a .git file.`);
  if (!lstatOrNull(gitDir)?.isDirectory())
    throw repoError('corrupt_repository', dotGit, `${dotGit} does not lead to a git directory.`);
  return gitDir;
}

/** A linked worktree's common dir (`commondir` file), verified inside the roots; else the git dir itself. */
function locateCommonDir(gitDir: string, verify: Verifier): string {
  const file = path.join(gitDir, 'commondir');
  const bytes = verify.read(file, 'commondir', VIEW_CAPS.small);
  if (!bytes) return gitDir;
  const value = bytes.toString('utf8').replace(/\r?\n$/, '');
  if (value === '' || value.includes('\n') || value.includes('\0'))
    throw repoError('corrupt_repository', file, `${file} is not a valid commondir file.`);
  const real = realPathInside(gitDir, value, file, 'commondir', verify);
  if (real === null) throw repoError('corrupt_repository', file, `${file} names a directory that does not exist.`);
  if (!lstatOrNull(real)?.isDirectory())
    throw repoError('corrupt_repository', file, `${file} does not name a directory.`);
  return real;
}

/**
 * git's ownership rule (safe.directory, git-config(1)): the work tree and git dir must belong to the effective user
 * (for root, to SUDO_UID when set). Checked here because git does not check an explicit GIT_DIR.
 * @throws ToolError VALIDATION dubious_ownership
 */
async function checkOwnership(top: string, gitDir: string, isInside: (p: string) => boolean): Promise<void> {
  if (typeof process.geteuid !== 'function') return;
  let uid = process.geteuid();
  if (uid === 0 && process.env.SUDO_UID && /^\d+$/.test(process.env.SUDO_UID)) uid = Number(process.env.SUDO_UID);
  for (const p of [top, gitDir]) {
    const st = lstatOrNull(p);
    if (
      st &&
      st.uid !== uid &&
      !(await safeDirectories(isInside)).some((s) => s === '*' || s === top || s === `${top}/`)
    ) {
      throw new ToolError('VALIDATION', `git refuses the repository at ${top}: dubious ownership.`, {
        path: top,
        details: { reason: 'dubious_ownership' },
        suggestion:
          'The repository belongs to another user; the owner must run git config --global --add safe.directory.',
      });
    }
  }
}

/**
 * The operator's global `safe.directory` values, read once per process (the first call's answer, shared by the calls
 * that wait for it) from the user's own git config by `git config --global`, run through the one subprocess runner
 * (in the server's own wall: git's narrower layer leaves the user's git configuration out) with the environment less GIT_* and no system config. None when
 * git fails, times out or says nothing.
 */
const safeDirs = processSlot('vcs/git-locate', () => ({ cache: null as Promise<string[]> | null }));
function safeDirectories(isInside: (p: string) => boolean): Promise<string[]> {
  if (safeDirs.cache) return safeDirs.cache;
  const program = resolveGit(isInside);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  safeDirs.cache = runCommand(program, ['config', '--global', '--null', '--get-all', 'safe.directory'], {
    env: { ...env, GIT_CONFIG_NOSYSTEM: '1', GIT_DIR: '/dev/null' },
    timeoutMs: 5000,
    maxOutputBytes: 1024 * 1024,
    cwd: os.tmpdir(),
    // It reads ~/.gitconfig, which git's narrower layer leaves out; it reads no repository (GIT_DIR=/dev/null).
    serverWall: true,
  }).then(
    (r) => (r.exitCode === 0 ? r.stdout.split('\0').filter(Boolean) : []),
    () => [], // none, or git missing
  );
  return safeDirs.cache;
}
