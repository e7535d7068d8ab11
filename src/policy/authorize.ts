/**
 * The only policy entry point tools call. Each `authorize*` runs the docs/errors.md "Order of checks" checks in order, from ROOTS_EMPTY on:
 *   4 ROOTS_EMPTY → 5 NOT_ALLOWED (resolve-path) → 6 SECRET_DENIED (secrets), FILE_POLICY_DENIED (file-policy)
 *   → 7 NOT_FOUND, VALIDATION (existence and kind).
 * Steps 1–3 (lookup, arguments, gates) run earlier in src/server/call-tool.ts; 8–10 belong to the operation.
 */
import type { Stats } from 'node:fs';
import { ToolError } from '../errors/tool-error.js';
import {
  assertEntryNotGuarded,
  assertHoldsNoGuarded,
  assertNotGuarded,
  isGuardedEntry,
  type GuardedPath,
} from './builtin-guards.js';
import { findContainingRoot, HOST_FLAVOR, isWithin, toPosixRelative } from './containment.js';
import {
  ACCESS_LEVELS,
  accessFor,
  accessForEntry,
  assertNotGitInternal,
  assertPolicyAllows,
  gitInternalRefusal,
  isDotGitName,
  type Access,
  type FilePolicy,
  type Intent,
} from './file-policy.js';
import { resolveInRoots, resolveSpelledFile, type ResolveOptions, type ResolvedPath } from './resolve-path.js';
import type { EffectiveRoot } from './roots.js';
import { notFoundError, withOutsideNear } from './near-paths.js';
import { assertNotSecret, secretRefusal, secretRuleFor, secretRuleForEntry } from './secrets.js';
import { assertNotExecConfig } from './exec-config.js';
import { assertNotInGitDirectory } from './git-dirs.js';

/** What policy needs to decide. Built per call from the process state. */
export interface PolicyContext {
  roots: readonly EffectiveRoot[];
  allowSecrets: boolean;
  policy: FilePolicy;
  /** The state directory and audit log (src/policy/builtin-guards.ts); none when absent (unit tests). */
  guarded?: readonly GuardedPath[];
  /**
   * `--allow-exec-config`: the execution-bearing configuration guard (src/policy/exec-config.ts) is lifted. The git
   * directory and hooks directory guard (src/policy/git-dirs.ts) is not.
   */
  allowExecConfig?: boolean;
}

/** The kind of filesystem object a tool needs. `any` accepts every kind (stat). */
export type WantedKind = 'file' | 'directory' | 'any';

/** A path that passed every read check and exists. */
export interface AuthorizedPath extends ResolvedPath {
  stats: Stats;
  /** `real` relative to its root, `/`-separated ('' for the root itself). */
  relative: string;
  /** The policy's access level for this path (null: unrestricted). */
  access: Access | null;
}

/** Human name of a Stats kind, as reported by stat and list_directory. */
export function kindOf(
  stats: Stats,
): 'file' | 'directory' | 'symlink' | 'fifo' | 'socket' | 'block_device' | 'char_device' | 'other' {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  if (stats.isBlockDevice()) return 'block_device';
  if (stats.isCharacterDevice()) return 'char_device';
  return 'other';
}

/**
 * `resolveInRoots` for a path an agent named: a path outside the roots is NOT_ALLOWED with `details.near`, the inside
 * paths that end like it (src/policy/near-paths.ts `outsideNearPaths`; docs/errors.md).
 * @throws ToolError as resolveInRoots
 */
async function resolveForCall(
  requested: string,
  ctx: PolicyContext,
  options: ResolveOptions,
  field?: string,
): Promise<ResolvedPath> {
  try {
    return await resolveInRoots(requested, ctx.roots, options, field);
  } catch (error) {
    throw await withOutsideNear(error, ctx);
  }
}

