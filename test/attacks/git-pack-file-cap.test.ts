/**
 * Attack (docs/security.md "What git may read", "Bounded work"): the cap of 4,096 pack files "in the repository's and
 * its alternates' `pack` directories together" was checked per store while listing, and for all stores together only
 * after every alternate had been listed and every pack link in it verified (realpath and lstat each). A repository
 * naming up to 64 alternates of 4,096 pack files each was verified whole on every call before it was refused: 16
 * alternates of 4,000 linked pack files took 6.3 s of wall time (3.7 s user CPU) for two git_status calls, against
 * 0.9 s once the cap trips at the first file past it (load average 4.5). Shown here without timing: alternates of
 * 3,000 pack files each, then one whose `pack` directory holds a link outside the roots. Past the cap nothing more is
 * verified, so the answer is the cap (VALIDATION unsupported_repository), not the outside link found after it. Real
 * server over stdio, real git.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';
import { MAX_PACK_FILES } from '../../src/vcs/git-objects.js';
import { isolatedGit } from '../helpers/isolated-git.js';

const tree = makeTree({ home: {}, root: {}, outside: { 'x.idx': 'outside\n' } }, 'fs-tools-pack-cap-');
const HOME = path.join(tree.dir, 'home');
const ROOT = path.join(tree.dir, 'root');
const REPO = path.join(ROOT, 'repo');
/** Pack files per alternate: under the cap alone, over it for two stores together. */
const PER_STORE = 3000;

/** A pack file name of store `store`, number `i` (a 40-hex pack id). */
const packName = (store: number, i: number): string =>
  `pack-${store.toString(16).padStart(4, '0')}${i.toString(16).padStart(36, '0')}.idx`;

beforeAll(() => {
  mkdirSync(REPO);
  isolatedGit(REPO, HOME, 'init', '-q', '-b', 'main');
  const alternates: string[] = [];
  for (const store of [0, 1, 2]) {
    const objects = path.join(ROOT, `alt${store}`, 'objects');
    mkdirSync(path.join(objects, 'pack'), { recursive: true });
    mkdirSync(path.join(objects, 'info'));
    if (store < 2)
      for (let i = 0; i < PER_STORE; i++) writeFileSync(path.join(objects, 'pack', packName(store, i)), '');
    else symlinkSync(path.join(tree.dir, 'outside', 'x.idx'), path.join(objects, 'pack', packName(store, 0)));
    alternates.push(objects);
  }
  writeFileSync(path.join(REPO, '.git', 'objects', 'info', 'alternates'), `${alternates.join('\n')}\n`);
}, 60_000);

afterAll(() => tree.cleanup());

describe('pack files over the cap across alternates', () => {
  it('the cap trips at the first pack file past it: nothing after it is verified', async () => {
    expect(2 * PER_STORE).toBeGreaterThan(MAX_PACK_FILES);
    expect(PER_STORE).toBeLessThanOrEqual(MAX_PACK_FILES);
    const client = await connect('modern', { args: [ROOT], env: { HOME } });
    try {
      for (const tool of ['git_status', 'git_diff']) {
        const r = await client.call(tool, { path: REPO });
        expect(r.isError, JSON.stringify(r).slice(0, 600)).toBe(true);
        const { error } = JSON.parse(r.content[0].text!) as { error: Record<string, unknown> };
        expect(error).toMatchObject({
          code: 'VALIDATION',
          path: path.join(REPO, '.git', 'objects'),
          details: { reason: 'unsupported_repository', limit: MAX_PACK_FILES },
        });
        expect(JSON.stringify(r)).not.toContain(path.join(tree.dir, 'outside'));
      }
    } finally {
      await client.close();
    }
  }, 60_000);
});
