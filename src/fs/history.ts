/**
 * The undo history ("Undo"): every change the server made to files through the one mutation pipeline
 * (src/mutation/pipeline.ts `runMutation`), one JSON file per change under `<state-dir>/history/`, so it survives
 * a restart. The state directory is never reachable by the file tools (src/policy/builtin-guards.ts), but a state
 * directory configured inside a root was once writable, so every record is validated strictly (zod, old bytes against
 * their hash, id against the file name) and an invalid record is skipped and counted, never trusted.
 *
 * Bounded by count and bytes (`--history-max-changes`, `--history-max-bytes`): the oldest records are dropped first,
 * after the call's answer, and the number dropped is kept in `meta.json` for the listing's note
 * (src/fs/history-prune.ts).
 */
import { randomUUID } from 'node:crypto';
import { renameSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { syncDirectory } from './atomic-write.js';
import { ContentHashSchema, hashBytes, savedVersionChecked } from './hash.js';
import { ID_PATTERN, MAX_RECORD_BYTES, readRecord, unlinkQuietly, writeTemporary } from './history-files.js';
import { historySettled, readMeta, recordSkippedIn, schedulePrune, type HistoryLimits } from './history-prune.js';
import { isCanonicalPosix } from './path-within.js';
import { loopSlicer, type SnapshotEntry } from './tree-ops.js';
import { processSlot } from '../process-slots.js';

/** One file of a recorded change: its state before (bytes or absence, mode) and the hash the change left. */
export interface HistoryFile {
  /** Absolute real path. */
  path: string;
  /** Bytes before the change, base64; null when the file did not exist. */
  old_base64: string | null;
  old_hash: string | null;
  /** Permission bits before the change (null: absent). */
  old_mode: number | null;
  /** Hash the change left; null when it deleted the file (or left a directory or link: see new_kind). */
  new_hash: string | null;
  /**
   * What was there before when it was not a file or nothing (undo gaps): a directory (old_mode its
   * permission bits) or a symbolic link to `old_target`. Absent: a file (old_base64) or nothing.
   */
  old_kind?: 'directory' | 'symlink';
  old_target?: string;
  /** What the change left when it is a directory or a symbolic link to `new_target`. Absent: new_hash decides. */
  new_kind?: 'directory' | 'symlink';
  new_target?: string;
}

/** One recorded change (a multi-file patch is one). */
export interface HistoryChange {
  /** Sortable id: 15-digit milliseconds, '-', 12 hex characters. */
  id: string;
  tool: string;
  created_at: string;
  /** The change this one reverted, when it is a revert. */
  reverts?: string[];
  files: HistoryFile[];
}

export type { HistoryLimits } from './history-prune.js';
export { STALE_STAGED_MS } from './history-prune.js';

export const DEFAULT_HISTORY_LIMITS: HistoryLimits = { maxChanges: 200, maxBytes: 64 * 1024 * 1024 };

const HashSchema = ContentHashSchema;
const PathSchema = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => path.isAbsolute(p) && !p.includes('\0') && path.normalize(p) === p, 'an absolute, normalized path');

/** A recorded symbolic link's target (replayed by a revert only inside the roots, like any link target). */
const LinkTargetSchema = z
  .string()
  .min(1)
  .max(4096)
  .refine((t) => !t.includes('\0'), 'no NUL');

/** A record as read back from disk (hostile until parsed). */
const ChangeSchema = z.strictObject({
  id: z.string().regex(ID_PATTERN),
  tool: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z_]+$/),
  created_at: z.iso.datetime(),
  reverts: z.array(z.string().regex(ID_PATTERN)).max(10_000).optional(),
  files: z
    .array(
      savedVersionChecked(
        z.strictObject({
          path: PathSchema,
          old_base64: z.base64().nullable(),
          old_hash: HashSchema.nullable(),
          old_mode: z.number().int().min(0).max(0o777).nullable(),
          new_hash: HashSchema.nullable(),
          old_kind: z.enum(['directory', 'symlink']).optional(),
          old_target: LinkTargetSchema.optional(),
          new_kind: z.enum(['directory', 'symlink']).optional(),
          new_target: LinkTargetSchema.optional(),
        }),
      ).refine(
        (f) =>
          (f.old_kind === undefined || (f.old_base64 === null && f.old_hash === null)) &&
          (f.new_kind === undefined || f.new_hash === null) &&
          (f.old_kind === 'symlink') === (f.old_target !== undefined) &&
          (f.new_kind === 'symlink') === (f.new_target !== undefined),
        'a directory or link entry carries no bytes; a link entry carries its target',
      ),
    )
    .min(1)
    // A tree operation is one change: a recursive delete of up to 100 000 entries, or a directory move
    // (each entry at its old and its new path). The byte bound (--history-max-bytes) usually stops far earlier.
    .max(250_000),
});

