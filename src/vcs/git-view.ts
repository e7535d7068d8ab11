/**
 * The sanitized view git runs against (docs/security.md "What git may read"). A repository's own configuration, hooks,
 * attributes-driven drivers and metadata links are hostile input, so git never sees the repository's git directory:
 *
 * - every location git would read (work tree, `.git` file or link, git dir, common dir, objects and each alternate,
 *   index, HEAD, the refs in use, packed-refs, config, info/exclude, shallow) is resolved here to a real path that
 *   must lie inside the roots; a link or `.git` file leading outside is NOT_ALLOWED naming the link, never its target;
 *   a metadata link to a secret file is SECRET_DENIED;
 * - the server builds a PRIVATE git dir (mode 0700, outside the roots, reused) holding a config it writes itself
 *   (no include, no filter/diff/merge driver, no external diff, fsmonitor off, hooks path /dev/null, submodules
 *   ignored), a copy of HEAD and of the refs status needs (HEAD's branch and its upstream), the repository's
 *   info/exclude and (checked) shallow files, `objects/info/alternates` naming mirrors of the verified object stores
 *   (links to their pack and fan-out directories, no `info/`), and the index the server parsed, validated and
 *   rebuilt (git-index.ts): git reads no repository file the server did not check, and nothing checked can change
 *   before git reads it (docs/security.md "What git may read");
 * - the large files are read off the event loop and checked in slices (slicer.ts);
 * - from the repository's config only an allow-list of data-only keys is carried over (line-ending and stat
 *   settings, rename detection, `branch.<head>.remote/merge`, `remote.<r>.fetch`, the object format), read by the
 *   server's own parser of git's config syntax (git-config.ts) from a size-capped read; includes are never followed;
 * - no system or global config, an empty HOME, no system attributes; git's stderr is classified, never echoed.
 *
 * Anything that prevents building the view (a file over its cap, an unreadable or malformed HEAD, a config git cannot
 * parse, an unknown repository extension) fails closed with a clear envelope and nothing run.
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  futimesSync,
  lstatSync,
  read,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  type Dirent,
  type Stats,
} from 'node:fs';
import { open as openAsync, readdir as readdirAsync, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { openForReadSync, readWholeSync } from '../fs/open-file.js';
import { resolveGit } from './find-cli.js';
import { parseGitConfigSliced, type ConfigList } from './git-config.js';
import { IndexRejection, validateIndex } from './git-index.js';
import { Slicer } from './slicer.js';
import { runCommand, type CommandResult } from './run-command.js';

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/**
 * Exclude lines the view adds to the repository's own: fs-tools' own files (src/fs/own-files.ts) — path locks,
 * temporaries and copy trees — never show in git_status.
 */
const OWN_EXCLUDES = '.fs-tools-lock-*\n.*.fs-tools-*.tmp\n.*.fs-tools-copy-*\n.*.fs-tools-link-*\n';

/** Caps (bytes) on the metadata files the view reads; a larger file fails closed (unsupported_repository). */
export const VIEW_CAPS = {
  /** `.git` file, HEAD, a loose ref, commondir. */
  small: 64 * 1024,
  /** The repository's config (git itself has no limit; 4 MiB is far beyond any real one). */
  config: 4 * 1024 * 1024,
  /** packed-refs (100,000 refs are about 6 MiB). */
  packedRefs: 64 * 1024 * 1024,
  /** info/exclude, objects/info/alternates. */
  list: 1024 * 1024,
  /** shallow (one object id per line). */
  shallow: 16 * 1024 * 1024,
  /** The index (a million entries are about 100 MiB; held in memory while it is validated and rebuilt). */
  index: 128 * 1024 * 1024,
} as const;

/** Most alternates git follows (it stops at depth 5 too). */
const MAX_ALTERNATE_DEPTH = 5;
/** Most alternate object directories in all (each is checked on every call). */
const MAX_ALTERNATES = 64;

/**
 * The policy decisions a view needs, handed in by policy (src/policy/git-access.ts): primitives act, policy decides
 * (the layering rule, test/layering.test.ts).
 */
export interface ViewAccess {
  /** True when absolute real path `p` lies inside the roots in force. */
  isInside: (p: string) => boolean;
  /** The secret rule `p` matches (docs/security.md), or null. */
  secretRule: (p: string) => string | null;
  /**
   * True when the file policy withholds absolute real path `p` (hidden, denied, or a built-in guarded path): no git
   * location may lie there, so it counts as outside the roots for every location the view verifies.
   */
  isWithheld: (p: string) => boolean;
}

/** Options of every git run through a view. */
export interface ViewRunOptions {
  timeoutMs: number;
  maxOutputBytes?: number;
  signal?: AbortSignal;
}

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

/** The failure to build a view, classified (details.reason) with the path concerned and no file content. */
function repoError(
  kind: 'corrupt_repository' | 'unsupported_repository',
  file: string,
  message: string,
  suggestion?: string,
  facts: Record<string, string | number> = {},
): ToolError {
  return new ToolError(kind === 'corrupt_repository' ? 'IO_ERROR' : 'VALIDATION', message, {
    path: file,
    details: { ...facts, reason: kind, file, ...(kind === 'corrupt_repository' ? { errno: 'EGIT' } : {}) },
    suggestion:
      suggestion ??
      (kind === 'corrupt_repository'
        ? 'Run `git status` (or `git fsck`) in the repository to see what git reports, repair it, then call again.'
        : 'Use git directly for this repository; the server reads only repositories it can verify.'),
  });
}

/**
 * NOT_ALLOWED for a metadata link (or `.git` file) whose target lies outside the roots or where the file policy
 * withholds it (one message for both: it tells neither which nor whether the target exists); names the link only.
 */
