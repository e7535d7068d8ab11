/**
 * The whole-file facts cache behind read_file, against the real server (src/fs/content-cache.ts, SPEC §5: the hash
 * always covers the whole file). Pins, through the process a client talks to:
 * - a 3 MB file older than the racy margin is scanned once; later ranges (lines, head, tail, byte offset) return the
 *   same hash, line count and exact bytes as the first read;
 * - a same-size rewrite in place (same inode) is seen by the next read: new hash, new bytes, new line count;
 * - an append and an atomic replace (new inode) are seen likewise;
 * - a file rewritten in place right after it was written (within the racy margin, so possibly within one timestamp
 *   tick) is never served from the cache.
 * The file is made "old" by waiting out the 2 s margin once (ctime cannot be set back).
 */
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  closeSync,
  mkdtempSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';

const sha = (b: string | Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lineOf = (tag: string, i: number) => `${tag} ${String(i).padStart(7, '0')} ${'x'.repeat(30)}\n`;
const content = (tag: string) => Buffer.from(Array.from({ length: 70_000 }, (_, i) => lineOf(tag, i + 1)).join(''));

describe('read_file and the facts cache (real server)', () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-read-cache-')));
  const stateDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-state-')));
  const file = path.join(root, 'big.txt');
  const A = content('AAAA');
  const B = content('BBBB'); // same size, other bytes
  let client: TestClient;

  beforeAll(async () => {
    writeFileSync(file, A);
    client = await connect('legacy', { args: [root, '--state-dir', stateDir] });
    await sleep(2300); // older than the racy margin
  });
  afterAll(async () => {
    await client?.close();
    rmSync(root, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('later ranges agree with the first read, and in-place, append and replace changes are seen', async () => {
    const first = await client.callOk('read_file', { path: file, start_line: 35_000, end_line: 35_002 });
    expect(first.content).toBe(lineOf('AAAA', 35_000) + lineOf('AAAA', 35_001) + lineOf('AAAA', 35_002));
    expect([first.content_hash, first.total_lines, first.size]).toEqual([sha(A), 70_000, A.length]);
    for (const args of [
      { start_line: 69_999 },
      { head: 2 },
      { tail: 3 },
      { offset: A.length - lineOf('AAAA', 1).length },
    ]) {
      const r = await client.callOk('read_file', { path: file, ...args });
      expect([r.content_hash, r.total_lines]).toEqual([sha(A), 70_000]);
      // Issue #15: a range states its lines; its bytes only when read from an offset (or cut, or base64).
      const lines = A.toString()
        .split('\n')
        .slice(r.range.start_line - 1, r.range.end_line);
      expect(r.content).toBe(lines.map((l: string) => `${l}\n`).join(''));
      if ('offset' in args) expect(r.range.start_byte).toBe(args.offset);
      else expect(r.range).not.toHaveProperty('start_byte');
    }
    expect((await client.callOk('read_file', { path: file, tail: 1 })).content).toBe(lineOf('AAAA', 70_000));

    await sleep(50); // a later timestamp tick for the rewrite
    const fd = openSync(file, 'r+');
    writeSync(fd, B, 0, B.length, 0);
    closeSync(fd);
    const rewritten = await client.callOk('read_file', { path: file, start_line: 35_000, end_line: 35_000 });
    expect([rewritten.content_hash, rewritten.content]).toEqual([sha(B), lineOf('BBBB', 35_000)]);

    await sleep(50);
    appendFileSync(file, 'tail line\n');
    const appended = await client.callOk('read_file', { path: file, tail: 1 });
    expect([appended.content, appended.total_lines, appended.content_hash]).toEqual([
      'tail line\n',
      70_001,
      sha(Buffer.concat([B, Buffer.from('tail line\n')])),
    ]);

    const next = path.join(root, 'next.txt');
    writeFileSync(next, A);
    renameSync(next, file);
    const replaced = await client.callOk('read_file', { path: file, start_line: 2, end_line: 2 });
    expect([replaced.content_hash, replaced.content]).toEqual([sha(A), lineOf('AAAA', 2)]);
  });

  it('a file rewritten in place right after being written is read afresh (racy timestamps)', async () => {
    const fresh = path.join(root, 'fresh.txt');
    writeFileSync(fresh, A);
    const one = await client.callOk('read_file', { path: fresh, head: 1 });
    const fd = openSync(fresh, 'r+'); // immediately: quite possibly the same mtime/ctime tick
    writeSync(fd, B, 0, B.length, 0);
    closeSync(fd);
    const two = await client.callOk('read_file', { path: fresh, head: 1 });
    expect([one.content_hash, two.content_hash]).toEqual([sha(A), sha(B)]);
    expect(two.content).toBe(lineOf('BBBB', 1));
  });
});