/**
 * Authorizes reading `requested` (docs/errors.md "Order of checks" steps 4–7).
 * @throws ToolError ROOTS_EMPTY, NOT_ALLOWED, VALIDATION (NUL, wrong kind), SECRET_DENIED, FILE_POLICY_DENIED (policy
 *   deny; FIFOs, sockets and devices for kind 'file'), NOT_FOUND (missing or hidden)
 */
export async function authorizeRead(
  requested: string,
  ctx: PolicyContext,
  options: { kind: WantedKind; field?: string; secrets?: 'deny' | 'flag' },
): Promise<AuthorizedPath> {
  const resolved = await resolveForCall(requested, ctx, { followFinal: true }, options.field);
  assertNotGuarded(ctx.guarded ?? [], resolved.absolute, [resolved.absolute, resolved.real]);
  // stat only flags secrets (docs/security.md denies read, write, move, delete and content search, not metadata).
  if (options.secrets !== 'flag') assertNotSecret(resolved.absolute, resolved.real, ctx.allowSecrets);
  const relative = toPosixRelative(resolved.root.real, resolved.real);
  const access = policyAccess(ctx, resolved, relative);
  await hiddenLikeMissing(() => assertPolicyAllows(access, 'read', resolved.absolute, relative), resolved, ctx);
  if (!resolved.stats) throw await notFoundError(resolved, ctx); // details.near: src/policy/near-paths.ts
  assertKind(resolved.stats, options.kind, resolved.absolute);
  const { requested: asked, absolute, real, root, stats, viaSymlink } = resolved;
  return { requested: asked, absolute, real, root, stats, viaSymlink, relative, access };
}

/**
 * `authorizeRead(requested, ctx, { kind: 'file' })` for a regular file named by its real path, decided without
 * resolving it (src/policy/resolve-path.ts `resolveSpelledFile`): the same checks in the same order on `real` =
 * `absolute` = `requested`. Null when that shortcut does not apply or any check refuses (never a refusal of its own:
 * the full `authorizeRead` then decides, and words every refusal as always). The answer is conditional: it holds only
 * if no component of the path is a link, which the open's proof establishes (src/fs/open-file.ts: the opened
 * descriptor is at `real` exactly, on Linux through /proc/self/fd). So the caller opens it only through those opens,
 * and when the open fails in any way, discards this answer and calls `authorizeRead` (docs/security.md "Roots").
 */
export function authorizeSpelledFile(requested: string, ctx: PolicyContext): AuthorizedPath | null {
  const resolved = resolveSpelledFile(requested, ctx.roots);
  if (resolved === null) return null;
  const { absolute, real, root, stats } = resolved;
  try {
    assertNotGuarded(ctx.guarded ?? [], absolute, [absolute]); // real is absolute
    assertNotSecret(absolute, real, ctx.allowSecrets);
    const relative = toPosixRelative(root.real, real);
    const access = policyAccess(ctx, resolved, relative);
    assertPolicyAllows(access, 'read', absolute, relative);
    return { requested, absolute, real, root, stats: stats!, viaSymlink: false, relative, access };
  } catch {
    return null;
  }
}

/**
 * The policy's access level for a resolved path: the most restrictive of the level of where it resolved to and of the
 * spelling that was asked for (as secrets are checked on both, docs/security.md), so a link can neither reach into a hidden
 * or denied directory nor carry a path out of one. `relative` is `resolved.real` relative to its root.
 */
export function policyAccess(ctx: PolicyContext, resolved: ResolvedPath, relative: string): Access | null {
  const viaReal = accessFor(ctx.policy, relative);
  if (resolved.absolute === resolved.real) return viaReal;
  // The requested spelling, relative to the root that contains it lexically (real or given spelling of the root).
  const root =
    findContainingRoot(ctx.roots, resolved.absolute) ?? ctx.roots.find((r) => isWithin(r.given, resolved.absolute));
  if (!root) return viaReal;
  const base = isWithin(root.real, resolved.absolute) ? root.real : root.given;
  const viaRequested = accessFor(ctx.policy, toPosixRelative(base, resolved.absolute));
  if (viaRequested === null) return viaReal;
  if (viaReal === null) return viaRequested;
  return ACCESS_LEVELS.indexOf(viaRequested) > ACCESS_LEVELS.indexOf(viaReal) ? viaRequested : viaReal;
}