function outsideError(link: string, what: string): ToolError {
  return new ToolError(
    'NOT_ALLOWED',
    `${link} (${what}) leads outside the allowed roots, or to a path the file policy withholds; the git tools do not follow it.`,
    {
      path: link,
      details: { reason: 'git_location_outside_roots', link },
      suggestion: 'Call list_allowed_directories, or use a repository whose git metadata lies inside the roots.',
    },
  );
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

const lstatOrNull = (p: string): Stats | null => {
  try {
    return lstatSync(p);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
};

/** The verifier of one view: containment against the roots, secrets, size caps. */
class Verifier {
  constructor(private readonly access: ViewAccess) {}

  /** Inside the roots (the private directory must not be). */
  readonly insideRoots = (p: string): boolean => this.access.isInside(p);
  /** Where a git location may lie: inside the roots, and not withheld by the file policy. */
  readonly isInside = (p: string): boolean => this.access.isInside(p) && !this.access.isWithheld(p);

  /**
   * The real path of metadata entry `p` (whose parent is already a verified real path), or null when absent. A link
   * is followed only to a target inside the roots that is not a secret file.
   * @throws ToolError NOT_ALLOWED (target outside), SECRET_DENIED (target is a secret)
   */
  locate(p: string, what: string): { real: string; stats: Stats } | null {
    // The parent first: a linked directory above `p` leading outside must not be probed through (nor reported as
    // "absent" when the outside lacks the entry).
    let parentReal: string;
    try {
      parentReal = realpathSync(path.dirname(p));
    } catch {
      // Missing: decide on its nearest existing ancestor, so a link above cannot make outside absence observable.
      for (let d = path.dirname(p); ; d = path.dirname(d)) {
        // A dangling link leading outside is refused too: whether the outside target exists must not matter.
        if (lstatOrNull(d)?.isSymbolicLink() && !this.isInside(path.resolve(path.dirname(d), lstatLinkTarget(d)))) {
          throw outsideError(d, what);
        }
        let real: string | null = null;
        try {
          real = realpathSync(d);
        } catch {
          /* keep going up */
        }
        if (real !== null) {
          if (!this.isInside(real)) throw outsideError(path.dirname(p), what);
          return null;
        }
        if (path.dirname(d) === d) return null;
      }
    }
    if (!this.isInside(parentReal)) throw outsideError(path.dirname(p), what);
    const st = lstatOrNull(path.join(parentReal, path.basename(p)));
    if (!st) return null;
    // realpath also catches a symlinked directory above `p` (e.g. refs/ or info/ leading elsewhere).
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      // A dangling link or a loop: decide on where it would lead, lexically, so nothing outside is probed.
      const lexical = st.isSymbolicLink() ? path.resolve(path.dirname(p), lstatLinkTarget(p)) : p;
      if (!this.isInside(lexical)) throw outsideError(p, what);
      return null;
    }
    if (!this.isInside(real)) throw outsideError(p, what);
    if (real !== p) {
      const rule = this.access.secretRule(real);
      if (rule !== null) {
        throw new ToolError(
          'SECRET_DENIED',
          `${p} (${what}) is a link to a secret file; the git tools do not read it.`,
          {
            path: p,
            details: { pattern: rule, link: p },
          },
        );
      }
    }
    return { real, stats: st.isSymbolicLink() ? lstatSync(real) : st };
  }

  /**
   * The whole content of the regular metadata file `p` (verified as `locate` does), or null when absent.
   * @throws ToolError NOT_ALLOWED, SECRET_DENIED, unsupported_repository (over `max` bytes, or not a regular file)
   */
  read(p: string, what: string, max: number): Buffer | null {
    const found = this.locate(p, what);
    if (!found) return null;
    if (!found.stats.isFile()) {
      if (found.stats.isDirectory()) return null;
      throw repoError('unsupported_repository', p, `${p} (${what}) is not a regular file.`);
    }
    const { fd, stats } = openForReadSync(found.real, this.isInside);
    try {
      if (stats.size > max) {
        throw repoError(
          'unsupported_repository',
          p,
          `${p} (${what}) is larger than ${max} bytes; the git tools refuse it rather than read part of it.`,
        );
      }
      const bytes = readWholeSync(fd, stats.size);
      if (bytes.length > max) {
        throw repoError(
          'unsupported_repository',
          p,
          `${p} (${what}) is larger than ${max} bytes; the git tools refuse it rather than read part of it.`,
        );
      }
      return bytes;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * `read` for the larger metadata files (config, packed-refs, shallow, info/exclude, alternates, the index): the same
   * checks, the bytes read off the event loop in 1 MiB slices from the descriptor opened and proven here.
   * @returns the bytes and the file's fstat, or null when absent
   * @throws as `read`
   */
  async readLarge(p: string, what: string, max: number): Promise<{ bytes: Buffer; stats: Stats } | null> {
    const found = this.locate(p, what);
    if (!found) return null;
    if (!found.stats.isFile()) {
      if (found.stats.isDirectory()) return null;
      throw repoError('unsupported_repository', p, `${p} (${what}) is not a regular file.`);
    }
    const tooLarge = () =>
      repoError(
        'unsupported_repository',
        p,
        `${p} (${what}) is larger than ${max} bytes; the git tools refuse it rather than read part of it.`,
      );
    const { fd, stats } = openForReadSync(found.real, this.isInside);
    try {
      if (stats.size > max) throw tooLarge();
      // One byte more than fstat said: a file that grew since is seen, and refused when over the cap.
      const bytes = Buffer.allocUnsafe(Math.min(stats.size, max) + 1);
      let filled = 0;
      while (filled < bytes.length) {
        const want = Math.min(1 << 20, bytes.length - filled);
        const n = await new Promise<number>((resolve, reject) =>
          read(fd, bytes, filled, want, filled, (error, count) => (error ? reject(error) : resolve(count))),
        );
        if (n === 0) break;
        filled += n;
      }
      if (filled > max) throw tooLarge();
      return { bytes: bytes.subarray(0, filled), stats };
    } finally {
      closeSync(fd);
    }
  }

  /**
   * The real path of directory `p`, verified as `locate` does.
   * @throws ToolError NOT_ALLOWED, corrupt_repository (missing or not a directory)
   */
  directory(p: string, what: string): string {
    const found = this.locate(p, what);
    if (!found || !found.stats.isDirectory())
      throw repoError('corrupt_repository', p, `${p} (${what}) is missing or not a directory.`);
    return found.real;
  }
}

/** A link's own text ('/' when unreadable, which no root contains unless `/` is one). */
function lstatLinkTarget(p: string): string {
  try {
    return readlinkSync(p);
  } catch {
    return '/';
  }
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

/** Git's check-ref-format rules for a full ref name (refs/…); anything else is refused before it names a file. */
export function isSafeRefName(name: string): boolean {
  if (!name.startsWith('refs/') || name.length > 1024) return false;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return false;
  if (name.includes('..') || name.includes('@{') || name.endsWith('.') || name.endsWith('/')) return false;
  return name.split('/').every((c) => c !== '' && !c.startsWith('.') && !c.endsWith('.lock'));
}

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The config sections anything is read from: by the view (core, extensions, copied keys, branch and remote) and by
 * the server's own lookups through `repositoryConfig` (remote, url: the issue tools' remotes and `insteadOf`).
 */
const VIEW_SECTIONS = new Set(['core', 'extensions', 'status', 'diff', 'branch', 'remote', 'url']);

/** Keys copied from the repository's config when their value is one of the allowed ones (data only, no paths). */
const COPIED_KEYS: Record<string, RegExp> = {
  'core.filemode': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.symlinks': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.ignorecase': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.precomposeunicode': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.trustctime': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.quotepath': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.checkstat': /^(?:default|minimal)$/i,
  'core.autocrlf': /^(?:true|false|yes|no|on|off|1|0|input)$/i,
  'core.eol': /^(?:lf|crlf|native)$/i,
  'core.safecrlf': /^(?:true|false|yes|no|on|off|1|0|warn)$/i,
  'status.renames': /^(?:true|false|yes|no|on|off|1|0|copies|copy)$/i,
  'diff.renames': /^(?:true|false|yes|no|on|off|1|0|copies|copy)$/i,
};

/** A config value written quoted, escaped as git reads it back. */
function quoteValue(v: string): string {
  return `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\t/g, '\\t')}"`;
}

/** A `[section "sub"]` header, or null when the subsection cannot be written (newline, NUL). */
function sectionHeader(section: string, sub: string): string | null {
  if (/[\n\0]/.test(sub)) return null;
  return `[${section} "${sub.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"]`;
}

/** The fixed part of the private config: nothing in it names a program, a file of the repository, or an include. */
const BASE_CONFIG = [
  '[core]',
  '\tbare = false',
  '\tfsmonitor = false',
  '\thooksPath = /dev/null',
  '\tuntrackedCache = false',
  '\tattributesFile = /dev/null',
  '\tpager = cat',
  '\tsplitIndex = false',
  '\tmultiPackIndex = false',
  '\tsshCommand = false',
  '[status]',
  '\tsubmoduleSummary = false',
  '\tshowUntrackedFiles = all',
  '[diff]',
  '\tignoreSubmodules = all',
  '\tsubmodule = short',
  '\tnoprefix = false',
  '\tmnemonicPrefix = false',
  '\tautoRefreshIndex = false',
  '[submodule]',
  '\trecurse = false',
  '[protocol]',
  '\tallow = never',
  '[color]',
  '\tui = false',
  '[gc]',
  '\tauto = 0',
  '[maintenance]',
  '\tauto = false',
  '[credential]',
  '\thelper = ',
];

/** The environment every git in a view runs with: inherited minus GIT_*, and nothing of the user's or system's config. */
export function viewEnvironment(privateDir: string, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(base)) {
    if (k.startsWith('GIT_') || k === 'HOME' || k === 'XDG_CONFIG_HOME' || k === 'PREFIX') continue;
    env[k] = v;
  }
  return {
    ...env,
    HOME: path.join(privateDir, 'home'),
    XDG_CONFIG_HOME: path.join(privateDir, 'home'),
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_PAGER: 'cat',
    PAGER: 'cat',
    GIT_EXTERNAL_DIFF: '',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    LC_ALL: 'C',
  };
}

/** `-c` settings on every view run (belt and braces: the private config already says the same). */
const VIEW_FLAGS = [
  '--no-optional-locks',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.attributesFile=/dev/null',
  '-c',
  'core.pager=cat',
  '-c',
  'diff.external=',
  '-c',
  'diff.ignoreSubmodules=all',
  '-c',
  'status.submoduleSummary=false',
  '-c',
  'submodule.recurse=false',
  '-c',
  'protocol.allow=never',
  '-c',
  'core.untrackedCache=false',
  '-c',
  'core.multiPackIndex=false',
  '-c',
  'color.ui=false',
];

/** Runs git with `env`; the caller classifies the result. Refuses to start when git is missing. */
export type GitRunner = (
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  options: ViewRunOptions & { cwd: string; fds?: number[] },
) => Promise<CommandResult>;

/** A git dir private to one call, and the verified repository it shows. Dispose it when done. */
export class GitView {
  private disposed = false;

  private constructor(
    readonly locations: RepositoryLocations,
    /**
     * The repository's own config (the common dir's `config`) as verified and parsed for this view: read through
     * the verifier (a link leading outside the roots is NOT_ALLOWED, to a secret SECRET_DENIED), capped, no include
     * followed, every line parsed and the keys of VIEW_SECTIONS kept. Data for the server's own lookups (the issue
     * tools' remotes); never handed to git.
     */
    readonly repositoryConfig: ConfigList,
    private readonly privateDir: string,
    private readonly hasIndex: boolean,
    private readonly runner: GitRunner,
    private readonly access: ViewAccess,
  ) {}

  /** The work-tree top (real path). */
  get workTree(): string {
    return this.locations.workTree;
  }

  /**
   * Runs `git <args>` against the view: GIT_DIR is the private dir, GIT_WORK_TREE the verified top, the index the
   * private copy the server validated and rebuilt. The caller classifies a non-zero exit (`classifyViewFailure`).
   */
  run(args: readonly string[], options: ViewRunOptions): Promise<CommandResult> {
    if (this.disposed) throw new Error('GitView used after dispose');
    const env = {
      ...viewEnvironment(this.privateDir),
      GIT_DIR: this.privateDir,
      GIT_WORK_TREE: this.locations.workTree,
      GIT_INDEX_FILE: path.join(this.privateDir, this.hasIndex ? 'index' : 'no-index'),
    };
    return this.runner([...VIEW_FLAGS, ...args], env, { ...options, cwd: this.locations.workTree });
  }

  /**
   * Checks the untracked nested repositories a status names. git's untracked walk decides whether a directory holding
   * a `.git` is a repository (shown as one entry, `dir/`) by reading that `.git` and probing the git dir it names
   * (HEAD, objects, refs, commondir), wherever it lies: an answer that would tell whether an outside directory is a
   * repository. The `.git` of every directory an untracked path passes through (shown as `dir/`, as files under it,
   * or ignored) must lead inside the roots, with the locations git probes there; else the status is refused.
   * @param untracked the untracked paths of the status, relative to the work tree (a trailing `/` for a directory)
   * @throws ToolError NOT_ALLOWED git_location_outside_roots naming the `.git` (never its target), SECRET_DENIED
   */
  verifyNestedRepositories(untracked: readonly string[]): void {
    const verify = new Verifier(this.access);
    const checked = new Set<string>();
    for (const p of untracked) {
      // Every directory of the path (the path itself when it is one): git probed its `.git`, if it has one, whether
      // the `.git` is shown or ignored.
      const parts = p.replace(/\/$/, '').split('/');
      const dirs = p.endsWith('/') ? parts.length : parts.length - 1;
      for (let k = 1; k <= dirs && parts[k - 1] !== '.git'; k++) {
        const dir = parts.slice(0, k).join('/');
        if (checked.has(dir)) continue;
        checked.add(dir);
        const dotGit = path.join(this.locations.workTree, dir, '.git');
        if (lstatOrNull(dotGit)) verifyNestedDotGit(dotGit, verify);
      }
    }
  }

  /** Returns the private dir to the pool. Idempotent. */
  dispose(): Promise<void> {
    if (!this.disposed) {
      this.disposed = true;
      releasePrivateDir(this.privateDir);
    }
    return Promise.resolve();
  }

  /**
   * Verifies the repository whose work tree contains the real directory `dir` and builds its private view. The large
   * files (config, packed-refs, shallow, the index) are read and checked in slices, off the event loop's critical path.
   * @throws ToolError VALIDATION not_a_work_tree / dubious_ownership / unsupported_repository, NOT_ALLOWED
   *   work_tree_outside_roots / git_location_outside_roots, SECRET_DENIED, IO_ERROR corrupt_repository,
   *   and the runner's errors (git_missing, git_timeout)
   */
  static async open(dir: string, access: ViewAccess, _options: ViewRunOptions, runner: GitRunner): Promise<GitView> {
    const slicer = new Slicer();
    const verify = new Verifier(access);
    const locations = locateRepository(dir, access);
    const { workTree: top, gitDir, commonDir, objectsDir } = locations;
    const stores = await verifyObjects(objectsDir, verify, slicer);

    const head = readHead(gitDir, verify);
    const configFile = path.join(commonDir, 'config');
    const configBytes = (await verify.readLarge(configFile, 'repository config', VIEW_CAPS.config))?.bytes ?? null;
    const exclude =
      (await verify.readLarge(path.join(commonDir, 'info', 'exclude'), 'info/exclude', VIEW_CAPS.list))?.bytes ?? null;
    const shallowFile = path.join(commonDir, 'shallow');
    const shallow = (await verify.readLarge(shallowFile, 'shallow', VIEW_CAPS.shallow))?.bytes ?? null;
    if (shallow) await checkShallow(shallow, shallowFile, slicer);
    let repoConfig: ConfigList = new Map();
    if (configBytes) {
      // Every line is parsed (a config git would refuse fails closed); only the sections the view reads are kept.
      const parsed = await parseGitConfigSliced(configBytes, slicer, (section) => VIEW_SECTIONS.has(section));
      if (!parsed)
        throw repoError(
          'corrupt_repository',
          configFile,
          `${configFile} is not a valid git config file (git would refuse it too); it was not used.`,
        );
      repoConfig = parsed;
    }
    // With extensions.worktreeConfig, git also reads the git dir's config.worktree, after the common config (its
    // values win); the format version and extensions come from the common config alone. The view reads it the same
    // way, so core.worktree set there is held to the same rule and copied keys there reach the view as they reach git.
    let worktreeFile: string | null = null;
    if (
      last(repoConfig.get('core.repositoryformatversion')) === '1' &&
      isGitTrue(last(repoConfig.get('extensions.worktreeconfig')))
    ) {
      const file = path.join(gitDir, 'config.worktree');
      const bytes = (await verify.readLarge(file, 'worktree config', VIEW_CAPS.config))?.bytes ?? null;
      if (bytes) {
        const parsed = await parseGitConfigSliced(bytes, slicer, (section) => VIEW_SECTIONS.has(section));
        if (!parsed)
          throw repoError(
            'corrupt_repository',
            file,
            `${file} is not a valid git config file (git would refuse it too); it was not used.`,
          );
        for (const [key, values] of parsed) {
          if (key.startsWith('extensions.') || key === 'core.repositoryformatversion') continue;
          if (key === 'core.worktree') worktreeFile = file;
          repoConfig.set(key, [...(repoConfig.get(key) ?? []), ...values]);
        }
      }
    }
    const { lines: settings, objectFormat } = viewSettings(
      repoConfig,
      configFile,
      gitDir,
      top,
      verify,
      worktreeFile ?? configFile,
    );

    // HEAD and the refs status needs: HEAD's branch and that branch's upstream (both looked up in one pass over
    // packed-refs).
    const refs = new Map<string, string>();
    const branchRef = head.kind === 'symbolic' ? head.ref : null;
    const extra: string[] = [];
    let upstream: string | null = null;
    if (branchRef?.startsWith('refs/heads/')) {
      const branch = branchRef.slice('refs/heads/'.length);
      const remote = last(repoConfig.get(`branch.${branch}.remote`));
      const merge = last(repoConfig.get(`branch.${branch}.merge`));
      if (remote !== undefined && merge !== undefined && isSafeRefName(merge) && isPlainValue(remote)) {
        const bh = sectionHeader('branch', branch);
        if (bh) extra.push(bh, `\tremote = ${quoteValue(remote)}`, `\tmerge = ${quoteValue(merge)}`);
        if (remote === '.') upstream = merge;
        else {
          const fetch = (repoConfig.get(`remote.${remote}.fetch`) ?? []).filter(isPlainValue);
          const rh = sectionHeader('remote', remote);
          if (rh && fetch.length > 0) extra.push(rh, ...fetch.map((f) => `\tfetch = ${quoteValue(f)}`));
          upstream = mapThroughRefspecs(merge, fetch);
        }
      }
    }
    if (upstream !== null && !isSafeRefName(upstream)) upstream = null;
    const packed = new PackedRefs(
      commonDir,
      verify,
      slicer,
      [branchRef, upstream].filter((r): r is string => r !== null),
    );
    for (const ref of [branchRef, upstream]) {
      if (ref === null) continue;
      const oid = await resolveRef(ref, gitDir, commonDir, verify, packed, 0);
      if (oid) refs.set(ref, oid);
    }

    // The index: parsed and validated by the server, every entry's directories in the work tree checked, then
    // rebuilt into the private dir. git reads that copy, never the repository's file.
    let index: { parts: Buffer[]; mtimeMs: number } | null = null;
    if (locations.index) {
      const indexFile = path.join(gitDir, 'index');
      const found = await verify.readLarge(indexFile, 'index', VIEW_CAPS.index);
      if (found) {
        let validated: Awaited<ReturnType<typeof validateIndex>>;
        try {
          validated = await validateIndex(found.bytes, objectFormat === 'sha256' ? 32 : 20, slicer);
        } catch (error) {
          if (!(error instanceof IndexRejection)) throw error;
          throw repoError(
            error.kind === 'corrupt' ? 'corrupt_repository' : 'unsupported_repository',
            indexFile,
            `${indexFile} ${error.message}; the git tools do not read this repository.`,
            error.kind === 'corrupt'
              ? undefined
              : 'Use git directly for this repository; the server reads only indexes whose every entry it can verify.',
            error.facts,
          );
        }
        await checkEntryDirectories(top, validated.names, verify, slicer);
        index = { parts: validated.parts, mtimeMs: found.stats.mtimeMs };
      }
    }

    const privateDir = acquirePrivateDir(verify.insideRoots);
    try {
      const put = (rel: string, content: string | Buffer | null) => {
        const file = path.join(privateDir, rel);
        if (content === null) rmSync(file, { force: true });
        else writeFileSync(file, content, { mode: 0o600 });
      };
      put('HEAD', head.kind === 'symbolic' ? `ref: ${head.ref}\n` : `${head.oid}\n`);
      put('config', `${[...BASE_CONFIG, ...settings, ...extra].join('\n')}\n`);
      put(
        'packed-refs',
        [...refs]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([ref, oid]) => `${oid} ${ref}\n`)
          .join(''),
      );
      const mirrors = await mirrorObjects(privateDir, stores, slicer);
      put(path.join('objects', 'info', 'alternates'), `${mirrors.join('\n')}\n`);
      // fs-tools' own path-lock files (src/fs/path-lock.ts) come and go beside the files being written: never part of
      // the status (a mutation's lock would otherwise change the very status hash it checks: STALE_GIT).
      put(
        path.join('info', 'exclude'),
        Buffer.concat([
          ...(exclude === null
            ? []
            : [exclude, Buffer.from(exclude.length > 0 && exclude[exclude.length - 1] !== 0x0a ? '\n' : '')]),
          Buffer.from(OWN_EXCLUDES),
        ]),
      );
      put('shallow', shallow);
      put('index', null);
      if (index) await writePrivateIndex(path.join(privateDir, 'index'), index.parts, index.mtimeMs);
      return new GitView(locations, repoConfig, privateDir, index !== null, runner, access);
    } catch (error) {
      releasePrivateDir(privateDir, true);
      throw error;
    }
  }
}

/**
 * The checks of `verifyNestedRepositories` for one `.git` (absolute path in the work tree): the `.git` itself (a link
 * must lead inside the roots), the git dir a `.git` file names, and the entries git probes there — HEAD, objects,
 * refs, and the common dir a `commondir` file names with its objects and refs.
 */
function verifyNestedDotGit(dotGit: string, verify: Verifier): void {
  const found = verify.locate(dotGit, 'nested repository .git');
  if (!found) return;
  let gitDir: string | null = null;
  if (found.stats.isDirectory()) gitDir = found.real;
  else if (found.stats.isFile()) {
    const text = (verify.read(dotGit, 'nested repository .git', VIEW_CAPS.small) ?? Buffer.alloc(0))
      .toString('utf8')
      .replace(/[\r\n]+$/, '');
    if (!text.startsWith('gitdir: ')) return;
    gitDir = realPathInside(path.dirname(dotGit), text.slice('gitdir: '.length), dotGit, 'nested .git file', verify);
  }
  if (gitDir === null || !lstatOrNull(gitDir)?.isDirectory()) return;
  for (const name of ['HEAD', 'objects', 'refs', 'commondir']) verify.locate(path.join(gitDir, name), 'nested git dir');
  const commondir = verify.read(path.join(gitDir, 'commondir'), 'nested commondir', VIEW_CAPS.small);
  if (commondir) {
    const value = commondir.toString('utf8').replace(/[\r\n]+$/, '');
    const common = realPathInside(gitDir, value, path.join(gitDir, 'commondir'), 'nested commondir', verify);
    if (common !== null)
      for (const name of ['objects', 'refs']) verify.locate(path.join(common, name), 'nested common dir');
  }
}

/**
 * Writes the rebuilt index (mode 0600, a new file: O_EXCL after removing any old one) and gives it a modification
 * time just before the repository index's. git treats an entry whose file changed no earlier than the index as "racily
 * clean" and compares its content; an earlier index time only makes more entries racy (more comparisons, the same
 * answer), never fewer.
 */
async function writePrivateIndex(file: string, parts: Buffer[], mtimeMs: number): Promise<void> {
  const handle = await openAsync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o600);
  try {
    await handle.writev(parts);
    const t = new Date(Math.floor(mtimeMs) - 1);
    futimesSync(handle.fd, t, t);
  } finally {
    await handle.close();
  }
}

