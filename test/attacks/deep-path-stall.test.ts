/**
 * Deep paths held the event loop (docs/security.md "Bounded work"): the cost of resolving, locking and checking a path
 * grows with the square of its depth — realpath(3) reads every prefix again, the path locks and the git-directory and
 * .gitignore checks visit every ancestor. In a root holding a chain `a/a/…/a/f.txt` 1,900 levels deep (a path string
 * of ~3,800 bytes, under PATH_MAX), read_file held the server 235–490 ms, stat 370–420 ms, list_directory 420–450 ms
 * and write_file 1.7–2.8 s; a short path through a symlink to the deep directory (`link -> a/a/…/a`, the kind of link a
 * hostile repository can hold) cost the same. Now a path of more than MAX_PATH_COMPONENTS components, as spelled or as
 * its links resolve, is VALIDATION `path_too_deep` before any work per ancestor, and the walks do not offer entries
 * past the bound (they count them as skipped `too_deep`). Run against the real server over stdio while a watchdog
 * pings it (test/helpers/stall-watchdog.ts), with an idle second server for the machine's own stalls.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PATH_COMPONENTS, pathComponentCount } from '../../src/fs/path-within.js';
import { envelopeOf, StallSession } from '../helpers/stall-watchdog.js';
import { makeTree } from '../helpers/tree.js';

/** The worst stall allowed on the 2-core machines the suite runs on, ms (as test/attacks/bounded-work.test.ts). */
const STALL_BOUND_MS = 250;

/** Levels of the deep chain: its path stays under PATH_MAX (2 bytes a level). */
const LEVELS = 1900;

const tree = makeTree({}, 'fs-tools-deep-path-');
const chain = (levels: number) => Array.from({ length: levels }, () => 'a').join('/');
const rootComponents = pathComponentCount(tree.dir);
/** The directory whose own entries are the deepest the server still resolves (MAX_PATH_COMPONENTS). */
const nearCap = chain(MAX_PATH_COMPONENTS - rootComponents - 1);
let session: StallSession;
let idle: StallSession;

beforeAll(async () => {
  // One mkdir for the whole chain (a level at a time from node takes seconds more).
  const made = spawnSync('mkdir', ['-p', chain(LEVELS)], { cwd: tree.dir });
  expect(made.status).toBe(0);
  writeFileSync(path.join(tree.dir, chain(LEVELS), 'f.txt'), 'needle deep\n');
  // A needle just inside the bound and one just past it.
  writeFileSync(path.join(tree.dir, nearCap, 'n.txt'), 'needle in\n');
  writeFileSync(path.join(tree.dir, nearCap, 'a/a/n.txt'), 'needle out\n');
  // A short path to the deep directory: a relative target of 3,800 bytes.
  symlinkSync(chain(LEVELS), path.join(tree.dir, 'link'));
  // A repository whose core.hooksPath leads through a link to the deep directory and then 60 missing components: the
  // hooks guard resolved each ancestor of it with realpath (20 s per write in it).
  const repo = path.join(tree.dir, 'repo');
  mkdirSync(repo);
  expect(spawnSync('git', ['init', '-q', repo]).status).toBe(0);
  symlinkSync(path.join(tree.dir, chain(LEVELS)), path.join(repo, 'deeplink'));
  const hooksPath = `deeplink/${Array.from({ length: 60 }, () => 'm').join('/')}`;
  expect(spawnSync('git', ['-C', repo, 'config', 'core.hooksPath', hooksPath]).status).toBe(0);
  session = await StallSession.start(['--state-dir', '/tmp/fs-tools-deep-state-' + process.pid, tree.dir]);
  idle = await StallSession.start(['--state-dir', '/tmp/fs-tools-deep-idle-' + process.pid, tree.dir]);
  // Start the reader threads and the caches outside the measured calls.
  await session.call('search_files', { path: tree.dir, query: 'zz', output_mode: 'files_with_matches' });
}, 120_000);

afterAll(async () => {
  await session?.close();
  await idle?.close();
  spawnSync('rm', [
    '-rf',
    tree.dir,
    `/tmp/fs-tools-deep-state-${process.pid}`,
    `/tmp/fs-tools-deep-idle-${process.pid}`,
  ]);
});

/** Runs one call on the measured server while the idle one is pinged too; asserts the stall bound. */
async function measured(label: string, tool: string, args: Record<string, unknown>) {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const [busy, calm] = await Promise.all([
    session.watch(() => session.call(tool, args).finally(finish)),
    idle.watch(() => finished),
  ]);
  console.log(`stall ${label}: ${busy.worstStallMs} ms (${busy.elapsedMs} ms; idle ${calm.worstStallMs} ms)`);
  expect(busy.worstStallMs).toBeLessThanOrEqual(Math.max(STALL_BOUND_MS, calm.worstStallMs + STALL_BOUND_MS));
  return busy.value;
}

