/**
 * The undo record of tree operations (issue 18), in-process on real trees and a real state directory. Pins:
 *  - snapshotTree records every entry pre-order (directories with their mode, links by target, never followed; files
 *    by hash, with their bytes only when asked) and answers tooLarge past its byte or entry bound, unrecordable at a
 *    FIFO or an entry the caller's `recordable` refuses;
 *  - historyEntriesOfTree turns a snapshot into entries at a tree's real path: `removed` (bytes and modes before,
 *    nothing after; refuses a file without bytes) and `created` (nothing before, hashes, kinds and targets after), the
 *    top directory first, and the records pass the history's own validation when written and read back;
 *  - recordSkipped counts a change not recorded, for the listing's note.
 */
import { chmodSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hashBytes } from '../../src/fs/hash.js';
import {
  DEFAULT_HISTORY_LIMITS,
  historyEntriesOfTree,
  loadHistory,
  recordChange,
  recordSkipped,
} from '../../src/fs/history.js';
import { snapshotTree, type SnapshotEntry } from '../../src/fs/tree-ops.js';
import { withVerifiedDir } from '../../src/fs/verified-dir.js';
import { fifo, makeTree } from '../helpers/tree.js';

const trees: Array<{ cleanup: () => void }> = [];
afterEach(() => trees.splice(0).forEach((t) => t.cleanup()));
function tree(spec: Parameters<typeof makeTree>[0]): { dir: string; inside: (p: string) => boolean } {
  const t = makeTree(spec, 'fs-tools-history-trees-');
  trees.push(t);
  return { dir: t.dir, inside: (p) => p === t.dir || p.startsWith(`${t.dir}/`) };
}

function sample(): { dir: string; inside: (p: string) => boolean } {
  const t = tree({ top: { 'a.txt': 'alpha', sub: { 'b.bin': Buffer.from([0, 255]) }, empty: {} } });
  chmodSync(path.join(t.dir, 'top', 'sub'), 0o750);
  chmodSync(path.join(t.dir, 'top', 'a.txt'), 0o640);
  symlinkSync('../a.txt', path.join(t.dir, 'top', 'sub', 'link'));
  return t;
}

const snap = (dir: string, inside: (p: string) => boolean, options: Parameters<typeof snapshotTree>[1]) =>
  withVerifiedDir(path.join(dir, 'top'), inside, (top) => snapshotTree(top, options));

describe('snapshotTree', () => {
  it('records every entry pre-order: files by hash (bytes when asked), directories by mode, links by target', async () => {
    const { dir, inside } = sample();
    const withBytes = await snap(dir, inside, { wantBytes: true, maxBytes: 1 << 20, maxEntries: 100 });
    expect(withBytes).toEqual({
      entries: [
        {
          relative: 'a.txt',
          state: { kind: 'file', hash: hashBytes(Buffer.from('alpha')), bytes: Buffer.from('alpha'), mode: 0o640 },
        },
        { relative: 'empty', state: { kind: 'directory', mode: 0o755 & ~process.umask() } },
        { relative: 'sub', state: { kind: 'directory', mode: 0o750 } },
        {
          relative: 'sub/b.bin',
          state: { kind: 'file', hash: hashBytes(Buffer.from([0, 255])), bytes: Buffer.from([0, 255]), mode: 0o644 },
        },
        { relative: 'sub/link', state: { kind: 'symlink', target: '../a.txt' } },
      ],
    });
    const hashesOnly = await snap(dir, inside, { wantBytes: false, maxBytes: 1 << 20, maxEntries: 100 });
    expect('entries' in hashesOnly && hashesOnly.entries[0].state).toMatchObject({ kind: 'file', bytes: null });
  });

  it('answers tooLarge past its byte bound or its entry bound', async () => {
    const { dir, inside } = sample();
    expect(await snap(dir, inside, { wantBytes: true, maxBytes: 300, maxEntries: 100 })).toEqual({ tooLarge: true });
    expect(await snap(dir, inside, { wantBytes: true, maxBytes: 1 << 20, maxEntries: 4 })).toEqual({ tooLarge: true });
    // Without bytes the same tree fits a bound its bytes would not.
    const big = tree({ top: { 'big.txt': 'x'.repeat(5000) } });
    expect(await snap(big.dir, big.inside, { wantBytes: true, maxBytes: 4000, maxEntries: 10 })).toEqual({
      tooLarge: true,
    });
    expect(await snap(big.dir, big.inside, { wantBytes: false, maxBytes: 4000, maxEntries: 10 })).toHaveProperty(
      'entries',
    );
  });

  it('answers unrecordable at a FIFO (never opened) or at an entry `recordable` refuses', async () => {
    const t = tree({ top: { 'a.txt': 'a', pipe: fifo() } });
    expect(await snap(t.dir, t.inside, { wantBytes: true, maxBytes: 1 << 20, maxEntries: 10 })).toEqual({
      unrecordable: true,
    });
    const u = tree({ top: { 'a.txt': 'a', sub: { '.env': 'K=1' } } });
    const seen: string[] = [];
    const recordable = (p: string) => {
      seen.push(path.relative(u.dir, p));
      return !p.endsWith('.env');
    };
    expect(await snap(u.dir, u.inside, { wantBytes: true, maxBytes: 1 << 20, maxEntries: 10, recordable })).toEqual({
      unrecordable: true,
    });
    expect(seen).toEqual(['top/a.txt', 'top/sub', 'top/sub/.env']);
  });
});