/**
 * Checks the work-tree directories git passes through for each index entry (`a` and `a/b` for `a/b/c`). git opens an
 * entry's file by its path (lstat, then open for a content comparison or a diff, and `.gitattributes` beside it), so a
 * directory in that path that is a link leading outside the roots would let git read, or tell the existence of, an
 * outside file. Each directory is looked at once; a missing one (git finds the entry deleted) is fine.
 * @throws ToolError NOT_ALLOWED git_location_outside_roots naming the link (never its target); unsupported_repository
 *   for a link whose name is not UTF-8
 */
async function checkEntryDirectories(top: string, names: Buffer[], verify: Verifier, slicer: Slicer): Promise<void> {
  const topBytes = Buffer.from(`${top}/`, 'utf8');
  const checked = new Set<string>();
  for (const name of names) {
    for (let slash = name.indexOf(0x2f); slash >= 0; slash = name.indexOf(0x2f, slash + 1)) {
      const key = name.toString('latin1', 0, slash);
      if (checked.has(key)) continue;
      checked.add(key);
      const wait = slicer.check();
      if (wait) await wait;
      let st: Stats;
      try {
        st = lstatSync(Buffer.concat([topBytes, name.subarray(0, slash)]));
      } catch {
        continue; // missing (or not reachable): git finds nothing there either
      }
      if (!st.isSymbolicLink()) continue;
      const text = name.toString('utf8', 0, slash);
      if (!Buffer.from(text, 'utf8').equals(name.subarray(0, slash)))
        throw repoError(
          'unsupported_repository',
          top,
          `A directory link in the work tree ${top} has a name that is not UTF-8; the git tools do not follow it.`,
        );
      verify.locate(path.join(top, text), 'work-tree directory link');
    }
  }
}

