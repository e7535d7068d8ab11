/**
 * A single-file content mutation (write_file, edit_file) on the pipeline (src/mutation/pipeline.ts).
 */
import path from 'node:path';
import { writeFileAtomicIn } from '../fs/atomic-write.js';
import { hashBytes } from '../fs/hash.js';
import { historyFileOf } from '../fs/history.js';
import { isDirectory, readCurrentIn, type CurrentFile, type ReadCurrentOptions } from '../fs/read-current.js';
import { afterEffect } from '../fs/tree-ops.js';
import { identityOf, openDirCreating, type VerifiedDir } from '../fs/verified-dir.js';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import type { AuthorizedWrite } from '../policy/authorize.js';
import { checkExpectedHash, type OccVerdict } from '../policy/occ.js';
import { parentOf } from '../policy/resolve-path.js';
import type { ToolContext } from './context.js';
import { mergeInstead, type MergedInfo } from './merge.js';
import { deletionIsConflict } from './occ-rules.js';
import { runMutation, type MutationStep } from './pipeline.js';
import { parentMissing, type MutationScope } from './scope.js';

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

/** The plan of one file mutation, made before the lock. */
interface FilePlan {
  target: AuthorizedWrite;
  options: MutateOptions;
  /**
   * A file this session knows (or an explicit content hash names): gone now, it is OCC_MISMATCH `deleted` (decided
   * at step 9), not NOT_FOUND — also when its directory is gone.
   */
  known: boolean;
  /** How the current file is read inside the lock. */
  read: ReadCurrentOptions;
}

/** What `inspectFile` found inside the lock: the verified parent (null: missing) and the current file. */
interface FileState {
  where: { dir: VerifiedDir; name: string } | null;
  current: CurrentFile;
}

/**
 * A single-file content mutation (write_file, edit_file) through `runMutation`: `compute` turns the current file into
 * the new bytes. Steps: plan (here), inspect (`inspectFile`: existence decided once, inside the lock), decide
 * (`decideFile`: OCC or the merge, then `compute`), effect (`writeDecided`), record (the pipeline).
 * @throws ToolError NOT_FOUND (parent_missing), STALE_GIT, HASH_REQUIRED, OCC_MISMATCH, whatever `compute` throws,
 *   NOT_ALLOWED (swap detected), and Node errno errors from the write (mapped to IO_ERROR / FILE_POLICY_DENIED)
 */
export async function mutateFile<T>(
  ctx: ToolContext,
  target: AuthorizedWrite,
  options: MutateOptions,
  compute: (current: CurrentFile) => Promise<Computed<T>> | Computed<T>,
): Promise<MutateResult<T>> {
  // A real change also loads the bytes before it for the undo history (up to --max-edit-bytes; a larger file is hashed
  // only and its change is not recorded). A dry run loads only what the conflict report needs ('small': 256 KiB).
  const forHistory = !options.dryRun;
  const plan: FilePlan = {
    target,
    options,
    known: deletionIsConflict(ctx, options.expectedHash)(target.real),
    read: {
      wantBytes: options.wantBytes !== false || forHistory,
      maxBytes: options.wantBytes === 'small' && !forHistory ? 256 * 1024 : ctx.config.limits.maxEditBytes,
      hashOnlyWhenLarge: options.wantBytes !== true,
    },
  };
  const { result, statusHash } = await runMutation<MutateResult<T>, FileState>(ctx, {
    lockPaths: [target.real],
    expectedStatusHash: options.expectedStatusHash,
    statusPaths: [target.real],
    dryRun: options.dryRun,
    inspect: (scope) => inspectFile(scope, plan),
    decide: (scope, state) => decideFile(ctx, scope, plan, state, compute),
  });
  return statusHash ? { ...result, statusHash } : result;
}

/**
 * Step 7, inside the lock: the parent directory and the file as they are now — the one place a file mutation decides
 * existence. A file nobody expects whose parent is missing is NOT_FOUND parent_missing (unless create_dirs), one that
 * must exist (edit_file) is NOT_FOUND; a known file that is gone is left to step 9 (`decideFile`). The parent is
 * opened once; only when that fails for a new file is a path lookup asked whether it is a directory at all.
 * @throws ToolError NOT_FOUND, VALIDATION not_a_directory / NOT_ALLOWED (the parent: MutationScope.parent)
 */
async function inspectFile(scope: MutationScope, plan: FilePlan): Promise<FileState> {
  const { target, options } = plan;
  let where: FileState['where'];
  try {
    where = scope.parent(target.real);
  } catch (error) {
    // A new file nobody expects whose parent cannot be opened as a directory (a file, a link or nothing there): its
    // parent is missing, as a path lookup of the parent says.
    const expectsParent = !target.stats && !plan.known && !options.createDirs;
    if (expectsParent && !(await isDirectory(parentOf(target.real)))) throw parentMissing(target.absolute);
    throw error;
  }
  const current = where
    ? await readCurrentIn(where.dir, where.name, plan.read)
    : { exists: false, hash: null, bytes: null, stats: null };
  if (!current.exists && !plan.known) {
    if (!where && (options.mustExist || !options.createDirs)) throw parentMissing(target.absolute);
    if (options.mustExist) throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: target.absolute });
  }
  return { where, current };
}

