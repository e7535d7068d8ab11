/**
 * Attack on content summaries (native/fs_tools_native_summary.c; docs/security.md "Content summaries"): the key
 * (device, inode, size, mtime, ctime) names a file only while one file system stays mounted. A disk file system keeps
 * inode numbers and times on disk, and a device number is given again to the next file system attached to the same
 * device: unmount a file system and mount another image of it (a restored snapshot or backup, a swapped disk) in the
 * same place, and a file whose bytes differ shows exactly the old key. The server's table outlives the mount, so a
 * later search skips the file — a miss that a fresh read (`--native=off`) finds.
 *
 * Real server over stdio on a loop-mounted ext2 image (root, losetup and mkfs.ext2 only; skipped otherwise):
 * - image A holds `mnt/f.txt` without the needle; two searches (remember the directory, store the summary);
 * - image B is A's bytes with the file's data changed in place (same length: inode and times untouched);
 * - A is unmounted, B attached to the same loop device and mounted at the same place: the stamp is shown unchanged;
 * - search_files must find the needle, as a server with `--native=off` does.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const hasAddon = process.platform === 'linux' && loadBuiltAddon() !== null;
const tools = ['losetup', 'mkfs.ext2', 'mount', 'umount'].every(
  (t) => spawnSync('sh', ['-c', `command -v ${t}`], { stdio: 'ignore' }).status === 0,
);
const scratch = makeTree({ root: {} }, 'fs-tools-summary-remount-');
/** Whether this process can attach a loop device and mount an ext2 image (root in a container may not): a probe. */
function canLoopMount(): boolean {
  if (!hasAddon || !tools || process.getuid?.() !== 0) return false;
  const image = path.join(scratch.dir, 'probe.img');
  const dir = path.join(scratch.dir, 'probe');
  mkdirSync(dir);
  const ok = (cmd: string, ...args: string[]) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
  if (!ok('truncate', '-s', '1M', image) || !ok('mkfs.ext2', '-q', image) || !ok('mount', '-o', 'loop', image, dir)) {
    return false;
  }
  return ok('umount', dir);
}
const usable = canLoopMount();
const ROOT = path.join(scratch.dir, 'root');
const MNT = path.join(ROOT, 'mnt');
afterAll(() => scratch.cleanup());

const run = (cmd: string, ...args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' }).trim();
const stampOf = (file: string) =>
  (({ dev, ino, size, mtimeMs, ctimeMs }) => ({ dev, ino, size, mtimeMs, ctimeMs }))(statSync(file, { bigint: true }));
const OLD = 'MARKER_PLACEHOLDER_0001';
const NEW = 'needle_remount_________';

describe.runIf(usable)('another image of the file system mounted in the same place', () => {
  it('search_files finds the needle in the file of the new mount, as --native=off does', async () => {
    mkdirSync(MNT);
    const a = path.join(scratch.dir, 'a.img');
    const b = path.join(scratch.dir, 'b.img');
    writeFileSync(a, Buffer.alloc(0));
    run('truncate', '-s', '4M', a);
    run('mkfs.ext2', '-q', a);
    const loop = run('losetup', '--find', '--show', a);
    let mounted = false;
    const client = await connect('modern', { args: [ROOT] });
    try {
      run('mount', loop, MNT);
      mounted = true;
      const file = path.join(MNT, 'f.txt');
      writeFileSync(file, `plain text ${OLD} end\n`);
      run('sync');
      await new Promise((r) => setTimeout(r, 2100)); // outside the racy window
      const query = { path: ROOT, query: 'needle_remount' };
      for (let k = 0; k < 3; k++) expect((await client.callOk('search_files', query)).files_scanned).toBe(1);
      const stamp = stampOf(file);
      run('umount', '-l', MNT);
      mounted = false;
      run('losetup', '-d', loop);
      const image = readFileSync(a);
      const at = image.indexOf(OLD);
      expect(at).toBeGreaterThan(0);
      image.write(NEW, at, 'latin1');
      writeFileSync(b, image);
      // The lazily unmounted file system lets its device go once nothing holds it (the server's reader threads close
      // the directories they keep when they go idle): attach B to the same device as soon as it is free.
      for (let i = 0; spawnSync('losetup', [loop, b], { stdio: 'ignore' }).status !== 0; i++) {
        if (i >= 100) throw new Error(`${loop} stayed busy`);
        await new Promise((r) => setTimeout(r, 100));
      }
      run('mount', loop, MNT);
      mounted = true;
      // Armed: the file holds the needle and shows the old stamp.
      expect(readFileSync(file, 'latin1')).toContain('needle_remount');
      expect(stampOf(file)).toEqual(stamp);
      const after = await client.callOk('search_files', query);
      const off = await connect('modern', { args: ['--native=off', ROOT] });
      try {
        const fresh = await off.callOk('search_files', query);
        expect(fresh.files_matched).toBe(1);
        expect(after).toEqual(fresh);
      } finally {
        await off.close();
      }
    } finally {
      await client.close();
      if (mounted) spawnSync('umount', ['-l', MNT]);
      spawnSync('losetup', ['-d', loop]);
    }
  }, 60_000);
});
