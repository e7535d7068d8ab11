/**
 * Where repositories run hooks from and which configuration files they read (docs/security.md "Execution-bearing
 * files and git directories"): `core.hooksPath` of the user's, the system's and each repository's configuration and
 * every file they include, the default hooks directory, and the targets of the links in a hooks directory. The
 * git-directory guard (git-dirs.ts) refuses changes there.
 */
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { VerifiedDir } from '../fs/verified-dir.js';
import { parseGitConfig } from '../vcs/git-config.js';
import { refusal } from './git-dir-refusal.js';
import { CACHE_MAX, gitDirState, isRacy, type Repository } from './git-dirs-state.js';
import { isPermissionError, readSmall, realOrLexical } from './git-repository-shape.js';
import { stampPaths, stampsHold } from './path-stamps.js';
import { cachedRepositoriesInRoot } from './git-repository-search.js';

/** git's own limit of nested `include.path`. */
const MAX_INCLUDE_DEPTH = 10;

/** A place outside git directories that a repository's git runs code from or reads configuration from. */
export interface Guarded {
  /** Absolute path (lexical or real spelling). */
  path: string;
  /**
   * `hooks`: a core.hooksPath directory; `include`: a configuration file an include names; `user_config`: the user's
   * or the system's configuration file itself (a root holding the home directory holds `~/.gitconfig`).
   */
  kind: 'hooks' | 'include' | 'user_config';
}

const hooksOf = (paths: readonly string[]): Guarded[] => paths.map((p) => ({ path: p, kind: 'hooks' }));

const includesOf = (paths: readonly string[]): Guarded[] => paths.map((p) => ({ path: p, kind: 'include' }));

/** Parsed config of `file` (null: git would refuse it), cached by the file's identity and version. @throws on IO */
function configAt(file: string): Map<string, string[]> | null | 'absent' {
  let st;
  try {
    st = lstatSync(file, { throwIfNoEntry: false });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') return 'absent';
    if ((code === 'EACCES' || code === 'EPERM') && !gitDirState.readableScope(path.resolve(file))) return 'absent';
    throw error;
  }
  if (!st) return 'absent';
  const sig = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  const cached = gitDirState.configs.get(file);
  if (cached && cached.sig === sig && !st.isSymbolicLink()) return cached.list;
  const bytes = readSmall(file);
  if (!bytes) return 'absent';
  const list = parseGitConfig(bytes.toString('utf8'));
  if (!st.isSymbolicLink() && !isRacy(st.mtimeMs, st.ctimeMs)) {
    if (gitDirState.configs.size >= CACHE_MAX) gitDirState.configs.clear();
    gitDirState.configs.set(file, { sig, list });
  }
  return list;
}

/** The home directory of `user` from the password database (/etc/passwd), or null when unknown. */
function homeOfUser(user: string): string | null {
  try {
    if (user === os.userInfo().username) return os.homedir();
  } catch {
    /* no password entry for this process */
  }
  let passwd: Buffer | null;
  try {
    passwd = readSmall('/etc/passwd');
  } catch {
    return null;
  }
  for (const line of (passwd ?? Buffer.alloc(0)).toString('utf8').split('\n')) {
    const fields = line.split(':');
    if (fields[0] === user && fields.length >= 7 && path.isAbsolute(fields[5])) return fields[5];
  }
  return null;
}

/** `~/x` → home, `~user/x` → that user's home (as git's expand_user_path); null when it cannot be decided. */
function expandUser(value: string, home: string): string | null {
  if (value === '~' || value.startsWith('~/')) return path.join(home, value.slice(1));
  if (value.startsWith('~')) {
    const slash = value.indexOf('/');
    const user = value.slice(1, slash < 0 ? undefined : slash);
    const userHome = homeOfUser(user);
    return userHome === null ? null : path.join(userHome, slash < 0 ? '' : value.slice(slash));
  }
  if (value.startsWith('%(prefix)/')) return null; // git's runtime prefix: not known here
  return value;
}

/**
 * Every `core.hooksPath` value of a configuration file and the files it includes (`include.path`, and
 * `includeIf.*.path` whatever its condition: a superset of what git reads). A missing file is skipped, as git does.
 * Every included file (lexical and real spelling, present or not) is added to `included`: it is part of the
 * configuration git reads, wherever it lies.
 * @throws Error 'undecidable' when a file cannot be read or parsed, or a path cannot be expanded
 */
