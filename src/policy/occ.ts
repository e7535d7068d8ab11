/**
 * Optimistic concurrency (docs/errors.md "Optimistic concurrency" step 9). Owns:
 *  - the session's remembered hashes: every read and write records the hash of what is now on disk, keyed by
 *    resolved path (and, for files up to 256 KiB, a snapshot of the bytes, so a conflict can name the changed lines);
 *  - the expected-hash decision for a mutation: OCC_MISMATCH, HASH_REQUIRED, or proceed (with a warning under
 *    --auto-occ=warn);
 *  - whether an OCC_MISMATCH may be merged instead (on_conflict "merge", docs/tools.md "Merging instead of refusing"):
 *    only a modification, only from a read version whose bytes are still held.
 *
 * Memory: a snapshot is kept only for a file of at most SNAPSHOT_MAX_BYTES (256 KiB), and all snapshots together hold
 * at most SNAPSHOT_TOTAL_BYTES (32 MiB; the least recently used go first). Hashes alone are kept for every file.
 */
import { OccMismatchError, ToolError, type OccConflict } from '../errors/tool-error.js';
import { diffLineHunks, splitLines, type MergeConflictRegion } from '../patch/merge3.js';

/** Largest file whose bytes a read or write keeps (for changed_ranges and merging), in bytes. */
export const SNAPSHOT_MAX_BYTES = 256 * 1024;
/** Most bytes all kept snapshots of one session hold together. */
export const SNAPSHOT_TOTAL_BYTES = 32 * 1024 * 1024;

/** The literal expected_hash meaning "the file must not exist" (docs/errors.md "Optimistic concurrency"). */
export const ABSENT = 'absent';

/** The session's memory of content hashes, keyed by resolved absolute path. One per process. */
export class HashMemory {
  private readonly hashes = new Map<string, string>();
  private readonly snapshots = new Map<string, { hash: string; bytes: Buffer }>();
  private snapshotBytes = 0;

  /** Records the hash of what is on disk at `real` now; `bytes` (small files) enables changed_ranges later. */
  remember(real: string, hash: string, bytes?: Uint8Array): void {
    this.hashes.set(real, hash);
    const old = this.snapshots.get(real);
    // The same content read again (an agent re-reads files): the snapshot already holds these bytes (equal
    // content hashes), so it stays as it is, without a copy; it only becomes the most recently used.
    if (old && bytes && old.hash === hash && old.bytes.length === bytes.length) {
      this.snapshots.delete(real);
      this.snapshots.set(real, old);
      return;
    }
    if (old) {
      this.snapshots.delete(real);
      this.snapshotBytes -= old.bytes.length;
    }
    if (bytes && bytes.length <= SNAPSHOT_MAX_BYTES) {
      this.snapshots.set(real, { hash, bytes: Buffer.from(bytes) });
      this.snapshotBytes += bytes.length;
      for (const [key, snap] of this.snapshots) {
        if (this.snapshotBytes <= SNAPSHOT_TOTAL_BYTES) break;
        this.snapshots.delete(key);
        this.snapshotBytes -= snap.bytes.length;
      }
    }
  }

  /** Forgets a path (after delete or move). */
  forget(real: string): void {
    this.hashes.delete(real);
    const old = this.snapshots.get(real);
    if (old) {
      this.snapshots.delete(real);
      this.snapshotBytes -= old.bytes.length;
    }
  }

  /** Forgets every path at or beneath a directory (after a recursive delete or a directory move). */
  forgetUnder(dir: string): void {
    for (const key of [...this.hashes.keys()]) {
      if (
        key === dir ||
        key.startsWith(dir.endsWith('/') || dir.endsWith('\\') ? dir : `${dir}/`) ||
        key.startsWith(`${dir}\\`)
      )
        this.forget(key);
    }
  }

  /** The remembered hash, or undefined when this session never read or wrote the file. */
  recall(real: string): string | undefined {
    return this.hashes.get(real);
  }

  /** The remembered bytes for exactly this hash, if kept. */
  snapshot(real: string, hash: string): Buffer | undefined {
    const snap = this.snapshots.get(real);
    return snap && snap.hash === hash ? snap.bytes : undefined;
  }

  /** Number of remembered files. */
  get size(): number {
    return this.hashes.size;
  }
}

/** The file as it is now, read inside the path lock. */
export interface CurrentState {
  /** Hash of the current bytes, or null when the file does not exist. */
  hash: string | null;
  /** Current bytes when read (for changed_ranges). */
  bytes?: Uint8Array;
}