/**
 * @throws ToolError VALIDATION (directory for a file, file for a directory), FILE_POLICY_DENIED (special files are
 *   never opened: docs/security.md — reading a FIFO would hang the server)
 */
export function assertKind(stats: Stats, wanted: WantedKind, absolute: string): void {
  if (wanted === 'any') return;
  if (wanted === 'directory' && !stats.isDirectory()) {
    throw new ToolError('VALIDATION', `${absolute} is not a directory.`, {
      path: absolute,
      details: { reason: 'not_a_directory', kind: kindOf(stats) },
      suggestion: 'Pass a directory path, or use read_file / stat for a file.',
    });
  }
  if (wanted === 'file') {
    if (stats.isDirectory()) {
      throw new ToolError('VALIDATION', `${absolute} is a directory, not a file.`, {
        path: absolute,
        details: { reason: 'is_directory' },
        suggestion: 'Use list_directory for a directory.',
      });
    }
    if (!stats.isFile()) {
      throw new ToolError('FILE_POLICY_DENIED', `${absolute} is a ${kindOf(stats)}; special files are never opened.`, {
        path: absolute,
        details: { source: 'builtin', rule: 'special_file', kind: kindOf(stats) },
      });
    }
  }
}

/** How a directory entry found by a walk is treated (listing, search): pure, no IO. */
export interface EntryVerdict {
  /** Omit it entirely (policy `hidden`). */
  hidden: boolean;
  /** Secret name (and secrets not allowed): listings mark it, search skips its content. */
  secret: boolean;
  /** Policy `deny`: listings show nothing of it, search skips it. */
  denied: boolean;
}

/** Classifies an entry at `relative` (to its root) with absolute path `absolute`. */
export function classifyEntry(ctx: PolicyContext, absolute: string, relative: string): EntryVerdict {
  const access = accessFor(ctx.policy, relative);
  return {
    hidden: access === 'hidden' || isGuardedEntry(ctx.guarded ?? [], absolute),
    denied: access === 'deny',
    secret: !ctx.allowSecrets && secretRuleFor(absolute) !== null,
  };
}

/** How a walk treats an entry: left out (`hidden`: not counted; `denied`: counted), marked `secret`, or `ok`. */
export type EntryClass = 'ok' | 'secret' | 'hidden' | 'denied';

/**
 * `classifyEntry` for the entries a walk yields (src/fs/walk.ts), with what does not depend on the entry decided
 * once per call and what depends only on its directory once per directory (a listing or a search
 * classifies every entry of a tree). Same verdict as classifyEntry (test/policy/entry-classifier.test.ts) for the
 * entries of a walk, i.e. under the walk's guarantees:
 *  - `absolute` is normalized (as `path.resolve` leaves it), inside an authorized base directory, and `relative` is
 *    it relative to its root, `/`-separated;
 *  - every directory between the base and the entry was classified by this classifier and not left out (the walk
 *    descends nothing it omits), and the base itself passed assertNotGuarded (every `authorize*`).
 * Then an entry lies within a guarded path only when it IS one (its parent is not within one), so the built-in
 * guard is a comparison with each guarded path's length and spelling, not a containment test; and the policy level
 * of each directory above it is null or read_only (a hidden or denied one is left out, or refused as the base), so
 * only the rules that match the entry's own path can hide or deny it (accessForEntry), not every leading part of it. `name`, the entry's last component, spares
 * reading the path strings where a screen on the name settles it (the walk has it at hand; derived from `relative`
 * when not given). `secrets: false` leaves the secret test out (never `'secret'`): the walk filters of search and
 * replace_in_files ask `isSecretEntry` only for the files they read.
 */
