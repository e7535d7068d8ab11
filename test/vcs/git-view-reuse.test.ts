/**
 * What the sanitized view reuses between calls (src/vcs/git-view-cache.ts) never skips a check: with the real git,
 * each case first shows the reuse happened (a cache entry, an unchanged inode), then changes what was checked and
 * shows the next view sees the change:
 * - a loose object replaced by a link leading outside the roots after its fan-out directory's listing was kept →
 *   NOT_ALLOWED;
 * - the repository's index replaced by garbage of the same length after its validation was kept → corrupt_repository;
 * - a work-tree directory of an entry replaced by a link leading outside after the index was kept → NOT_ALLOWED;
 * - an index rewritten in place with its size and mtime kept, after its validation was kept → the change shows (its
 *   bytes are read on every call; test/attacks/git-index-mapped-write.test.ts: not even its ctime need move);
 * - a reused private dir whose object-store mirror or index someone changed is rebuilt, not used as found, also once
 *   their checks were tied to their stamps (a fan-out link replaced by one leading outside, same name).
 * And the listing itself (src/vcs/git-objects.ts): a link among more entries than one batch holds is found wherever it
 * lies, on the first call and after the kept listing's directory changed.
 * With the real clock (`settled` by the file system's own clock, not only 2 s later): a listing, a mirror directory and
 * the private index tied to their stamps a few milliseconds after their last change, then changed right after the call
 * that kept them, are checked again (a link leading outside → NOT_ALLOWED; a mirror link and the index → rewritten).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { gitViewAccess } from '../../src/policy/git-access.js';
import { gitStatus, openRepository } from '../../src/vcs/git.js';
import type { GitView } from '../../src/vcs/git-view.js';
import { clearViewCaches, viewCaches } from '../../src/vcs/git-view-cache.js';
import { blobId } from '../helpers/git-index.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-gitview-reuse-')));
const root = path.join(base, 'root');
const outside = path.join(base, 'outside');
mkdirSync(root);
mkdirSync(outside);
writeFileSync(path.join(outside, 'secret.txt'), 'OUTSIDE\n');
afterAll(() => rmSync(base, { recursive: true, force: true }));

const policy = {
  roots: [{ given: root, real: root, source: 'cli' }],
  allowSecrets: false,
  policy: { rules: [] },
} as unknown as PolicyContext;
const options = { timeoutMs: 30_000 };

function git(cwd: string, ...args: string[]): string {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...env,
      HOME: base,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@e.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@e.invalid',
    },
  });
}

/** A committed repository inside the root with `sub/f.txt` and `a.txt` (loose objects only). */
function repo(name: string): string {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, 'sub'), { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  writeFileSync(path.join(dir, 'sub', 'f.txt'), 'f\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'i');
  return dir;
}

const open = (dir: string): Promise<GitView> => openRepository(dir, gitViewAccess(policy), options);
/** One status through a view, the view disposed; returns the private dir it used. */
async function statusOnce(dir: string): Promise<string> {
  const view = await open(dir);
  try {
    await gitStatus(view, options);
    return (view as unknown as { privateDir: string }).privateDir;
  } finally {
    await view.dispose();
  }
}
const settle = () => new Promise((r) => setTimeout(r, 30));

beforeEach(() => {
  clearViewCaches();
  // Every directory counts as settled (older than the racy window): the listings are kept from the first call.
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.now() + 60_000);
});
afterEach(() => vi.useRealTimers());

