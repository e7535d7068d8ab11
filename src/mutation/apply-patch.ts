/**
 * apply_patch's steps inside the lock (the plan is src/mutation/patch-targets.ts; the order is the pipeline's,
 * src/mutation/pipeline.ts): inspect every file once (step 7), then the OCC check of every file (step 9: an
 * OCC_MISMATCH of any file wins; every file needing a hash is listed in one HASH_REQUIRED), then the hunks per file
 * (step 10: PATCH_FAILED, REWRITE_BLOCKED); the effect is one journaled transaction (src/patch/transaction.ts).
 */
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { OccMismatchError, PatchFailedError, ToolError } from '../errors/tool-error.js';
import { identityOf } from '../fs/atomic-write.js';
import { hashBytes } from '../fs/hash.js';
import { historyFileOf } from '../fs/history.js';
import type { CurrentFile } from '../fs/read-current.js';
import { toEolText } from '../patch/eol-text.js';
import { applyHunksSliced, type HunkReport } from '../patch/locate-hunks.js';
import { assertNotRewriteSliced } from '../patch/rewrite-guard.js';
import { commitTransaction, type PlannedChange } from '../patch/transaction.js';
import { checkExpectedHash } from '../policy/occ.js';
import type { ToolContext } from './context.js';
import { mergeInstead, type MergedInfo } from './merge.js';
import { deletionIsConflict, hashRequiredForAll } from './occ-rules.js';
import { expectedFor, type PatchAction, type PatchArgs, type PatchTarget } from './patch-targets.js';
import type { MutationStep } from './pipeline.js';
import type { MutationScope } from './scope.js';

/** What apply_patch reports for one file (its output schema's `files[]`). */
export interface PatchFileResult {
  path: string;
  action: PatchAction;
  from?: string;
  hunks: HunkReport[];
  previous_hash: string | null;
  content_hash: string | null;
  merged?: MergedInfo;
}

/** One file as step 7 found it: its current state, and for a rename whether the destination exists now. */
export interface PatchFileState {
  current: CurrentFile;
  /** A rename's destination, when something is there now (its hash; null for a non-file). */
  renameOnto?: { hash: string | null };
  /** expected_hashes' entry for the file. */
  expected: string | undefined;
}

/**
 * Step 7: every file of the patch read once through its verified parent (a created file's destination too: it must
 * still be absent). A file gone since authorization that the session does not know is NOT_FOUND; a known one is
 * left to step 9 (OCC_MISMATCH deleted).
 */
export async function inspectPatch(
  ctx: ToolContext,
  scope: MutationScope,
  targets: readonly PatchTarget[],
  args: PatchArgs,
): Promise<PatchFileState[]> {
  const states: PatchFileState[] = [];
  for (const t of targets) {
    const current = await scope.current(t.source.real, { wantBytes: true, maxBytes: ctx.config.limits.maxEditBytes });
    const expected = expectedFor(args.expected_hashes, [
      t.key,
      t.file.rawOldPath,
      t.file.rawNewPath,
      t.source.absolute,
      t.source.real,
      path.relative(ctx.policy.roots[0]?.real ?? '/', t.source.real),
    ]);
    if (t.action !== 'created' && !current.exists && !deletionIsConflict(ctx, expected)(t.source.real)) {
      throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: t.source.absolute });
    }
    const state: PatchFileState = { current, expected };
    if (t.action === 'renamed') {
      const dest = await scope.current(t.dest.real, { wantBytes: false, maxBytes: 0 });
      if (dest.exists) state.renameOnto = { hash: dest.hash };
    }
    states.push(state);
  }
  return states;
}

/**
 * Steps 9 and 10 on what `inspectPatch` found, and the transaction that is the effect.
 * @param warnings collects the OCC warnings (--auto-occ=warn)
 * @throws OccMismatchError, ToolError HASH_REQUIRED (all files), PATCH_FAILED, REWRITE_BLOCKED, VALIDATION binary
 */