/** What `loadHistory` found. */
export interface HistoryListing {
  /** Valid changes, oldest first. */
  changes: HistoryChange[];
  /** Records skipped as invalid (not JSON, wrong shape, bytes not matching their hash …). */
  invalid: number;
  /** Changes dropped so far to keep the bounds, and the newest dropped id. */
  dropped: number;
  lastDroppedId: string | null;
  /** Changes not recorded because one record alone exceeded --history-max-bytes. */
  skipped: number;
}

function historyDir(stateDir: string): string {
  return path.join(stateDir, 'history');
}

/** The milliseconds of the last id this process gave (src/process-slots.ts). */
const historyState = processSlot('fs/history', () => ({ lastIdMs: 0 }));

function newId(): string {
  // Milliseconds keep the order across processes; a random tail keeps ids unique. Within this process the millisecond
  // part strictly increases, so two changes recorded in the same millisecond keep their order (ids sort by it).
  historyState.lastIdMs = Math.max(Date.now(), historyState.lastIdMs + 1);
  return `${String(historyState.lastIdMs).padStart(15, '0')}-${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

/**
 * Every valid change, oldest first; invalid records are counted and left alone.
 * @param maxRecordBytes a record file larger than this is invalid and never read (callers pass --history-max-bytes:
 *   `recordChange` never writes a bigger one, so a bigger file was forged or edited; reading it whole on every
 *   list_changes / revert_changes would hold it in memory). Default 512 MiB.
 * @throws nothing for a missing directory (empty history); Node errno errors otherwise
 */
export async function loadHistory(stateDir: string, maxRecordBytes = MAX_RECORD_BYTES): Promise<HistoryListing> {
  const dir = historyDir(stateDir);
  await historySettled(dir); // this process's prunes and meta.json updates first
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { changes: [], invalid: 0, dropped: 0, lastDroppedId: null, skipped: 0 };
    throw error;
  }
  const changes: HistoryChange[] = [];
  let invalid = 0;
  for (const name of names.filter((n) => n.endsWith('.json') && n !== 'meta.json').sort()) {
    try {
      const parsed = ChangeSchema.safeParse(await readRecord(path.join(dir, name), maxRecordBytes));
      if (!parsed.success || `${parsed.data.id}.json` !== name) {
        invalid++;
        continue;
      }
      changes.push(parsed.data);
    } catch {
      invalid++;
    }
  }
  const meta = await readMeta(dir);
  return { changes, invalid, dropped: meta.dropped, lastDroppedId: meta.last_dropped_id, skipped: meta.skipped ?? 0 };
}

/**
 * Records one change durably, then drops the oldest changes beyond the bounds. A change whose record alone exceeds
 * `maxBytes` is not recorded (counted as skipped in the listing): it could never be kept within the bound.
 * @returns the new change's id, or null when it was skipped
 * @throws Node errno errors (the caller logs them: the change itself already happened)
 */
export async function recordChange(
  stateDir: string,
  limits: HistoryLimits,
  change: Omit<HistoryChange, 'id' | 'created_at'>,
): Promise<string | null> {
  const id = await (await stageChange(stateDir, limits, change)).commit();
  await historySettled(historyDir(stateDir));
  return id;
}

/** A change whose record is written (to its temporary) but not yet part of the history (`stageChange`). */
export interface StagedChange {
  /**
   * Renames the record into place and fsyncs the directory, right before the change itself becomes visible
   * (src/mutation/pipeline.ts; docs/security.md "The undo record of a killed write"). Once; later calls do nothing.
   * @throws Node errno errors (the temporary is removed)
   */
  publish(): Promise<void>;
  /**
   * Makes the record part of the history: published (when `publish` was not called); the bounds are applied after
   * (src/fs/history-prune.ts `schedulePrune`: queued, not awaited). A change too large to record is counted as skipped
   * instead. @returns its id, or null when skipped
   * @throws Node errno errors
   */
  commit(): Promise<string | null>;
  /** Drops the record (its change did not happen): its temporary, or the record once published. Never throws. */
  discard(): void;
}

/**
 * The first half of `recordChange`: the change's id is taken (ids keep the order of staging) and its record written
 * and fsynced under a temporary name that no listing reads, so the pipeline can write it while the change itself is
 * being made and commit it once that succeeded (src/mutation/pipeline.ts): the two writes and their fsyncs overlap
 * instead of following each other. A crash in between leaves only a `.tmp` file, which no listing reads.
 * @throws Node errno errors (nothing staged)
 */
export async function stageChange(
  stateDir: string,
  limits: HistoryLimits,
  change: Omit<HistoryChange, 'id' | 'created_at'>,
): Promise<StagedChange> {
  const dir = historyDir(stateDir);
  const full: HistoryChange = { id: newId(), created_at: new Date().toISOString(), ...change };
  const bytes = await serializeChange(full, limits.maxBytes);
  if (bytes === null) {
    return {
      publish: () => Promise.resolve(),
      commit: async () => {
        await recordSkipped(stateDir);
        return null;
      },
      discard: () => undefined,
    };
  }
  const file = path.join(dir, `${full.id}.json`);
  const tmp = await writeTemporary(file, bytes);
  let settled = false;
  let published: Promise<void> | null = null;
  const publish = (): Promise<void> =>
    (published ??= (async () => {
      try {
        renameSync(tmp, file);
      } catch (error) {
        unlinkQuietly(tmp);
        throw error;
      }
      await syncDirectory(dir);
    })());
  return {
    publish,
    commit: async () => {
      if (settled) throw new Error('history: a staged change is committed or discarded once');
      settled = true;
      await publish();
      void schedulePrune(dir, limits, { name: `${full.id}.json`, size: bytes.length });
      return full.id;
    },
    discard: () => {
      if (settled) return;
      settled = true;
      // Published or not: the record's name and its temporary are both this change's own (fresh, random) names.
      unlinkQuietly(tmp);
      if (published) unlinkQuietly(file);
    },
  };
}

/** Below this many characters of base64 an entry is serialized whole (splicing it in is not worth it). */
const SPLICE_BASE64_CHARS = 4096;
/** Stands for `old_base64` while an entry is serialized: NUL is in no path or link target, so its JSON is unique. */
const BASE64_MARK = '\0';
const BASE64_MARK_JSON = JSON.stringify(BASE64_MARK);

/**
 * The JSON of `change` as UTF-8 bytes (the text of JSON.stringify, `files` last), or null once it would exceed
 * `maxBytes`. Built one file entry at a time in slices of the event loop (src/fs/tree-ops.ts `loopSlicer`), and given
 * up as soon as it is too large: a record of a deep or large tree runs to megabytes (a 2,000-level move: 16 MB of
 * paths), and serializing it in one piece held the server for a quarter of a second and more (docs/security.md
 * "Bounded work"). An entry's old bytes (base64: ASCII that JSON never escapes) are copied into the record as they
 * are, not scanned again by JSON.stringify and re-encoded as UTF-8 (for a 1 MiB file that was most of the record's
 * cost).
 */
async function serializeChange(change: HistoryChange, maxBytes: number): Promise<Buffer | null> {
  const { files, ...rest } = change;
  const head = JSON.stringify(rest);
  // Each part is JSON text (UTF-8) or, spliced between two of them, an entry's base64 (ASCII, written as latin1).
  const parts: Array<{ text: string; ascii: boolean }> = [{ text: `${head.slice(0, -1)},"files":[`, ascii: false }];
  let bytes = Buffer.byteLength(parts[0].text) + 2;
  const add = (text: string, ascii: boolean): boolean => {
    bytes += ascii ? text.length : Buffer.byteLength(text);
    parts.push({ text, ascii });
    return bytes <= maxBytes;
  };
  const slice = loopSlicer();
  for (let i = 0; i < files.length; i++) {
    const f = files[i];
    const comma = i === 0 ? '' : ',';
    if (f.old_base64 !== null && f.old_base64.length >= SPLICE_BASE64_CHARS) {
      // The same key order as JSON.stringify(f): replacing the value keeps its key's place.
      const json = JSON.stringify({ ...f, old_base64: BASE64_MARK });
      const at = json.indexOf(BASE64_MARK_JSON);
      const fits =
        add(`${comma}${json.slice(0, at)}"`, false) &&
        add(f.old_base64, true) &&
        add(`"${json.slice(at + BASE64_MARK_JSON.length)}`, false);
      if (!fits) return null;
    } else if (!add(`${comma}${JSON.stringify(f)}`, false)) return null;
    const due = slice();
    if (due) await due;
  }
  parts.push({ text: ']}', ascii: false });
  const out = Buffer.allocUnsafe(bytes);
  let at = 0;
  for (const p of parts) at += out.write(p.text, at, p.ascii ? 'latin1' : 'utf8');
  return out;
}

