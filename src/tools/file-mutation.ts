/**
 * The one mutation pipeline (docs/errors.md "Order of checks" steps 8–10), used by write_file, edit_file, apply_patch, move_path,
 * delete_path and create_directory (and exported for journal recovery):
 *
 *   8 STALE_GIT (expected_status_hash) — and every other work tree whose status hash the call will report is proven
 *     to be one now, so that cannot fail after the effect
 *   → [path lock over every path the call touches]
 *   → `decide`: the tool reads the CURRENT state of every path it touches (existence, kind, bytes, hash —
 *     destinations included) through verified directory descriptors opened inside the lock (MutationScope), runs
 *     9 HASH_REQUIRED / OCC_MISMATCH and 10 its own checks (PATCH_FAILED, REWRITE_BLOCKED …), and returns its effect;
 *     nothing decided before the lock is trusted, and every check that can fail runs here, before the first effect
 *   → dry run stops here → the effect (the only step that changes anything) → hash memory
 *   → the new status hash.
 *
 * A failure after the effect started (only I/O, or git for the new status hash) is reported with what was done and
 * `details.mutation_applied`, and the call is charged to --mutation-budget (src/server/call-tool.ts): a mutation that
 * happened is always charged. Tools supply only `decide`; they never touch the filesystem themselves.
 */
import type { Stats } from 'node:fs';
import path from 'node:path';
import { writeFileAtomicIn } from '../fs/atomic-write.js';
import { hashBytes } from '../fs/hash.js';
import { historyFileOf, recordChange, recordSkipped, type HistoryFile } from '../fs/history.js';
import { withPathLock } from '../fs/path-lock.js';
import { isDirectory, readCurrentIn, type CurrentFile, type ReadCurrentOptions } from '../fs/read-current.js';
import { afterEffect } from '../fs/tree-ops.js';
import { identityOf, openDirCreating, VerifiedDir } from '../fs/verified-dir.js';
import { isUtf8 } from 'node:buffer';
import { OccMismatchError, PatchFailedError, ToolError } from '../errors/tool-error.js';
import { merge3 } from '../patch/merge3.js';
import { authorizeRead, type AuthorizedWrite } from '../policy/authorize.js';
import { findContainingRoot } from '../policy/containment.js';
import { linkTargetInside } from '../policy/link-target.js';
import { assertNotInGitDirectory, repositoryShapeLockPath } from '../policy/git-dirs.js';
import {
  ABSENT,
  checkExpectedHash,
  MERGE_NOTES,
  mergeBaseFor,
  overlappingConflict,
  withMergeNote,
  type OccVerdict,
} from '../policy/occ.js';
import { parentOf, type AllowedPath } from '../policy/resolve-path.js';
import { assertStatusHash, currentStatusHash, existingDirOf } from '../policy/stale-git.js';
import type { ToolContext } from './define-tool.js';

/** A containment predicate over the roots of this call. */
export function insideRoots(ctx: ToolContext): (p: string) => boolean {
  return (p) => findContainingRoot(ctx.policy.roots, p) !== undefined;
}

/**
 * Checks STALE_GIT for `target` when an expected status hash is given (docs/errors.md "Order of checks" step 8).
 * @throws ToolError STALE_GIT, VALIDATION (not a work tree), NOT_ALLOWED (work tree outside the roots)
 */
export async function checkStaleGit(ctx: ToolContext, real: string, expected: string | undefined): Promise<void> {
  if (expected === undefined) return;
  await assertStatusHash(expected, real, await existingDirOf(real), ctx.policy, ctx.config.limits.gitTimeoutMs);
}

/** The work tree's status hash after a mutation (reported when the caller passed expected_status_hash). */
export async function statusHashAfter(
  ctx: ToolContext,
  real: string,
  expected: string | undefined,
): Promise<string | undefined> {
  if (expected === undefined) return undefined;
  return (await currentStatusHash(real, await existingDirOf(real), ctx.policy, ctx.config.limits.gitTimeoutMs))
    .statusHash;
}

