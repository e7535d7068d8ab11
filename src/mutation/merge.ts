/**
 * on_conflict "merge": the caller's change on the version it read, merged with what is on disk now.
 */
import { isUtf8 } from 'node:buffer';
import { OccMismatchError, PatchFailedError } from '../errors/tool-error.js';
import { merge3Sliced } from '../patch/merge3.js';
import { MERGE_NOTES, mergeBaseFor, overlappingConflict, withMergeNote } from '../policy/occ.js';
import type { ToolContext } from './context.js';

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
  const r = await merge3Sliced(baseText, Buffer.from(currentBytes).toString('utf8'), oursText);
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