/**
 * A shallow file is object ids, one per line (git-shallow(5)); anything else fails closed (git would refuse it).
 * @throws ToolError corrupt_repository
 */
async function checkShallow(bytes: Buffer, file: string, slicer: Slicer): Promise<void> {
  for (let at = 0; at < bytes.length;) {
    const wait = slicer.check();
    if (wait) await wait;
    let end = bytes.indexOf(0x0a, at);
    if (end < 0) end = bytes.length;
    if (!isOidBytes(bytes, at, end))
      throw repoError('corrupt_repository', file, `${file} is not a list of object ids; it was not used.`);
    at = end + 1;
  }
}

/**
 * The object stores as git sees them: for each verified store a directory `alt/N` of the private dir holding links to
 * its verified fan-out directories and a `pack` directory of links to its verified pack files, nothing else (no
 * `info/`: git never reads a repository's alternates or commit-graph files, so an alternates file changed after
 * verification cannot reach git; no `multi-pack-index`, whose pack names may hold `..`). Returns the
 * mirrors' paths for the view's own `objects/info/alternates`, in the stores' order.
 */
async function mirrorObjects(privateDir: string, stores: ObjectStore[], slicer: Slicer): Promise<string[]> {
  const base = path.join(privateDir, 'alt');
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { mode: 0o700 });
  const out: string[] = [];
  for (const [n, store] of stores.entries()) {
    const mirror = path.join(base, String(n));
    mkdirSync(mirror, { mode: 0o700 });
    for (const [name, real] of store.subdirs) {
      const wait = slicer.check();
      if (wait) await wait;
      if (name !== 'pack') symlinkSync(real, path.join(mirror, name));
    }
    // The pack directory is rebuilt, not linked: links to the verified pack files only, so git reads no other file
    // of it (a multi-pack-index naming an outside pack, a link planted after verification).
    if (store.subdirs.has('pack')) {
      const pack = path.join(mirror, 'pack');
      mkdirSync(pack, { mode: 0o700 });
      for (const [name, real] of store.packFiles) {
        const wait = slicer.check();
        if (wait) await wait;
        symlinkSync(real, path.join(pack, name));
      }
    }
    out.push(mirror);
  }
  return out;
}