/**
 * The verified directories of one mutation, opened inside the path lock and closed when the mutation ends.
 */
export class MutationScope {
  private readonly dirs = new Map<string, VerifiedDir>();

  constructor(readonly isInside: (p: string) => boolean) {}

  /**
   * The verified parent directory of `real` and the entry name, or null when the parent does not exist.
   * @throws ToolError NOT_ALLOWED (a link on the way; outside), VALIDATION not_a_directory (a file on the way);
   *   errno errors other than a missing parent
   */
  parent(real: AllowedPath): { dir: VerifiedDir; name: string } | null {
    const dirPath = path.dirname(real);
    let dir = this.dirs.get(dirPath);
    if (!dir) {
      try {
        dir = VerifiedDir.open(dirPath, this.isInside);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return null;
        if (code === 'ENOTDIR') {
          throw new ToolError('VALIDATION', `A component of ${dirPath} exists and is not a directory.`, {
            path: dirPath,
            details: { reason: 'not_a_directory' },
          });
        }
        throw error;
      }
      this.dirs.set(dirPath, dir);
    }
    return { dir, name: path.basename(real) };
  }

  /**
   * Like `parent`, but a missing parent is NOT_FOUND.
   * @throws ToolError NOT_FOUND reason parent_missing, and as `parent`
   */
  existingParent(real: AllowedPath, absolute: string, suggestion?: string): { dir: VerifiedDir; name: string } {
    const p = this.parent(real);
    if (!p) throw parentMissing(absolute, suggestion);
    return p;
  }

  /** The current state of the file `real` (absent when it or its parent does not exist). */
  async current(real: AllowedPath, options: ReadCurrentOptions): Promise<CurrentFile> {
    const p = this.parent(real);
    if (!p) return { exists: false, hash: null, bytes: null, stats: null };
    return await readCurrentIn(p.dir, p.name, options);
  }

  /** Keeps a directory opened elsewhere (e.g. just created) to be closed with the scope. */
  adopt(dir: VerifiedDir): VerifiedDir {
    const old = this.dirs.get(dir.path);
    if (old && old !== dir) old.close();
    this.dirs.set(dir.path, dir);
    return dir;
  }

  /** Closes every directory. */
  close(): void {
    for (const d of this.dirs.values()) d.close();
    this.dirs.clear();
  }
}

/** NOT_FOUND reason parent_missing. */
export function parentMissing(
  absolute: string,
  suggestion = 'Pass create_dirs: true, or call create_directory first.',
): ToolError {
  return new ToolError('NOT_FOUND', `The parent directory of ${absolute} does not exist.`, {
    path: absolute,
    details: { reason: 'parent_missing' },
    suggestion,
  });
}

/** What a tool's `decide` returns: its result and the effect that makes it so. */
export interface MutationStep<T> {
  result: T;
  /** The only code that changes anything; not run for a dry run. Absent: nothing to change. */
  effect?: () => Promise<void>;
  /** Hash-memory updates once the effect succeeded. */
  remember?: () => void;
  /** What the effect did, in a few words (reported if the new status hash fails afterwards). */
  done: string;
  /**
   * The undo record of this change (src/fs/history.ts), written once the effect succeeded (the effect may still add
   * to `files`: a tree copy records what it wrote). `tooLarge`: not recorded, counted as skipped for the listing.
   */
  history?: { tool: string; files: HistoryFile[]; reverts?: string[]; tooLarge?: boolean };
}

/** One mutation call as the pipeline runs it. */
export interface MutationPlan<T> {
  /** Every path the call touches (sources, destinations, files of a patch): the path lock is taken on all. */
  lockPaths: readonly AllowedPath[];
  expectedStatusHash: string | undefined;
  /**
   * The paths whose git work tree matters: STALE_GIT is checked on the first; the status hash reported afterwards is
   * the last one's. All must lie in a work tree before any effect.
   */
  statusPaths: readonly AllowedPath[];
  dryRun: boolean;
  /** Inside the lock: read the current state through `scope`, decide, and return the effect. */
  decide: (scope: MutationScope) => MutationStep<T> | Promise<MutationStep<T>>;
}

