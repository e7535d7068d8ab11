/**
 * Attack kept as a regression test (review of an unmerged change, branch r17-gitstatus; docs/security.md "Links in
 * the work tree"): that change kept the kinds of a parent's entries (link, directory, other, missing) tied to the
 * parent's stamp taken by stat(top/a/b), but found them by lstat(top/a/b/<name>) — a path resolved again, later. A
 * grandparent `a` renamed away and back between the two made the lstat of `a/b/zz` answer ENOENT ("missing") although
 * the directory stat'ed, whose stamp was kept, holds `zz` as a link leading outside; renaming `a` moves neither
 * `a/b`'s mtime nor its ctime, so every later call took "missing" for `zz` and ran git through the link. main looks
 * at every entry directory on every call: every call here must be refused. Real server over stdio, real git.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { isolatedGit } from '../helpers/isolated-git.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {} }, 'fs-tools-entry-kinds-race-');
const HOME = path.join(scratch.dir, 'home');
const ROOT = path.join(scratch.dir, 'root-zone');
const OUTSIDE = path.join(scratch.dir, 'outside-zone');
mkdirSync(ROOT);
mkdirSync(OUTSIDE);
writeFileSync(path.join(OUTSIDE, 'f'), 'OUTSIDE CHANGED\n');
afterAll(() => scratch.cleanup());

const git = (cwd: string, ...args: string[]): string => isolatedGit(cwd, HOME, ...args);

/** Renames `a` away and back in a tight loop until `stop` exists; leaves `a` in place. */
const TOGGLER = `
const fs = require('fs');
const [a, away, stop] = process.argv.slice(1);
for (let i = 0; ; i++) {
  if ((i & 63) === 0 && fs.existsSync(stop)) break;
  try { fs.renameSync(a, away); } catch {}
  try { fs.renameSync(away, a); } catch {}
}
if (!fs.existsSync(a)) fs.renameSync(away, a);
`;

async function toggleDuring<T>(top: string, work: () => Promise<T>): Promise<T> {
  const stop = path.join(scratch.dir, 'stop');
  rmSync(stop, { force: true });
  const child = spawn(process.execPath, ['-e', TOGGLER, path.join(top, 'a'), path.join(top, 'a.away'), stop], {
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await new Promise((resolve) => setTimeout(resolve, 20));
  try {
    return await work();
  } finally {
    writeFileSync(stop, '');
    await exited;
  }
}

describe('entry kinds kept by a parent stamp while a grandparent is renamed', () => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('modern', {
      args: ['--auto-occ=off', '--state-dir', path.join(scratch.dir, 'state'), ROOT],
      env: { HOME, XDG_CONFIG_HOME: HOME },
    });
  }, 60_000);
  afterAll(async () => {
    await client.close();
  });

  it('a work-tree link leading outside is refused on every later call', async () => {
    const top = path.join(ROOT, 'repo');
    const b = path.join(top, 'a', 'b');
    mkdirSync(b, { recursive: true });
    git(top, 'init', '-q', '-b', 'main');
    // Many entry directories in a/b before `zz`: the check of `zz` comes several slices after a/b's stat.
    for (let i = 0; i < 4000; i++) {
      mkdirSync(path.join(b, `c${String(i).padStart(5, '0')}`));
      writeFileSync(path.join(b, `c${String(i).padStart(5, '0')}`, 'f'), '');
    }
    mkdirSync(path.join(b, 'zz'));
    writeFileSync(path.join(b, 'zz', 'f'), 'inside\n');
    git(top, 'add', '-A');
    git(top, 'commit', '-q', '-m', 'i');
    rmSync(path.join(b, 'zz'), { recursive: true });
    symlinkSync(OUTSIDE, path.join(b, 'zz'));
    await new Promise((resolve) => setTimeout(resolve, 2100)); // a/b settled by the 2 s rule
    const first = await client.callError('git_status', { path: top });
    expect(first.error.code).toBe('NOT_ALLOWED');

    const seen: string[] = [];
    for (let attempt = 0; attempt < 10; attempt++) {
      await toggleDuring(top, () => client.call('git_status', { path: top }));
      expect(existsSync(path.join(top, 'a', 'b', 'zz', 'f'))).toBe(true);
      const after = await client.call('git_status', { path: top });
      const text = JSON.stringify(after.structuredContent ?? after.content);
      seen.push(after.isError ? 'refused' : `ok ${text.includes('zz') ? '(names a/b/zz/f)' : ''}`);
      if (!after.isError) {
        // No race any more: every later call runs git through the link.
        const again = await client.call('git_status', { path: top });
        seen.push(again.isError ? 'refused' : `ok again: ${JSON.stringify(again.structuredContent).slice(0, 300)}`);
        break;
      }
    }
    // Every call after the renames, with `a` back in place and a/b/zz a link leading outside, is refused.
    expect(
      seen.filter((s) => s !== 'refused'),
      seen.join('; '),
    ).toEqual([]);
  }, 180_000);
});