/**
 * Counts a change that was not recorded because its record would exceed --history-max-bytes (a tree operation
 * found too large while recording it); the listing's note says so.
 * @throws Node errno errors (the caller logs them)
 */
export async function recordSkipped(stateDir: string): Promise<void> {
  await recordSkippedIn(historyDir(stateDir));
}

/**
 * A history file entry from a planned change (bytes before, mode, new hash).
 * @param oldHash the hash of `oldBytes` when the caller already has it (read with them, src/fs/read-current.ts), so
 *   1 MiB is not hashed a second time; it must be the hash of exactly these bytes (a record whose bytes do not match
 *   its hash is invalid when read back)
 */
export function historyFileOf(
  real: string,
  oldBytes: Buffer | null,
  oldMode: number | null,
  newHash: string | null,
  oldHash?: string | null,
): HistoryFile {
  return {
    path: real,
    old_base64: oldBytes ? oldBytes.toString('base64') : null,
    old_hash: oldBytes ? (oldHash ?? hashBytes(oldBytes)) : null,
    old_mode: oldBytes && oldMode !== null ? oldMode & 0o777 : null,
    new_hash: newHash,
  };
}

/** The state of a path for the history: a file (bytes), a directory, a symbolic link, or nothing. */
export type PathState =
  | { kind: 'file'; bytes: Buffer; mode: number }
  | { kind: 'directory'; mode: number }
  | { kind: 'symlink'; target: string }
  | { kind: 'absent' };