/**
 * Runs one mutation (see the module comment).
 * @returns the step's result and, when expected_status_hash was given (not a dry run), the new status hash
 * @throws ToolError STALE_GIT, VALIDATION / NOT_ALLOWED (work trees), whatever `decide` throws (nothing was changed),
 *   the effect's errors (with details.mutation_applied when part of it happened), a status-hash failure after the
 *   effect (details.mutation_applied)
 */
export async function runMutation<T>(
  ctx: ToolContext,
  plan: MutationPlan<T>,
): Promise<{ result: T; statusHash?: string }> {
  if (plan.expectedStatusHash !== undefined && plan.statusPaths.length > 0) {
    await checkStaleGit(ctx, plan.statusPaths[0], plan.expectedStatusHash);
    // The status hash reported afterwards must be computable: a path outside any work tree is VALIDATION now, not
    // after the effect.
    for (const p of plan.statusPaths.slice(1)) await statusHashAfter(ctx, p, plan.expectedStatusHash);
  }
  const scope = new MutationScope(insideRoots(ctx));
  // Creating a repository entry (HEAD, objects, refs, commondir) takes one lock per directory, so two calls cannot
  // each add one half of a repository's shape past the git-directory guard (src/policy/git-dirs.ts).
  const shapeLocks = plan.lockPaths.map(repositoryShapeLockPath).filter((p): p is string => p !== null);
  const step = await withPathLock([...plan.lockPaths, ...shapeLocks], ctx.config.stateDir, async () => {
    try {
      // The git-directory guard again, inside the lock, on the state now (authorization ran before the lock).
      for (const p of plan.lockPaths) assertNotInGitDirectory(ctx.policy, p, p);
      const s = await plan.decide(scope);
      if (!plan.dryRun && s.effect) {
        await s.effect();
        s.remember?.();
        if (s.history?.tooLarge) await recordHistory(ctx, s.history, true);
        else if (s.history && s.history.files.length > 0) await recordHistory(ctx, s.history);
      }
      return s;
    } finally {
      scope.close();
    }
  });
  if (plan.dryRun || plan.expectedStatusHash === undefined) return { result: step.result };
  try {
    const statusHash = await statusHashAfter(
      ctx,
      plan.statusPaths[plan.statusPaths.length - 1],
      plan.expectedStatusHash,
    );
    return { result: step.result, statusHash };
  } catch (error) {
    throw step.effect ? afterEffect(error, step.done) : error;
  }
}

/**
 * Records a change in the undo history (inside the path lock, so records of one file are in commit order). A failure
 * to record never fails the change that already happened: it is logged to stderr (no content, no path).
 */
async function recordHistory(
  ctx: ToolContext,
  history: NonNullable<MutationStep<unknown>['history']>,
  skipped = false,
): Promise<void> {
  try {
    if (skipped) return await recordSkipped(ctx.config.stateDir);
    await recordChange(
      ctx.config.stateDir,
      {
        maxChanges: ctx.config.limits.historyMaxChanges,
        maxBytes: ctx.config.limits.historyMaxBytes,
      },
      { tool: history.tool, files: history.files, ...(history.reverts ? { reverts: history.reverts } : {}) },
    );
  } catch (error) {
    process.stderr.write(
      `fs-tools: the undo history could not record a ${history.tool} change (${(error as NodeJS.ErrnoException).code ?? 'error'})\n`,
    );
  }
}

/**
 * The destination a move or copy may replace, decided inside the lock on what is there now (docs/errors.md "Optimistic concurrency": replacing a
 * file is a mutation under OCC): its current hash (a file; null for a directory, a link or nothing), checked against
 * `expectedHash` (or the session's memory under --auto-occ), and the identity the effect must still find there.
 * A link destination is the link itself (the file it points to is never touched; docs/tools.md "Links as
 * destinations"): `checkReplacedLink` decides it.
 * A link whose target lies outside the roots is not replaced: its undo could not recreate it (NOT_ALLOWED
 * link_target_outside).
 * @param dstNow the destination's lstat through its verified parent, taken in this scope (null: absent)
 * @throws ToolError HASH_REQUIRED, OCC_MISMATCH, NOT_ALLOWED link_target_outside
 */
