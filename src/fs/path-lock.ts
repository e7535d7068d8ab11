/**
 * Serializes mutations of the same path (SPEC §5: no lost update), in this process and across fs-tools processes
 * that share a state directory (by default every fs-tools of one user), like node-tar's path-reservations:
 * in-process, a promise chain per path; across processes, a lock directory under `<state-dir>/locks/` created with
 * mkdir (atomic), holding the owner's pid. A lock whose owner is gone, or older than STALE_MS, is broken.
 * The OCC check and the rename happen inside the lock, so check-then-write is atomic for every fs-tools writer.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

const STALE_MS = 30_000;
const WAIT_MS = 10_000;

const chains = new Map<string, Promise<unknown>>();
let warnedNoStateDir = false;

async function acquireDirLock(lockDir: string): Promise<boolean> {
  const deadline = Date.now() + WAIT_MS;
  let delay = 2;
  for (;;) {
    try {
      await mkdir(lockDir);
      await writeFile(path.join(lockDir, 'owner'), `${process.pid}\n`).catch(() => undefined);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw error;
    }
    if (await isStale(lockDir)) {
      await rm(lockDir, { recursive: true, force: true }).catch(() => undefined);
      continue;
    }
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 50);
  }
}

async function isStale(lockDir: string): Promise<boolean> {
  try {
    const st = await stat(lockDir);
    if (Date.now() - st.mtimeMs > STALE_MS) return true;
    const pid = Number((await readFile(path.join(lockDir, 'owner'), 'utf8')).trim());
    if (Number.isInteger(pid) && pid > 0) {
      try {
        process.kill(pid, 0);
      } catch (error) {
        return (error as NodeJS.ErrnoException).code === 'ESRCH';
      }
    }
    return false;
  } catch {
    return false; // owner file not written yet, or lock just released
  }
}

/**
 * Runs `fn` while holding the locks of `paths` (sorted, so two callers never deadlock).
 * @param stateDir the --state-dir; when it cannot be created, only the in-process lock is held (warned once)
 */
export async function withPathLock<T>(paths: readonly string[], stateDir: string, fn: () => Promise<T>): Promise<T> {
  const keys = [...new Set(paths)].sort();
  // In-process: chain on every key.
  const previous = keys.map((k) => chains.get(k) ?? Promise.resolve());
  let release!: () => void;
  const mine = new Promise<void>((r) => { release = r; });
  for (const k of keys) chains.set(k, mine);
  await Promise.all(previous.map((p) => p.catch(() => undefined)));
  const held: string[] = [];
  try {
    const lockRoot = path.join(stateDir, 'locks');
    let lockable = true;
    try {
      await mkdir(lockRoot, { recursive: true, mode: 0o700 });
    } catch {
      lockable = false;
      if (!warnedNoStateDir) {
        warnedNoStateDir = true;
        process.stderr.write(`fs-tools: cannot create ${lockRoot}; writes are serialized within this process only\n`);
      }
    }
    if (lockable) {
      for (const k of keys) {
        const dir = path.join(lockRoot, createHash('sha256').update(k).digest('hex').slice(0, 40));
        if (await acquireDirLock(dir)) held.push(dir);
        else throw Object.assign(new Error(`timed out waiting for the write lock of ${k}`), { code: 'EBUSY', path: k });
      }
    }
    return await fn();
  } finally {
    for (const dir of held.reverse()) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    for (const k of keys) if (chains.get(k) === mine) chains.delete(k);
    release();
  }
}