/** A config value the private config can carry (no newline, NUL or other control character but tab). */
function isPlainValue(v: string): boolean {
  // eslint-disable-next-line no-control-regex
  return !/[\x00-\x08\x0a-\x1f\x7f]/.test(v);
}

/**
 * Private git dirs (mode 0700, created by the server), reused across calls: one per call in flight. Every file git
 * reads from one is rewritten (or removed) for each call, and a reused dir must hold exactly the entries the server
 * made (anything else — a `commondir`, `hooks`, `info/attributes` planted by someone — discards it). A private dir
 * is never inside the roots, where an agent's own file tools could reach it: the OS temporary directory, else
 * /dev/shm or /var/tmp, whichever lies outside every root. Removed when the process exits.
 */
const freeDirs: string[] = [];
const allDirs = new Set<string>();
let exitHook = false;
const sweptBases = new Set<string>();

/**
 * Removes private dirs that servers no longer running left behind (a process killed by a signal never runs its exit
 * hook). A dir names its creator's pid; one whose process is alive (or not ours to signal) is left alone.
 */
function sweepStaleDirs(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^fs-tools-gitview-(\d+)-/.exec(name);
    if (!m || Number(m[1]) === process.pid) continue;
    try {
      process.kill(Number(m[1]), 0);
      continue; // alive
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') continue;
    }
    try {
      rmSync(path.join(base, name), { recursive: true, force: true });
    } catch {
      /* not ours */
    }
  }
}
/** The entries of a private dir, per subdirectory; files may be absent (shallow, info/exclude). */
const PRIVATE_LAYOUT: Record<string, readonly string[] | null> = {
  '': ['HEAD', 'config', 'packed-refs', 'shallow', 'index', 'objects', 'refs', 'info', 'home', 'alt'],
  // The object-store mirrors: removed and rebuilt on every use (`mirrorObjects`), never read as left.
  alt: null,
  objects: ['info'],
  [path.join('objects', 'info')]: ['alternates'],
  refs: ['heads', 'tags'],
  [path.join('refs', 'heads')]: [],
  [path.join('refs', 'tags')]: [],
  info: ['exclude'],
  home: [],
};