export async function checkReplacedDestination(
  ctx: ToolContext,
  scope: MutationScope,
  destination: { absolute: string; real: AllowedPath },
  dstNow: Stats | null,
  expectedHash: string | undefined,
): Promise<{ file: CurrentFile | null; identity: ReturnType<typeof identityOf> | null }> {
  if (dstNow?.isSymbolicLink()) {
    // Its undo recreates the link (revert_changes), which no tool does for a target outside the roots: replacing such a
    // link could not be undone — for a move not even the moved file — so it is refused before anything changes.
    const held = scope.existingParent(destination.real, destination.absolute);
    if (!(await linkTargetInside(ctx.policy.roots, destination.real, held.dir.readlink(held.name)))) {
      throw new ToolError(
        'NOT_ALLOWED',
        `${destination.absolute} is a symbolic link that points outside the roots; replacing it could not be undone, ` +
          'so it is not replaced.',
        {
          path: destination.absolute,
          details: { reason: 'link_target_outside' },
          suggestion: 'Choose another destination, or delete the link first (delete_path) if it is to go.',
        },
      );
    }
    await checkReplacedLink(ctx, scope, destination, expectedHash);
    return { file: null, identity: identityOf(dstNow) };
  }
  const file = dstNow?.isFile()
    ? await scope.current(destination.real, { wantBytes: true, maxBytes: 256 * 1024, hashOnlyWhenLarge: true })
    : null;
  if (dstNow || expectedHash !== undefined) {
    checkExpectedHash({
      absolute: destination.absolute,
      real: destination.real,
      current: { hash: file?.hash ?? null, bytes: file?.bytes ?? undefined },
      expected: expectedHash,
      autoOcc: ctx.config.autoOcc,
      memory: ctx.hashes,
    });
  }
  return { file, identity: dstNow ? identityOf(file?.stats ?? dstNow) : null };
}

/**
 * OCC for a symbolic link a move or copy replaces (the link, never what it points to). A link holds no content of its
 * own: no expected hash is needed (as delete_path of a link), and the undo history records its target. An explicit
 * `expectedHash` must be what a read of the link's path gives now — the content hash of the file it leads to, when
 * that is a file inside the roots the policy lets the session read (read_file / stat of the link report that hash) —
 * else OCC_MISMATCH: `modified` with that hash, `deleted` when the link leads to no readable file (dangling, outside,
 * secret, hidden), `created` for "absent" (the link exists).
 * @throws ToolError OCC_MISMATCH
 */
async function checkReplacedLink(
  ctx: ToolContext,
  scope: MutationScope,
  destination: { absolute: string; real: AllowedPath },
  expectedHash: string | undefined,
): Promise<void> {
  if (expectedHash === undefined) return;
  let throughLink: string | null = null;
  try {
    const target = await authorizeRead(destination.real, ctx.policy, { kind: 'file' });
    throughLink = (await scope.current(target.real, { wantBytes: false, maxBytes: 0 })).hash;
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
  }
  if (expectedHash !== ABSENT && expectedHash === throughLink) return;
  const reason = expectedHash === ABSENT ? 'created' : throughLink === null ? 'deleted' : 'modified';
  throw new OccMismatchError(
    expectedHash === ABSENT
      ? `${destination.absolute} exists (a symbolic link), but expected_hash was "absent".`
      : `The symbolic link ${destination.absolute} no longer leads to the version expected.`,
    {
      path: destination.absolute,
      expectedHash,
      currentHash: throughLink,
      conflict: { reason },
      suggestion:
        "Read the link's path (read_file or stat) and pass the content_hash it reports, or omit expected_hash: " +
        'a link is replaced as the link itself.',
    },
  );
}

