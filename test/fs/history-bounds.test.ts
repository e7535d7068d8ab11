/**
 * The undo history's bounds and invalid records in the state directory (src/fs/history.ts), in-process on a real directory. Pins:
 *  - an empty or missing history lists nothing; a recorded change reads back as written, oldest first;
 *  - records that are not JSON, have the wrong shape, carry bytes that do not match their hash or sit under another
 *    id's name are counted as invalid and left on disk;
 *  - the bounds: beyond maxChanges the oldest are dropped (counted, newest dropped id kept), never the newest; a change
 *    whose record alone exceeds maxBytes is not recorded and is counted as skipped.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hashBytes } from '../../src/fs/hash.js';
import { DEFAULT_HISTORY_LIMITS, historyFileOf, loadHistory, recordChange } from '../../src/fs/history.js';
import { makeTree } from '../helpers/tree.js';

const trees: Array<{ cleanup: () => void }> = [];
afterEach(() => trees.splice(0).forEach((t) => t.cleanup()));
function stateDir(): string {
  const t = makeTree({}, 'fs-tools-history-');
  trees.push(t);
  return t.dir;
}
const file = (name: string, before: string | null, after: string | null) =>
  historyFileOf(
    `/r/${name}`,
    before === null ? null : Buffer.from(before),
    before === null ? null : 0o644,
    after === null ? null : hashBytes(Buffer.from(after)),
  );

describe('history', () => {
  it('lists nothing for a missing directory, then the recorded changes oldest first', async () => {
    const dir = stateDir();
    expect(await loadHistory(dir)).toEqual({ changes: [], invalid: 0, dropped: 0, lastDroppedId: null, skipped: 0 });
    const a = await recordChange(dir, DEFAULT_HISTORY_LIMITS, { tool: 'write_file', files: [file('a', null, 'A')] });
    const b = await recordChange(dir, DEFAULT_HISTORY_LIMITS, {
      tool: 'undo',
      reverts: [a!],
      files: [file('a', 'A', null)],
    });
    const h = await loadHistory(dir);
    expect(h.changes.map((c) => [c.id, c.tool, c.reverts])).toEqual([
      [a, 'write_file', undefined],
      [b, 'undo', [a]],
    ]);
    expect(h.changes[1].files[0]).toEqual({
      path: '/r/a',
      old_base64: Buffer.from('A').toString('base64'),
      old_hash: hashBytes(Buffer.from('A')),
      old_mode: 0o644,
      new_hash: null,
    });
  });

  it('counts invalid records and leaves them on disk', async () => {
    const dir = stateDir();
    const good = await recordChange(dir, DEFAULT_HISTORY_LIMITS, { tool: 'write_file', files: [file('a', 'x', 'y')] });
    const h = path.join(dir, 'history');
    const id = (n: number) => `${String(n).padStart(15, '0')}-${'a'.repeat(12)}`;
    writeFileSync(path.join(h, `${id(1)}.json`), '{not json');
    writeFileSync(path.join(h, `${id(2)}.json`), JSON.stringify({ id: id(2), tool: 'x' }));
    const forged = {
      id: id(3),
      tool: 'write_file',
      created_at: new Date().toISOString(),
      files: [{ ...file('a', 'x', 'y'), old_base64: Buffer.from('other').toString('base64') }],
    };
    writeFileSync(path.join(h, `${id(3)}.json`), JSON.stringify(forged));
    writeFileSync(
      path.join(h, `${id(4)}.json`),
      JSON.stringify({ ...forged, id: id(5), files: [file('a', 'x', 'y')] }),
    );
    mkdirSync(path.join(h, `${id(6)}.json`));
    const listing = await loadHistory(dir);
    expect([listing.changes.map((c) => c.id), listing.invalid]).toEqual([[good], 5]);
    expect(readdirSync(h)).toHaveLength(6);
  });

  it('drops the oldest beyond maxChanges, keeps the newest, and skips a record over maxBytes', async () => {
    const dir = stateDir();
    const limits = { maxChanges: 2, maxBytes: 10_000 };
    const ids: Array<string | null> = [];
    for (const n of ['1', '2', '3'])
      ids.push(await recordChange(dir, limits, { tool: 'write_file', files: [file(n, n, `${n}!`)] }));
    let h = await loadHistory(dir);
    expect(h.changes.map((c) => c.id)).toEqual(ids.slice(1));
    expect([h.dropped, h.lastDroppedId]).toEqual([1, ids[0]]);
    const skipped = await recordChange(dir, limits, {
      tool: 'write_file',
      files: [file('big', 'x'.repeat(20_000), 'y')],
    });
    expect(skipped).toBeNull();
    h = await loadHistory(dir);
    expect([h.changes.length, h.skipped, h.dropped]).toEqual([2, 1, 1]);
    expect(existsSync(path.join(dir, 'history', 'meta.json'))).toBe(true);
  });

  it('counts records another process wrote since this one last looked toward the byte bound', async () => {
    const dir = stateDir();
    const limits = { maxChanges: 100, maxBytes: 6_000 };
    const first = await recordChange(dir, limits, { tool: 'write_file', files: [file('1', '1', '1!')] });
    // Another process's record (only its name and size matter to the bound), sorting after the first.
    const foreign = `${first!.slice(0, 16)}ffffffffffff`;
    writeFileSync(path.join(dir, 'history', `${foreign}.json`), 'x'.repeat(5_500));
    const second = await recordChange(dir, limits, { tool: 'write_file', files: [file('2', '2', '2!')] });
    const names = readdirSync(path.join(dir, 'history')).filter((n) => n !== 'meta.json');
    expect(names.sort()).toEqual([`${foreign}.json`, `${second}.json`]);
    const h = await loadHistory(dir);
    expect([h.dropped, h.lastDroppedId, h.invalid]).toEqual([1, first, 1]);
  });
});
