/**
 * Git directories recognised by what they are, and the hooks directories repositories name (docs/security.md
 * "Execution-bearing files and git directories"). A written hook, a written `core.fsmonitor` or filter in a
 * repository's config is code the user's own git runs later; so nothing inside a git directory is written by the file
 * tools, whatever the directory is called.
 *
 * What git accepts as a repository (setup.c `is_git_directory`): a directory with `HEAD` and `objects` and `refs` —
 * the last two possibly in the common directory its `commondir` file names. Every directory git accepts as a git
 * directory or as a common directory therefore holds at least two of the entries `HEAD`, `objects`, `refs`,
 * `commondir` (a bare `repo.git`, a `--separate-git-dir` target, `worktrees/NAME` with HEAD + commondir, a common dir
 * with objects + refs). The guard uses exactly that, failing closed on partial shapes:
 *   - a directory holding two or more of those entries (any kind: git only asks `access()`), looked up by name
 *     through the directory's verified descriptor — so a case-insensitive filesystem folds the names as git's own
 *     lookup would — is a git directory, and nothing at it or below it may be created, written, moved or deleted;
 *   - creating one of those names in a directory that already holds another (write `x/HEAD` when `x/objects`
 *     exists) would make one, and is refused the same way: a repository cannot be built entry by entry;
 *   - the hooks directory named by `core.hooksPath` in the configuration of any repository whose work tree holds the
 *     path (its `.git` directory or file at any ancestor within the roots, or above the roots), of any repository
 *     anywhere inside the root (a shared `../tools/githooks`, an absolute path elsewhere in the root: the whole root is
 *     searched, `repositoriesInRoot`, for every path: an included file or a helper a hook runs has any name), or in the user's global and system configuration, is guarded the same way
 *     (rule `hooks_dir`). When that search is capped (a root with more directories, or deeper, than it looks at),
 *     an entry named as a git hook is not created or written in that root (reason `search_capped`).
 * Every directory from the root down is opened component by component through src/fs/verified-dir.ts (a link on the
 * way is refused), and the entries are looked up relative to those descriptors. Results per directory are cached by
 * identity and version (dev, ino, mtime, ctime); a directory changed within the last two seconds is never cached
 * (a coarse timestamp could hide a change made in the same tick: git's "racily clean" rule).
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  type Stats,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { VerifiedDir } from '../fs/verified-dir.js';
import { parseGitConfig } from '../vcs/git-config.js';
import { findContainingRoot, isInsideRoots, isWithin } from './containment.js';

/** The entries that make a directory a git directory when two of them are present. */
export const REPOSITORY_ENTRY_NAMES: readonly string[] = ['HEAD', 'objects', 'refs', 'commondir'];
const REPOSITORY_NAMES_LOWER = new Set(REPOSITORY_ENTRY_NAMES.map((n) => n.toLowerCase()));

/** Largest configuration or `.git` / `commondir` file read for a decision; a larger one fails closed. */
export const MAX_GIT_METADATA_BYTES = 4 * 1024 * 1024;
/** git's own limit of nested `include.path`. */
const MAX_INCLUDE_DEPTH = 10;
/** A directory or file changed less than this long ago (ms) is not cached. */
const RACY_MS = 2000;
const CACHE_MAX = 4096;

/** What one directory holds that matters here. */
interface DirFacts {
  /** Which of REPOSITORY_ENTRY_NAMES are present (bit i: name i). */
  members: number;
  /** The `.git` entry: none, a directory (or link), or a file. */
  dotGit: 'none' | 'dir' | 'link' | 'file' | 'other';
}

interface CachedFacts extends DirFacts {
  mtimeMs: number;
  ctimeMs: number;
}

const dirCache = new Map<string, CachedFacts>();

/** Drops every cached directory verdict (tests). */
export function clearGitDirCache(): void {
  dirCache.clear();
  listingCache.clear();
  configCache.clear();
  repositorySearchCache.clear();
}

const bitCount = (m: number): number => (m & 1) + ((m >> 1) & 1) + ((m >> 2) & 1) + ((m >> 3) & 1);

function isRacy(mtimeMs: number, ctimeMs: number): boolean {
  return Date.now() - Math.max(mtimeMs, ctimeMs) < RACY_MS;
}