describe('reuse between calls', () => {
  it('a loose object that became a link leading outside after its directory listing was kept → NOT_ALLOWED', async () => {
    const dir = repo('loose');
    await statusOnce(dir);
    const blob = git(dir, 'rev-parse', 'HEAD:a.txt').trim();
    const fanout = path.join(dir, '.git', 'objects', blob.slice(0, 2));
    expect(viewCaches.listings.has(fanout)).toBe(true);
    await settle(); // a later timestamp than the kept listing's, whatever the clock's granularity
    const file = path.join(fanout, blob.slice(2));
    renameSync(file, `${file}.moved`);
    symlinkSync(path.join(outside, 'secret.txt'), file);
    const error = await open(dir).then(
      (v) => v.dispose().then(() => null),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe('NOT_ALLOWED');
    expect((error as ToolError).details.reason).toBe('git_location_outside_roots');
    expect(JSON.stringify((error as ToolError).details)).not.toContain(outside);
  });

  it('a link leading outside among 1,000 loose objects (more than one listing batch) → NOT_ALLOWED', async () => {
    const dir = repo('batched');
    const blob = git(dir, 'rev-parse', 'HEAD:a.txt').trim();
    const fanout = path.join(dir, '.git', 'objects', blob.slice(0, 2));
    // Entries git never reads (not 38 hex digits) fill the directory well past one batch of the listing.
    for (let i = 0; i < 1000; i++) writeFileSync(path.join(fanout, `tmp_obj_${i}`), '');
    await statusOnce(dir);
    expect(viewCaches.listings.get(fanout)?.files.length).toBe(1001);
    await settle();
    const file = path.join(fanout, blob.slice(2));
    renameSync(file, `${file}.moved`);
    symlinkSync(path.join(outside, 'secret.txt'), file);
    const error = await open(dir).then(
      (v) => v.dispose().then(() => null),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe('NOT_ALLOWED');
    expect((error as ToolError).details.reason).toBe('git_location_outside_roots');
    expect(viewCaches.listings.get(fanout)?.links).toEqual([blob.slice(2)]);
    expect(viewCaches.listings.get(fanout)?.files.length).toBe(1001);
  });

  it('an index replaced by garbage of the same length after its validation was kept → corrupt_repository', async () => {
    const dir = repo('index');
    await statusOnce(dir);
    const indexFile = path.join(dir, '.git', 'index');
    expect(viewCaches.indexes.has(indexFile)).toBe(true);
    const size = statSync(indexFile).size;
    writeFileSync(indexFile, Buffer.alloc(size, 0x41));
    const error = await open(dir).then(
      (v) => v.dispose().then(() => null),
      (e: unknown) => e,
    );
    expect((error as ToolError).code).toBe('IO_ERROR');
    expect((error as ToolError).details.reason).toBe('corrupt_repository');
  });

  it('an index rewritten in place (same size, its mtime set back) after its validation was kept: the change shows', async () => {
    const dir = repo('stamp');
    const indexFile = path.join(dir, '.git', 'index');
    const clean = readFileSync(indexFile);
    // The same index with `a.txt` (its first entry) staged as "b\n": the same size, another object id.
    const staged = Buffer.from(clean);
    Buffer.from(blobId('b\n'), 'hex').copy(staged, 12 + 40);
    createHash('sha1')
      .update(staged.subarray(0, staged.length - 20))
      .digest()
      .copy(staged, staged.length - 20);
    const seconds = Math.floor(statSync(indexFile).mtimeMs / 1000); // a time utimes can set back exactly
    utimesSync(indexFile, seconds, seconds);
    const before = statSync(indexFile);
    const statusOf = async () => {
      const view = await open(dir);
      try {
        return (await gitStatus(view, options)).raw;
      } finally {
        await view.dispose();
      }
    };
    expect(await statusOf()).not.toMatch(/a\.txt/);
    expect(viewCaches.indexes.has(indexFile)).toBe(true); // its validation kept
    await settle();
    writeFileSync(indexFile, staged); // the same inode, rewritten
    writeFileSync(path.join(dir, 'a.txt'), 'b\n');
    utimesSync(indexFile, seconds, seconds);
    expect(statSync(indexFile).ino).toBe(before.ino);
    expect(statSync(indexFile).mtimeMs).toBe(before.mtimeMs);
    expect(await statusOf()).toMatch(/^1 M\. .* a\.txt$/m);
  });

  it('a kept mirror directory whose fan-out link someone replaced (same name, outside) is rebuilt', async () => {
    const dir = repo('mirrorlink');
    const first = await statusOnce(dir);
    const mirror = path.join(first, 'alt', '0');
    const fanout = readdirSync(mirror).find((n) => /^[0-9a-f]{2}$/.test(n))!;
    const target = readlinkSync(path.join(mirror, fanout));
    expect(await statusOnce(dir)).toBe(first); // the second call tied the mirror's check to its stamp
    expect(viewCaches.stamps.has(mirror)).toBe(true);
    await settle();
    rmSync(path.join(mirror, fanout));
    symlinkSync(outside, path.join(mirror, fanout));
    expect(await statusOnce(dir)).toBe(first);
    expect(readlinkSync(path.join(mirror, fanout))).toBe(target);
  });

  it('an entry directory that became a link leading outside after the index was kept → NOT_ALLOWED', async () => {
    const dir = repo('entrydir');
    await statusOnce(dir);
    expect(viewCaches.indexes.has(path.join(dir, '.git', 'index'))).toBe(true);
    rmSync(path.join(dir, 'sub'), { recursive: true });
    symlinkSync(outside, path.join(dir, 'sub'));
    const error = await open(dir).then(
      (v) => v.dispose().then(() => null),
      (e: unknown) => e,
    );
    expect((error as ToolError).code).toBe('NOT_ALLOWED');
    expect((error as ToolError).details.link).toBe(path.join(dir, 'sub'));
  });

  it('a reused private dir keeps its mirror and index when untouched, and rebuilds what someone changed', async () => {
    const dir = repo('private');
    // The view gives its index the time 1 ms before the repository's, through a Date; pick a repository index time
    // whose view time reads back a fraction of a millisecond off (about half of them do), as the rewrite did.
    const probe = path.join(base, 'probe');
    writeFileSync(probe, '');
    let bad = Math.floor(Date.now() / 1000) * 1000;
    for (; ; bad++) {
      utimesSync(probe, new Date(bad), new Date(bad));
      if (statSync(probe).mtimeMs !== bad) break;
    }
    utimesSync(path.join(dir, '.git', 'index'), (bad + 1.5) / 1000, (bad + 1.5) / 1000);
    const first = await statusOnce(dir);
    expect(statSync(path.join(first, 'index')).mtimeMs).not.toBe(bad);
    const mirror = path.join(first, 'alt', '0');
    const mirrorIno = lstatSync(mirror).ino;
    const index = readFileSync(path.join(first, 'index'));
    const indexStamp = (({ ino, ctimeMs }) => ({ ino, ctimeMs }))(statSync(path.join(first, 'index')));
    await new Promise((r) => setTimeout(r, 20)); // a rewrite would now have a later ctime
    expect(await statusOnce(dir)).toBe(first);
    expect(lstatSync(mirror).ino).toBe(mirrorIno); // kept: not rebuilt
    // Kept too, whatever fraction of a millisecond its time reads back with (it was rewritten on half the calls).
    expect((({ ino, ctimeMs }) => ({ ino, ctimeMs }))(statSync(path.join(first, 'index')))).toEqual(indexStamp);
    // Someone adds a link to the mirror and rewrites the private index (same length, same times).
    symlinkSync(outside, path.join(mirror, 'zz'));
    const indexStat = statSync(path.join(first, 'index'));
    writeFileSync(path.join(first, 'index'), Buffer.alloc(index.length, 0x42));
    utimesSync(path.join(first, 'index'), indexStat.atime, indexStat.mtime);
    expect(await statusOnce(dir)).toBe(first);
    expect(existsSync(path.join(first, 'alt', '0', 'zz'))).toBe(false);
    expect(readdirSync(path.join(first, 'alt', '0')).every((n) => /^[0-9a-f]{2}$|^pack$/.test(n))).toBe(true);
    expect(readFileSync(path.join(first, 'index')).equals(index)).toBe(true);
  });
});

describe('reuse tied to the file system clock (the real clock, no 2 s wait)', () => {
  beforeEach(() => {
    vi.useRealTimers();
    clearViewCaches();
  });
  // The private dirs (and the clock file) lie in os.tmpdir(), like the root: one file system, so its clock applies.
  const sameFs = () => expect(statSync(os.tmpdir()).dev).toBe(statSync(root).dev);

  it('a listing kept 30 ms after its directory changed, then a loose object made a link outside at once → NOT_ALLOWED', async () => {
    sameFs();
    const dir = repo('clock-loose');
    const blob = git(dir, 'rev-parse', 'HEAD:a.txt').trim();
    const fanout = path.join(dir, '.git', 'objects', blob.slice(0, 2));
    await settle(); // one clock tick past the commit, far less than 2 s
    expect(Date.now() - statSync(fanout).ctimeMs).toBeLessThan(2000);
    await statusOnce(dir);
    expect(viewCaches.listings.has(fanout)).toBe(true); // kept: settled by the file system's clock
    const file = path.join(fanout, blob.slice(2));
    renameSync(file, `${file}.moved`); // no wait: within the same clock tick if the machine is fast enough
    symlinkSync(path.join(outside, 'secret.txt'), file);
    const error = await open(dir).then(
      (v) => v.dispose().then(() => null),
      (e: unknown) => e,
    );
    expect((error as ToolError).code).toBe('NOT_ALLOWED');
    expect((error as ToolError).details.reason).toBe('git_location_outside_roots');
  });

  it('a mirror and a private index kept a tick after they were written, then changed at once, are written again', async () => {
    sameFs();
    const dir = repo('clock-private');
    const first = await statusOnce(dir);
    const mirror = path.join(first, 'alt', '0');
    const indexFile = path.join(first, 'index');
    const index = readFileSync(indexFile);
    await settle();
    expect(await statusOnce(dir)).toBe(first); // this call tied both checks to their stamps
    expect(viewCaches.stamps.has(mirror)).toBe(true);
    expect(viewCaches.stamps.has(indexFile)).toBe(true);
    const fanout = readdirSync(mirror).find((n) => /^[0-9a-f]{2}$/.test(n))!;
    const target = readlinkSync(path.join(mirror, fanout));
    rmSync(path.join(mirror, fanout));
    symlinkSync(outside, path.join(mirror, fanout));
    const indexStat = statSync(indexFile);
    writeFileSync(indexFile, Buffer.alloc(index.length, 0x42));
    utimesSync(indexFile, indexStat.atime, indexStat.mtime);
    expect(await statusOnce(dir)).toBe(first);
    expect(readlinkSync(path.join(mirror, fanout))).toBe(target);
    expect(readFileSync(indexFile).equals(index)).toBe(true);
  });
});
