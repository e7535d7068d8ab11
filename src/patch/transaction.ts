/**
 * Multi-file changes as one transaction (docs/tools.md). Everything is authorized, hashed and computed before this
 * runs; here: journal the old bytes durably → commit the files one by one, each re-checked against its snapshot just
 * before its rename → on a failure part-way, replay the journal in reverse (ROLLBACK_COMPLETE / PARTIAL / FAILED),
 * never overwriting a file someone else changed after our write (`left_alone`) → remove the journal entry. At
 * start-up, `recoverJournals` rolls back what a dead process left unfinished, the same way.
 */
import { toEnvelope } from '../errors/to-envelope.js';
import { OccMismatchError, RollbackError, ToolError, type RollbackFile } from '../errors/tool-error.js';
import { makeParentDirectories, temporaryPrefix, writeFileAtomicIn } from '../fs/atomic-write.js';
import { removeEntry } from '../fs/tree-ops.js';
import {
  changedError,
  identityOf,
  sameVersion,
  withVerifiedDir,
  type FileIdentity,
  type VerifiedDir,
} from '../fs/verified-dir.js';
import { hashBytes } from '../fs/hash.js';
import { readJournals, removeJournal, writeJournal, type JournalEntry, type JournalFile } from '../fs/journal.js';
import { ownerState } from '../fs/process-identity.js';
import { withPathLock } from '../fs/path-lock.js';
import { readCurrentIn } from '../fs/read-current.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import path from 'node:path';
import { processSlot } from '../process-slots.js';

/** One planned file change, fully computed. */
export interface PlannedChange {
  real: AllowedPath;
  /** Old bytes, or null when the file does not exist yet. */
  oldBytes: Buffer | null;
  oldHash: string | null;
  oldIdentity: FileIdentity | null;
  oldMode: number | null;
  /** New bytes, or null to delete the file. */
  newBytes: Buffer | null;
  newHash: string | null;
  /** Permission bits for the new file (an undo restoring a deleted file); absent: the replaced file's, or the default. */
  newMode?: number | null;
  /**
   * The verified parent directory, opened inside the path lock when the change was decided (src/mutation/scope.ts
   * MutationScope): the commit and its rollback act in it, never re-resolving the path. Absent: opened by path
   * (a parent the commit creates; start-up recovery).
   */
  dir?: VerifiedDir;
}

/** Runs `fn` in the verified parent of `real`: `dir` when given, else opened from the roots (and closed after). */
async function inParent<T>(
  real: string,
  dir: VerifiedDir | undefined,
  isInside: (p: string) => boolean,
  fn: (d: VerifiedDir, name: string) => Promise<T>,
): Promise<T> {
  const name = path.basename(real);
  if (dir) return await fn(dir, name);
  return await withVerifiedDir(path.dirname(real), isInside, (d) => fn(d, name));
}

/**
 * Test seam for crash tests, armed only by the CLI's `--test-seams=kill-at:N` flag (src/cli.ts:
 * never set in production, no environment variable): the process SIGKILLs itself at the N-th commit step (0 = right
 * after the journal is durable; then before and after each file's commit). Unarmed it changes nothing. Process state
 * (src/process-slots.ts).
 */
const seam = processSlot('patch/transaction', () => ({ killAt: null as number | null, killCounter: 0 }));

/** Arms the crash-test kill point (tests only, through `--test-seams=kill-at:N`). */
export function armKillPoint(step: number): void {
  seam.killAt = step;
}

function killPoint(): void {
  if (seam.killAt === null) return;
  if (seam.killCounter++ === seam.killAt) process.kill(process.pid, 'SIGKILL');
}

/** Where and how a transaction commits: the state directory (its journal) and the roots' containment check. */
interface CommitOptions {
  stateDir: string;
  isInside: (p: string) => boolean;
}

/**
 * Commits `changes` atomically as a whole: the journal first (durable), then each file in order (its parents made
 * when the change creates it), then the journal removed. A failure part-way rolls back the committed files.
 * @throws RollbackError when a commit failed part-way (the cause is in details.cause); errors from writing the journal
 *   itself bubble unchanged (nothing was written)
 */