/** True when `dir` holds only what the server put there (checked with lstat: no link is followed). */
function isTidy(dir: string): boolean {
  for (const [sub, allowed] of Object.entries(PRIVATE_LAYOUT)) {
    if (allowed === null) continue;
    let entries: Dirent[];
    try {
      entries = readdirSync(path.join(dir, sub), { withFileTypes: true });
    } catch {
      return false;
    }
    for (const e of entries) {
      if (!allowed.includes(e.name) || e.isSymbolicLink()) return false;
      const isDir = Object.hasOwn(PRIVATE_LAYOUT, path.join(sub, e.name));
      if (isDir ? !e.isDirectory() : !e.isFile()) return false;
    }
  }
  return true;
}

function acquirePrivateDir(isInside: (p: string) => boolean): string {
  for (let reused = freeDirs.pop(); reused; reused = freeDirs.pop()) {
    if (!isInside(reused) && isTidy(reused)) return reused;
    releasePrivateDir(reused, true);
  }
  let base: string | null = null;
  for (const candidate of [os.tmpdir(), '/dev/shm', '/var/tmp']) {
    try {
      const real = realpathSync(candidate);
      if (!isInside(real) && !isInside(path.join(real, 'fs-tools-gitview-x'))) {
        base = real;
        break;
      }
    } catch {
      /* not there */
    }
  }
  if (!base) {
    throw new ToolError(
      'VALIDATION',
      'Every temporary directory lies inside the allowed roots, so the git tools have nowhere private to build their view.',
      {
        details: { reason: 'no_private_dir' },
        suggestion: 'Set TMPDIR to a directory outside the roots.',
      },
    );
  }
  if (!sweptBases.has(base)) {
    sweptBases.add(base);
    sweepStaleDirs(base);
  }
  const dir = mkdtempSync(path.join(base, `fs-tools-gitview-${process.pid}-`));
  for (const sub of [['objects', 'info'], ['refs', 'heads'], ['refs', 'tags'], ['info'], ['home']]) {
    mkdirSync(path.join(dir, ...sub), { recursive: true, mode: 0o700 });
  }
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const d of allDirs) {
        try {
          rmSync(d, { recursive: true, force: true });
        } catch {
          /* best effort */
        }
      }
    });
  }
  allDirs.add(dir);
  return dir;
}
/** Returns a private dir to the pool (or removes it, after a failure, so no half-written state is reused). */
function releasePrivateDir(dir: string, discard = false): void {
  if (discard) {
    allDirs.delete(dir);
    rm(dir, { recursive: true, force: true }).catch(() => undefined);
    return;
  }
  freeDirs.push(dir);
}

/**
 * The verified locations of the repository whose work tree contains the real directory `dir`: the work-tree top,
 * git dir (through a `.git` file or link), common dir, objects directory and index, each a real path inside the roots.
 * Reads only small metadata files (`.git` file, commondir); runs nothing.
 * @throws ToolError VALIDATION not_a_work_tree / dubious_ownership, NOT_ALLOWED work_tree_outside_roots /
 *   git_location_outside_roots, SECRET_DENIED, IO_ERROR corrupt_repository, VALIDATION unsupported_repository
 */
export function locateRepository(dir: string, access: ViewAccess): RepositoryLocations {
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
  checkOwnership(top, gitDir, access.isInside);
  const commonDir = locateCommonDir(gitDir, verify);
  const objectsDir = verify.directory(path.join(commonDir, 'objects'), 'objects directory');
  const indexPath = path.join(gitDir, 'index');
  const indexFound = verify.locate(indexPath, 'index');
  if (indexFound && !indexFound.stats.isFile())
    throw repoError('corrupt_repository', indexPath, `${indexPath} is not a regular file.`);
  return { workTree: top, gitDir, commonDir, objectsDir, index: indexFound?.real ?? null };
}

const last = <T>(a: readonly T[] | undefined): T | undefined => (a && a.length > 0 ? a[a.length - 1] : undefined);

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

/**
 * The real path that `value`, read from the repository file `file` (`what` in errors), names relative to `base`,
 * checked to lie inside the roots; null when nothing exists there (a missing target is refused only when its lexical
 * path lies outside).
 * @throws ToolError NOT_ALLOWED (outside the roots)
 */
function realPathInside(base: string, value: string, file: string, what: string, verify: Verifier): string | null {
  const lexical = path.resolve(base, value);
  let real: string;
  try {
    real = realpathSync(lexical);
  } catch {
    if (!verify.isInside(lexical)) throw outsideError(file, what);
    return null;
  }
  if (!verify.isInside(real)) throw outsideError(file, what);
  return real;
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

/** One verified object directory as git will see it through the view's mirror (`mirrorObjects`). */
interface ObjectStore {
  /** Real path of the object directory. */
  dir: string;
  /** Its loose-object fan-out directories (`00`…`ff`) and `pack` that exist: name → verified real path. */
  subdirs: Map<string, string>;
  /** The pack files of its `pack` directory git may read (`PACK_FILE`): name → verified real path. */
  packFiles: Map<string, string>;
}

const FANOUT = /^[0-9a-f]{2}$/;
/**
 * The files of a `pack` directory the view passes to git: packs, their indexes and reverse indexes. Nothing else
 * (a `multi-pack-index` names packs by relative paths git does not check for `..`; bitmaps, `.keep` and `.promisor`
 * files are not needed to read objects).
 */
const PACK_FILE = /^pack-(?:[0-9a-f]{40}|[0-9a-f]{64})\.(?:pack|idx|rev)$/;

/**
 * Verifies the objects directory and every alternate it names (recursively, as git follows them, each at most once):
 * its entries (fan-out directories, pack, info), every pack file and every loose object that is a link must lead
 * inside the roots (a loose object linked to an outside file would let git's answer tell whether that file exists).
 * Returns each store once, the repository's own first. git never reads these stores' `info/` (alternates,
 * commit-graph): it reads the view's mirror of them (`mirrorObjects`), so an alternates file changed after this check
 * does not reach git.
 * @throws ToolError NOT_ALLOWED (a link or alternate outside the roots), SECRET_DENIED, unsupported_repository
 *   (alternates too deep or too many, a quoted alternate path)
 */
async function verifyObjects(
  objectsDir: string,
  verify: Verifier,
  slicer: Slicer,
  depth = 0,
  seen = new Set<string>([objectsDir]),
): Promise<ObjectStore[]> {
  const store: ObjectStore = { dir: objectsDir, subdirs: new Map(), packFiles: new Map() };
  const scan = async (d: string): Promise<Dirent[]> => {
    try {
      return await readdirAsync(d, { withFileTypes: true });
    } catch {
      return [];
    }
  };
  for (const e of await scan(objectsDir)) {
    const wait = slicer.check();
    if (wait) await wait;
    let real: string | null = path.join(objectsDir, e.name);
    if (e.isSymbolicLink()) {
      const found = verify.locate(real, 'object store entry');
      real = found?.stats.isDirectory() ? found.real : null;
    } else if (!e.isDirectory()) real = null;
    if (real !== null && (FANOUT.test(e.name) || e.name === 'pack')) store.subdirs.set(e.name, real);
  }
  for (const sub of [...store.subdirs.keys(), 'info', path.join('info', 'commit-graphs')]) {
    const d = store.subdirs.get(sub) ?? path.join(objectsDir, sub);
    for (const e of await scan(d)) {
      const wait = slicer.check();
      if (wait) await wait;
      const found = e.isSymbolicLink() ? verify.locate(path.join(d, e.name), 'object store entry') : null;
      if (sub === 'pack' && PACK_FILE.test(e.name)) {
        const real = e.isSymbolicLink()
          ? found?.stats.isFile()
            ? found.real
            : null
          : e.isFile()
            ? path.join(d, e.name)
            : null;
        if (real !== null) store.packFiles.set(e.name, real);
      }
    }
  }
  const file = path.join(objectsDir, 'info', 'alternates');
  const found = await verify.readLarge(file, 'objects/info/alternates', VIEW_CAPS.list);
  if (!found) return [store];
  if (depth >= MAX_ALTERNATE_DEPTH)
    throw repoError('unsupported_repository', file, `${file} chains alternates deeper than ${MAX_ALTERNATE_DEPTH}.`);
  const out: ObjectStore[] = [store];
  for (let line of found.bytes.toString('utf8').split('\n')) {
    line = line.replace(/\r$/, '');
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('"'))
      throw repoError(
        'unsupported_repository',
        file,
        `${file} uses a quoted alternate path, which the git tools do not support.`,
      );
    const real = realPathInside(objectsDir, line, file, 'objects/info/alternates', verify);
    if (real === null) continue; // git ignores a missing alternate too
    if (seen.has(real)) continue;
    seen.add(real);
    if (seen.size > MAX_ALTERNATES)
      throw repoError(
        'unsupported_repository',
        file,
        `${file} names more than ${MAX_ALTERNATES} alternate object directories in all.`,
      );
    if (!lstatOrNull(real)?.isDirectory()) continue;
    out.push(...(await verifyObjects(real, verify, slicer, depth + 1, seen)));
  }
  return out;
}

