/**
 * Attack on issue #19's held directories (read_file keeps up to 16 verified directory descriptors open between calls,
 * src/fs/verified-dir.ts `withHeldDirSync`), against the real server over stdio. Pins:
 *  - an idle server holds no directory: after HELD_DIRS_IDLE_MS without a read, none of the directories it read from
 *    is open in the server process (/proc/PID/fd) — regression: they stayed open for as long as the server ran;
 *  - so a filesystem the client read a file on can be unmounted afterwards (root only, where tmpfs can be mounted;
 *    skipped elsewhere) — regression: `umount` failed with EBUSY ("target is busy") while the server ran;
 *  - 8 read_file calls in flight at a time while a worker thread swaps an ancestor of their target for a link to an
 *    outside directory and back, for a bounded time (1.5 s): no call ever returns outside content, every failure
 *    is NOT_ALLOWED or NOT_FOUND, and the swap happened during the calls.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELD_DIRS_IDLE_MS } from '../../src/fs/held-dirs.js';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const LINUX_PROC = process.platform === 'linux';

/** The directories under `under` that process `pid` has open now (Linux /proc). */
function openDirsUnder(pid: number, under: string): string[] {
  const found: string[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target === under || target.startsWith(`${under}/`)) found.push(target);
    } catch {
      /* closed meanwhile */
    }
  }
  return found;
}

async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

describe.runIf(LINUX_PROC)('held directories are released when the server is idle', () => {
  const tree = makeTree({ a: { 'x.txt': 'a\n' }, b: { 'x.txt': 'b\n' }, c: { 'x.txt': 'c\n' } }, 'fs-tools-held-');
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('legacy', { args: [tree.dir] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it('closes every held directory once idle', async () => {
    for (const d of ['a', 'b', 'c']) await client.callOk('read_file', { path: `${d}/x.txt` });
    const pid = client.pid()!;
    // They are held right after the reads (so this test can fail) ...
    expect(openDirsUnder(pid, tree.dir).length).toBeGreaterThan(0);
    // ... and released once the server was idle for HELD_DIRS_IDLE_MS.
    expect(await waitUntil(() => openDirsUnder(pid, tree.dir).length === 0, HELD_DIRS_IDLE_MS + 4000)).toBe(true);
    // A read after the release works (opened afresh).
    expect((await client.callOk('read_file', { path: 'a/x.txt' })).content).toBe('a\n');
  });
});

describe.runIf(LINUX_PROC && process.getuid?.() === 0)('a filesystem read from can be unmounted afterwards', () => {
  const tree = makeTree({ mnt: {} }, 'fs-tools-held-mount-');
  const mnt = path.join(tree.dir, 'mnt');
  let mounted = false;
  afterAll(() => {
    if (mounted) execFileSync('umount', ['-l', mnt], { stdio: 'ignore' });
    tree.cleanup();
  });

  it('umount succeeds once the server is idle', async (ctx) => {
    try {
      execFileSync('mount', ['-t', 'tmpfs', 'none', mnt], { stdio: 'ignore' });
      mounted = true;
    } catch {
      ctx.skip(); // no mount permission in this namespace
    }
    mkdirSync(path.join(mnt, 'd'));
    writeFileSync(path.join(mnt, 'd', 'f.txt'), 'on tmpfs\n');
    const client = await connect('legacy', { args: [mnt] });
    try {
      expect((await client.callOk('read_file', { path: 'd/f.txt' })).content).toBe('on tmpfs\n');
      const unmounted = await waitUntil(() => {
        try {
          execFileSync('umount', [mnt], { stdio: 'pipe' });
          return true;
        } catch {
          return false; // EBUSY while a directory on it is held
        }
      }, HELD_DIRS_IDLE_MS + 4000);
      if (unmounted) mounted = false;
      expect(unmounted).toBe(true);
    } finally {
      await client.close();
    }
  });
});

/** Swaps `a` (an ancestor of the target) for a link to `outside` and back until ctl[1] is set; counts in ctl[0]. */
const SWAPPER = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { ctl, a, outside } = workerData;
const aside = a + '.real';
while (Atomics.load(ctl, 1) === 0) {
  try {
    fs.renameSync(a, aside);
    fs.symlinkSync(outside, a);
    Atomics.add(ctl, 0, 1);
    fs.unlinkSync(a);
    fs.renameSync(aside, a);
  } catch {
    try { fs.unlinkSync(a); } catch {}
    try { fs.renameSync(aside, a); } catch {}
  }
}
`;

describe.runIf(LINUX_PROC)('held directories under a racing ancestor swap (real server)', () => {
  const tree = makeTree(
    { root: { a: { d: { 'f.txt': 'inside\n' } } }, out: { d: { 'f.txt': 'OUTSIDE-MARKER\n' } } },
    'fs-tools-held-race-',
  );
  const a = path.join(tree.dir, 'root', 'a');
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('modern', { args: [path.join(tree.dir, 'root')] });
  });
  afterAll(async () => {
    await client.close();
    rmSync(`${a}.real`, { recursive: true, force: true });
    tree.cleanup();
  });

  it('never returns outside content; failures are NOT_ALLOWED or NOT_FOUND', async () => {
    await client.callOk('read_file', { path: 'a/d/f.txt' }); // the directory is now held
    const ctl = new Int32Array(new SharedArrayBuffer(8));
    const worker = new Worker(SWAPPER, { eval: true, workerData: { ctl, a, outside: path.join(tree.dir, 'out') } });
    const codes = new Map<string, number>();
    let ok = 0;
    try {
      const end = Date.now() + 1500;
      const lane = async (): Promise<void> => {
        while (Date.now() < end) {
          const r = await client.call('read_file', { path: 'a/d/f.txt' });
          const text = r.content.map((c) => c.text ?? '').join('');
          expect(text).not.toContain('OUTSIDE-MARKER');
          if (!r.isError) {
            expect(r.structuredContent?.content).toBe('inside\n');
            ok++;
          } else {
            const code = (JSON.parse(text) as { error: { code: string } }).error.code;
            codes.set(code, (codes.get(code) ?? 0) + 1);
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, lane));
    } finally {
      Atomics.store(ctl, 1, 1);
      await new Promise((r) => worker.once('exit', r));
    }
    expect(Atomics.load(ctl, 0)).toBeGreaterThan(0);
    expect([...codes.keys()].filter((c) => c !== 'NOT_ALLOWED' && c !== 'NOT_FOUND')).toEqual([]);
    expect(ok + [...codes.values()].reduce((s, n) => s + n, 0)).toBeGreaterThan(8);
    // The tree is whole again and the server still reads it.
    expect((await client.callOk('read_file', { path: 'a/d/f.txt' })).content).toBe('inside\n');
  });
});
