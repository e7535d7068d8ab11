/**
 * replace_in_files' decide step, inside the lock (the plan is src/mutation/replace-plan.ts; the order is the
 * pipeline's, src/mutation/pipeline.ts): every candidate read again through its verified parent, OCC checked (step 9:
 * OCC_MISMATCH of any file wins; every file needing a hash is listed in one HASH_REQUIRED), replaced again when it
 * changed since the walk and the check accepted it, and the bound on replacements kept; the effect is one journaled
 * transaction (src/patch/transaction.ts, as a multi-file apply_patch): one budget unit, one undo-history change.
 */
import { isUtf8 } from 'node:buffer';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import { identityOf } from '../fs/atomic-write.js';
import { hashBytes } from '../fs/hash.js';
import { historyFileOf } from '../fs/history.js';
import type { CurrentFile } from '../fs/read-current.js';
import { looksBinary } from '../fs/text.js';
import { commitTransaction, type PlannedChange } from '../patch/transaction.js';
import { boundedUnifiedDiffSliced } from '../patch/window-diff.js';
import { checkExpectedHash } from '../policy/occ.js';
import type { ToolContext } from './context.js';
import { hashRequiredForAll } from './occ-rules.js';
import type { MutationStep } from './pipeline.js';
import type { Candidate, ReplaceArgs, ReplacePlan } from './replace-plan.js';
import type { MutationScope } from './scope.js';

/** Most characters of one file's preview diff; a longer one is left out (diffs_truncated), never cut. */
const MAX_FILE_DIFF_CHARS = 1024 * 1024;

/** What replace_in_files reports for one file (its output schema's `files[]`). */
export interface ReplaceFileResult {
  path: string;
  replacements: number;
  previous_hash: string;
  content_hash: string;
  diff?: string;
}

/** What the decide step reports besides the files. */
export interface ReplaceReport {
  warnings: string[];
  diffsTruncated: boolean;
  /** Takes room in the response for a preview diff (shown twice: structured result and text); false: left out. */
  keepDiff: (diff: string) => boolean;
}

/**
 * Steps 9–10 for every candidate, and the transaction that is the effect (see the module comment).
 * @throws OccMismatchError (a candidate deleted or changed), ToolError HASH_REQUIRED (all files needing one)
 */
export async function decideReplace(
  ctx: ToolContext,
  scope: MutationScope,
  plan: ReplacePlan,
  args: ReplaceArgs,
  report: ReplaceReport,
): Promise<MutationStep<ReplaceFileResult[]>> {
  const changes: PlannedChange[] = [];
  const results: ReplaceFileResult[] = [];
  const hashRequired: ToolError[] = [];
  // The walk fitted the files under max_replacements; one that changed since is replaced again below, so the bound
  // is kept here too: the first file that no longer fits, and every one after it, is left to the next call.
  let plannedCount = 0;
  let full = false;
  for (const c of plan.candidates) {
    const current = await scope.current(c.target.real, {
      wantBytes: true,
      maxBytes: ctx.config.limits.maxSearchFileBytes,
    });
    try {
      checkCandidate(ctx, plan, args, c, current, report.warnings);
    } catch (error) {
      if (!(error instanceof ToolError) || error.code !== 'HASH_REQUIRED') throw error;
      hashRequired.push(error);
      continue;
    }
    const bytes = current.bytes ?? Buffer.alloc(0);
    const now = current.hash === c.oldHash ? c : await replacedAgain(ctx, plan, args, bytes);
    if (now === null) continue;
    if (full || plannedCount + now.count > plan.maxReplacements) {
      full = true;
      plan.truncated = true;
      continue;
    }
    plannedCount += now.count;
    const change = plannedChange(scope, c, current, bytes, now.newText);
    changes.push(change);
    results.push(await fileResult(c, current, change, bytes, now, args, report));
  }
  if (hashRequired.length) throw hashRequiredForAll(hashRequired);
  const isInside = scope.isInside;
  return {
    result: results,
    done: `replaced in ${changes.length} file(s)`,
    effect: changes.length ? () => commitTransaction(changes, { stateDir: ctx.config.stateDir, isInside }) : undefined,
    remember: () => {
      for (const ch of changes) ctx.hashes.remember(ch.real, ch.newHash!, ch.newBytes!);
    },
    history: {
      tool: 'replace_in_files',
      files: changes.map((ch) => historyFileOf(ch.real, ch.oldBytes, ch.oldMode, ch.newHash)),
    },
  };
}