export async function decidePatch(
  ctx: ToolContext,
  scope: MutationScope,
  targets: readonly PatchTarget[],
  states: readonly PatchFileState[],
  args: PatchArgs,
  warnings: string[],
): Promise<MutationStep<PatchFileResult[]>> {
  const toMerge = checkPatchOcc(ctx, targets, states, args, warnings);
  const changes: PlannedChange[] = [];
  const results: PatchFileResult[] = [];
  for (const [i, t] of targets.entries()) {
    const { current } = states[i];
    const { applied, merged } = await patchFile(ctx, t, current, toMerge.get(i), args);
    const newBytes = t.action === 'deleted' ? null : Buffer.from(applied.text, 'utf8');
    const newHash = newBytes ? hashBytes(newBytes) : null;
    changes.push(...plannedChanges(scope, t, current, newBytes, newHash));
    results.push({
      path: t.dest.real,
      action: t.action,
      ...(t.action === 'renamed' ? { from: t.source.real } : {}),
      hunks: applied.hunks,
      previous_hash: current.hash,
      content_hash: newHash,
      ...(merged ? { merged } : {}),
    });
  }
  const isInside = scope.isInside;
  return {
    result: results,
    done: `changed ${changes.length} file(s)`,
    history: {
      tool: 'apply_patch',
      files: changes.map((c) => historyFileOf(c.real, c.oldBytes, c.oldMode, c.newHash)),
    },
    effect: () => commitTransaction(changes, { stateDir: ctx.config.stateDir, isInside }),
    remember: () => {
      for (const c of changes) {
        if (c.newBytes) ctx.hashes.remember(c.real, c.newHash!, c.newBytes);
        else ctx.hashes.forget(c.real);
      }
    },
  };
}

/**
 * Step 9 for every file, in the patch's order: a known file that is gone, a rename onto or a creation of a file that
 * exists now, a changed file — OCC_MISMATCH, thrown at once; every file needing a hash, one HASH_REQUIRED after.
 * @returns with on_conflict "merge", the modified files whose OCC_MISMATCH is to be merged (by index)
 */
function checkPatchOcc(
  ctx: ToolContext,
  targets: readonly PatchTarget[],
  states: readonly PatchFileState[],
  args: PatchArgs,
  warnings: string[],
): Map<number, OccMismatchError> {
  const onConflict = args.on_conflict ?? ctx.config.onConflict;
  const toMerge = new Map<number, OccMismatchError>();
  const hashRequired: ToolError[] = [];
  for (const [i, t] of targets.entries()) {
    const { current, expected, renameOnto } = states[i];
    const occ = () =>
      checkExpectedHash({
        absolute: t.source.absolute,
        real: t.source.real,
        current: { hash: current.hash, bytes: current.bytes ?? undefined },
        expected,
        autoOcc: ctx.config.autoOcc,
        memory: ctx.hashes,
        field: `expected_hashes["${t.key}"]`,
      });
    if (t.action !== 'created' && !current.exists) {
      occ(); // a known file that is gone: OCC_MISMATCH deleted
      throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: t.source.absolute });
    }
    if (renameOnto) throw existsNow(`The patch renames to ${t.dest.absolute}, which exists now.`, t, renameOnto.hash);
    if (t.action === 'created') {
      if (current.exists) {
        throw existsNow(`The patch creates ${t.dest.absolute}, but it already exists.`, t, current.hash);
      }
      continue;
    }
    try {
      const verdict = occ();
      if (verdict.warning) warnings.push(verdict.warning);
    } catch (error) {
      if (onConflict === 'merge' && t.action === 'modified' && error instanceof OccMismatchError) {
        toMerge.set(i, error);
        continue;
      }
      if (!(error instanceof ToolError) || error.code !== 'HASH_REQUIRED') throw error;
      hashRequired.push(error);
    }
  }
  if (hashRequired.length) throw hashRequiredForAll(hashRequired);
  return toMerge;
}

/** OCC_MISMATCH `created`: the patch expected no file at its destination. */
function existsNow(message: string, t: PatchTarget, currentHash: string | null): OccMismatchError {
  return new OccMismatchError(message, {
    path: t.dest.absolute,
    expectedHash: 'absent',
    currentHash,
    conflict: { reason: 'created' },
  });
}

