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
 * The steps live one concern per file: git-locate.ts (finding the repository), git-verifier.ts (verified reads),
 * git-objects.ts, git-refs.ts, git-view-config.ts and git-verify.ts (the checks), git-materialize.ts (the private dir);
 * this file runs git in the result.
 *
 * Anything that prevents building the view (a file over its cap, an unreadable or malformed HEAD, a config git cannot
 * parse, an unknown repository extension) fails closed with a clear envelope and nothing run.
 */

import path from 'node:path';
import type { ConfigList } from './git-config.js';
import { locateRepository, type RepositoryLocations } from './git-locate.js';
import { acquirePrivateDir, BASE_CONFIG, fsTimeNow, materializeView, releasePrivateDir } from './git-materialize.js';
import { verifyObjects } from './git-objects.js';
import { readHead, resolveViewRefs } from './git-refs.js';
import { lstatOrNull, Verifier, VIEW_CAPS, type ViewAccess } from './git-verifier.js';
import { checkShallow, readViewIndex, verifyNestedDotGit } from './git-verify.js';
import { readRepositoryConfig, upstreamSettings, viewSettings } from './git-view-config.js';
import { Slicer } from './slicer.js';
import { runCommand, type CommandResult } from './run-command.js';

export type { ViewAccess } from './git-verifier.js';
export type { RepositoryLocations } from './git-locate.js';

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

/**
 * A view's inputs from the git dir (`GitView.inputs`): the validated index's parts (one object while the index's bytes
 * equal those validated before), HEAD, refs and config lines as JSON text, info/exclude and shallow.
 */
export interface ViewInputs {
  index: object | null;
  text: string;
  exclude: Buffer | null;
  shallow: Buffer | null;
}

/** Options of every git run through a view. */
export interface ViewRunOptions {
  timeoutMs: number;
  maxOutputBytes?: number;
  signal?: AbortSignal;
  /** The command its envelopes name (git_timeout: "git <what> timed out"); default the git subcommand run. */
  what?: string;
}

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
    /** Entries of the rebuilt index git reads (0 when the repository has none). */
    readonly indexEntries: number,
    private readonly hasIndex: boolean,
    private readonly runner: GitRunner,
    private readonly access: ViewAccess,
    /**
     * What this view read of the repository's git dir and handed git, for git_status' reuse (git-status-watch.ts):
     * the validated index (the same object while the index's bytes equal those validated before), HEAD, the refs
     * and config lines as text, info/exclude and shallow. Read on every call, so a change no watch sees (a write
     * through a shared mapping) still differs here.
     */
    readonly inputs: ViewInputs,
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
    // Locate: every location git would read, a real path inside the roots.
    const locations = await locateRepository(dir, access);
    const { workTree: top, gitDir, commonDir, objectsDir } = locations;
    // The file system's clock, read before any stat whose stamp a check may be tied to (`settled`).
    const now = fsTimeNow(verify.insideRoots);
    // Verify: the object stores, HEAD, the config, exclude and shallow files, the refs and the index.
    const stores = await verifyObjects(objectsDir, verify, slicer, now);
    const head = readHead(gitDir, verify);
    const configFile = path.join(commonDir, 'config');
    const configBytes = (await verify.readLarge(configFile, 'repository config', VIEW_CAPS.config))?.bytes ?? null;
    const exclude =
      (await verify.readLarge(path.join(commonDir, 'info', 'exclude'), 'info/exclude', VIEW_CAPS.list))?.bytes ?? null;
    const shallowFile = path.join(commonDir, 'shallow');
    const shallow = (await verify.readLarge(shallowFile, 'shallow', VIEW_CAPS.shallow))?.bytes ?? null;
    if (shallow) await checkShallow(shallow, shallowFile, slicer);
    const { config: repoConfig, worktreeFile } = await readRepositoryConfig(
      configBytes,
      configFile,
      gitDir,
      verify,
      slicer,
    );
    const { lines: settings, objectFormat } = viewSettings(
      repoConfig,
      configFile,
      gitDir,
      top,
      verify,
      worktreeFile ?? configFile,
    );
    const branchRef = head.kind === 'symbolic' ? head.ref : null;
    const { lines: upstreamLines, upstream } = upstreamSettings(branchRef, repoConfig);
    const refs = await resolveViewRefs([branchRef, upstream], gitDir, commonDir, verify, slicer);
    const index = await readViewIndex(locations, objectFormat, verify, slicer);
    // Materialize: the private dir git runs against.
    const privateDir = acquirePrivateDir(verify.insideRoots);
    try {
      await materializeView(
        privateDir,
        { head, config: [...BASE_CONFIG, ...settings, ...upstreamLines], refs, stores, exclude, shallow, index },
        slicer,
        now,
      );
      // The header's entry count (the rebuilt index starts with the repository index's validated header).
      const entries = index ? index.parts[0].readUInt32BE(8) : 0;
      const inputs: ViewInputs = {
        index: index?.parts ?? null,
        text: JSON.stringify([head, [...refs], settings, upstreamLines]),
        exclude,
        shallow,
      };
      return new GitView(locations, repoConfig, privateDir, entries, index !== null, runner, access, inputs);
    } catch (error) {
      releasePrivateDir(privateDir, true);
      throw error;
    }
  }
}

/** The output cap of a git command the view runs, bytes, where the caller names none (`ViewRunOptions.maxOutputBytes`). */
export const VIEW_OUTPUT_BYTES = 64 * 1024 * 1024;

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
      maxOutputBytes: options.maxOutputBytes ?? VIEW_OUTPUT_BYTES,
      signal: options.signal,
      ...(options.fds ? { fds: options.fds } : {}),
    });
}
