/**
 * Attack (docs/security.md "What git may read", "Bounded work"): a directory of 200,000 entries swapped into a
 * repository's loose-object fan-out directory (`.git/objects/ab/`), or into the fan-out directory of an alternate it
 * names, held the server's event loop while the view verified the object stores: the thread pool's listing came back
 * as one array of 200,000 entries, turned into entries and sorted in one go — 100–160 ms for one git_status or
 * git_diff call, 470–670 ms for two of each at once (their listings arrived back to back; load average 2.8). Now the
 * listing is read a batch at a time between slicer checks. Real server over stdio, real git, a watchdog pinging it
 * (test/helpers/stall-watchdog.ts) and an idle second server for the machine's own stalls. Before each call an entry
 * of the big directory is renamed, so the listing cannot come from the view's cache (an attacker can do the same
 * between any two calls). A link to an outside file among the 200,000 entries is still found and refused.
 */
import { spawnSync } from 'node:child_process';
import { linkSync, mkdirSync, readdirSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelopeOf, StallSession, type RpcResponse } from '../helpers/stall-watchdog.js';
import { makeTree, manyFilesTmpdir } from '../helpers/tree.js';
import { MAX_PACK_FILES } from '../../src/vcs/git-objects.js';
import { isolatedGit } from '../helpers/isolated-git.js';

/** The worst stall allowed on the 2-core machines the suite runs on, ms (as test/attacks/bounded-work.test.ts). */
const STALL_BOUND_MS = 250;

/** Entries of the swapped-in fan-out directory. */
const ENTRIES = 200_000;

// On tmpfs where there is one (test/helpers/tree.ts manyFilesTmpdir): the 200,000 links are the server's listing work,
// not the disk's.
const tree = makeTree(
  { home: {}, root: {}, outside: { 'secret.txt': 'outside\n' } },
  'fs-tools-objstall-',
  manyFilesTmpdir(),
);
const HOME = path.join(tree.dir, 'home');
const ROOT = path.join(tree.dir, 'root');
const REPO = path.join(ROOT, 'repo');
const BASE = path.join(ROOT, 'base');
const ALT = path.join(ROOT, 'alt');
const PACKS = path.join(ROOT, 'packs');
/** The big directory while it is not swapped in (outside the roots, on the same file system). */
const PARKED = path.join(tree.dir, 'big');
let here = PARKED;
let turn = 0;
let session: StallSession;
let idle: StallSession;

/** git in `cwd`, isolated from this machine's git configuration and GIT_* variables (test/helpers/isolated-git.ts). */
const git = (cwd: string, ...args: string[]): string => isolatedGit(cwd, HOME, ...args);

/** A repository at `dir` with one commit, its objects packed (no loose object: every fan-out name is free). */
function committedRepo(dir: string): void {
  mkdirSync(dir);
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'i');
  git(dir, 'repack', '-adq');
  git(dir, 'prune-packed');
}

/** Renames one entry of the big directory: its listing cannot come from the view's cache. */
function relist(): void {
  renameSync(path.join(here, `t${turn}`), path.join(here, `t${turn + 1}`));
  turn++;
}

/** Moves the big directory to `to` (a fan-out directory's path) and renames one entry in it. */
function swapIn(to: string): void {
  renameSync(here, to);
  here = to;
  relist();
}

beforeAll(async () => {
  // 200,000 names like loose objects: hard links to a few empty files (a link is one syscall; ext4 allows 65,000 a
  // file), made in half the time of as many files.
  mkdirSync(PARKED);
  const seeds = Array.from({ length: 4 }, (_, n) => path.join(PARKED, `t${n === 0 ? 0 : `seed${n}`}`));
  for (const seed of seeds) writeFileSync(seed, '');
  for (let i = 1; i <= ENTRIES; i++) linkSync(seeds[i % 4], path.join(PARKED, String(i).padStart(38, '0')));
  committedRepo(REPO);
  writeFileSync(path.join(REPO, 'a.txt'), 'a\nchanged\n');
  committedRepo(BASE);
  // alt borrows base's objects through objects/info/alternates (and has none of its own).
  git(ROOT, 'clone', '-q', '--shared', BASE, ALT);
  writeFileSync(path.join(ALT, 'a.txt'), 'a\nchanged in alt\n');
  committedRepo(PACKS);
  const args = (name: string) => ['--state-dir', path.join(tree.dir, name), ROOT];
  session = await StallSession.start(args('state'));
  idle = await StallSession.start(args('idle-state'));
  // Start git and the caches outside the measured calls.
  for (const p of [REPO, ALT]) expect(envelopeOf(await session.call('git_status', { path: p }))).toBeNull();
}, 120_000);

afterAll(async () => {
  await session?.close();
  await idle?.close();
  spawnSync('rm', ['-rf', tree.dir]);
});