export function walkEntryClassifier(
  ctx: PolicyContext,
  options: { secrets?: boolean } = {},
): (absolute: string, relative: string, name?: string) => EntryClass {
  const classifier = new WalkEntryClassifier(ctx, options);
  return (absolute, relative, name) => classifier.classify(absolute, relative, name);
}

/**
 * walkEntryClassifier as an object (same verdicts): a walk that calls `classify` on one of these calls the same
 * function call after call, where the closure walkEntryClassifier returns is a new function to V8 per call (Node 20
 * deoptimized list_directory's walk loop in a fresh server's second call for it).
 */
export class WalkEntryClassifier {
  private readonly secrets: boolean;
  private readonly fold = HOST_FLAVOR.caseInsensitive;
  private readonly guarded: string[];
  private readonly rules: boolean;

  constructor(
    private readonly ctx: PolicyContext,
    options: { secrets?: boolean } = {},
  ) {
    this.secrets = options.secrets !== false && !ctx.allowSecrets;
    this.guarded = (ctx.guarded ?? []).map((g) => (this.fold ? g.path.toLowerCase() : g.path));
    this.rules = ctx.policy.rules.length > 0;
  }

  /** The class of the walk's entry `absolute` (`relative` to its root; `name` its last component). */
  classify(absolute: string, relative: string, name = relative.slice(relative.lastIndexOf('/') + 1)): EntryClass {
    if (this.isGuarded(absolute, name)) return 'hidden';
    // Only the rules on the entry's own path: its directories' level is null or read_only (walkEntryClassifier).
    const access = this.rules ? accessForEntry(this.ctx.policy, relative, null) : null;
    if (access === 'hidden') return 'hidden';
    if (access === 'deny') return 'denied';
    return this.secrets && secretRuleForEntry(absolute, name) !== null ? 'secret' : 'ok';
  }

  private isGuarded(absolute: string, name: string): boolean {
    for (const g of this.guarded) {
      if (g.length === absolute.length && g === (this.fold ? absolute.toLowerCase() : absolute)) return true;
    }
    // Lock files (src/fs/path-lock.ts) all start with `.`: the full pattern only for names that do.
    return name.charCodeAt(0) === 0x2e && isGuardedEntry([], absolute);
  }
}

/**
 * The walk filter of the tools that search or edit a tree (src/fs/walk.ts `filter`): an entry hidden or denied by
 * policy is left out, and `onDenied` counts a denied one (search_files and replace_in_files report them as
 * `skipped.policy`; a hidden entry is not counted, so its existence is not revealed: docs/errors.md "Optimistic concurrency").
 */
export function policyWalkFilter(
  ctx: PolicyContext,
  onDenied: () => void,
): (absolute: string, relative: string, name?: string) => 'ok' | 'omit' {
  const classify = walkEntryClassifier(ctx, { secrets: false });
  return (absolute, relative, name) => {
    const c = classify(absolute, relative, name);
    if (c === 'hidden') return 'omit';
    if (c === 'denied') {
      onDenied();
      return 'omit';
    }
    return 'ok';
  };
}

/**
 * `classifyEntry(ctx, absolute, …).secret` alone: true when the entry has a secret name and secrets are not allowed
 * (docs/security.md). For a walk's entries, which `policyWalkFilter` has already judged for hidden and denied. `name`, when
 * the caller has it at hand, must be the last component of `absolute` (the screen then reads only it).
 */
export function isSecretEntry(ctx: PolicyContext, absolute: string, name?: string): boolean {
  if (ctx.allowSecrets) return false;
  return (name === undefined ? secretRuleFor(absolute) : secretRuleForEntry(absolute, name)) !== null;
}

/** A path that passed every write check. `stats` is null when it does not exist yet. */
export interface AuthorizedWrite extends ResolvedPath {
  relative: string;
  access: Access | null;
}

