/**
 * The mutation journal (SPEC §6.4): before the first write of a multi-file change, one entry per transaction is
 * written durably under `<state-dir>/journal/` (file fsynced, then its directory), holding for every file its old
 * bytes (or their absence) and the hash we intend to leave there. The entry is removed once the change is committed
 * or rolled back. An entry found at start-up belongs to a process that died mid-transaction.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { syncDirectory } from './atomic-write.js';

/** One file of a journaled transaction. Hashes are content hashes (SPEC §5). */
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
  created_at: string;
  files: JournalFile[];
}

function journalDir(stateDir: string): string {
  return path.join(stateDir, 'journal');
}

/**
 * Writes an entry durably and returns its file path.
 * @throws Node errno errors (the caller refuses the change: nothing has been written yet)
 */
export async function writeJournal(stateDir: string, files: JournalFile[]): Promise<{ file: string; entry: JournalEntry }> {
  const dir = journalDir(stateDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const entry: JournalEntry = { id: randomUUID(), pid: process.pid, created_at: new Date().toISOString(), files };
  const file = path.join(dir, `${entry.id}.json`);
  const tmp = `${file}.tmp`;
  const handle = await open(tmp, 'w', 0o600);
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

/** Every complete entry under the state dir, with its file path (unreadable or partial entries are skipped). */
export async function listJournals(stateDir: string): Promise<Array<{ file: string; entry: JournalEntry }>> {
  const dir = journalDir(stateDir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const out: Array<{ file: string; entry: JournalEntry }> = [];
  for (const name of names.sort()) {
    const file = path.join(dir, name);
    if (!name.endsWith('.json')) {
      if (name.endsWith('.json.tmp')) await rm(file, { force: true }).catch(() => undefined); // never committed
      continue;
    }
    try {
      const entry = JSON.parse(await readFile(file, 'utf8')) as JournalEntry;
      if (entry && Array.isArray(entry.files)) out.push({ file, entry });
    } catch { /* partial write: the transaction never started writing files */ }
  }
  return out;
}