/**
 * Step 10 for one file: its hunks on the current text — or, for a mismatch to merge, on the version read, merged
 * with the current bytes; a deletion must cover the whole file; a modification or rename passes the rewrite guard.
 * @throws PatchFailedError (with the file and its current hash), REWRITE_BLOCKED, VALIDATION binary, OCC_MISMATCH
 */
async function patchFile(
  ctx: ToolContext,
  t: PatchTarget,
  current: CurrentFile,
  mismatch: OccMismatchError | undefined,
  args: PatchArgs,
): Promise<{ applied: { text: string; hunks: HunkReport[] }; merged?: MergedInfo }> {
  const before = t.action === 'created' ? '' : decode(current, t.source.absolute);
  let applied: { text: string; hunks: HunkReport[] };
  let merged: MergedInfo | undefined;
  try {
    if (mismatch) {
      // The hunks apply to the version read (their lines are that version's); the merge then goes on disk.
      let onBase: HunkReport[] = [];
      const m = await mergeInstead(ctx, mismatch, t.source.real, current.bytes, async (baseText) => {
        const r = await applyHunksSliced(baseText, t.file, t.source.absolute);
        onBase = r.hunks;
        return r.text;
      });
      applied = { text: m.text, hunks: onBase };
      merged = m.merged;
    } else {
      applied = t.file.hunks.length
        ? await applyHunksSliced(before, t.file, t.source.absolute)
        : { text: before, hunks: [] };
    }
  } catch (error) {
    if (error instanceof PatchFailedError) {
      error.details.current_hash = current.hash;
      error.details.file = t.source.absolute;
    }
    throw error;
  }
  if (t.action === 'deleted' && applied.text !== '') {
    throw new PatchFailedError(`The patch deletes ${t.source.absolute}, but its hunks do not cover the whole file.`, {
      path: t.source.absolute,
      details: { reason: 'no_match', current_hash: current.hash, file: t.source.absolute },
      suggestion: 'Regenerate the deletion diff from the current file, or use delete_path.',
    });
  }
  if (t.action === 'modified' || t.action === 'renamed') {
    await assertNotRewriteSliced(
      toEolText(before).view,
      toEolText(applied.text).view,
      args.allow_rewrite,
      t.source.absolute,
    );
  }
  return { applied, ...(merged ? { merged } : {}) };
}

/** A file's text. @throws ToolError VALIDATION binary (a unified diff patches text only) */
function decode(current: CurrentFile, absolute: string): string {
  const bytes = current.bytes ?? Buffer.alloc(0);
  if (!isUtf8(bytes)) {
    throw new ToolError('VALIDATION', `${absolute} is not valid UTF-8 text; a unified diff cannot patch it.`, {
      path: absolute,
      details: { reason: 'binary', current_hash: current.hash },
    });
  }
  return bytes.toString('utf8');
}

/**
 * The transaction's changes for one file: a rename writes the destination and removes the source; otherwise the
 * file is written (or removed) in place. The commit acts in the directories verified inside the lock (a missing parent
 * is created by the commit).
 */
function plannedChanges(
  scope: MutationScope,
  t: PatchTarget,
  current: CurrentFile,
  newBytes: Buffer | null,
  newHash: string | null,
): PlannedChange[] {
  const oldIdentity = current.stats ? identityOf(current.stats) : null;
  const oldMode = current.stats ? current.stats.mode & 0o7777 : null;
  if (t.action !== 'renamed') {
    return [
      {
        real: t.dest.real,
        oldBytes: current.bytes && current.exists ? current.bytes : null,
        oldHash: current.hash,
        oldIdentity,
        oldMode,
        newBytes,
        newHash,
        dir: scope.parent(t.dest.real)?.dir,
      },
    ];
  }
  return [
    {
      real: t.dest.real,
      oldBytes: null,
      oldHash: null,
      oldIdentity: null,
      oldMode: null,
      newBytes,
      newHash,
      dir: scope.parent(t.dest.real)?.dir,
    },
    {
      real: t.source.real,
      oldBytes: current.bytes,
      oldHash: current.hash,
      oldIdentity,
      oldMode,
      newBytes: null,
      newHash: null,
      dir: scope.parent(t.source.real)?.dir,
    },
  ];
}