/**
 * Runs `calls` at once on the measured server (concurrent calls each list the directory; their listings used to
 * arrive back to back) while the idle one is pinged too; asserts the stall bound and that no call failed INTERNAL.
 */
async function measured(label: string, calls: Array<[string, Record<string, unknown>]>): Promise<RpcResponse[]> {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const [busy, calm] = await Promise.all([
    session.watch(() => Promise.all(calls.map(([tool, args]) => session.call(tool, args))).finally(finish)),
    idle.watch(() => finished),
  ]);
  console.log(`stall ${label}: ${busy.worstStallMs} ms (${busy.elapsedMs} ms; idle ${calm.worstStallMs} ms)`);
  expect(JSON.stringify(busy.value)).not.toContain('INTERNAL');
  expect(busy.worstStallMs).toBeLessThanOrEqual(Math.max(STALL_BOUND_MS, calm.worstStallMs + STALL_BOUND_MS));
  return busy.value;
}

/** The call's structured result (it must not be an error). */
function resultOf(r: RpcResponse): Record<string, any> {
  expect(envelopeOf(r)).toBeNull();
  return r.result.structuredContent as Record<string, any>;
}

/** git_status and git_diff of `repo`, twice each at once, after the big directory was moved to `fanOut`. */
async function statusAndDiff(label: string, fanOut: string, repo: string, added: string): Promise<void> {
  swapIn(fanOut);
  const answers = await measured(label, [
    ['git_status', { path: repo }],
    ['git_diff', { path: repo }],
    ['git_status', { path: repo }],
    ['git_diff', { path: repo }],
  ]);
  const [status, diff, status2, diff2] = answers.map(resultOf);
  expect(status.entries.map((e: { path: string }) => e.path)).toEqual(['a.txt']);
  expect(status2.status_hash).toBe(status.status_hash);
  expect(diff.diff).toContain(`+${added}\n`);
  expect(diff2.diff).toBe(diff.diff);
}

describe('a fan-out directory of 200,000 entries', () => {
  it("in the repository's own object store: git_status and git_diff answer without holding the server", async () => {
    await statusAndDiff('own store', path.join(REPO, '.git', 'objects', 'ab'), REPO, 'changed');
  }, 60_000);

  it("in an alternate's object store: git_status and git_diff answer without holding the server", async () => {
    await statusAndDiff('alternate', path.join(BASE, '.git', 'objects', 'cd'), ALT, 'changed in alt');
  }, 60_000);

  it('a link to an outside file among them is still found: NOT_ALLOWED, and the server keeps answering', async () => {
    swapIn(path.join(REPO, '.git', 'objects', 'ab'));
    const link = path.join(here, 'ff'.repeat(19));
    symlinkSync(path.join(tree.dir, 'outside', 'secret.txt'), link);
    try {
      const [answer] = await measured('outside link', [['git_status', { path: REPO }]]);
      const envelope = envelopeOf(answer);
      expect(envelope?.code).toBe('NOT_ALLOWED');
      expect(JSON.stringify(envelope)).not.toContain(path.join(tree.dir, 'outside'));
    } finally {
      unlinkSync(link);
    }
    // Parked again, the repository answers as before.
    renameSync(here, PARKED);
    here = PARKED;
    expect(resultOf(await session.call('git_status', { path: REPO })).entries).toHaveLength(1);
  }, 60_000);
});

describe('a pack directory of more pack files than the mirror takes', () => {
  it(`up to ${MAX_PACK_FILES} pack files in all are mirrored; one more is VALIDATION unsupported_repository`, async () => {
    const pack = path.join(PACKS, '.git', 'objects', 'pack');
    const packName = /^pack-[0-9a-f]{40}\.(?:pack|idx|rev)$/;
    const real = readdirSync(pack).filter((n) => packName.test(n)).length;
    const seed = path.join(tree.dir, 'seed.idx');
    writeFileSync(seed, '');
    const fake = (i: number) => path.join(pack, `pack-${i.toString(16).padStart(40, '0')}.idx`);
    for (let i = 0; i < MAX_PACK_FILES - real; i++) linkSync(seed, fake(i));
    // At the cap: mirrored and given to git, which finds the empty indexes unreadable (its answer, not the cap's).
    const [atCap] = await measured('pack files at the cap', [['git_status', { path: PACKS }]]);
    expect(envelopeOf(atCap)?.details.reason).not.toBe('unsupported_repository');
    linkSync(seed, fake(MAX_PACK_FILES - real));
    const [past] = await measured('pack files past the cap', [['git_status', { path: PACKS }]]);
    const envelope = envelopeOf(past);
    expect(envelope?.code).toBe('VALIDATION');
    expect(envelope?.details).toMatchObject({ reason: 'unsupported_repository', limit: MAX_PACK_FILES });
    expect(envelope?.details.file).toBe(path.join(PACKS, '.git', 'objects'));
  }, 60_000);
});