/** An entry looked up through the directory: present (any kind), absent; an error other than absence counts as present. */
function present(dir: VerifiedDir, name: string): boolean {
  try {
    return dir.lstat(name) !== null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (isPermissionError(error)) throw error; // fails the call as the OS (or the kernel wall) refused it
    return !(code === 'ENOENT' || code === 'ENOTDIR');
  }
}

/**
 * EACCES or EPERM: the OS or the kernel wall refused to let the server look. Such an error fails the call as is
 * (FILE_POLICY_DENIED, source os or kernel, from the one envelope mapper) — closed, and saying who refused — rather
 * than being turned into a built-in refusal.
 */
function isPermissionError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'EACCES' || code === 'EPERM';
}

/** The cached facts of the directory `st` describes, when its version is unchanged. */
function cachedFacts(st: Stats): DirFacts | undefined {
  const cached = dirCache.get(`${st.dev}:${st.ino}`);
  return cached && cached.mtimeMs === st.mtimeMs && cached.ctimeMs === st.ctimeMs ? cached : undefined;
}

/** The facts of an open verified directory (cached by identity and version). */
function factsOf(dir: VerifiedDir): DirFacts {
  const st = fstatSync(dir.fd);
  const hit = cachedFacts(st);
  if (hit) return hit;
  let members = 0;
  REPOSITORY_ENTRY_NAMES.forEach((name, i) => {
    if (present(dir, name)) members |= 1 << i;
  });
  let dotGit: DirFacts['dotGit'] = 'none';
  try {
    const g = dir.lstat('.git');
    if (g) dotGit = g.isDirectory() ? 'dir' : g.isSymbolicLink() ? 'link' : g.isFile() ? 'file' : 'other';
  } catch {
    dotGit = 'other';
  }
  const facts: DirFacts = { members, dotGit };
  if (!isRacy(st.mtimeMs, st.ctimeMs)) {
    if (dirCache.size >= CACHE_MAX) dirCache.clear();
    dirCache.set(`${st.dev}:${st.ino}`, { ...facts, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
  }
  return facts;
}

/** A place outside git directories that a repository's git runs code from or reads configuration from. */
interface Guarded {
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

/** Why a path is refused. */
type GitRefusal =
  | { rule: 'git_dir'; reason: 'inside_git_dir' | 'is_git_dir' | 'would_create_git_dir'; gitDir: string }
  | { rule: 'git_dir'; reason: 'included_config' | 'user_config'; config: string }
  | { rule: 'hooks_dir'; reason: 'core_hookspath'; hooksDir: string }
  | { rule: 'hooks_dir'; reason: 'config_undecidable'; repository: string }
  | { rule: 'hooks_dir'; reason: 'search_capped' };

function refusal(requested: string, r: GitRefusal): ToolError {
  let message: string;
  const details: Record<string, unknown> = { source: 'builtin', rule: r.rule, reason: r.reason };
  if (r.rule === 'git_dir' && 'config' in r) {
    details.config = r.config;
    message =
      r.reason === 'user_config'
        ? `${requested} is, or holds, ${r.config}, the user's or the system's git configuration, which every ` +
          "repository's git reads; the file tools never change it."
        : `${requested} is, or holds, ${r.config}, a configuration file a repository's config includes ` +
          '(include.path / includeIf); git reads it as its own configuration, so the file tools never change it.';
  } else if ('gitDir' in r) {
    details.git_dir = r.gitDir;
    message =
      r.reason === 'would_create_git_dir'
        ? `Creating ${requested} would make ${r.gitDir} a git directory (it would hold two of HEAD, objects, refs, ` +
          'commondir); the file tools never build a repository.'
        : `${requested} is ${r.reason === 'is_git_dir' ? '' : 'inside '}a git directory (${r.gitDir} holds two of ` +
          'HEAD, objects, refs, commondir); the file tools never change a git directory.';
  } else if (r.reason === 'core_hookspath') {
    details.hooks_dir = r.hooksDir;
    message = `${requested} is in the hooks directory a repository's core.hooksPath names (${r.hooksDir}); its files run on git commands, so the file tools never change it.`;
  } else if (r.reason === 'search_capped') {
    message =
      `${requested} is named as a git hook, and the root holds more directories than the server searches for ` +
      'repositories (whose core.hooksPath could name this directory), so it is not written.';
  } else {
    details.repository = r.repository;
    message = `The configuration of the repository at ${r.repository} cannot be read to tell where its hooks are (core.hooksPath), so nothing in it is written.`;
  }
  return new ToolError('FILE_POLICY_DENIED', message, { path: requested, details });
}

/** A repository whose configuration may name a hooks directory. */
interface Repository {
  /** The work tree top (where hooks run), or null for a bare repository. */
  workTree: string | null;
  /** Its git directory (real path where it resolved). */
  gitDir: string;
}

/**
 * The roots of the check running now (set by `inspect`, which is synchronous from start to end, so no other check
 * interleaves). A file outside them that the kernel wall does not let the server read (EACCES, EPERM: the system
 * configuration, a repository above the roots, the common dir of a work tree whose repository lies outside) is taken
 * as absent — the server cannot see it, and refusing every write under the wall would make the wall unusable;
 * docs/security.md says so. Inside the roots an unreadable file still fails closed.
 */
let readableScope: (p: string) => boolean = () => true;

/** Reads a small file by path (git metadata; never revealed). null when it does not exist. @throws on other errors */
function readSmall(file: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    if ((code === 'EACCES' || code === 'EPERM') && !readableScope(path.resolve(file))) return null;
    throw error;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      if (st.isDirectory()) return null; // git ignores a directory where a config file would be
      throw new Error('not a regular file');
    }
    if (st.size > MAX_GIT_METADATA_BYTES) throw new Error('too large');
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}

/** The real path of `p`, or `p` itself when it (or part of it) does not exist: its nearest existing ancestor's real path. */
function realOrLexical(p: string): string {
  const rest: string[] = [];
  let cur = p;
  for (;;) {
    try {
      return path.join(realpathSync.native(cur), ...rest.reverse());
    } catch {
      const parent = path.dirname(cur);
      if (parent === cur) return p;
      rest.push(path.basename(cur));
      cur = parent;
    }
  }
}

/** `gitdir: X` of a `.git` file, as git's read_gitfile takes it (trailing CRs and LFs trimmed, nothing else); null if malformed. */
function gitfileTarget(text: string, base: string): string | null {
  const m = /^gitdir: (.*)$/s.exec(text.replace(/[\r\n]+$/, ''));
  if (!m || m[1] === '' || m[1].includes('\n')) return null;
  return path.resolve(base, m[1]);
}

/** The git directory a work tree top `top` names through its `.git` entry (null: none usable). */
function gitDirOf(top: string, kind: DirFacts['dotGit']): string | null {
  const dotGit = path.join(top, '.git');
  if (kind === 'dir' || kind === 'link') return realOrLexical(dotGit);
  if (kind !== 'file') return null;
  const text = readSmall(dotGit);
  if (!text) return null;
  const target = gitfileTarget(text.toString('utf8'), top);
  return target === null ? null : realOrLexical(target);
}

const configCache = new Map<string, { sig: string; list: Map<string, string[]> | null }>();

/** Parsed config of `file` (null: git would refuse it), cached by the file's identity and version. @throws on IO */
function configAt(file: string): Map<string, string[]> | null | 'absent' {
  let st;
  try {
    st = lstatSync(file, { throwIfNoEntry: false });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') return 'absent';
    if ((code === 'EACCES' || code === 'EPERM') && !readableScope(path.resolve(file))) return 'absent';
    throw error;
  }
  if (!st) return 'absent';
  const sig = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  const cached = configCache.get(file);
  if (cached && cached.sig === sig && !st.isSymbolicLink()) return cached.list;
  const bytes = readSmall(file);
  if (!bytes) return 'absent';
  const list = parseGitConfig(bytes.toString('utf8'));
  if (!st.isSymbolicLink() && !isRacy(st.mtimeMs, st.ctimeMs)) {
    if (configCache.size >= CACHE_MAX) configCache.clear();
    configCache.set(file, { sig, list });
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
interface UserHooks {
  values: string[];
  dirs: Guarded[];
}

/**
 * The user's and the system's core.hooksPath (an absolute or `~/` value serves every repository, found or not; a
 * relative one is taken in each repository).
 * @throws ToolError FILE_POLICY_DENIED hooks_dir config_undecidable (fail closed: it applies everywhere)
 */
function userHooks(requested: string, home: string): UserHooks {
  const values: string[] = [];
  const dirs: Guarded[] = [];
  const included: string[] = [];
  const undecidable = () =>
    refusal(requested, { rule: 'hooks_dir', reason: 'config_undecidable', repository: '(user configuration)' });
  try {
    for (const f of userConfigFiles(home)) hooksPathValues(f, home, values, 0, included);
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
  for (const f of userConfigFiles(home))
    dirs.push(...[f, realOrLexical(f)].map((p) => ({ path: p, kind: 'user_config' as const })));
  return { values, dirs };
}

/**
 * The hooks directories (lexical and real spellings) one repository runs hooks from, per its configuration and the
 * user's values.
 * @throws Error when its configuration cannot be read or a value cannot be expanded
 */
function repositoryHooks(repo: Repository, user: UserHooks, home: string): Guarded[] {
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
    if ((code === 'EACCES' || code === 'EPERM') && !readableScope(dir)) return [];
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
function rootHooks(
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

/** The repository whose work tree holds the directories above `root` (git's discovery upwards), if any. */
function repositoryAbove(root: string): Repository | null {
  let dir = path.dirname(root);
  for (;;) {
    let kind: DirFacts['dotGit'] = 'none';
    try {
      const g = lstatSync(path.join(dir, '.git'), { throwIfNoEntry: false });
      if (g) kind = g.isDirectory() ? 'dir' : g.isSymbolicLink() ? 'link' : g.isFile() ? 'file' : 'other';
    } catch {
      kind = 'none';
    }
    if (kind !== 'none') {
      let gitDir: string | null;
      try {
        gitDir = gitDirOf(dir, kind);
      } catch {
        gitDir = null;
      }
      return gitDir ? { workTree: dir, gitDir } : null;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/**
 * How long one root's list of repositories (`repositoriesInRoot`) is reused, ms. The search opens every directory of
 * the root (up to MAX_REPOSITORY_SEARCH_DIRS: about 15 ms idle, several hundred under load), too much for every
 * mutation. The file tools cannot create a repository (`would_create_git_dir`, the `.git` rules), so only another
 * process can add one, and it is seen after at most this long (docs/security.md "core.hooksPath"). What the
 * repositories say — their configuration, included files, the links in their hooks directories — is read again on
 * every call, and the checks along the path's own ancestors are never reused.
 */
export const REPOSITORY_SEARCH_REUSE_MS = 2000;
const repositorySearchCache = new Map<string, ReturnType<typeof repositoriesInRoot> & { until: number }>();

/** Forgets every root's list of repositories (tests: a verdict that must see a repository created just before). */
export function clearRepositorySearchCache(): void {
  repositorySearchCache.clear();
}

/** `repositoriesInRoot`, reused for REPOSITORY_SEARCH_REUSE_MS per root identity. */
function cachedRepositoriesInRoot(root: VerifiedDir): ReturnType<typeof repositoriesInRoot> {
  const st = fstatSync(root.fd);
  const key = `${st.dev}:${st.ino}`;
  const now = Date.now();
  const hit = repositorySearchCache.get(key);
  if (hit && hit.until > now) return hit;
  const found = repositoriesInRoot(root);
  if (repositorySearchCache.size >= CACHE_MAX) repositorySearchCache.clear();
  repositorySearchCache.set(key, { ...found, until: now + REPOSITORY_SEARCH_REUSE_MS });
  return found;
}

/** Most directories of one root the repository search looks at; beyond it the search is capped (fails closed). */
export const MAX_REPOSITORY_SEARCH_DIRS = 5_000;
/** Deepest directory (levels below the root) the repository search descends to; deeper, the search is capped. */
export const MAX_REPOSITORY_SEARCH_DEPTH = 128;

/** What the repository search keeps per directory: its subdirectory names and repository facts. */
interface Listing extends CachedFacts {
  subdirs: string[];
}
const listingCache = new Map<string, Listing>();

/** The listing of an open verified directory, cached by identity and version (dev, ino, mtime, ctime). */
function listingOf(dir: VerifiedDir): Listing {
  const st = fstatSync(dir.fd);
  const key = `${st.dev}:${st.ino}`;
  const hit = listingCache.get(key);
  if (hit && hit.mtimeMs === st.mtimeMs && hit.ctimeMs === st.ctimeMs) return hit;
  let members = 0;
  let dotGit: DirFacts['dotGit'] = 'none';
  const subdirs: string[] = [];
  for (const entry of dir.readdirSync()) {
    const lower = entry.name.toLowerCase();
    const i = REPOSITORY_ENTRY_NAMES.findIndex((n) => n.toLowerCase() === lower);
    if (i >= 0) members |= 1 << i;
    if (lower === '.git') {
      dotGit = entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'link' : entry.isFile() ? 'file' : 'other';
    } else if (entry.isDirectory()) subdirs.push(entry.name);
  }
  const listing: Listing = { members, dotGit, subdirs, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
  if (!isRacy(st.mtimeMs, st.ctimeMs)) {
    if (listingCache.size >= CACHE_MAX * 4) listingCache.clear();
    listingCache.set(key, listing);
  }
  return listing;
}

/**
 * Every repository inside a root whose configuration could name a hooks directory: each directory holding a `.git`
 * entry (a work tree, nested ones and submodules included) and each git directory (a bare `repo.git`, a
 * `--separate-git-dir` target, a common dir; not descended into). The whole tree is walked through verified
 * descriptors (O_NOFOLLOW: a link is never followed), holding one descriptor per level; each directory's listing is
 * cached by identity and version, so an unchanged tree costs one open and fstat per directory, and a changed
 * directory is listed again. At most MAX_REPOSITORY_SEARCH_DIRS directories and MAX_REPOSITORY_SEARCH_DEPTH levels
 * are looked at; beyond either, or at a directory the OS or the kernel wall does not let the server list, `capped` is
 * true and the caller fails closed. A work tree whose `.git` file cannot be read is returned in `undecidable`.
 */
function repositoriesInRoot(root: VerifiedDir): {
  repositories: Repository[];
  undecidable: string[];
  capped: boolean;
} {
  const repositories: Repository[] = [];
  const undecidable: string[] = [];
  let visited = 0;
  let capped = false;
  const visit = (dir: VerifiedDir, depth: number): void => {
    if (++visited > MAX_REPOSITORY_SEARCH_DIRS || depth > MAX_REPOSITORY_SEARCH_DEPTH) {
      capped = true;
      return;
    }
    let listing: Listing;
    try {
      listing = listingOf(dir);
    } catch (error) {
      if (!isPermissionError(error)) throw error;
      capped = true; // a directory the server may not list could hold a repository: searched no further, closed
      return;
    }
    if (bitCount(listing.members) >= 2) {
      repositories.push({ workTree: null, gitDir: dir.path });
      return; // a git directory: the file tools write nothing in it, and what it holds is git's own
    }
    if (listing.dotGit !== 'none') {
      try {
        const gitDir = gitDirOf(dir.path, listing.dotGit);
        if (gitDir) repositories.push({ workTree: dir.path, gitDir });
      } catch {
        undecidable.push(dir.path);
      }
    }
    for (const name of listing.subdirs) {
      let child: VerifiedDir;
      try {
        child = dir.openDir(name);
      } catch (error) {
        if (!isPermissionError(error)) continue; // gone, or replaced by a link or a file since the listing
        capped = true; // one the server may not open could hold a repository: closed, as for the caps
        return;
      }
      try {
        visit(child, depth + 1);
      } finally {
        child.close();
      }
      if (capped) return;
    }
  };
  visit(root, 0);
  return { repositories, undecidable, capped };
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
function isHookName(name: string): boolean {
  return GIT_HOOK_NAMES.has(name.toLowerCase());
}

/** What the caller knows about the roots. */
export interface GitGuardRoots {
  roots: readonly { real: string }[];
}

/**
 * The built-in git-directory guard for one path about to be created, written, moved (either end), copied (either end)
 * or deleted: refused when the path is, or lies inside, a git directory (recognised by what it is, see the module
 * comment), when creating it would make its directory one, or when it is or lies inside the hooks directory a
 * repository's `core.hooksPath` names (a directory that holds one is refused entry by entry by the tree walks). `real` is the authorized real path (it may not exist yet); `requested` is
 * the spelling named in the refusal.
 * @throws ToolError FILE_POLICY_DENIED (source builtin, rule git_dir | hooks_dir, details.reason); NOT_ALLOWED when
 *   a directory on the way changed while it was being checked (verified-dir); errno errors other than absence
 */
export function assertNotInGitDirectory(ctx: GitGuardRoots, requested: string, real: string): void {
  // The whole-root repository search runs for every name: a configuration file a repository includes, and a file a
  // hook in a shared hooks directory runs, can have any name and lie outside every work tree holding it; only the
  // search finds the repository that names them (docs/security.md, "Execution-bearing files and git directories").
  const { hooks, capped } = inspect(ctx, requested, real);
  for (const h of hooks) {
    if (h.kind === 'hooks' && isWithin(h.path, real))
      throw refusal(requested, { rule: 'hooks_dir', reason: 'core_hookspath', hooksDir: h.path });
    // An included file is changed by changing it or any directory holding it (a move or delete of the directory).
    if ((h.kind === 'include' || h.kind === 'user_config') && isWithin(real, h.path))
      throw refusal(requested, {
        rule: 'git_dir',
        reason: h.kind === 'include' ? 'included_config' : 'user_config',
        config: h.path,
      });
  }
  if (capped && isHookName(path.basename(real)))
    throw refusal(requested, { rule: 'hooks_dir', reason: 'search_capped' });
}

/**
 * The walk of `assertNotInGitDirectory` (the git-directory rules, throwing), returning the hooks directories that
 * apply at `real`: the user's, the repositories' below the root and those of the work trees holding it.
 */
function inspect(ctx: GitGuardRoots, requested: string, real: string): { hooks: Guarded[]; capped: boolean } {
  const root = findContainingRoot(ctx.roots, real);
  if (!root) return { hooks: [], capped: false }; // containment is decided (and refused) elsewhere; nothing to look at outside the roots
  const isInside = (p: string) => isInsideRoots(ctx.roots, p);
  readableScope = isInside;
  const rel = path.relative(root.real, real);
  const parts = rel === '' ? [] : rel.split(path.sep);
  const home = os.homedir();
  const user = userHooks(requested, home);
  const hooks: Guarded[] = [...user.dirs];
  const repos: Repository[] = [];
  const above = repositoryAbove(root.real);
  if (above) repos.push(above);

  let dir: VerifiedDir;
  try {
    dir = VerifiedDir.open(root.real, isInside);
  } catch (error) {
    // A root that is gone holds no repository (the operation itself fails on it); anything else fails closed.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { hooks, capped: false };
    throw error;
  }
  let capped: boolean;
  try {
    const found = rootHooks(dir, user, home);
    hooks.push(...found.hooks);
    capped = found.capped;
    for (const where of found.undecidable) {
      if (isWithin(where, real))
        throw refusal(requested, { rule: 'hooks_dir', reason: 'config_undecidable', repository: where });
    }
    // Every existing directory from the root down to the path's parent.
    let depth = 0;
    let facts = factsOf(dir);
    for (;;) {
      if (bitCount(facts.members) >= 2)
        throw refusal(requested, {
          rule: 'git_dir',
          reason: depth === parts.length ? 'is_git_dir' : 'inside_git_dir',
          gitDir: dir.path,
        });
      if (facts.dotGit !== 'none' && depth < parts.length) {
        let gitDir: string | null;
        try {
          gitDir = gitDirOf(dir.path, facts.dotGit);
        } catch (error) {
          if (isPermissionError(error)) throw error;
          throw refusal(requested, { rule: 'hooks_dir', reason: 'config_undecidable', repository: dir.path });
        }
        if (gitDir) repos.push({ workTree: dir.path, gitDir });
      }
      if (depth >= parts.length) break;
      const name = parts[depth];
      // Creating (or replacing) `name` here: would it complete a repository's shape?
      const index = REPOSITORY_ENTRY_NAMES.findIndex((n) => n.toLowerCase() === name.toLowerCase());
      if (index >= 0 && bitCount(facts.members | (1 << index)) >= 2)
        throw refusal(requested, { rule: 'git_dir', reason: 'would_create_git_dir', gitDir: dir.path });
      let next: VerifiedDir;
      try {
        next = dir.openDir(name);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') break; // nothing below exists: no repository there yet
        if (error instanceof ToolError && depth === parts.length - 1 && error.details.reason === 'symlink_swapped') {
          break; // the path itself is a link (moved or deleted as a link, never followed)
        }
        throw error;
      }
      dir.close();
      dir = next;
      depth++;
      facts = factsOf(dir);
    }
  } finally {
    dir.close();
  }

  for (const repo of repos) {
    try {
      hooks.push(...repositoryHooks(repo, user, home));
    } catch (error) {
      if (isPermissionError(error)) throw error;
      // Where its hooks are cannot be told: nothing in its work tree (which holds the path) is written.
      throw refusal(requested, {
        rule: 'hooks_dir',
        reason: 'config_undecidable',
        repository: repo.workTree ?? repo.gitDir,
      });
    }
  }
  return { hooks, capped };
}

/** What `treeGitGuard` finds wrong with one entry of a tree. */
export interface TreeGitOffence {
  rule: 'git_dir' | 'hooks_dir';
  /** The index in `tops` of the place that is refused (a git directory carried: the old place, 0). */
  top: number;
}

/**
 * The git-directory guard for the entries of a tree being moved, copied or deleted (src/policy/tree-authorize.ts),
 * whose top directories (`tops`: the old place, and the new place of a move or copy) each passed
 * `assertNotInGitDirectory`. Per entry, with no IO (the caller's walk lists the tree through verified descriptors, in
 * pre-order): an entry whose directory holds two of HEAD, objects, refs, commondir among the entries seen so far is
 * in a git directory carried by the tree (the shape is the same at the old and the new place), and an entry at a
 * place inside a hooks directory that applies at its top is refused. The returned function takes the entry's path
 * relative to the top (`/`-separated) and its absolute path at each top, in `tops` order.
 * @throws as assertNotInGitDirectory, for the tops (a change since their own check)
 */
export function treeGitGuard(
  ctx: GitGuardRoots,
  tops: readonly { absolute: string; real: string }[],
): (relative: string, places: readonly string[]) => TreeGitOffence | null {
  const found = tops.map((t) => inspect(ctx, t.absolute, t.real));
  const hooks = found.map((f) => f.hooks);
  const seen = new Map<string, number>();
  return (relative, places) => {
    const slash = relative.lastIndexOf('/');
    const parent = slash < 0 ? '' : relative.slice(0, slash);
    const index = REPOSITORY_ENTRY_NAMES.findIndex((n) => n.toLowerCase() === relative.slice(slash + 1).toLowerCase());
    if (index >= 0) {
      const mask = (seen.get(parent) ?? 0) | (1 << index);
      seen.set(parent, mask);
      if (bitCount(mask) >= 2) return { rule: 'git_dir', top: 0 };
    }
    for (let i = 0; i < places.length; i++) {
      if (hooks[i]?.some((h) => h.kind === 'hooks' && isWithin(h.path, places[i])))
        return { rule: 'hooks_dir', top: i };
      if (hooks[i]?.some((h) => (h.kind === 'include' || h.kind === 'user_config') && h.path === places[i]))
        return { rule: 'git_dir', top: i };
      // A new place (i > 0) in a root whose repository search was capped: no entry named as a git hook arrives.
      if (i > 0 && found[i]?.capped && isHookName(path.basename(places[i]))) return { rule: 'hooks_dir', top: i };
    }
    return null;
  };
}

/** Extra lock paths for a mutation touching `real`: one per directory in which a repository entry is created. */
export function repositoryShapeLockPath(real: string): string | null {
  return REPOSITORY_NAMES_LOWER.has(path.basename(real).toLowerCase()) ? path.join(path.dirname(real), 'HEAD') : null;
}