/** Inputs of `checkExpectedHash`. */
export interface OccCheck {
  /** Absolute path for messages and the envelope. */
  absolute: string;
  /** Resolved path (key of the remembered hashes). */
  real: string;
  current: CurrentState;
  /** expected_hash as sent: a content hash, "absent", or undefined. */
  expected: string | undefined;
  autoOcc: 'off' | 'warn' | 'block';
  memory: HashMemory;
  /** The parameter name to cite in messages (expected_hash, expected_hashes[...]). */
  field?: string;
}

/** What the check decided when it did not throw. */
export interface OccVerdict {
  /** The hash the mutation was checked against (null: none). */
  checkedAgainst: string | null;
  /** --auto-occ=warn only: the file changed since this session saw it, or was never seen. */
  externalChange: boolean;
  warning?: string;
}

/**
 * Decides whether a mutation of an existing (or absent) file may proceed (docs/errors.md "Optimistic concurrency").
 * Explicit expected_hash always binds. Without it, an existing file uses the session's remembered hash under
 * block/warn; block refuses when there is none (HASH_REQUIRED), warn proceeds and flags external_change. Under
 * block/warn, an absent file this session read or wrote is OCC_MISMATCH `deleted`.
 * @throws OccMismatchError OCC_MISMATCH; ToolError HASH_REQUIRED
 */
