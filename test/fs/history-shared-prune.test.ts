/**
 * The undo history's pruning when several servers share one state directory (src/fs/history.ts `prune`), in-process
 * on a real directory, with the other server's removal played by a hook that deletes the record just before this
 * process's own unlink of it. Pins: a record another process removed first is not counted as dropped here and
 * meta.json is not rewritten for it (the other process counts it); a record this process removes is counted as ever.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hashBytes } from '../../src/fs/hash.js';
import { historyFileOf, loadHistory, recordChange } from '../../src/fs/history.js';
import { makeTree } from '../helpers/tree.js';

const hooks = vi.hoisted(() => ({ beforeUnlink: null as null | ((p: string) => void) }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...real,
    unlink: async (p: Parameters<typeof real.unlink>[0]) => {
      hooks.beforeUnlink?.(String(p));
      return real.unlink(p);
    },
  };
});

const trees: Array<{ cleanup: () => void }> = [];
afterEach(() => {
  hooks.beforeUnlink = null;
  trees.splice(0).forEach((t) => t.cleanup());
});
function stateDir(): string {
  const t = makeTree({}, 'fs-tools-history-shared-');
  trees.push(t);
  return t.dir;
}
const file = (name: string) =>
  historyFileOf(`/r/${name}`, Buffer.from(name), 0o644, hashBytes(Buffer.from(`${name}!`)));
const limits = { maxChanges: 1, maxBytes: 1_000_000 };

describe('history shared by several servers', () => {
  it('a record another process removed first is not counted; one this process removes is', async () => {
    const dir = stateDir();
    const history = path.join(dir, 'history');
    const a = await recordChange(dir, limits, { tool: 'write_file', files: [file('a')] });
    // The other server removes `a` between this one's listing and its unlink (unlink then fails with ENOENT).
    const removedByOther: string[] = [];
    hooks.beforeUnlink = (p) => {
      if (path.basename(p) === `${a}.json`) {
        rmSync(p);
        removedByOther.push(p);
      }
    };
    const b = await recordChange(dir, limits, { tool: 'write_file', files: [file('b')] });
    expect(removedByOther).toHaveLength(1);
    let h = await loadHistory(dir);
    expect([h.changes.map((c) => c.id), h.dropped, h.lastDroppedId]).toEqual([[b], 0, null]);
    expect(existsSync(path.join(history, 'meta.json'))).toBe(false);
    // Control: the next drop is this process's own.
    hooks.beforeUnlink = null;
    const c = await recordChange(dir, limits, { tool: 'write_file', files: [file('c')] });
    h = await loadHistory(dir);
    expect([h.changes.map((x) => x.id), h.dropped, h.lastDroppedId]).toEqual([[c], 1, b]);
    expect(readdirSync(history).sort()).toEqual([`${c}.json`, 'meta.json'].sort());
  });
});