export async function commitTransaction(changes: readonly PlannedChange[], options: CommitOptions): Promise<void> {
  const files: JournalFile[] = changes.map((c) => ({
    path: c.real,
    old_base64: c.oldBytes ? c.oldBytes.toString('base64') : null,
    old_hash: c.oldHash,
    new_hash: c.newHash,
    mode: c.oldMode,
  }));
  // Nothing is written yet when the journal fails; its error names the state directory, which lies outside the
  // roots and must not reach an envelope (docs/errors.md: no outside path), so only its errno is said.
  const journal = await writeJournal(options.stateDir, files).catch((error: NodeJS.ErrnoException) => {
    throw new ToolError('IO_ERROR', 'Could not write the undo journal in the state directory; nothing was changed.', {
      details: { reason: 'journal_write_failed', ...(error.code ? { errno: error.code } : {}) },
    });
  });
  killPoint();
  let committed = 0;
  const createdDirs: string[] = [];
  const rollbackDirs = new Map(changes.filter((x) => x.dir).map((x) => [x.real as string, x.dir!] as const));
  try {
    for (const c of changes) {
      if (c.oldBytes === null && c.newBytes !== null && !c.dir)
        createdDirs.push(...(await makeParents(c.real, options.isInside)));
      await commitOne(c, options.isInside);
      committed++;
      killPoint();
    }
  } catch (error) {
    if (committed === 0) {
      // The first file's commit failed before its rename or unlink (each is all or nothing): nothing was changed, so
      // this is the cause itself, not a rollback (a directory created for it is removed again when empty).
      await removeCreatedDirs(createdDirs, options.isInside);
      await removeJournal(journal.file).catch(() => undefined);
      throw error;
    }
    const statuses = await rollbackFiles(files, committed, options.isInside, rollbackDirs);
    await removeCreatedDirs(createdDirs, options.isInside);
    await removeJournal(journal.file).catch(() => undefined);
    throw rollbackError(statuses, committed, error);
  }
  await removeJournal(journal.file);
}

/**
 * Commits one file of a transaction through its verified parent: an unlink of the file validated (never following a
 * link), or an atomic write that refuses a file changed since it was validated (OCC_MISMATCH with both hashes; a
 * re-save with the same bytes proceeds).
 * @throws OccMismatchError / ToolError (changed) when the file is not the one validated; the write's own errors
 */
async function commitOne(c: PlannedChange, isInside: (p: string) => boolean): Promise<void> {
  if (c.newBytes === null) {
    await inParent(c.real, c.dir, isInside, async (dir) => {
      const now = dir.lstat(path.basename(c.real));
      if (!now || !c.oldIdentity || !sameVersion(identityOf(now), c.oldIdentity)) {
        throw changedError(c.real);
      }
      killPoint();
      await removeEntry(dir, path.basename(c.real), now);
    });
    return;
  }
  const newBytes = c.newBytes;
  await inParent(c.real, c.dir, isInside, (dir, name) =>
    writeFileAtomicIn(dir, name, newBytes, {
      mode: c.newMode ?? undefined,
      expected: {
        identity: c.oldIdentity,
        // Someone wrote the file after it was validated: the cause is a concurrency conflict, with both hashes.
        onChanged: async () => {
          const now = await inParent(c.real, c.dir, isInside, (d, name) =>
            readCurrentIn(d, name, { wantBytes: false, maxBytes: 0 }),
          ).catch(() => null);
          if (now && now.hash === c.oldHash) return null; // re-saved with the same bytes (a touch): proceed
          return new OccMismatchError(`${c.real} changed after the patch was validated; nothing more was written.`, {
            path: c.real,
            expectedHash: c.oldHash ?? 'absent',
            currentHash: now?.hash ?? null,
            conflict: { reason: now?.hash == null ? 'deleted' : c.oldHash === null ? 'created' : 'modified' },
          });
        },
      },
      beforeRename: () => Promise.resolve().then(killPoint),
    }),
  );
}

/** Removes the directories a failed transaction created, innermost first, each only if empty, through its parent. */
async function removeCreatedDirs(createdDirs: string[], isInside: (p: string) => boolean): Promise<void> {
  for (const d of createdDirs.reverse()) {
    await withVerifiedDir(path.dirname(d), isInside, (dir) => dir.rmdir(path.basename(d))).catch(() => undefined);
  }
}

/**
 * Creates the missing parent directories of a file the change creates (as `git apply` does), never through a link
 * or outside the roots; returns the directories it created, outermost first.
 */
function makeParents(file: AllowedPath, isInside: (p: string) => boolean): Promise<string[]> {
  return new Promise((resolve) => resolve(makeParentDirectories(file, isInside)));
}

function rollbackError(statuses: RollbackFile[], committed: number, cause: unknown): RollbackError {
  const written = statuses.slice(0, committed);
  const code =
    written.every((s) => s.status === 'restored') && statuses.every((s) => s.status === 'restored')
      ? 'ROLLBACK_COMPLETE'
      : written.length > 0 && written.every((s) => s.status !== 'restored')
        ? 'ROLLBACK_FAILED'
        : 'ROLLBACK_PARTIAL';
  const causeEnvelope = toEnvelope(cause).error as unknown as Record<string, unknown>;
  const message =
    code === 'ROLLBACK_COMPLETE'
      ? `The change failed at file ${committed + 1} of ${statuses.length} (${String(causeEnvelope.code)}); every file was restored.`
      : code === 'ROLLBACK_PARTIAL'
        ? `The change failed at file ${committed + 1} of ${statuses.length} (${String(causeEnvelope.code)}); only some files hold their old bytes.`
        : `The change failed at file ${committed + 1} of ${statuses.length} (${String(causeEnvelope.code)}); no file could be restored.`;
  return new RollbackError(code, message, { files: statuses, cause, causeEnvelope });
}