function hooksPathValues(file: string, home: string, out: string[], depth = 0, included: string[] = []): void {
  if (depth > MAX_INCLUDE_DEPTH) throw new Error('undecidable');
  const list = configAt(file);
  if (list === 'absent') return;
  if (list === null) throw new Error('undecidable');
  for (const [key, values] of list) {
    if (key === 'core.hookspath') out.push(...values.filter((v) => v !== ''));
    const include = key === 'include.path' || (key.startsWith('includeif.') && key.endsWith('.path'));
    if (!include) continue;
    for (const v of values) {
      if (v === '') continue;
      const expanded = expandUser(v, home);
      if (expanded === null) throw new Error('undecidable');
      const target = path.resolve(path.dirname(file), expanded);
      included.push(target, realOrLexical(target));
      hooksPathValues(target, home, out, depth + 1, included);
    }
  }
}

/** The configuration files of the user and the system (git-config(1) FILES), honouring GIT_CONFIG_GLOBAL/SYSTEM. */
function userConfigFiles(home: string): string[] {
  const env = process.env;
  const files: string[] = [];
  if (!env.GIT_CONFIG_NOSYSTEM) files.push(env.GIT_CONFIG_SYSTEM ?? '/etc/gitconfig');
  if (env.GIT_CONFIG_GLOBAL !== undefined) files.push(env.GIT_CONFIG_GLOBAL);
  else {
    files.push(path.join(env.XDG_CONFIG_HOME || path.join(home, '.config'), 'git', 'config'));
    files.push(path.join(home, '.gitconfig'));
  }
  return files.filter((f) => f !== '' && f !== '/dev/null');
}

/** core.hooksPath values of the user's and system configuration, and the absolute hooks directories they name. */
export interface UserHooks {
  values: string[];
  dirs: Guarded[];
}

/**
 * The user's and the system's core.hooksPath (an absolute or `~/` value serves every repository, found or not; a
 * relative one is taken in each repository), and the configuration files themselves. The answer is kept while the
 * files and their readability scope are the same and every component of their paths is unchanged (path-stamps.ts);
 * only an answer read from those files alone is kept (no core.hooksPath value, no include: those name more paths).
 * The returned object is shared between checks: callers copy, never change it.
 * @throws ToolError FILE_POLICY_DENIED hooks_dir config_undecidable (fail closed: it applies everywhere)
 */
export function userHooks(requested: string, home: string): UserHooks {
  const files = userConfigFiles(home);
  const key = files.map((f) => `${f}\0${gitDirState.readableScope(path.resolve(f)) ? 1 : 0}`).join('\0');
  const kept = gitDirState.user;
  if (kept !== null && kept.key === key && stampsHold(kept.stamps)) return kept.hooks;
  gitDirState.user = null;
  const stamps = stampPaths(files); // before the reads: a change while they run shows at the next check
  const hooks = readUserHooks(requested, home, files);
  if (stamps !== null && hooks.values.length === 0 && hooks.dirs.every((d) => d.kind === 'user_config'))
    gitDirState.user = { key, stamps, hooks };
  return hooks;
}

/** `userHooks` read afresh from `files` (userConfigFiles). @throws as userHooks */
function readUserHooks(requested: string, home: string, files: readonly string[]): UserHooks {
  const values: string[] = [];
  const dirs: Guarded[] = [];
  const included: string[] = [];
  const undecidable = () =>
    refusal(requested, { rule: 'hooks_dir', reason: 'config_undecidable', repository: '(user configuration)' });
  try {
    for (const f of files) hooksPathValues(f, home, values, 0, included);
  } catch (error) {
    if (isPermissionError(error)) throw error;
    throw undecidable();
  }
  for (const v of values) {
    const expanded = expandUser(v, home);
    if (expanded === null) throw undecidable();
    if (path.isAbsolute(expanded)) dirs.push(...hooksOf([expanded, realOrLexical(expanded)]));
  }
  dirs.push(...includesOf(included));
  // The files themselves: git reads them in every repository, so one inside a root is guarded like an included file.
  for (const f of files) dirs.push(...[f, realOrLexical(f)].map((p) => ({ path: p, kind: 'user_config' as const })));
  return { values, dirs };
}

/**
 * The hooks directories (lexical and real spellings) one repository runs hooks from, per its configuration and the
 * user's values.
 * @throws Error when its configuration cannot be read or a value cannot be expanded
 */