/** Options of `authorizeWrite`. */
export interface AuthorizeWriteOptions {
  /** The kind an existing target must be ('any' for move/delete of a link or directory). */
  kind: WantedKind;
  /** Refuse a missing target with NOT_FOUND (edit, delete, move source). */
  mustExist: boolean;
  /**
   * True for a real path this session read or wrote (under --auto-occ=block|warn): then a missing target is not
   * NOT_FOUND here — the OCC check (docs/errors.md "Order of checks" step 9) reports it as OCC_MISMATCH `deleted`. Pass
   * `(real) => ctx.config.autoOcc !== 'off' && ctx.hashes.recall(real) !== undefined`.
   */
  knownToSession?: (real: string) => boolean;
  /** Follow a symlink at the last component (write through it) or act on the link itself (move, delete). */
  followFinal: boolean;
  field?: string;
  /**
   * False: a path outside the roots is NOT_ALLOWED without `details.near` (no walk of the roots). For callers that
   * use only the refusal's code, like the start-up journal recovery. Default true.
   */
  offerNear?: boolean;
}

/**
 * Authorizes mutating `requested` (docs/errors.md "Order of checks" steps 4–7 for writes): containment, secrets, the built-in guards against
 * planted execution (`.git`, execution-bearing configuration, git and hooks directories: docs/security.md),
 * the file policy for writes (read_only and deny refuse), existence and kind.
 * @throws ToolError ROOTS_EMPTY, NOT_ALLOWED (also reason symlink_at_path: a link at the last component where a file
 *   is wanted and `followFinal` is false), VALIDATION, SECRET_DENIED, FILE_POLICY_DENIED, NOT_FOUND
 */
export async function authorizeWrite(
  requested: string,
  ctx: PolicyContext,
  options: AuthorizeWriteOptions,
): Promise<AuthorizedWrite> {
  const resolved =
    options.offerNear === false
      ? await resolveInRoots(requested, ctx.roots, { followFinal: options.followFinal }, options.field)
      : await resolveForCall(requested, ctx, { followFinal: options.followFinal }, options.field);
  const { relative, access } = await assertWritePolicy(resolved, ctx, options.kind !== 'directory');
  if (relative === '' && options.kind !== 'directory') {
    throw new ToolError(
      'VALIDATION',
      `${resolved.absolute} is a sandbox root; it cannot be replaced, moved or deleted.`,
      {
        path: resolved.absolute,
        details: { reason: 'is_root' },
      },
    );
  }
  if (!resolved.stats) {
    if (options.mustExist && !options.knownToSession?.(resolved.real)) throw await notFoundError(resolved, ctx); // details.near
  } else if (resolved.stats.isSymbolicLink() && options.kind === 'file') {
    // A file is wanted at a path whose last component is not followed (a recorded path a revert writes back, a walked
    // entry): a link standing there now means the path no longer resolves to itself. Never written through, and not
    // a "special file" either (docs/errors.md).
    throw new ToolError('NOT_ALLOWED', `${resolved.absolute} is a symbolic link now; it is not written through.`, {
      path: resolved.absolute,
      details: { reason: 'symlink_at_path' },
      suggestion: 'Delete or move the link first if the file is to be written back there.',
    });
  } else if (!(options.kind === 'any' && resolved.stats.isSymbolicLink())) {
    assertKind(resolved.stats, options.kind, resolved.absolute);
  }
  return { ...resolved, relative, access };
}

/**
 * docs/errors.md "Order of checks" step 6 for a write: `assertPathAllowed` (state directory / audit log guard, secrets, `.git`,
 * execution-bearing configuration, the file policy), then the git and hooks directory guard on disk. `replaces`: the call may move, replace or delete what is there (everything but create_directory), so a
 * directory holding a guarded path is refused too.
 */