/**
 * Restores journaled files in reverse order. Files [0, committed) were written by us; the rest were not.
 * A file whose current hash is neither ours nor the old one was changed by someone else: left alone.
 */
export async function rollbackFiles(
  files: readonly JournalFile[],
  committed: number,
  isInside: (p: string) => boolean,
  dirs: ReadonlyMap<string, VerifiedDir> = new Map(),
): Promise<RollbackFile[]> {
  const statuses: RollbackFile[] = files.map((f) => ({ path: f.path, status: 'restored' as const }));
  // Files from `committed` on were never written by this transaction (each file's commit is all or nothing): they
  // hold their old bytes as far as we are concerned. Start-up recovery passes files.length (it cannot know).
  for (let i = Math.min(committed, files.length) - 1; i >= 0; i--) {
    const f = files[i];
    // A journaled path is re-proved inside the roots here, and every syscall on it goes through its verified parent.
    const real = f.path;
    try {
      if (!isInside(real)) {
        statuses[i] = { path: f.path, status: 'not_restored', reason: 'outside_roots' };
        continue;
      }
      const now = await inParent(real, dirs.get(real), isInside, (d, name) =>
        readCurrentIn(d, name, { wantBytes: false, maxBytes: 0 }),
      );
      if (now.hash === f.old_hash) continue; // holds its old bytes (never written, or already restored)
      const ours = i < committed || now.hash === f.new_hash;
      if (now.hash !== f.new_hash || !ours) {
        statuses[i] = { path: f.path, status: 'left_alone', reason: 'changed_by_another_writer' };
        continue;
      }
      if (f.old_base64 === null) {
        await inParent(real, dirs.get(real), isInside, async (dir, name) => {
          const st = dir.lstat(name);
          if (st) await removeEntry(dir, name, st);
        });
      } else {
        const bytes = Buffer.from(f.old_base64, 'base64');
        if (hashBytes(bytes) !== f.old_hash) throw new Error('journal bytes do not match the journaled hash');
        const current = now.stats;
        await inParent(real, dirs.get(real), isInside, (dir, name) =>
          writeFileAtomicIn(dir, name, bytes, {
            mode: f.mode ?? undefined,
            expected: { identity: current ? identityOf(current) : null },
          }),
        );
      }
    } catch (error) {
      statuses[i] = { path: f.path, status: 'not_restored', reason: toEnvelope(error).error.code };
    }
  }
  return statuses;
}

/** What start-up recovery did for one unfinished transaction (reported by list_allowed_directories). */
export interface RecoveredTransaction {
  id: string;
  created_at: string;
  pid: number;
  /**
   * ROLLBACK_*: rolled back (see files). NOT_APPLIED: nothing was done and the entry stays on disk — `reason`
   * says why: `readonly` (--readonly applies nothing), `refused` (a file failed authorization: see files[].reason),
   * `invalid` (the entry is not a valid journal entry).
   */
  outcome: 'ROLLBACK_COMPLETE' | 'ROLLBACK_PARTIAL' | 'ROLLBACK_FAILED' | 'NOT_APPLIED';
  reason?: 'readonly' | 'refused' | 'invalid';
  /** For `invalid`: what is wrong with the entry. */
  problem?: string;
  /** For `invalid`: the entry's file name in the journal directory. */
  entry_file?: string;
  files: RollbackFile[];
}

/**
 * Authorizes one journaled file for a rollback exactly as a live write of it would be (src/policy/authorize.ts
 * `authorizeRecovery`). @returns null when allowed, or the refusal's reason (an envelope code and rule).
 */
export type RecoveryAuthorizer = (file: string) => Promise<string | null>;

/** Options of `recoverJournals`. */
export interface RecoveryOptions {
  /** --readonly: apply nothing, remove nothing; report every pending entry. */
  readonly?: boolean;
  /** Per-file authorization; without it only containment (`isInside`) is checked. */
  authorize?: RecoveryAuthorizer;
}