/** HEAD: a symbolic ref to a safe ref name, or a detached object id. */
function readHead(
  gitDir: string,
  verify: Verifier,
): { kind: 'symbolic'; ref: string } | { kind: 'detached'; oid: string } {
  const file = path.join(gitDir, 'HEAD');
  const bytes = verify.read(file, 'HEAD', VIEW_CAPS.small);
  const text = bytes?.toString('utf8').trim() ?? '';
  const m = /^ref: (.+)$/.exec(text);
  if (m && isSafeRefName(m[1])) return { kind: 'symbolic', ref: m[1] };
  if (OID.test(text)) return { kind: 'detached', oid: text };
  throw repoError(
    'corrupt_repository',
    file,
    `${file} is not a valid HEAD (missing, empty, or not a ref or object id); ${gitDir} cannot be read as a repository.`,
  );
}

/** Per-worktree refs live in the git dir; every other ref in the common dir (gitrepository-layout(5)). */
function refHome(ref: string, gitDir: string, commonDir: string): string {
  return /^refs\/(?:bisect|worktree|rewritten)\//.test(ref) ? gitDir : commonDir;
}

/** True when bytes [from, to) of `b` are an object id (40 or 64 lower-case hex digits). */
function isOidBytes(b: Buffer, from: number, to: number): boolean {
  if (to - from !== 40 && to - from !== 64) return false;
  for (let i = from; i < to; i++) {
    const c = b[i];
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

/**
 * packed-refs of a common dir: read (verified, capped) once per view, every line checked in slices (a malformed line
 * fails closed, as git would), then looked up by byte search. Nothing of it is handed to git: the view writes its own
 * packed-refs with the refs it resolved.
 */
class PackedRefs {
  private bytes: Buffer | null | undefined;
  /** The refs looked up in the same pass that checks the lines: ref → object id of its first line. */
  private readonly found = new Map<string, string>();
  private readonly wanted: Buffer[];
  constructor(
    private readonly commonDir: string,
    private readonly verify: Verifier,
    private readonly slicer: Slicer,
    wanted: readonly string[],
  ) {
    this.wanted = wanted.map((r) => Buffer.from(r, 'utf8'));
  }

  private async load(): Promise<Buffer | null> {
    const file = path.join(this.commonDir, 'packed-refs');
    const found = await this.verify.readLarge(file, 'packed-refs', VIEW_CAPS.packedRefs);
    const b = found?.bytes ?? null;
    if (!b) return null;
    const malformed = () =>
      repoError(
        'corrupt_repository',
        file,
        `${file} has a malformed line; ${this.commonDir} cannot be read as a repository.`,
      );
    for (let at = 0, lines = 0; at < b.length; lines++) {
      if ((lines & 255) === 0) {
        const wait = this.slicer.check();
        if (wait) await wait;
      }
      const c = b[at];
      let i = at;
      let sp = -1;
      if (c !== 0x0a && !(c === 0x0d && (at + 1 === b.length || b[at + 1] === 0x0a)) && c !== 0x23 && c !== 0x5e) {
        // `<object id> <ref>`: the id is checked here, the ref name where it is looked up.
        while (i < b.length && i - at <= 64 && ((b[i] >= 0x30 && b[i] <= 0x39) || (b[i] >= 0x61 && b[i] <= 0x66))) i++;
        if ((i - at !== 40 && i - at !== 64) || b[i] !== 0x20) throw malformed();
        sp = i;
      }
      // To the end of the line: a short loop for ordinary lines, a native search for long ones.
      const stop = Math.min(b.length, i + 512);
      while (i < stop && b[i] !== 0x0a) i++;
      if (i === stop && i < b.length) {
        i = b.indexOf(0x0a, i);
        if (i < 0) i = b.length;
      }
      if (sp >= 0) {
        const nameEnd = b[i - 1] === 0x0d ? i - 1 : i;
        for (const w of this.wanted) {
          if (nameEnd - sp - 1 !== w.length || b.compare(w, 0, w.length, sp + 1, nameEnd) !== 0) continue;
          const ref = w.toString('utf8');
          if (!this.found.has(ref)) this.found.set(ref, b.toString('latin1', at, sp));
        }
      }
      at = i + 1;
    }
    return b;
  }

  /**
   * The object id of `ref` in packed-refs (its first line), or undefined. The search runs in 256 KiB windows, a slice
   * check after each. @throws corrupt_repository
   */
  async get(ref: string): Promise<string | undefined> {
    if (this.bytes === undefined) this.bytes = await this.load();
    const b = this.bytes;
    if (!b) return undefined;
    if (this.wanted.some((w) => w.toString('utf8') === ref)) return this.found.get(ref);
    const needle = Buffer.from(` ${ref}`, 'utf8');
    for (let from = 0; from < b.length;) {
      const windowEnd = Math.min(b.length, from + (1 << 18) + needle.length);
      const at: number = b.subarray(0, windowEnd).indexOf(needle, from);
      if (at < 0) {
        if (windowEnd === b.length) return undefined;
        from = Math.max(from + 1, windowEnd - needle.length + 1);
        const wait = this.slicer.check();
        if (wait) await wait;
        continue;
      }
      from = at + 1;
      const after = at + needle.length;
      const ends =
        after === b.length ||
        b[after] === 0x0a ||
        (b[after] === 0x0d && (after + 1 === b.length || b[after + 1] === 0x0a));
      const lineStart = at === 0 ? 0 : b.lastIndexOf(0x0a, at - 1) + 1;
      if (ends && isOidBytes(b, lineStart, at)) return b.toString('latin1', lineStart, at);
    }
    return undefined;
  }
}

/** The object id `ref` names (loose file, else packed-refs; symbolic refs followed to depth 5), or null. */
async function resolveRef(
  ref: string,
  gitDir: string,
  commonDir: string,
  verify: Verifier,
  packed: PackedRefs,
  depth: number,
): Promise<string | null> {
  if (depth > 5 || !isSafeRefName(ref)) return null;
  const home = refHome(ref, gitDir, commonDir);
  const file = path.join(home, ...ref.split('/'));
  const bytes = verify.read(file, 'ref', VIEW_CAPS.small);
  if (bytes) {
    const text = bytes.toString('utf8').trim();
    if (OID.test(text)) return text;
    const m = /^ref: (.+)$/.exec(text);
    if (m) return resolveRef(m[1], gitDir, commonDir, verify, packed, depth + 1);
    throw repoError('corrupt_repository', file, `${file} is not a valid ref.`);
  }
  return (await packed.get(ref)) ?? null;
}

/** The remote-tracking ref `merge` maps to through fetch refspecs (`[+]src:dst`, at most one `*` each), or null. */
export function mapThroughRefspecs(merge: string, refspecs: readonly string[]): string | null {
  for (let spec of refspecs) {
    if (spec.startsWith('^')) continue;
    if (spec.startsWith('+')) spec = spec.slice(1);
    const colon = spec.indexOf(':');
    if (colon < 0) continue;
    const src = spec.slice(0, colon);
    const dst = spec.slice(colon + 1);
    const star = src.indexOf('*');
    if (star < 0) {
      if (src === merge) return dst;
      continue;
    }
    const pre = src.slice(0, star);
    const post = src.slice(star + 1);
    if (merge.length >= pre.length + post.length && merge.startsWith(pre) && merge.endsWith(post)) {
      const mid = merge.slice(pre.length, merge.length - post.length);
      return dst.includes('*') ? dst.replace('*', mid) : dst;
    }
  }
  return null;
}

/** git's boolean reading of a config value (git-config(1) "Values"): true, yes, on, a non-zero number, or no `=`. */
function isGitTrue(value: string | undefined): boolean {
  if (value === undefined) return false;
  const v = value.trim().toLowerCase();
  return v === 'true' || v === 'yes' || v === 'on' || (/^-?\d+$/.test(v) && Number(v) !== 0);
}

/** Extensions a repository may declare and the view still reads correctly. */
const KNOWN_EXTENSIONS = new Set(['objectformat', 'worktreeconfig', 'noop', 'preciousobjects', 'partialclone']);

/**
 * The private config lines derived from the repository's config: format version, object format, copied data-only
 * keys. `core.worktree` must name the discovered top (else unsupported, or NOT_ALLOWED when it leads outside);
 * `worktreeFile` is the file that set it (the common config, or the git dir's config.worktree).
 */
function viewSettings(
  config: ConfigList,
  configFile: string,
  gitDir: string,
  top: string,
  verify: Verifier,
  worktreeFile: string,
): { lines: string[]; objectFormat: 'sha1' | 'sha256' } {
  const version = last(config.get('core.repositoryformatversion')) ?? '0';
  if (version !== '0' && version !== '1')
    throw repoError(
      'unsupported_repository',
      configFile,
      `${configFile} declares repository format version ${Number(version) || 'unknown'}, which the git tools do not read.`,
    );
  let objectFormat: 'sha1' | 'sha256' | null = null;
  for (const [key, values] of config) {
    if (!key.startsWith('extensions.') || version !== '1') continue;
    const name = key.slice('extensions.'.length);
    if (!KNOWN_EXTENSIONS.has(name))
      throw repoError(
        'unsupported_repository',
        configFile,
        `${configFile} declares a repository extension the git tools do not support.`,
      );
    if (name === 'objectformat') {
      const v = last(values)!.toLowerCase();
      if (v !== 'sha1' && v !== 'sha256')
        throw repoError(
          'unsupported_repository',
          configFile,
          `${configFile} declares an object format the git tools do not support.`,
        );
      objectFormat = v;
    }
  }
  const worktree = last(config.get('core.worktree'));
  if (worktree !== undefined) {
    const lexical = path.resolve(gitDir, worktree);
    let real: string;
    try {
      real = realpathSync(lexical);
    } catch {
      real = lexical;
    }
    if (!verify.isInside(real)) throw outsideError(worktreeFile, 'core.worktree');
    if (real !== top)
      throw repoError(
        'unsupported_repository',
        worktreeFile,
        `${worktreeFile} sets core.worktree to another directory than ${top}; the git tools do not follow it.`,
      );
  }
  const lines = ['[core]', `\trepositoryformatversion = ${version}`];
  for (const [key, allowed] of Object.entries(COPIED_KEYS)) {
    const v = last(config.get(key));
    if (v !== undefined && allowed.test(v) && key.startsWith('core.')) lines.push(`\t${key.slice(5)} = ${v}`);
  }
  for (const [key, allowed] of Object.entries(COPIED_KEYS)) {
    const v = last(config.get(key));
    if (v !== undefined && allowed.test(v) && !key.startsWith('core.'))
      lines.push(`[${key.split('.')[0]}]`, `\t${key.split('.')[1]} = ${v}`);
  }
  if (objectFormat) lines.push('[extensions]', `\tobjectformat = ${objectFormat}`);
  return { lines, objectFormat: objectFormat ?? 'sha1' };
}

/**
 * git's ownership rule (safe.directory, git-config(1)): the work tree and git dir must belong to the effective user
 * (for root, to SUDO_UID when set). Checked here because git does not check an explicit GIT_DIR.
 * @throws ToolError VALIDATION dubious_ownership
 */
function checkOwnership(top: string, gitDir: string, isInside: (p: string) => boolean): void {
  if (typeof process.geteuid !== 'function') return;
  let uid = process.geteuid();
  if (uid === 0 && process.env.SUDO_UID && /^\d+$/.test(process.env.SUDO_UID)) uid = Number(process.env.SUDO_UID);
  for (const p of [top, gitDir]) {
    const st = lstatOrNull(p);
    if (st && st.uid !== uid && !safeDirectories(isInside).some((s) => s === '*' || s === top || s === `${top}/`)) {
      throw new ToolError('VALIDATION', `git refuses the repository at ${top}: dubious ownership.`, {
        path: top,
        details: { reason: 'dubious_ownership' },
        suggestion:
          'The repository belongs to another user; the owner must run git config --global --add safe.directory.',
      });
    }
  }
}

/** The operator's global `safe.directory` values (read once per process from the user's own git config). */
let safeDirCache: string[] | null = null;
function safeDirectories(isInside: (p: string) => boolean): string[] {
  if (safeDirCache) return safeDirCache;
  const program = resolveGit(isInside);
  safeDirCache = [];
  try {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
    const out = execFileSync(program, ['config', '--global', '--null', '--get-all', 'safe.directory'], {
      env: { ...env, GIT_CONFIG_NOSYSTEM: '1', GIT_DIR: '/dev/null' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
      cwd: os.tmpdir(),
    });
    safeDirCache = out.split('\0').filter(Boolean);
  } catch {
    /* none, or git missing */
  }
  return safeDirCache;
}

/**
 * A git runner over the one subprocess runner (used by git.ts), running `program`: the absolute path `resolveGit`
 * found for the roots in force (never a git inside them).
 */
export function commandRunner(program: string): GitRunner {
  return (args, env, options) =>
    runCommand(program, args, {
      cwd: options.cwd,
      env,
      timeoutMs: options.timeoutMs,
      maxOutputBytes: options.maxOutputBytes ?? 64 * 1024 * 1024,
      signal: options.signal,
      ...(options.fds ? { fds: options.fds } : {}),
    });
}