async function assertWritePolicy(
  resolved: ResolvedPath,
  ctx: PolicyContext,
  replaces = true,
): Promise<{ relative: string; access: Access | null }> {
  const relative = toPosixRelative(resolved.root.real, resolved.real);
  const access = policyAccess(ctx, resolved, relative);
  const place = { absolute: resolved.absolute, real: resolved.real, relative, access };
  await hiddenLikeMissing(() => assertPathAllowed(ctx, 'write', place, { holdsNoGuarded: replaces }), resolved, ctx);
  // Git directories of any name and core.hooksPath directories, looked up on disk (src/policy/git-dirs.ts).
  assertNotInGitDirectory(ctx, resolved.absolute, resolved.real);
  return { relative, access };
}

/** One path as the per-path rules see it (`assertPathAllowed`). */
export interface PolicyPlace {
  /** The spelling reported in envelopes (the requested one, made absolute). */
  absolute: string;
  /** The resolved spelling (the same string when nothing was resolved differently). */
  real: string;
  /** `real` relative to its root, `/`-separated ('' for a root). */
  relative: string;
  /** The file policy's level for the path (`policyAccess`, or `accessForEntry` in a walk). */
  access: Access | null;
}

/**
 * The per-path rules of docs/errors.md "Order of checks" step 6 for reading (`intent` 'read': a copy's source) or changing (`'write'`: a
 * write, and both places of a move, the old place of a delete, the new place of a copy) one path — the one decision
 * shared by the single-path authorizations above and by every entry of a tree operation
 * (src/policy/tree-authorize.ts), so a rule added here holds for both. In order: the built-in guards (state
 * directory, audit log, lock files: src/policy/builtin-guards.ts; with `holdsNoGuarded`, a directory above them too),
 * secret names (unless allowed), the built-in `.git` rule (every spelling), for a change the execution-bearing
 * configuration guard (src/policy/exec-config.ts, unless `allowExecConfig`), the file policy for `intent`. The git
 * directory guard looks at the disk and runs beside it: `assertNotInGitDirectory` for a single path, the tree judge's
 * `treeGitGuard` for the entries of a tree (src/policy/git-dirs.ts). Rules: docs/security.md.
 * @throws ToolError FILE_POLICY_DENIED (builtin; policy deny, read_only on write), SECRET_DENIED, NOT_FOUND (hidden)
 */
export function assertPathAllowed(
  ctx: PolicyContext,
  intent: Intent,
  place: PolicyPlace,
  options: { holdsNoGuarded?: boolean } = {},
): void {
  const spellings = place.absolute === place.real ? [place.absolute] : [place.absolute, place.real];
  assertNotGuarded(ctx.guarded ?? [], place.absolute, spellings);
  if (options.holdsNoGuarded) assertHoldsNoGuarded(ctx.guarded ?? [], place.absolute, spellings);
  assertNotSecret(place.absolute, place.real, ctx.allowSecrets);
  assertNotGitInternal(place.absolute, place.real);
  if (intent === 'write') assertNotExecConfig(place.absolute, spellings, ctx.allowExecConfig === true);
  assertPolicyAllows(place.access, intent, place.absolute, place.relative);
}

/**
 * `assertPathAllowed` for the entry `name` of a directory that passed it at the same place (`place.real` equal to
 * `place.absolute`; a tree operation's judge walks pre-order, src/policy/tree-authorize.ts): the same rules in the
 * same order, but the ones that read every component of the path (the server's own classes, the `.git` rule) read only
 * the new one — the components above were judged with the directory, and the top of the tree by its own
 * authorization — and the ones that read a tail (secret names, execution-bearing configuration) read only that tail.
 * So judging every entry of a tree costs O(1) per entry in the depth (docs/security.md "Bounded work").
 * A directory above that was refused by a component rule is still walked (its entries are judged, so the answer does
 * not depend on the walk's order): the caller says so with `belowGitDir` (a `.git` spelling between the top and the
 * entry), and the entry is then refused by the `.git` rule where the whole-path check refuses it — before the file
 * policy, so a hidden entry there does not turn the named refusal into the generic one. (An entry below one of the
 * server's own files is never judged: the walk does not enter one.)
 * @param belowGitDir true when a component between the top and `name` is a `.git` spelling (`isDotGitName`)
 * @throws ToolError FILE_POLICY_DENIED (builtin; policy deny, read_only on write), SECRET_DENIED, NOT_FOUND (hidden)
 */