export function checkExpectedHash(c: OccCheck): OccVerdict {
  const field = c.field ?? 'expected_hash';
  const current = c.current.hash;
  if (c.expected !== undefined) {
    if (c.expected === ABSENT) {
      if (current === null) return { checkedAgainst: null, externalChange: false };
      throw new OccMismatchError(`${c.absolute} exists, but ${field} was "absent".`, {
        path: c.absolute,
        expectedHash: ABSENT,
        currentHash: current,
        conflict: { reason: 'created', ...(c.current.bytes ? { bytes_delta: c.current.bytes.length } : {}) },
      });
    }
    if (current === c.expected) return { checkedAgainst: c.expected, externalChange: false };
    throw mismatch(c, c.expected);
  }
  if (c.autoOcc === 'off') return { checkedAgainst: null, externalChange: false };
  const remembered = c.memory.recall(c.real);
  // Deletion is a conflict, not a missing path, when this session read or wrote the file (docs/errors.md "Order of checks" step 7):
  // re-creating it silently would undo someone's deletion. Re-creating deliberately takes expected_hash "absent".
  if (current === null && remembered !== undefined) throw mismatch(c, remembered);
  if (current === null) return { checkedAgainst: null, externalChange: false };
  if (remembered === undefined) {
    if (c.autoOcc === 'warn') {
      return {
        checkedAgainst: null,
        externalChange: true,
        warning: `${c.absolute} was not read in this session; it was changed without a hash check.`,
      };
    }
    // The parameter the tool takes: expected_hash, or expected_hashes (a map: apply_patch, replace_in_files).
    const parameter = field.replace(/\[.*$/, '');
    throw new ToolError('HASH_REQUIRED', `${c.absolute} exists and this session has not read it; pass ${parameter}.`, {
      path: c.absolute,
      details: { current_hash: current, field: parameter },
      suggestion:
        parameter === field
          ? `Read the file first, or pass ${field} "${current}" if you know its content.`
          : `Read the file first, or pass ${parameter} with this file's entry (${field}: "${current}") if you know its content.`,
    });
  }
  if (remembered === current) return { checkedAgainst: remembered, externalChange: false };
  if (c.autoOcc === 'warn') {
    return {
      checkedAgainst: remembered,
      externalChange: true,
      warning: `${c.absolute} changed since this session read it; the change was applied over the newer content.`,
    };
  }
  throw mismatch(c, remembered);
}

function mismatch(c: OccCheck, expected: string): OccMismatchError {
  const current = c.current.hash;
  let pastMergeBound = false;
  let conflict: OccConflict;
  if (current === null) {
    conflict = { reason: 'deleted' };
  } else {
    conflict = { reason: 'modified' };
    const before = c.memory.snapshot(c.real, expected);
    if (before && c.current.bytes) {
      conflict.bytes_delta = c.current.bytes.length - before.length;
      const exact = { value: true };
      const ranges = changedRanges(before.toString('utf8'), Buffer.from(c.current.bytes).toString('utf8'), exact);
      if (ranges.length) conflict.changed_ranges = ranges;
      if (!exact.value) pastMergeBound = true;
    }
  }
  const error = new OccMismatchError(
    current === null
      ? `${c.absolute} was deleted since the expected version.`
      : `${c.absolute} changed since the expected version (${expected.slice(0, 19)}…).`,
    {
      path: c.absolute,
      expectedHash: expected,
      currentHash: current,
      conflict,
    },
  );
  // The other change is already past the line diff's bound: a merge would diff it again to the same end.
  if (pastMergeBound) tooLargeToMerge.add(error);
  return error;
}

/**
 * 1-based inclusive line ranges of `after` that differ from `before` (a pure deletion marks the line after it).
 * Bounded work (docs/tools.md "Merging instead of refusing"): past the line diff's bound (300 changed lines) the answer
 * is the one range from the first to the last differing line of `after`, and `exact.value` is set false.
 */
export function changedRanges(
  before: string,
  after: string,
  exact: { value: boolean } = { value: true },
): Array<[number, number]> {
  const hunks = diffLineHunks(before, after);
  const out: Array<[number, number]> = [];
  exact.value = hunks !== null;
  if (hunks === null) {
    const a = splitLines(before);
    const b = splitLines(after);
    let pre = 0;
    while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
    let suf = 0;
    while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
    return [[pre + 1, Math.max(pre + 1, b.length - suf)]];
  }
  for (const h of hunks) out.push([h.xStart + 1, h.xStart + Math.max(h.xLength, 1)]);
  // merge overlapping/adjacent ranges
  const merged: Array<[number, number]> = [];
  for (const r of out) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  return merged;
}

/** Why on_conflict "merge" did not merge (conflict.note of an OCC_MISMATCH `modified`). Fixed sentences, no content. */
export const MERGE_NOTES = {
  notHeld:
    'on_conflict "merge" needs the version you read; this session no longer holds its bytes ' +
    '(kept for files up to 256 KiB, 32 MiB in all). Read the file again.',
  notText: 'on_conflict "merge" merges UTF-8 text only.',
  notApplicable: 'on_conflict "merge": your change does not apply to the version you read.',
  tooLarge: 'on_conflict "merge": the changes are too large to merge within the work bound (300 changed lines a side).',
  notModified: 'on_conflict "merge" merges changes to an existing file only.',
} as const;

/**
 * Mismatches whose other change the OCC check already found past the merge's line-diff bound. Not process state
 * (test/architecture.test.ts allow list): a side table of each error, gone with it.
 */
const tooLargeToMerge = new WeakSet<OccMismatchError>();

/** Adds a note to a mismatch's conflict and returns it (to be thrown). */
export function withMergeNote(mismatch: OccMismatchError, note: string): OccMismatchError {
  mismatch.conflict.note = note;
  return mismatch;
}

/**
 * The read version an on_conflict "merge" starts from (docs/tools.md "Merging instead of refusing"): the bytes this
 * session holds for the mismatch's expected hash. Only a modification is merged: a deleted file is never merged into
 * existence, and "absent" keeps its meaning.
 * @returns the read version's bytes
 * @throws OccMismatchError the mismatch itself (deleted, created), or with conflict.note `notHeld`, or `tooLarge`
 *   when the check that made the mismatch found the other change past the line diff's bound
 */
export function mergeBaseFor(mismatch: OccMismatchError, real: string, memory: HashMemory): Buffer {
  if (mismatch.conflict.reason !== 'modified') throw mismatch;
  const base = memory.snapshot(real, mismatch.expectedHash);
  if (!base) throw withMergeNote(mismatch, MERGE_NOTES.notHeld);
  if (tooLargeToMerge.has(mismatch)) throw withMergeNote(mismatch, MERGE_NOTES.tooLarge);
  return base;
}

/**
 * The OCC_MISMATCH of a merge that found overlapping or touching changes: `conflict.reason: "overlapping"`, the
 * regions (base, theirs, ours), and what the `modified` conflict said (changed_ranges, bytes_delta).
 */
export function overlappingConflict(mismatch: OccMismatchError, regions: MergeConflictRegion[]): OccMismatchError {
  const { changed_ranges, bytes_delta } = mismatch.conflict;
  return new OccMismatchError(
    `${mismatch.path || 'The file'} changed since the version you read, and those changes overlap or touch yours.`,
    {
      path: mismatch.path ?? '',
      expectedHash: mismatch.expectedHash,
      currentHash: mismatch.currentHash,
      conflict: {
        reason: 'overlapping',
        ...(changed_ranges ? { changed_ranges } : {}),
        ...(bytes_delta !== undefined ? { bytes_delta } : {}),
        overlapping: regions,
      },
      suggestion: 'Read the file again and redo your change on the current content.',
    },
  );
}
