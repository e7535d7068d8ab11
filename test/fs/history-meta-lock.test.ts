/**
 * meta.json's read-increment-rewrite across processes (src/fs/history-prune.ts `updateMeta`): serialized by
 * `meta.lock` in the history directory. Another process's lock is played by a file put at that name: a fresh one is
 * waited for (meta.json untouched while it stands, the count complete once it is gone), a stale one (older than
 * META_LOCK_STALE_MS by its ctime, seen through a shifted clock) is broken and the count written. No lock file is left.
 * A lock that never turns stale (kept fresh, or dated ahead of the clock) is waited for at most META_LOCK_WAIT_MS:
 * the one update fails with EBUSY and nothing is written.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hashBytes } from '../../src/fs/hash.js';
import { historyFileOf, loadHistory, recordChange, recordSkipped } from '../../src/fs/history.js';
import { META_LOCK_STALE_MS, META_LOCK_WAIT_MS } from '../../src/fs/history-prune.js';
import { makeTree } from '../helpers/tree.js';

const trees: Array<{ cleanup: () => void }> = [];
afterEach(() => {
  vi.restoreAllMocks();
  trees.splice(0).forEach((t) => t.cleanup());
});
const file = (name: string) =>
  historyFileOf(`/r/${name}`, Buffer.from(name), 0o644, hashBytes(Buffer.from(`${name}!`)));
const limits = { maxChanges: 1, maxBytes: 1_000_000 };

function stateDir(): string {
  const t = makeTree({}, 'fs-tools-history-meta-lock-');
  trees.push(t);
  return t.dir;
}

describe('meta.json under meta.lock', () => {
  it("waits for another process's fresh lock, then counts the drop", async () => {
    const dir = stateDir();
    const history = path.join(dir, 'history');
    const a = await recordChange(dir, limits, { tool: 'write_file', files: [file('a')] });
    const lock = path.join(history, 'meta.lock');
    writeFileSync(lock, '');
    let done = false;
    const b = recordChange(dir, limits, { tool: 'write_file', files: [file('b')] }).then((id) => {
      done = true;
      return id;
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    // `a` is dropped already; its count waits for the lock.
    expect([done, existsSync(path.join(history, `${a}.json`)), existsSync(path.join(history, 'meta.json'))]).toEqual([
      false,
      false,
      false,
    ]);
    rmSync(lock);
    const id = await b;
    const h = await loadHistory(dir);
    expect([h.changes.map((c) => c.id), h.dropped, h.lastDroppedId]).toEqual([[id], 1, a]);
    expect(readdirSync(history).sort()).toEqual([`${id}.json`, 'meta.json'].sort());
  });

  it('breaks a stale lock (its holder was killed) and counts the drop', async () => {
    const dir = stateDir();
    const history = path.join(dir, 'history');
    const a = await recordChange(dir, limits, { tool: 'write_file', files: [file('a')] });
    writeFileSync(path.join(history, 'meta.lock'), '');
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + META_LOCK_STALE_MS + 1000);
    const b = await recordChange(dir, limits, { tool: 'write_file', files: [file('b')] });
    const h = await loadHistory(dir);
    expect([h.changes.map((c) => c.id), h.dropped, h.lastDroppedId]).toEqual([[b], 1, a]);
    expect(readdirSync(history).sort()).toEqual([`${b}.json`, 'meta.json'].sort());
  });

  it('gives up on a lock that never turns stale: EBUSY after META_LOCK_WAIT_MS, nothing written', async () => {
    const dir = stateDir();
    const history = path.join(dir, 'history');
    mkdirSync(history, { recursive: true });
    writeFileSync(path.join(history, 'meta.lock'), '');
    // The clock 60 s behind the lock's ctime (dated ahead of it), advancing 100 ms a reading: never stale.
    const start = Date.now();
    let readings = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => start - 60_000 + 100 * readings++);
    await expect(recordSkipped(dir)).rejects.toMatchObject({ code: 'EBUSY' });
    expect(100 * readings).toBeGreaterThan(META_LOCK_WAIT_MS);
    expect(100 * readings).toBeLessThan(60_000);
    vi.restoreAllMocks();
    expect(readdirSync(history)).toEqual(['meta.lock']);
  });

  it("removes meta.json's leftovers of a killed process once an hour old, and only regular files by their names", async () => {
    const dir = stateDir();
    const history = path.join(dir, 'history');
    await recordChange(dir, limits, { tool: 'write_file', files: [file('a')] });
    const leftovers = ['meta.json.0123abcd.tmp', 'meta.lock.0123456789ab.stale'];
    const kept = ['meta.lock.zz.stale', 'meta.json.tmp', 'notes.stale'];
    for (const n of [...leftovers, ...kept]) writeFileSync(path.join(history, n), 'x');
    mkdirSync(path.join(history, 'meta.lock.ba9876543210.stale'));
    // A prune now: every one of them is too young.
    await recordChange(dir, limits, { tool: 'write_file', files: [file('b')] });
    await loadHistory(dir);
    expect(leftovers.every((n) => existsSync(path.join(history, n)))).toBe(true);
    // Two hours later: the two leftovers go; other names and the planted directory stay.
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 2 * 60 * 60 * 1000);
    const c = await recordChange(dir, limits, { tool: 'write_file', files: [file('c')] });
    const h = await loadHistory(dir);
    expect(h.changes.map((x) => x.id)).toEqual([c]);
    expect(readdirSync(history).sort()).toEqual(
      [`${c}.json`, 'meta.json', 'meta.lock.ba9876543210.stale', ...kept].sort(),
    );
  });
});
