/**
 * A single-file content mutation (write_file, edit_file) on the pipeline (src/mutation/pipeline.ts).
 */
import path from 'node:path';
import { writeFileAtomicIn } from '../fs/atomic-write.js';
import { hashBytes } from '../fs/hash.js';
import { historyFileOf } from '../fs/history.js';
import { isDirectory, readCurrentIn, type CurrentFile } from '../fs/read-current.js';
import { afterEffect } from '../fs/tree-ops.js';
import { identityOf, openDirCreating } from '../fs/verified-dir.js';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import type { AuthorizedWrite } from '../policy/authorize.js';
import { checkExpectedHash, type OccVerdict } from '../policy/occ.js';
import { parentOf, type AllowedPath } from '../policy/resolve-path.js';
import type { ToolContext } from './context.js';
import { mergeInstead, type MergedInfo } from './merge.js';
import { deletionIsConflict } from './occ-rules.js';
import { runMutation } from './pipeline.js';
import { parentMissing } from './scope.js';

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