export function repositoryHooks(repo: Repository, user: UserHooks, home: string): Guarded[] {
  const where = repo.workTree ?? repo.gitDir;
  const values = [...user.values];
  const commonFile = readSmall(path.join(repo.gitDir, 'commondir'));
  const commonDir = commonFile
    ? realOrLexical(path.resolve(repo.gitDir, commonFile.toString('utf8').replace(/[\r\n]+$/, '')))
    : repo.gitDir;
  const included: string[] = [];
  for (const dir of new Set([repo.gitDir, commonDir])) {
    hooksPathValues(path.join(dir, 'config'), home, values, 0, included);
    hooksPathValues(path.join(dir, 'config.worktree'), home, values, 0, included);
  }
  const out: Guarded[] = includesOf(included);
  // Without core.hooksPath git runs hooks from the common dir's `hooks`, which may itself be a link out of the git
  // directory (`ln -s ../tools/hooks .git/hooks`); guarded at its real place too.
  const dirs = values.length === 0 ? [path.join(commonDir, 'hooks')] : [];
  for (const v of values) {
    const expanded = expandUser(v, home);
    if (expanded === null) throw new Error('undecidable');
    dirs.push(path.resolve(where, expanded));
  }
  for (const lexical of dirs) {
    const real = realOrLexical(lexical);
    out.push(...hooksOf([lexical, real]), ...hooksOf(linkTargetsIn(real)));
  }
  return out;
}

/** Most links in one hooks directory whose targets are followed; more fails closed (undecidable). */
const MAX_HOOK_LINKS = 256;

/**
 * Where the links in hooks directory `dir` lead (real path of each target, present or not): git runs a hook that is a
 * link (`.git/hooks/pre-commit -> ../../scripts/pre-commit`) by executing its target, so the target is part of the
 * hooks directory however it is reached. A missing directory holds none.
 * @throws Error when the directory cannot be listed or holds more than MAX_HOOK_LINKS links
 */
function linkTargetsIn(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    if ((code === 'EACCES' || code === 'EPERM') && !gitDirState.readableScope(dir)) return [];
    throw error;
  }
  const links = entries.filter((e) => e.isSymbolicLink());
  if (links.length > MAX_HOOK_LINKS) throw new Error('undecidable');
  const targets: string[] = [];
  for (const link of links) {
    // Follow the chain by hand: a dangling link's target is where a file created later would run from.
    let p = path.join(dir, link.name);
    for (let hops = 0; ; hops++) {
      if (hops > 40) throw new Error('undecidable'); // ELOOP, as the kernel would answer
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (!st?.isSymbolicLink()) break;
      p = realOrLexical(path.resolve(path.dirname(p), readlinkSync(p)));
    }
    targets.push(realOrLexical(p));
  }
  return targets;
}

/**
 * The hooks directories of every repository found inside a root (`repositoriesInRoot`), the work trees of those whose
 * configuration cannot be read, and whether the search was capped.
 */
export function rootHooks(
  root: VerifiedDir,
  user: UserHooks,
  home: string,
): { hooks: Guarded[]; undecidable: string[]; capped: boolean } {
  const hooks: Guarded[] = [];
  const undecidable: string[] = [];
  const search = cachedRepositoriesInRoot(root);
  for (const repo of search.repositories) {
    try {
      hooks.push(...repositoryHooks(repo, user, home));
    } catch {
      // Unreadable (a config linked out of the roots the kernel wall hides, a config git would refuse): where its hooks
      // are cannot be told, so nothing in its work tree is written (the check of a path inside it throws).
      undecidable.push(repo.workTree ?? repo.gitDir);
    }
  }
  undecidable.push(...search.undecidable);
  return { hooks, undecidable, capped: search.capped };
}

/**
 * The names git runs from a hooks directory (githooks(5)), lower case. When the repository search of a root is capped,
 * creating or writing an entry of one of these names in that root is refused: the server cannot tell whether the
 * directory is one a repository it did not reach names.
 */
export const GIT_HOOK_NAMES: ReadonlySet<string> = new Set([
  'applypatch-msg',
  'pre-applypatch',
  'post-applypatch',
  'pre-commit',
  'pre-merge-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-rebase',
  'post-checkout',
  'post-merge',
  'pre-push',
  'pre-receive',
  'update',
  'proc-receive',
  'post-receive',
  'post-update',
  'reference-transaction',
  'push-to-checkout',
  'pre-auto-gc',
  'post-rewrite',
  'sendemail-validate',
  'fsmonitor-watchman',
  'p4-changelist',
  'p4-prepare-changelist',
  'p4-post-changelist',
  'p4-pre-submit',
  'post-index-change',
]);

/** Whether an entry name is one git runs as a hook (any case: a case-insensitive filesystem folds it). */
export function isHookName(name: string): boolean {
  return GIT_HOOK_NAMES.has(name.toLowerCase());
}