function ownerAlive(entry: JournalEntry): boolean {
  if (entry.owner && entry.owner.pid === entry.pid) return ownerState(entry.owner) !== 'gone';
  if (entry.pid === process.pid) return false;
  try {
    process.kill(entry.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Rolls back every journal entry left by a dead process (docs/tools.md), logging each to stderr.
 * Every file of an entry is authorized first as a live write would be: when any file is refused
 * (outside the roots, under .git, a secret, read_only / deny, the state directory …) the entry is not applied at all,
 * stays on disk and is reported NOT_APPLIED with each file's reason. An invalid entry is reported the same way. Under
 * --readonly nothing is applied or removed and every pending entry is reported.
 */
export async function recoverJournals(
  stateDir: string,
  isInside: (p: string) => boolean,
  log: (line: string) => void,
  options: RecoveryOptions = {},
): Promise<RecoveredTransaction[]> {
  const out: RecoveredTransaction[] = [];
  const authorize: RecoveryAuthorizer =
    options.authorize ?? ((f) => Promise.resolve(isInside(f) ? null : 'NOT_ALLOWED'));
  for (const record of await readJournals(stateDir, { keepTemporaries: options.readonly })) {
    const { file, entry } = record;
    if (!entry) {
      out.push({
        id: '',
        created_at: '',
        pid: 0,
        outcome: 'NOT_APPLIED',
        reason: 'invalid',
        problem: record.invalid,
        entry_file: path.basename(file),
        files: [],
      });
      log(
        `fs-tools: journal entry ${path.basename(file)} was not applied: ${record.invalid ?? 'invalid'} (left in place)`,
      );
      continue;
    }
    if (ownerAlive(entry)) continue; // another live fs-tools is mid-transaction
    const verdicts: RollbackFile[] = [];
    for (const f of entry.files) {
      const refusal = await authorize(f.path).catch((error: unknown) => `IO_ERROR: ${(error as Error).message}`);
      verdicts.push(
        refusal === null
          ? { path: f.path, status: 'not_restored', reason: options.readonly ? 'readonly' : 'pending' }
          : { path: f.path, status: 'not_restored', reason: refusal },
      );
    }
    const refused = verdicts.some((v) => v.reason !== 'readonly' && v.reason !== 'pending');
    if (refused || options.readonly) {
      const reason = refused ? 'refused' : 'readonly';
      const files = verdicts.map((v) => (v.reason === 'pending' ? { ...v, reason: 'not_applied' } : v));
      out.push({ id: entry.id, created_at: entry.created_at, pid: entry.pid, outcome: 'NOT_APPLIED', reason, files });
      log(
        `fs-tools: unfinished transaction ${entry.id} from pid ${entry.pid} was not applied (${
          reason === 'readonly' ? '--readonly' : 'authorization refused'
        }; left in place): ${files.map((s) => `${s.path}: ${s.reason}`).join(', ')}`,
      );
      continue;
    }
    // Under the files' write locks (a live fs-tools may be writing one of them right now).
    const statuses = await withPathLock(
      entry.files.map((f) => f.path),
      stateDir,
      async () => {
        const restored = await rollbackFiles(entry.files, entry.files.length, isInside);
        await removeStrayTemporaries(entry.files, isInside);
        return restored;
      },
    );
    const outcome = outcomeOf(statuses);
    await removeJournal(file).catch(() => undefined);
    out.push({ id: entry.id, created_at: entry.created_at, pid: entry.pid, outcome, files: statuses });
    log(
      `fs-tools: recovered unfinished transaction ${entry.id} from pid ${entry.pid}: ${outcome} (` +
        `${statuses.map((s) => `${s.path}: ${s.status}`).join(', ')})`,
    );
  }
  return out;
}

/**
 * Removes the temporary files a process killed between writing a file's temporary copy and renaming it left beside
 * the journaled files (`.NAME.fs-tools-XXXXXXXXXXXX.tmp`, src/fs/atomic-write.ts): complete copies of bytes that
 * were never committed, invisible litter otherwise.
 */
async function removeStrayTemporaries(files: readonly JournalFile[], isInside: (p: string) => boolean): Promise<void> {
  for (const f of files) {
    if (!isInside(f.path)) continue;
    const prefix = temporaryPrefix(path.basename(f.path)).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const pattern = new RegExp(`^${prefix}[0-9a-f]{12}\\.tmp$`);
    // Listed and removed through the verified parent directory, never by path.
    await withVerifiedDir(path.dirname(f.path), isInside, async (dir) => {
      for (const entry of await dir.readdir()) {
        if (!pattern.test(entry.name)) continue;
        const st = dir.lstat(entry.name);
        if (st?.isFile()) {
          try {
            dir.unlink(entry.name);
          } catch {
            /* gone */
          }
        }
      }
    }).catch(() => undefined);
  }
}

function outcomeOf(statuses: RollbackFile[]): 'ROLLBACK_COMPLETE' | 'ROLLBACK_PARTIAL' | 'ROLLBACK_FAILED' {
  if (statuses.every((s) => s.status === 'restored')) return 'ROLLBACK_COMPLETE';
  if (statuses.every((s) => s.status !== 'restored')) return 'ROLLBACK_FAILED';
  return 'ROLLBACK_PARTIAL';
}
