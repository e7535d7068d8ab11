/**
 * The view's reuse tied to the file system's own clock (`fsTimeNow`, src/vcs/git-materialize.ts; docs/security.md
 * "What git may read") on a file system whose stamps have whole seconds (ext4 with 128-byte inodes, loop-mounted; as
 * root only, skipped elsewhere). There the clock rule would keep an object-store listing a few milliseconds after its
 * directory changed, once the second had turned: sound only while the system clock never steps back, and a step back
 * of under a second (a leap second, an NTP step) makes the seconds just past come round again, so a change then shows
 * the very stamp that was kept. The 2 s rule survives any step back under 2 s: on such a file system only it applies.
 * Attack found in review (session 11): the listing was kept 0.1–1 s after the change.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { gitViewAccess } from '../../src/policy/git-access.js';
import { gitStatus, openRepository } from '../../src/vcs/git.js';
import { clearViewCaches, viewCaches } from '../../src/vcs/git-view-cache.js';

/** A loop-mounted ext4 with 128-byte inodes (whole-second stamps), or null when this process cannot make one. */
function mountCoarse(): { dir: string; cleanup: () => void } | null {
  if (process.getuid?.() !== 0) return null;
  const work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-coarse-'));
  const image = path.join(work, 'image');
  const dir = path.join(work, 'mnt');
  try {
    mkdirSync(dir);
    writeFileSync(image, Buffer.alloc(0));
    execFileSync('truncate', ['-s', '16M', image]);
    execFileSync('mkfs.ext4', ['-q', '-F', '-I', '128', image], { stdio: 'ignore' });
    execFileSync('mount', ['-o', 'loop', image, dir], { stdio: 'ignore' });
  } catch {
    rmSync(work, { recursive: true, force: true });
    return null;
  }
  return {
    dir,
    cleanup: () => {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
  };
}

const coarse = mountCoarse();
afterAll(() => coarse?.cleanup());

describe.skipIf(coarse === null)('a file system with whole-second stamps', () => {
  it('keeps an object-store listing only 2 s after its directory changed, not once the second has turned', async () => {
    const mnt = coarse!.dir;
    // The server's private dirs and its clock file on the same file system as the repository.
    const savedTmp = process.env.TMPDIR;
    process.env.TMPDIR = mnt;
    try {
      const root = path.join(mnt, 'root');
      const dir = path.join(root, 'r');
      mkdirSync(dir, { recursive: true });
      const env = { HOME: mnt, PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1' };
      const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, env, encoding: 'utf8' });
      git('init', '-q', '-b', 'main');
      writeFileSync(path.join(dir, 'a.txt'), 'a\n');
      git('add', '-A');
      git('-c', 'user.name=t', '-c', 'user.email=t@e.invalid', 'commit', '-q', '-m', 'i');
      const fanout = path.join(dir, '.git', 'objects', git('rev-parse', 'HEAD:a.txt').slice(0, 2));
      const policy = {
        roots: [{ given: root, real: root, source: 'cli' }],
        allowSecrets: false,
        policy: { rules: [] },
      } as unknown as PolicyContext;
      const status = async () => {
        const view = await openRepository(dir, gitViewAccess(policy), { timeoutMs: 30_000 });
        try {
          await gitStatus(view, { timeoutMs: 30_000 });
        } finally {
          await view.dispose();
        }
      };
      await status(); // the clock file made, on this file system (os.tmpdir() is read at the first call)
      clearViewCaches();
      writeFileSync(path.join(fanout, 'f'.repeat(38)), ''); // the directory changes now...
      const changed = statSync(fanout).ctimeMs;
      expect(changed % 1000).toBe(0); // whole-second stamps
      // ...and is listed once the second has turned, well within 2 s of the change.
      await new Promise((r) => setTimeout(r, changed + 1100 - Date.now()));
      await status();
      expect(Date.now() - changed).toBeLessThan(1900);
      expect(viewCaches.listings.has(fanout)).toBe(false);
    } finally {
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
    }
  });
});
