/**
 * The undo history's records (src/fs/history.ts): entries for files, directories and links round-trip through the
 * state directory; a record read back is validated strictly (a directory or link entry carrying bytes, a link without
 * its target, old bytes not matching their hash, a file name not matching its id are invalid and counted, never
 * returned); the bounds drop the oldest first and count a record too large to keep.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  historyEntryOf,
  historyFileOf,
  loadHistory,
  recordChange,
  stageChange,
  STALE_STAGED_MS,
} from '../../src/fs/history.js';
import { contentHash } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

const LIMITS = { maxChanges: 200, maxBytes: 1024 * 1024 };
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});
function stateDir(): string {
  const t = makeTree();
  cleanups.push(t.cleanup);
  return t.dir;
}

describe('history entries', () => {
  it('describe files, directories and links before and after', () => {
    expect(
      historyEntryOf('/r/a', { kind: 'file', bytes: Buffer.from('x'), mode: 0o100644 }, { kind: 'absent' }),
    ).toEqual({ path: '/r/a', old_base64: 'eA==', old_hash: contentHash('x'), old_mode: 0o644, new_hash: null });
    expect(historyEntryOf('/r/d', { kind: 'absent' }, { kind: 'directory' })).toEqual({
      path: '/r/d',
      old_base64: null,
      old_hash: null,
      old_mode: null,
      new_hash: null,
      new_kind: 'directory',
    });
    expect(historyEntryOf('/r/d', { kind: 'directory', mode: 0o40750 }, { kind: 'absent' })).toMatchObject({
      old_kind: 'directory',
      old_mode: 0o750,
    });
    expect(historyEntryOf('/r/l', { kind: 'symlink', target: 'a' }, { kind: 'symlink', target: 'b' })).toMatchObject({
      old_kind: 'symlink',
      old_target: 'a',
      new_kind: 'symlink',
      new_target: 'b',
      new_hash: null,
    });
    expect(historyEntryOf('/r/f', { kind: 'absent' }, { kind: 'file', hash: contentHash('y') }).new_hash).toBe(
      contentHash('y'),
    );
  });

  it('round-trip through the state directory, newest last', async () => {
    const dir = stateDir();
    const files = [
      historyEntryOf('/r/d', { kind: 'absent' }, { kind: 'directory' }),
      historyEntryOf('/r/l', { kind: 'symlink', target: '../t' }, { kind: 'absent' }),
      historyFileOf('/r/f', Buffer.from('old'), 0o644, contentHash('new')),
    ];
    const first = await recordChange(dir, LIMITS, { tool: 'create_directory', files: files.slice(0, 1) });
    const second = await recordChange(dir, LIMITS, { tool: 'delete_path', files: files.slice(1) });
    const loaded = await loadHistory(dir);
    expect(loaded.changes.map((c) => c.id)).toEqual([first, second]);
    expect(loaded.changes[1].files).toEqual(files.slice(1));
    expect(loaded.invalid).toBe(0);
  });

  it.each([
    ['a directory entry with bytes', { old_kind: 'directory', old_base64: 'eA==', old_hash: contentHash('x') }],
    ['a link entry without its target', { new_kind: 'symlink' }],
    ['a link target with NUL', { new_kind: 'symlink', new_target: 'a\0b' }],
    ['a target on a non-link', { new_target: 'a' }],
    ['bytes not matching their hash', { old_base64: 'eA==', old_hash: contentHash('y') }],
  ])('ignore a record with %s (counted invalid)', async (_label, patch) => {
    const dir = stateDir();
    const id = await recordChange(dir, LIMITS, {
      tool: 'write_file',
      files: [historyFileOf('/r/f', null, null, contentHash('n'))],
    });
    const file = path.join(dir, 'history', `${id}.json`);
    const record = {
      id,
      tool: 'write_file',
      created_at: new Date().toISOString(),
      files: [{ path: '/r/f', old_base64: null, old_hash: null, old_mode: null, new_hash: null, ...patch }],
    };
    writeFileSync(file, JSON.stringify(record));
    const loaded = await loadHistory(dir);
    expect(loaded.changes).toEqual([]);
    expect(loaded.invalid).toBe(1);
  });

  it('drop the oldest beyond the count bound and skip a record alone over the byte bound', async () => {
    const dir = stateDir();
    const one = (n: number) => ({
      tool: 'write_file',
      files: [historyFileOf(`/r/${n}`, null, null, contentHash(`${n}`))],
    });
    for (let n = 0; n < 4; n++) await recordChange(dir, { maxChanges: 2, maxBytes: 1024 * 1024 }, one(n));
    const loaded = await loadHistory(dir);
    expect(loaded.changes.map((c) => c.files[0].path)).toEqual(['/r/2', '/r/3']);
    expect(loaded.dropped).toBe(2);
    const skipped = await recordChange(dir, { maxChanges: 10, maxBytes: 10 }, one(9));
    expect(skipped).toBeNull();
    expect((await loadHistory(dir)).skipped).toBe(1);
    expect(readdirSync(path.join(dir, 'history')).filter((n) => n !== 'meta.json')).toHaveLength(2);
  });

  it('writes a record holding large old versions byte for byte as JSON.stringify would, and reads it back', async () => {
    const dir = stateDir();
    // Over the size from which the base64 is copied into the record as it is (not through JSON.stringify); the paths
    // need escaping (a quote, a backslash, a control character, non-ASCII), and a small entry sits between two large.
    const big = Buffer.alloc(300_000, 'é\n\u0001');
    const other = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 256));
    const files = [
      historyFileOf('/r/"quoted"\\dir/ünï\tcode.txt', big, 0o100600, contentHash('new')),
      historyFileOf('/r/small', Buffer.from('s'), 0o644, null, contentHash('s')),
      historyEntryOf('/r/link', { kind: 'symlink', target: 'a"b' }, { kind: 'absent' }),
      historyFileOf('/r/binary', other, 0o755, contentHash('x')),
    ];
    const id = await recordChange(dir, { maxChanges: 10, maxBytes: 8 * 1024 * 1024 }, { tool: 'edit_file', files });
    const text = readFileSync(path.join(dir, 'history', `${id}.json`), 'utf8');
    const parsed = JSON.parse(text) as { files: unknown[] };
    expect(JSON.stringify(parsed)).toBe(text);
    expect(parsed.files).toEqual(files);
    const loaded = await loadHistory(dir);
    expect(loaded.invalid).toBe(0);
    expect(loaded.changes[0].files).toEqual(files);
    expect(Buffer.from(loaded.changes[0].files[0].old_base64!, 'base64').equals(big)).toBe(true);
    // The bound counts the spliced bytes too: the same change over a bound it exceeds is skipped, nothing written.
    const skipped = await recordChange(dir, { maxChanges: 10, maxBytes: 300_000 }, { tool: 'edit_file', files });
    expect(skipped).toBeNull();
    expect(readdirSync(path.join(dir, 'history')).filter((n) => n !== 'meta.json')).toEqual([`${id}.json`]);
  });

  it('is empty without a history directory', async () => {
    expect(await loadHistory(stateDir())).toMatchObject({ changes: [], invalid: 0, dropped: 0, skipped: 0 });
  });
});

describe('staged records', () => {
  const change = { tool: 'write_file', files: [historyFileOf('/r/f', Buffer.from('old'), 0o644, contentHash('new'))] };

  it('publish makes the record visible before the commit; discard after publish removes it', async () => {
    const dir = stateDir();
    const staged = await stageChange(dir, LIMITS, change);
    expect((await loadHistory(dir)).changes).toEqual([]);
    await staged.publish();
    await staged.publish(); // once only
    const listed = (await loadHistory(dir)).changes;
    expect(listed.map((c) => c.files[0].path)).toEqual(['/r/f']);
    staged.discard();
    expect((await loadHistory(dir)).changes).toEqual([]);
    expect(readdirSync(path.join(dir, 'history'))).toEqual([]);
  });

  it('commit after publish keeps the one record; a staged temporary older than STALE_STAGED_MS is removed', async () => {
    const dir = stateDir();
    const first = await stageChange(dir, LIMITS, change);
    const history = path.join(dir, 'history');
    const oldMs = String(Date.now() - STALE_STAGED_MS - 60_000).padStart(15, '0');
    const freshMs = String(Date.now()).padStart(15, '0');
    const stale = path.join(history, `${oldMs}-aaaaaaaaaaaa.json.abcdef01.tmp`);
    const fresh = path.join(history, `${freshMs}-bbbbbbbbbbbb.json.abcdef02.tmp`);
    const other = path.join(history, `${oldMs}-cccccccccccc.json.tmp`);
    for (const f of [stale, fresh, other]) writeFileSync(f, '{}');
    await first.publish();
    const id = await first.commit();
    expect((await loadHistory(dir)).changes.map((c) => c.id)).toEqual([id]);
    expect([existsSync(stale), existsSync(fresh), existsSync(other)]).toEqual([false, true, true]);
  });
});