describe('historyEntriesOfTree', () => {
  const entries: SnapshotEntry[] = [
    {
      relative: 'a.txt',
      state: { kind: 'file', hash: hashBytes(Buffer.from('A')), bytes: Buffer.from('A'), mode: 0o600 },
    },
    { relative: 'd', state: { kind: 'directory', mode: 0o700 } },
    { relative: 'd/l', state: { kind: 'symlink', target: '../a.txt' } },
  ];

  it('removed: the states before (bytes, modes, targets), nothing after; the top directory first', () => {
    expect(historyEntriesOfTree('/r/t', 0o40750, entries, 'removed')).toEqual([
      {
        path: '/r/t',
        old_base64: null,
        old_hash: null,
        old_mode: 0o750,
        new_hash: null,
        old_kind: 'directory',
      },
      {
        path: '/r/t/a.txt',
        old_base64: Buffer.from('A').toString('base64'),
        old_hash: hashBytes(Buffer.from('A')),
        old_mode: 0o600,
        new_hash: null,
      },
      { path: '/r/t/d', old_base64: null, old_hash: null, old_mode: 0o700, new_hash: null, old_kind: 'directory' },
      {
        path: '/r/t/d/l',
        old_base64: null,
        old_hash: null,
        old_mode: null,
        new_hash: null,
        old_kind: 'symlink',
        old_target: '../a.txt',
      },
    ]);
    expect(() =>
      historyEntriesOfTree(
        '/r/t',
        0o755,
        [{ relative: 'x', state: { kind: 'file', hash: 'sha256:00', bytes: null, mode: 0o644 } }],
        'removed',
      ),
    ).toThrow(/bytes/);
  });

  it('created: nothing before, hashes, kinds and targets after', () => {
    expect(historyEntriesOfTree('/r/u', 0o755, entries, 'created')).toEqual([
      { path: '/r/u', old_base64: null, old_hash: null, old_mode: null, new_hash: null, new_kind: 'directory' },
      { path: '/r/u/a.txt', old_base64: null, old_hash: null, old_mode: null, new_hash: hashBytes(Buffer.from('A')) },
      { path: '/r/u/d', old_base64: null, old_hash: null, old_mode: null, new_hash: null, new_kind: 'directory' },
      {
        path: '/r/u/d/l',
        old_base64: null,
        old_hash: null,
        old_mode: null,
        new_hash: null,
        new_kind: 'symlink',
        new_target: '../a.txt',
      },
    ]);
  });

  it('both sides of a move pass the history validation written and read back; recordSkipped counts', async () => {
    const state = tree({}).dir;
    const files = [
      ...historyEntriesOfTree('/r/t', 0o755, entries, 'removed'),
      ...historyEntriesOfTree('/r/u', 0o755, entries, 'created'),
    ];
    const id = await recordChange(state, DEFAULT_HISTORY_LIMITS, { tool: 'move_path', files });
    await recordSkipped(state);
    const listed = await loadHistory(state);
    expect(listed.invalid).toBe(0);
    expect(listed.skipped).toBe(1);
    expect(listed.changes).toHaveLength(1);
    expect(listed.changes[0]).toMatchObject({ id, tool: 'move_path', files });
  });
});