/**
 * One HASH_REQUIRED for every file of the patch that needs a hash: the first file's path and current_hash
 * stay top-level (compatibility), `details.files` lists each as {path, current_hash}, in the change's order.
 */
export function hashRequiredForAll(errors: readonly ToolError[]): ToolError {
  const first = errors[0];
  if (errors.length === 1) return first;
  const files = errors.map((e) => ({ path: e.path, current_hash: e.details.current_hash }));
  return new ToolError(
    'HASH_REQUIRED',
    `${errors.length} files of the change exist and this session has not read them; ` +
      'pass expected_hashes for each.',
    {
      path: first.path,
      details: { current_hash: first.details.current_hash, field: 'expected_hashes', files },
      suggestion:
        'Read the files first, or pass expected_hashes with each details.files[].current_hash if you know their content.',
    },
  );
}

/**
 * The `knownToSession` predicate of authorizeWrite for a mutation: a missing target is a deletion conflict
 * (OCC_MISMATCH `deleted`), not NOT_FOUND, when an explicit expected hash names content, or when this session read or
 * wrote the path under --auto-occ=block|warn.
 */
export function deletionIsConflict(ctx: ToolContext, expected: string | undefined): (real: string) => boolean {
  return (real) =>
    (expected !== undefined && expected !== ABSENT) ||
    (ctx.config.autoOcc !== 'off' && ctx.hashes.recall(real) !== undefined);
}

/** Lets other calls (and pings) run between two bounded steps. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What a merged result reports (`merged`; docs/tools.md "Merging instead of refusing"). */
export interface MergedInfo {
  /** The read version the caller's change was made against. */
  base_hash: string;
  /** The file as it was just before this write (someone else's change on top of base_hash). */
  current_hash_before: string;
  /** 1-based inclusive line ranges of the new content that came from that other change (a deletion: the line after). */
  changed_ranges: Array<[number, number]>;
}

/**
 * on_conflict "merge" after an OCC_MISMATCH (docs/tools.md "Merging instead of refusing"), inside the mutation's lock:
 * the read version's bytes (policy: mergeBaseFor), the caller's change applied to them (`ours`), and the three-way
 * merge with the current bytes by git's rule (src/patch/merge3.ts).
 * @param ours the caller's change applied to the read version's text (its PATCH_FAILED means: does not apply there)
 * @returns the merged text and what the result reports
 * @throws OccMismatchError `modified` with conflict.note (not held, not text, not applicable, too large),
 *   `overlapping` (a conflict), the mismatch itself (deleted, created); whatever `ours` throws but PATCH_FAILED
 */
export async function mergeInstead(
  ctx: ToolContext,
  mismatch: OccMismatchError,
  real: string,
  currentBytes: Uint8Array | null | undefined,
  ours: (baseText: string, base: Buffer) => string | Promise<string>,
): Promise<{ text: string; merged: MergedInfo }> {
  const base = mergeBaseFor(mismatch, real, ctx.hashes);
  if (!currentBytes || mismatch.currentHash === null) throw withMergeNote(mismatch, MERGE_NOTES.notModified);
  if (!isUtf8(base) || !isUtf8(currentBytes)) throw withMergeNote(mismatch, MERGE_NOTES.notText);
  const baseText = base.toString('utf8');
  let oursText: string;
  // Each step holds the event loop for one bounded piece (docs/security.md "Bounded work"): the OCC check's changed
  // ranges, your change on the read version, the merge.
  await nextTurn();
  try {
    oursText = await ours(baseText, base);
  } catch (error) {
    if (error instanceof PatchFailedError) throw withMergeNote(mismatch, MERGE_NOTES.notApplicable);
    throw error;
  }
  await nextTurn();
  const r = merge3(baseText, Buffer.from(currentBytes).toString('utf8'), oursText);
  if (r.kind === 'too_large') throw withMergeNote(mismatch, MERGE_NOTES.tooLarge);
  if (r.kind === 'conflict') throw overlappingConflict(mismatch, r.regions);
  return {
    text: r.text,
    merged: {
      base_hash: mismatch.expectedHash,
      current_hash_before: mismatch.currentHash,
      changed_ranges: r.theirRanges,
    },
  };
}