/**
 * A history entry from the states before and after a change of `real` (directories and links included: move_path,
 * copy_path, delete_path, create_directory). `after` of a file needs only its hash.
 */
export function historyEntryOf(
  real: string,
  before: PathState,
  after:
    { kind: 'file'; hash: string } | { kind: 'directory' } | { kind: 'symlink'; target: string } | { kind: 'absent' },
): HistoryFile {
  const entry: HistoryFile = historyFileOf(
    real,
    before.kind === 'file' ? before.bytes : null,
    before.kind === 'file' || before.kind === 'directory' ? before.mode : null,
    after.kind === 'file' ? after.hash : null,
  );
  if (before.kind === 'directory') {
    entry.old_kind = 'directory';
    entry.old_mode = before.mode & 0o777;
  } else if (before.kind === 'symlink') {
    entry.old_kind = 'symlink';
    entry.old_target = before.target;
  }
  if (after.kind === 'directory') entry.new_kind = 'directory';
  else if (after.kind === 'symlink') {
    entry.new_kind = 'symlink';
    entry.new_target = after.target;
  }
  return entry;
}

/**
 * The history entries of a whole tree at `realTop` (a tree operation is one change), from its snapshot
 * (src/fs/tree-ops.ts `snapshotTree`, pre-order): `removed` — the tree went from what the snapshot holds to nothing
 * (a recursive delete, the old place of a directory move; file bytes are required); `created` — from nothing to what
 * the snapshot holds (a recursive copy, the new place of a move). The top directory comes first, with `topMode`.
 * @throws Error when a removed file's bytes were not loaded (a programming error: snapshot with wantBytes)
 */
export function historyEntriesOfTree(
  realTop: string,
  topMode: number,
  entries: readonly SnapshotEntry[],
  side: 'removed' | 'created',
): HistoryFile[] {
  const plain = path.sep === '/' && isCanonicalPosix(realTop);
  const prefix = realTop === '/' ? '/' : `${realTop}/`;
  const all: Array<{ real: string; state: SnapshotEntry['state'] }> = [
    { real: realTop, state: { kind: 'directory', mode: topMode & 0o777 } },
    // One concatenation per entry (its relative path is `/`-separated entry names as the walk read them from the
    // directories: src/fs/tree-ops.ts): splitting it into components, path.join's normalizing or even re-scanning it
    // cost O(depth) per entry, O(depth²) for a deep tree. A top that is not canonical goes through path.join.
    ...entries.map((e) => ({
      real: plain ? `${prefix}${e.relative}` : path.join(realTop, e.relative),
      state: e.state,
    })),
  ];
  return all.map(({ real, state }) => {
    if (side === 'created') {
      return historyEntryOf(
        real,
        { kind: 'absent' },
        state.kind === 'file' ? { kind: 'file', hash: state.hash } : state,
      );
    }
    if (state.kind === 'file') {
      if (!state.bytes) throw new Error('a removed file is recorded with its bytes');
      return historyEntryOf(real, { kind: 'file', bytes: state.bytes, mode: state.mode }, { kind: 'absent' });
    }
    return historyEntryOf(real, state, { kind: 'absent' });
  });
}