export function assertEntryAllowed(
  ctx: PolicyContext,
  intent: Intent,
  place: PolicyPlace,
  name: string,
  belowGitDir = false,
): void {
  assertEntryNotGuarded(ctx.guarded ?? [], place.absolute, name);
  if (!ctx.allowSecrets) {
    const rule = secretRuleForEntry(place.absolute, name);
    if (rule !== null) throw secretRefusal(place.absolute, rule);
  }
  if (belowGitDir || isDotGitName(name)) throw gitInternalRefusal(place.absolute);
  if (intent === 'write') assertNotExecConfig(place.absolute, [place.absolute], ctx.allowExecConfig === true);
  assertPolicyAllows(place.access, intent, place.absolute, place.relative);
}

/**
 * The built-in guards against planted execution for one path about to be created, written, moved (either end),
 * copied onto, or deleted (docs/security.md "Execution-bearing files and git directories"): no `.git` entry in any
 * spelling on the path; nothing at or inside a git directory recognised by what it is, nor an entry that would make
 * one, nor inside a `core.hooksPath` hooks directory (git-dirs.ts, looked up through verified descriptors); no
 * execution-bearing configuration file unless `ctx.allowExecConfig` (exec-config.ts). The one per-path decision a
 * tree operation calls for every entry it touches, at the old and at the new path. `absolute` is the requested
 * spelling (named in the refusal and checked by name too), `real` the authorized real path (it may not exist).
 * @throws ToolError FILE_POLICY_DENIED (source builtin; rule git_dir | hooks_dir | exec_config), NOT_ALLOWED (a
 *   directory on the way changed during the check)
 */
export function assertMayChange(ctx: PolicyContext, absolute: string, real: string): void {
  assertNotGitInternal(absolute, real);
  assertNotExecConfig(absolute, [absolute, real], ctx.allowExecConfig === true);
  assertNotInGitDirectory(ctx, absolute, real);
}

/**
 * Runs a policy check; a hidden path's NOT_FOUND is rebuilt by notFoundError so it carries the same `details.near` a
 * missing path there would (otherwise a missing `near` would tell a hidden file from a missing one).
 */
async function hiddenLikeMissing(check: () => void, resolved: ResolvedPath, ctx: PolicyContext): Promise<void> {
  try {
    check();
  } catch (error) {
    if (error instanceof ToolError && error.code === 'NOT_FOUND') throw await notFoundError(resolved, ctx);
    throw error;
  }
}

/** One path of a call that names several (see `assertWritesAllowed`). */
export interface WriteRequest {
  requested: string;
  followFinal: boolean;
  field?: string;
}

/**
 * docs/errors.md "Order of checks" holds across the whole call, not per argument: for a call that names several paths (move_path's source
 * and destination, apply_patch's files), every path's containment (step 5) is decided before any path's secret and
 * policy checks (step 6), and those before any existence or kind check (step 7). Tools call this first and then
 * `authorizeWrite` per path as usual. Without it, a refused first path (a source under .git, a missing first file)
 * decided the code while a later path lay outside the roots.
 * @throws ToolError ROOTS_EMPTY, NOT_ALLOWED, VALIDATION, SECRET_DENIED, FILE_POLICY_DENIED
 */
export async function assertWritesAllowed(requests: readonly WriteRequest[], ctx: PolicyContext): Promise<void> {
  const resolved: ResolvedPath[] = [];
  for (const r of requests)
    resolved.push(await resolveForCall(r.requested, ctx, { followFinal: r.followFinal }, r.field));
  for (const r of resolved) await assertWritePolicy(r, ctx);
}

