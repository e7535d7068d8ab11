/**
 * The mutation journal (docs/tools.md): before the first write of a multi-file change, one entry per transaction is
 * written durably under `<state-dir>/journal/` (file fsynced, then its directory), holding for every file its old
 * bytes (or their absence) and the hash we intend to leave there. The entry is removed once the change is committed
 * or rolled back. An entry found at start-up belongs to a process that died mid-transaction.
 */
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { STATE_WRITE_FLAGS, syncDirectory } from './atomic-write.js';
import { ContentHashSchema, savedVersionChecked } from './hash.js';
import { selfIdentity, type ProcessIdentity } from './process-identity.js';

/** One file of a journaled transaction. Hashes are content hashes (docs/errors.md "Optimistic concurrency"). */
export interface JournalFile {
  path: string;
  /** Old bytes, base64; null when the file did not exist. */
  old_base64: string | null;
  old_hash: string | null;
  /** Hash we intend to write; null when the change deletes the file. */
  new_hash: string | null;
  /** Permission bits of the old file. */
  mode: number | null;
}

/** One transaction. */
export interface JournalEntry {
  id: string;
  pid: number;
  /** The writing process (pid start time, boot id…), so a reused pid is not mistaken for the writer. */
  owner?: ProcessIdentity;
  created_at: string;
  files: JournalFile[];
}

/** Largest entry file read at start-up (an entry holds old bytes, base64). */
const MAX_ENTRY_BYTES = 512 * 1024 * 1024;

const HashSchema = ContentHashSchema;
const NullableString = z.string().max(256).nullable();
/**
 * The journal entry as read back. Strict: a journal in a state directory that lies inside a root was once writable
 * by an agent, so an entry is hostile input until it parses, and its old bytes match its old hash.
 */
const JournalEntrySchema = z.strictObject({
  id: z.uuid(),
  pid: z.number().int().positive(),
  owner: z
    .strictObject({
      pid: z.number().int().positive(),
      start: NullableString,
      boot: NullableString,
      pidns: NullableString,
      host: z.string().max(256),
    })
    .optional(),
  created_at: z.iso.datetime(),
  files: z
    .array(
      savedVersionChecked(
        z.strictObject({
          path: z
            .string()
            .min(1)
            .max(4096)
            .refine(
              (p) => path.isAbsolute(p) && !p.includes('\0') && path.normalize(p) === p,
              'an absolute, normalized path',
            ),
          old_base64: z.base64().nullable(),
          old_hash: HashSchema.nullable(),
          new_hash: HashSchema.nullable(),
          // Permission bits only: a journal never restores set-uid, set-gid or sticky bits.
          mode: z.number().int().min(0).max(0o777).nullable(),
        }),
      ),
    )
    .min(1)
    .max(10_000),
});

/** One entry file found at start-up: parsed, or why it could not be. */
export interface JournalRecord {
  file: string;
  entry: JournalEntry | null;
  /** Why the entry is not usable (not JSON, wrong shape …); set when `entry` is null. */
  invalid?: string;
}

function journalDir(stateDir: string): string {
  return path.join(stateDir, 'journal');
}

/**
 * Writes an entry durably and returns its file path.
 * @throws Node errno errors (the caller refuses the change: nothing has been written yet)
 */
export async function writeJournal(
  stateDir: string,
  files: JournalFile[],
): Promise<{ file: string; entry: JournalEntry }> {
  const dir = journalDir(stateDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const entry: JournalEntry = {
    id: randomUUID(),
    pid: process.pid,
    owner: selfIdentity(),
    created_at: new Date().toISOString(),
    files,
  };
  const file = path.join(dir, `${entry.id}.json`);
  const tmp = `${file}.tmp`;
  const handle = await open(tmp, STATE_WRITE_FLAGS, 0o600);
  try {
    await handle.writeFile(JSON.stringify(entry));
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
  await syncDirectory(dir);
  return { file, entry };
}

/** Removes a finished entry (durably). */
export async function removeJournal(file: string): Promise<void> {
  await rm(file, { force: true });
  await syncDirectory(path.dirname(file));
}

/**
 * Every entry file under the state dir, parsed and validated (JournalEntrySchema). Invalid entries are returned with
 * the reason and left on disk. Leftover `*.json.tmp` files (never committed) are removed unless `keepTemporaries`
 * (--readonly: start-up changes nothing) — only once older than STALE_TEMPORARY_MS: servers may share a state
 * directory, and a young one is another live server's entry between its write and its rename (removing it made that
 * server's mutation fail).
 */
export async function readJournals(
  stateDir: string,
  options: { keepTemporaries?: boolean } = {},
): Promise<JournalRecord[]> {
  const dir = journalDir(stateDir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const out: JournalRecord[] = [];
  for (const name of names.sort()) {
    const file = path.join(dir, name);
    if (!name.endsWith('.json')) {
      if (name.endsWith('.json.tmp') && !options.keepTemporaries && (await isStaleTemporary(file)))
        await rm(file, { force: true }).catch(() => undefined);
      continue;
    }
    out.push(await readEntry(file, name));
  }
  return out;
}

/**
 * Age (ms, by mtime) after which a never-committed `*.json.tmp` is a leftover: a live writer renames its temporary
 * within milliseconds (write, fsync, rename), so ten minutes leaves any live server's entry alone.
 */
export const STALE_TEMPORARY_MS = 10 * 60 * 1000;

/** True when `file` is a regular file (not followed) last modified at least STALE_TEMPORARY_MS ago. */
async function isStaleTemporary(file: string): Promise<boolean> {
  try {
    const st = await lstat(file);
    return st.isFile() && Date.now() - st.mtimeMs >= STALE_TEMPORARY_MS;
  } catch {
    return false; // gone already (renamed by its writer, or removed by another server)
  }
}

async function readEntry(file: string, name: string): Promise<JournalRecord> {
  let text: string;
  try {
    const handle = await open(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
    try {
      const st = await handle.stat();
      if (!st.isFile()) return { file, entry: null, invalid: 'not a regular file' };
      if (st.size > MAX_ENTRY_BYTES) return { file, entry: null, invalid: 'too large' };
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    return { file, entry: null, invalid: `unreadable (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { file, entry: null, invalid: 'not JSON (a partial write: the transaction never started writing files)' };
  }
  const parsed = JournalEntrySchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { file, entry: null, invalid: `invalid entry: ${issue.path.join('.') || '(top)'}: ${issue.message}` };
  }
  if (`${parsed.data.id}.json` !== name) return { file, entry: null, invalid: 'entry id does not match its file name' };
  return { file, entry: parsed.data };
}

/** Every valid entry under the state dir, with its file path (invalid entries are skipped: see readJournals). */
export async function listJournals(stateDir: string): Promise<Array<{ file: string; entry: JournalEntry }>> {
  return (await readJournals(stateDir)).flatMap((r) => (r.entry ? [{ file: r.file, entry: r.entry }] : []));
}
