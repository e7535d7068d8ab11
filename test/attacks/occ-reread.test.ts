/**
 * Review of issue #19's "re-reading unchanged content keeps its OCC snapshot" (src/policy/occ.ts `HashMemory.remember`)
 * and "small reads without copies" (src/fs/read-range.ts scans the bytes read in place), attacked against the real
 * server: a file changed between two reads in ways a stat-based shortcut would miss — rewritten in place with the same
 * size and its mtime set back (touch -d), truncated and rewritten, replaced by a rename — for a small file (read whole,
 * scanned in place) and a larger one (read through a handle). Pins: the second read reports the new content and its
 * hash; an edit with the first read's hash is OCC_MISMATCH and changes nothing; an edit with the second read's hash
 * applies to the new content; the conflict's changed_ranges are computed against the snapshot of exactly the expected
 * version (a snapshot kept for a re-read of unchanged content, replaced when the content changed). And 8 reads in
 * flight while a worker thread rewrites the file in place: every whole-file answer's content_hash and size are those
 * of the very content it returned (the bytes scanned in place are the bytes sent).
 */
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

/** A whole second (utimes keeps it exactly), as `touch -d @1700000000` sets it. */
const T = 1_700_000_000;

/** Rewrites `file` in place (O_TRUNC, same inode) and sets its times back to T, as they were. */
function rewriteKeepingTimes(file: string, content: string): void {
  const before = statSync(file);
  expect(before.mtimeMs).toBe(T * 1000);
  writeFileSync(file, content);
  utimesSync(file, T, T);
  const after = statSync(file);
  expect([after.size, after.mtimeMs, after.ino]).toEqual([before.size, before.mtimeMs, before.ino]);
}

describe('edits after a file changed between reads (real server)', () => {
  const tree = makeTree({ 'small.txt': '', 'large.txt': '' }, 'fs-tools-occ-reread-');
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('modern', { args: [tree.dir] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  for (const [name, pad] of [
    ['small.txt', ''],
    ['large.txt', `${'p'.repeat(99)}\n`.repeat(1000)], // 100 KB: above the small-read size, read through a handle
  ] as const) {
    it(`${name}: same size and mtime, truncate-and-rewrite, rename over`, async () => {
      const file = path.join(tree.dir, name);
      const v = (a: string, b: string, c: string) => `${pad}${a}\n${b}\n${c}\n`;
      const lineOf = (k: number) => pad.split('\n').length - 1 + k; // line k of the three after the padding
      writeFileSync(file, v('one', 'AAAA', 'three'));
      utimesSync(file, T, T);
      const h1 = (await client.callOk('read_file', { path: name })).content_hash as string;
      expect((await client.callOk('read_file', { path: name })).content_hash).toBe(h1); // snapshot kept
      // Same size, same mtime, changed line 2.
      rewriteKeepingTimes(file, v('one', 'BBBB', 'three'));
      const stale = await client.callError('edit_file', {
        path: name,
        expected_hash: h1,
        edits: [{ old_text: 'BBBB', new_text: 'XXXX' }],
      });
      expect(stale.error.code).toBe('OCC_MISMATCH');
      expect(stale.error.conflict.changed_ranges).toEqual([[lineOf(2), lineOf(2)]]);
      expect(readFileSync(file, 'utf8')).toBe(v('one', 'BBBB', 'three'));
      const r2 = await client.callOk('read_file', { path: name });
      expect(r2.content).toBe(v('one', 'BBBB', 'three'));
      const h2 = r2.content_hash as string;
      expect(h2).toBe(sha(v('one', 'BBBB', 'three')));
      // Changed again (line 3), same size and mtime: the conflict is against the second read's snapshot only.
      rewriteKeepingTimes(file, v('one', 'BBBB', 'THREE'));
      const again = await client.callError('edit_file', {
        path: name,
        expected_hash: h2,
        edits: [{ old_text: 'BBBB', new_text: 'XXXX' }],
      });
      expect(again.error.conflict.changed_ranges).toEqual([[lineOf(3), lineOf(3)]]);
      expect(readFileSync(file, 'utf8')).toBe(v('one', 'BBBB', 'THREE'));
      // Replaced by a rename (new inode), content back to the first read's: its hash is current again.
      writeFileSync(`${file}.new`, v('one', 'AAAA', 'three'));
      renameSync(`${file}.new`, file);
      expect(
        (
          await client.callError('edit_file', {
            path: name,
            expected_hash: h2,
            edits: [{ old_text: 'one', new_text: '1' }],
          })
        ).error.code,
      ).toBe('OCC_MISMATCH');
      const r3 = await client.callOk('read_file', { path: name });
      expect(r3.content_hash).toBe(h1);
      await client.callOk('edit_file', {
        path: name,
        expected_hash: h1,
        edits: [{ old_text: 'AAAA', new_text: 'CCCC' }],
      });
      expect(readFileSync(file, 'utf8')).toBe(v('one', 'CCCC', 'three'));
    });
  }

  it('8 reads in flight during in-place rewrites: each answer is self-consistent', async () => {
    const file = path.join(tree.dir, 'small.txt');
    writeFileSync(file, 'start\n');
    const ctl = new Int32Array(new SharedArrayBuffer(8));
    const worker = new Worker(
      `const { workerData: { ctl, file } } = require('node:worker_threads');
       const fs = require('node:fs');
       for (let i = 0; Atomics.load(ctl, 1) === 0; i++) {
         fs.writeFileSync(file, i % 2 ? 'short ' + i + '\\n' : ('long line ' + i + ' é✓\\n').repeat(200));
         Atomics.add(ctl, 0, 1);
       }`,
      { eval: true, workerData: { ctl, file } },
    );
    let checked = 0;
    try {
      const end = Date.now() + 1000;
      const lane = async (): Promise<void> => {
        while (Date.now() < end) {
          const r = await client.call('read_file', { path: 'small.txt' });
          if (r.isError) continue; // e.g. not valid UTF-8 when a write was caught mid-character
          const s = r.structuredContent as { content: string; content_hash: string; size: number };
          expect(s.content_hash).toBe(sha(s.content));
          expect(s.size).toBe(Buffer.byteLength(s.content));
          checked++;
        }
      };
      await Promise.all(Array.from({ length: 8 }, lane));
    } finally {
      Atomics.store(ctl, 1, 1);
      await new Promise((r) => worker.once('exit', r));
    }
    expect(Atomics.load(ctl, 0)).toBeGreaterThan(0);
    expect(checked).toBeGreaterThan(8);
  });
});