/** Options of `mutateFile`. */
export interface MutateOptions {
  expectedHash: string | undefined;
  expectedStatusHash: string | undefined;
  dryRun: boolean;
  /**
   * Load the current bytes (edits) or only hash them (whole-file replace). `'small'`: load them only up to the OCC
   * snapshot size (256 KiB), so an OCC conflict can carry changed_ranges and bytes_delta (write_file).
   */
  wantBytes: boolean | 'small';
  /** Create missing parent directories (write_file create_dirs). */
  createDirs?: boolean;
  /** The file must exist now (edit_file): one gone since authorization is NOT_FOUND. */
  mustExist?: boolean;
  /** Name of the expected-hash parameter, for messages. */
  field?: string;
  /** The tool's name, for the undo history. Default write_file. */
  tool?: string;
  /** edit_file's on_conflict: "merge" merges an OCC_MISMATCH `modified` instead (`mergeInstead`). Default fail. */
  onConflict?: 'fail' | 'merge';
}

/** What `mutateFile` did. */
export interface MutateResult<T> {
  created: boolean;
  previousHash: string | null;
  contentHash: string;
  bytes: number;
  occ: OccVerdict;
  /** The compute step's own result. */
  detail: T;
  /** New status hash of the work tree, when expected_status_hash was given. */
  statusHash?: string;
  /** Present when on_conflict "merge" merged: what to report, and the current text the merge was written over. */
  merged?: { info: MergedInfo; before: string; after: string };
}

/** The computed new content and the handler's own facts about it. */
export interface Computed<T> {
  bytes: Buffer;
  detail: T;
}

/**
 * A single-file content mutation (write_file, edit_file) through `runMutation`: `compute` turns the current file into
 * the new bytes.
 * @throws ToolError NOT_FOUND parent_missing, STALE_GIT, HASH_REQUIRED, OCC_MISMATCH, whatever `compute` throws,
 *   NOT_ALLOWED (swap detected), and Node errno errors from the write (mapped to IO_ERROR / FILE_POLICY_DENIED)
 */