/** The OCC check of a file mutation against `hash`/`bytes` (docs/errors.md "Optimistic concurrency"). */
function occCheck(
  ctx: ToolContext,
  plan: FilePlan,
  current: { hash: string | null; bytes: Uint8Array | null },
  expected = plan.options.expectedHash,
  autoOcc = ctx.config.autoOcc,
): OccVerdict {
  return checkExpectedHash({
    absolute: plan.target.absolute,
    real: plan.target.real,
    current: { hash: current.hash, bytes: current.bytes ?? undefined },
    expected,
    autoOcc,
    memory: ctx.hashes,
    field: plan.options.field,
  });
}

/**
 * Steps 9–10, inside the lock, on what `inspectFile` found: a known file that is gone is OCC_MISMATCH `deleted`; then
 * the OCC check (or, with on_conflict "merge", the merge) and `compute`; returns the result and the write.
 * @throws ToolError OCC_MISMATCH, HASH_REQUIRED, whatever `compute` or the merge throws
 */
async function decideFile<T>(
  ctx: ToolContext,
  scope: MutationScope,
  plan: FilePlan,
  state: FileState,
  compute: (current: CurrentFile) => Promise<Computed<T>> | Computed<T>,
): Promise<MutationStep<MutateResult<T>>> {
  const { target, options } = plan;
  const { where, current } = state;
  if (!current.exists && plan.known && (options.mustExist || (!where && !options.createDirs))) {
    occCheck(ctx, plan, current); // OCC_MISMATCH deleted
    if (!where) throw parentMissing(target.absolute);
    throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: target.absolute });
  }
  const { occ, computed, merged } = await computeOrMerge(ctx, plan, current, compute);
  const contentHash = hashBytes(computed.bytes);
  const result: MutateResult<T> = {
    created: !current.exists,
    previousHash: current.hash,
    contentHash,
    bytes: computed.bytes.length,
    occ,
    detail: computed.detail,
    ...(merged ? { merged } : {}),
  };
  const restorable = !current.exists || current.bytes !== null;
  return {
    result,
    effect: (beforeVisible) => writeDecided(ctx, scope, plan, state, computed.bytes, beforeVisible),
    done: `${current.exists ? 'replaced' : 'created'} ${target.real}`,
    remember: () => ctx.hashes.remember(target.real, contentHash, computed.bytes),
    history: restorable
      ? {
          tool: options.tool ?? 'write_file',
          complete: true,
          files: [
            historyFileOf(
              target.real,
              current.bytes,
              current.stats ? current.stats.mode : null,
              contentHash,
              current.hash,
            ),
          ],
        }
      : undefined,
  };
}

/**
 * Step 9 then 10: the OCC check and the new content — or, with on_conflict "merge" after an OCC_MISMATCH, the
 * caller's change on the version it read merged with the current bytes (`mergeInstead`).
 */
async function computeOrMerge<T>(
  ctx: ToolContext,
  plan: FilePlan,
  current: CurrentFile,
  compute: (current: CurrentFile) => Promise<Computed<T>> | Computed<T>,
): Promise<{ occ: OccVerdict; computed: Computed<T>; merged?: MutateResult<T>['merged'] }> {
  try {
    const occ = occCheck(ctx, plan, current);
    return { occ, computed: await compute(current) };
  } catch (error) {
    if (plan.options.onConflict !== 'merge' || !(error instanceof OccMismatchError)) throw error;
    // The caller's change against the version it read, merged with what is on disk now (or refused).
    let ours: Computed<T> | undefined;
    const m = await mergeInstead(ctx, error, plan.target.real, current.bytes, async (_text, base) => {
      ours = await compute({ ...current, hash: error.expectedHash, bytes: base });
      return ours.bytes.toString('utf8');
    });
    return {
      occ: { checkedAgainst: error.expectedHash, externalChange: false },
      computed: { bytes: Buffer.from(m.text, 'utf8'), detail: ours!.detail },
      merged: { info: m.merged, before: Buffer.from(current.bytes!).toString('utf8'), after: m.text },
    };
  }
}

/**
 * Step 10, the effect: the atomic write in the parent verified at step 7 (created now for create_dirs). The file must
 * still be what was decided on: someone else (not an fs-tools writer: they share the path lock) who changed it since
 * with different bytes is OCC_MISMATCH against what was read; the same bytes under a new identity (an identical save,
 * a touch) let the write proceed.
 * @throws as writeFileAtomicIn; with details.mutation_applied when directories were created and the write failed
 */
async function writeDecided(
  ctx: ToolContext,
  scope: MutationScope,
  plan: FilePlan,
  state: FileState,
  bytes: Buffer,
  beforeVisible?: () => Promise<void>,
): Promise<void> {
  const { current } = state;
  const real = plan.target.real;
  let dir = state.where?.dir;
  let created: string[] = [];
  if (!dir) {
    const made = openDirCreating(parentOf(real), scope.isInside);
    dir = scope.adopt(made.dir);
    created = made.created;
  }
  const parent = dir;
  const name = path.basename(real);
  try {
    await writeFileAtomicIn(parent, name, bytes, {
      beforeRename: beforeVisible,
      expected: {
        identity: current.stats ? identityOf(current.stats) : null,
        onChanged: async () => {
          try {
            const now = await readCurrentIn(parent, name, {
              wantBytes: true,
              maxBytes: plan.read.maxBytes,
              hashOnlyWhenLarge: true,
            });
            occCheck(ctx, plan, now, current.hash ?? 'absent', 'block');
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
}