/**
 * Authorizes restoring one journaled file at start-up exactly as a live write of it would be:
 * real-path containment, the state directory / audit log guard, secrets, the `.git` rule, the file policy, and the
 * kind (a directory is not restored over). A journal records real paths, so a path that no longer resolves to itself
 * (a link now stands in it or above it) is refused too.
 * @returns null when the rollback may write `file`, else the reason: the refusal's code and, when set, its rule or
 *   reason (e.g. `FILE_POLICY_DENIED:git_dir`, `NOT_ALLOWED`, `SECRET_DENIED`)
 */
export async function recoveryRefusal(file: string, ctx: PolicyContext): Promise<string | null> {
  try {
    const target = await authorizeWrite(file, ctx, {
      kind: 'file',
      mustExist: false,
      followFinal: true,
      offerNear: false,
    });
    if (target.real !== file || target.absolute !== file) return 'NOT_ALLOWED:not_a_real_path';
    return null;
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    const detail = error.details.rule ?? error.details.reason;
    return typeof detail === 'string' ? `${error.code}:${detail}` : error.code;
  }
}

/**
 * What list_directory may say about a symlink's target (docs/tools.md): its kind when the link resolves inside the roots to
 * something the policy neither hides nor denies (checked on the target and on the link's spelling, as for any
 * path); otherwise null — a dangling link, a loop, a target outside the roots, hidden or denied all look the same.
 */
export async function linkTargetKind(
  ctx: PolicyContext,
  linkAbsolute: string,
): Promise<ReturnType<typeof kindOf> | null> {
  try {
    const resolved = await resolveInRoots(linkAbsolute, ctx.roots, { followFinal: true });
    if (!resolved.stats) return null;
    const access = policyAccess(ctx, resolved, toPosixRelative(resolved.root.real, resolved.real));
    if (access === 'hidden' || access === 'deny') return null;
    return kindOf(resolved.stats);
  } catch {
    return null;
  }
}

/** The two paths of a copy, authorized. */
export interface AuthorizedCopy {
  /** The source, its last component NOT followed (a link is copied as a link); `stats` null when missing. */
  source: ResolvedPath & { relative: string; access: Access | null };
  destination: AuthorizedWrite;
}

/**
 * Authorizes copy_path, docs/errors.md "Order of checks" across the whole call: both paths' containment (step 5) first, then
 * step 6 — the source as a read of the entry itself (the state directory / audit log guard on it and on anything it
 * holds, secrets, the `.git` rule: copying git internals out is refused like writing them, the file policy for
 * reading) and the destination as a write (`authorizeWrite`) — then step 7 (the source exists; its kind is checked by
 * the tool).
 * @throws ToolError ROOTS_EMPTY, NOT_ALLOWED, VALIDATION, SECRET_DENIED, FILE_POLICY_DENIED, NOT_FOUND
 */
export async function authorizeCopy(source: string, destination: string, ctx: PolicyContext): Promise<AuthorizedCopy> {
  const src = await resolveForCall(source, ctx, { followFinal: false }, 'source');
  await resolveForCall(destination, ctx, { followFinal: false }, 'destination');
  const relative = toPosixRelative(src.root.real, src.real);
  const access = policyAccess(ctx, src, relative);
  const place = { absolute: src.absolute, real: src.real, relative, access };
  await hiddenLikeMissing(() => assertPathAllowed(ctx, 'read', place, { holdsNoGuarded: true }), src, ctx);
  // Copying out of a git directory (or a hooks directory) is refused like the `.git` rule refuses it.
  assertNotInGitDirectory(ctx, src.absolute, src.real);
  const dst = await authorizeWrite(destination, ctx, {
    kind: 'any',
    mustExist: false,
    followFinal: false,
    field: 'destination',
  });
  if (!src.stats) throw await notFoundError(src, ctx);
  return { source: { ...src, relative, access }, destination: dst };
}