/**
 * Step 9 for one candidate: deleted since the walk is OCC_MISMATCH `deleted`; then the OCC check — a preview needs no
 * hash (it is how the caller gets them), an explicit one is still checked.
 * @throws OccMismatchError, ToolError HASH_REQUIRED
 */
function checkCandidate(
  ctx: ToolContext,
  plan: ReplacePlan,
  args: ReplaceArgs,
  c: Candidate,
  current: CurrentFile,
  warnings: string[],
): void {
  const explicit = plan.expectedFor(c.relative, c.target.real);
  if (!current.exists) {
    throw new OccMismatchError(`${c.target.absolute} was deleted while the replacement ran; nothing was written.`, {
      path: c.target.absolute,
      expectedHash: explicit ?? c.oldHash,
      currentHash: null,
      conflict: { reason: 'deleted' },
    });
  }
  if (args.dry_run && explicit === undefined) return;
  const verdict = checkExpectedHash({
    absolute: c.target.absolute,
    real: c.target.real,
    current: { hash: current.hash, bytes: current.bytes ?? undefined },
    expected: explicit,
    autoOcc: ctx.config.autoOcc,
    memory: ctx.hashes,
    field: `expected_hashes["${c.relative}"]`,
  });
  if (verdict.warning) warnings.push(verdict.warning);
}

/**
 * A file changed between the walk and the lock that the OCC check accepted: the replacement in its current bytes, or
 * null when it is now skipped (binary, too large a result, too many matches — counted as the walk counts them) or no
 * longer matches.
 */
async function replacedAgain(
  ctx: ToolContext,
  plan: ReplacePlan,
  args: ReplaceArgs,
  bytes: Buffer,
): Promise<{ newText: string; count: number } | null> {
  if (looksBinary(bytes, true) || !isUtf8(bytes)) {
    plan.skipped.binary++; // as the walk counts it
    return null;
  }
  const again = await plan.matcher.replace(
    bytes.toString('utf8'),
    args.replacement,
    ctx.config.limits.maxSearchFileBytes,
    plan.maxReplacements,
  );
  if (again.tooLarge) plan.skipped.too_large++;
  else if (again.tooMany) plan.skipped.too_many_matches++;
  if (again.count === 0 || again.tooLarge || again.tooMany) return null;
  return { newText: again.text, count: again.count };
}

/** The transaction's change for one file, in the directory verified inside the lock. */
function plannedChange(
  scope: MutationScope,
  c: Candidate,
  current: CurrentFile,
  bytes: Buffer,
  newText: string,
): PlannedChange {
  const newBytes = Buffer.from(newText, 'utf8');
  return {
    real: c.target.real,
    oldBytes: bytes,
    oldHash: current.hash,
    oldIdentity: current.stats ? identityOf(current.stats) : null,
    oldMode: current.stats ? current.stats.mode & 0o7777 : null,
    newBytes,
    newHash: hashBytes(newBytes),
    dir: scope.parent(c.target.real)?.dir,
  };
}

/** One file's result; a dry run adds its preview diff while the response has room (else diffs_truncated). */
async function fileResult(
  c: Candidate,
  current: CurrentFile,
  change: PlannedChange,
  bytes: Buffer,
  now: { newText: string; count: number },
  args: ReplaceArgs,
  report: ReplaceReport,
): Promise<ReplaceFileResult> {
  const result: ReplaceFileResult = {
    path: c.relative,
    replacements: now.count,
    previous_hash: current.hash!,
    content_hash: change.newHash!,
  };
  if (args.dry_run) {
    const diff = report.diffsTruncated ? null : await diffOf(c.relative, bytes.toString('utf8'), now.newText);
    if (diff !== null && report.keepDiff(diff)) result.diff = diff;
    else report.diffsTruncated = true;
  }
  return result;
}

/** The preview diff of one file, in bounded time (src/patch/window-diff.ts), or null when it is too long to show. */
async function diffOf(relative: string, before: string, after: string): Promise<string | null> {
  const d = await boundedUnifiedDiffSliced(`a/${relative}`, `b/${relative}`, before, after, 3, MAX_FILE_DIFF_CHARS);
  if (d.truncated) return null;
  return d.text.replace(/^Index:.*\n/, '').replace(/^=+\n/, '');
}