export async function mutateFile<T>(
  ctx: ToolContext,
  target: AuthorizedWrite,
  options: MutateOptions,
  compute: (current: CurrentFile) => Promise<Computed<T>> | Computed<T>,
): Promise<MutateResult<T>> {
  // docs/errors.md "Order of checks" step 7 (existence) before step 8 (STALE_GIT) and 9 (OCC): a new file needs its parent directory.
  // A file this session knows (or an explicit content hash names) whose directory is gone too is a deletion conflict,
  // decided by the OCC check below, not a missing parent.
  const known = deletionIsConflict(ctx, options.expectedHash)(target.real);
  if (!target.stats && !options.createDirs && !known && !(await isDirectory(parentOf(target.real))))
    throw parentMissing(target.absolute);
  const real: AllowedPath = target.real;
  // A real change also loads the bytes before it for the undo history (up to --max-edit-bytes; a larger file is hashed
  // only and its change is not recorded). A dry run loads only what the conflict report needs ('small': 256 KiB).
  const forHistory = !options.dryRun;
  const maxBytes = options.wantBytes === 'small' && !forHistory ? 256 * 1024 : ctx.config.limits.maxEditBytes;
  const readOptions = {
    wantBytes: options.wantBytes !== false || forHistory,
    maxBytes,
    hashOnlyWhenLarge: options.wantBytes !== true,
  };
  const { result, statusHash } = await runMutation(ctx, {
    lockPaths: [real],
    expectedStatusHash: options.expectedStatusHash,
    statusPaths: [real],
    dryRun: options.dryRun,
    decide: async (scope) => {
      const where = options.createDirs || known ? scope.parent(real) : scope.existingParent(real, target.absolute);
      const current = where
        ? await readCurrentIn(where.dir, where.name, readOptions)
        : { exists: false, hash: null, bytes: null, stats: null };
      const occCheck = () =>
        checkExpectedHash({
          absolute: target.absolute,
          real,
          current: { hash: current.hash, bytes: current.bytes ?? undefined },
          expected: options.expectedHash,
          autoOcc: ctx.config.autoOcc,
          memory: ctx.hashes,
          field: options.field,
        });
      if (options.mustExist && !current.exists) {
        // A known file that is gone: the OCC check throws OCC_MISMATCH deleted; otherwise NOT_FOUND.
        if (known) occCheck();
        if (!where) throw parentMissing(target.absolute);
        throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: target.absolute });
      }
      if (!where && !options.createDirs) {
        occCheck(); // throws OCC_MISMATCH deleted for a known file; else the parent is simply missing
        throw parentMissing(target.absolute);
      }
      let occ: OccVerdict;
      let computed: Computed<T>;
      let merged: MutateResult<T>['merged'];
      try {
        occ = occCheck();
        computed = await compute(current);
      } catch (error) {
        if (options.onConflict !== 'merge' || !(error instanceof OccMismatchError)) throw error;
        // The caller's change against the version it read, merged with what is on disk now (or refused).
        let ours: Computed<T> | undefined;
        const m = await mergeInstead(ctx, error, real, current.bytes, async (_text, base) => {
          ours = await compute({ ...current, hash: error.expectedHash, bytes: base });
          return ours.bytes.toString('utf8');
        });
        occ = { checkedAgainst: error.expectedHash, externalChange: false };
        computed = { bytes: Buffer.from(m.text, 'utf8'), detail: ours!.detail };
        merged = { info: m.merged, before: Buffer.from(current.bytes!).toString('utf8'), after: m.text };
      }
      const contentHash = hashBytes(computed.bytes);
      const result = {
        created: !current.exists,
        previousHash: current.hash,
        contentHash,
        bytes: computed.bytes.length,
        occ,
        detail: computed.detail,
        ...(merged ? { merged } : {}),
      };
      const effect = async () => {
        let dir = where?.dir;
        let created: string[] = [];
        if (!dir) {
          const made = openDirCreating(parentOf(real), scope.isInside);
          dir = scope.adopt(made.dir);
          created = made.created;
        }
        const parent = dir;
        try {
          await writeFileAtomicIn(parent, path.basename(real), computed.bytes, {
            expected: {
              identity: current.stats ? identityOf(current.stats) : null,
              // Someone else (not an fs-tools writer: they share the path lock) changed the file after we hashed it.
              // Different bytes: OCC_MISMATCH against what we read. Same bytes under a new identity (an identical
              // save, a touch): our computed bytes still apply, so the write proceeds.
              onChanged: async () => {
                try {
                  const now = await readCurrentIn(parent, path.basename(real), {
                    wantBytes: true,
                    maxBytes,
                    hashOnlyWhenLarge: true,
                  });
                  checkExpectedHash({
                    absolute: target.absolute,
                    real,
                    current: { hash: now.hash, bytes: now.bytes ?? undefined },
                    expected: current.hash ?? 'absent',
                    autoOcc: 'block',
                    memory: ctx.hashes,
                    field: options.field,
                  });
                  return null;
                } catch (error) {
                  return error as Error;
                }
              },
            },
          });
        } catch (error) {
          if (created.length > 0) throw afterEffect(error, `created ${created.join(', ')}; the file was not written`);
          throw error;
        }
      };
      const restorable = !current.exists || current.bytes !== null;
      return {
        result,
        effect,
        done: `${current.exists ? 'replaced' : 'created'} ${real}`,
        remember: () => ctx.hashes.remember(real, contentHash, computed.bytes),
        history: restorable
          ? {
              tool: options.tool ?? 'write_file',
              files: [historyFileOf(real, current.bytes, current.stats ? current.stats.mode : null, contentHash)],
            }
          : undefined,
      };
    },
  });
  return statusHash ? { ...result, statusHash } : result;
}