/** Nothing but what beforeAll made: no g.txt anywhere in the deep directory. */
function expectNothingWritten(): void {
  expect(readdirSync(path.join(tree.dir, chain(LEVELS)))).toEqual(['f.txt']);
  expect(readdirSync(tree.dir).sort()).toEqual(['a', 'link', 'repo']);
}

const deep = `${chain(LEVELS)}/f.txt`;
const cases: Array<[string, string, Record<string, unknown>, boolean]> = [
  ['read_file deep', 'read_file', { path: deep }, false],
  ['stat deep', 'stat', { path: deep }, false],
  ['write_file deep', 'write_file', { path: `${chain(LEVELS)}/g.txt`, content: 'x', expected_hash: 'absent' }, false],
  ['list_directory deep', 'list_directory', { path: chain(LEVELS) }, false],
  ['search_files deep', 'search_files', { path: chain(LEVELS), query: 'needle' }, false],
  ['read_file via link', 'read_file', { path: 'link/f.txt' }, true],
  ['stat via link', 'stat', { path: 'link/f.txt' }, true],
  // g.txt does not exist: resolved by the component walk, which counts components as it splices the link in.
  ['write_file via link', 'write_file', { path: 'link/g.txt', content: 'x', expected_hash: 'absent' }, true],
  ['list_directory via link', 'list_directory', { path: 'link' }, true],
  ['search_files via link', 'search_files', { path: 'link', query: 'needle' }, true],
];

describe('a path deeper than the bound', () => {
  it.each(cases)(
    '%s is VALIDATION path_too_deep at once',
    async (label, tool, args, viaLink) => {
      const envelope = envelopeOf(await measured(label, tool, args));
      expect(envelope?.code).toBe('VALIDATION');
      expect(envelope?.details).toEqual({ reason: 'path_too_deep', field: 'path', limit: MAX_PATH_COMPONENTS });
      expect((envelope as unknown as { message: string }).message).toContain(
        viaLink ? 'leads through a symbolic link' : 'is a path of more than 256 components',
      );
      expectNothingWritten();
    },
    120_000,
  );

  it('a path of exactly the bound still resolves; one more component is refused', async () => {
    const inside = await session.call('read_file', { path: `${nearCap}/n.txt` });
    expect(envelopeOf(inside)).toBeNull();
    expect(inside.result.content[0].text).toBe('needle in\n');
    const stat = await session.call('stat', { path: `${nearCap}/n.txt` });
    expect(pathComponentCount(stat.result.structuredContent.path)).toBe(MAX_PATH_COMPONENTS);
    const past = envelopeOf(await session.call('stat', { path: `${nearCap}/a/n.txt` }));
    expect(past?.details.reason).toBe('path_too_deep');
  }, 60_000);
});

describe('paths from repository content', () => {
  it('a write in a repository whose core.hooksPath leads through a link to a deep directory keeps the server answering', async () => {
    const r = await measured('write_file under a deep core.hooksPath', 'write_file', {
      path: 'repo/new.txt',
      content: 'new\n',
      expected_hash: 'absent',
    });
    expect(envelopeOf(r)).toBeNull();
    expect(readFileSync(path.join(tree.dir, 'repo', 'new.txt'), 'utf8')).toBe('new\n');
  }, 120_000);
});

describe('walks near the bound', () => {
  it('list_directory offers nothing past it and says what it left out', async () => {
    const base = chain(MAX_PATH_COMPONENTS - rootComponents - 4);
    const r = await measured('list_directory near the bound', 'list_directory', { path: base, depth: 20 });
    expect(envelopeOf(r)).toBeNull();
    const listed = r.result.structuredContent;
    // a, a/a, a/a/a (255 components) and its entries a/a/a/a and a/a/a/n.txt (256): the entries of a/a/a/a are not.
    expect(listed.entries).toEqual(['a/', 'a/a/', 'a/a/a/', 'a/a/a/a/', 'a/a/a/n.txt']);
    expect(listed.skipped).toEqual({ unreadable: 0, name_too_long: 0, too_deep: 1 });
    expect(r.result.content[0].text).toContain('1 directories not listed: deeper than 256 path components');
    // Every offered entry resolves.
    const deepest = await session.call('stat', { path: `${base}/a/a/a/a` });
    expect(envelopeOf(deepest)).toBeNull();
  }, 60_000);

  it('search_files finds the needle inside the bound only, and counts the rest too_deep', async () => {
    const base = chain(MAX_PATH_COMPONENTS - rootComponents - 10);
    const r = await measured('search_files near the bound', 'search_files', {
      path: base,
      query: 'needle',
      output_mode: 'files_with_matches',
    });
    expect(envelopeOf(r)).toBeNull();
    expect(r.result.structuredContent.files).toEqual([`${chain(9)}/n.txt`]);
    expect(r.result.structuredContent.skipped.too_deep).toBe(1);
    expect(existsSync(path.join(tree.dir, nearCap, 'a/a/n.txt'))).toBe(true);
  }, 60_000);
});
