/**
 * expected_status_hash (src/policy/stale-git.ts with src/policy/git-access.ts; SPEC §5, §7), in-process with a real
 * git repository. Pins:
 *  - the status hash of a work tree is stable while nothing changes and differs after a change;
 *  - assertStatusHash passes on the current hash and is STALE_GIT (current hash and work tree in details) otherwise,
 *    leaving the tree as it was;
 *  - a work tree rooted above the roots is NOT_ALLOWED work_tree_outside_roots, reported on the path the agent named;
 *  - gitViewAccess decides containment by the roots it is given and secrets by the built-in rules; existingDirOf finds the nearest existing directory.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { gitViewAccess } from '../../src/policy/git-access.js';
import type { EffectiveRoot } from '../../src/policy/roots.js';
import { assertStatusHash, currentStatusHash, existingDirOf } from '../../src/policy/stale-git.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({ repo: { 'a.txt': 'a\n', sub: { 'b.txt': 'b\n' } } }, 'fs-tools-stale-git-');
afterAll(() => T.cleanup());
const REPO = path.join(T.dir, 'repo');

function git(...args: string[]): void {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  execFileSync('git', args, {
    cwd: REPO,
    stdio: 'ignore',
    env: {
      ...env,
      HOME: T.dir,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@e.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@e.invalid',
    },
  });
}
git('init', '-q', '-b', 'main');
git('add', '-A');
git('commit', '-q', '-m', 'i');

/** A policy context with this one root and no file policy. */
const root = (real: string): PolicyContext => ({
  roots: [{ given: real, real, source: 'cli' }] as EffectiveRoot[],
  allowSecrets: false,
  policy: { rules: [] },
});
const A = path.join(REPO, 'a.txt');

describe('status hash', () => {
  it('is stable while nothing changes, differs after a change; STALE_GIT on the old one changes nothing', async () => {
    const first = await currentStatusHash(A, REPO, root(REPO), 30_000);
    expect(first.workTree).toBe(REPO);
    expect(first.statusHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect((await currentStatusHash(A, REPO, root(REPO), 30_000)).statusHash).toBe(first.statusHash);
    await expect(assertStatusHash(first.statusHash, A, REPO, root(REPO), 30_000)).resolves.toEqual(first);

    writeFileSync(A, 'changed\n');
    const now = await currentStatusHash(A, REPO, root(REPO), 30_000);
    expect(now.statusHash).not.toBe(first.statusHash);
    await expect(assertStatusHash(first.statusHash, A, REPO, root(REPO), 30_000)).rejects.toMatchObject({
      code: 'STALE_GIT',
      path: A,
      details: { current_status_hash: now.statusHash, work_tree: REPO },
    });
    expect(readFileSync(A, 'utf8')).toBe('changed\n');
  });

  it('a work tree rooted above the roots is NOT_ALLOWED, reported on the named path', async () => {
    const sub = path.join(REPO, 'sub');
    const b = path.join(sub, 'b.txt');
    await expect(currentStatusHash(b, sub, root(sub), 30_000)).rejects.toMatchObject({
      code: 'NOT_ALLOWED',
      path: b,
      details: { reason: 'work_tree_outside_roots' },
    });
  });
});

describe('gitViewAccess and existingDirOf', () => {
  it('decides containment by the given roots', () => {
    const access = gitViewAccess(root(REPO));
    expect(access.isInside(A)).toBe(true);
    expect(access.isInside(REPO)).toBe(true);
    expect(access.isInside(T.dir)).toBe(false);
    expect(access.isInside(`${REPO}x/a`)).toBe(false);
    expect(access.secretRule(path.join(REPO, '.env'))).not.toBeNull();
    expect(access.secretRule(A)).toBeNull();
    // What the file policy hides or denies is withheld from git (counted as outside by the view); the rest is not.
    const rules = [
      { pattern: 'private/**', access: 'hidden' as const },
      { pattern: 'd', access: 'deny' as const },
      { pattern: 'ro/**', access: 'read_only' as const },
    ];
    const withheld = gitViewAccess({ ...root(REPO), policy: { rules } });
    expect(withheld.isWithheld(path.join(REPO, 'private', 'x'))).toBe(true);
    expect(withheld.isWithheld(path.join(REPO, 'd', 'x'))).toBe(true);
    expect(withheld.isWithheld(path.join(REPO, 'ro', 'x'))).toBe(false);
    expect(withheld.isWithheld(A)).toBe(false);
    expect(withheld.isWithheld(T.dir)).toBe(false);
    expect(access.isWithheld(path.join(REPO, 'private', 'x'))).toBe(false);
  });

  it('finds the nearest existing directory of a path that does not exist yet', async () => {
    expect(await existingDirOf(path.join(REPO, 'new', 'deeper', 'c.txt'))).toBe(REPO);
    mkdirSync(path.join(REPO, 'new'));
    expect(await existingDirOf(path.join(REPO, 'new', 'c.txt'))).toBe(path.join(REPO, 'new'));
    expect(await existingDirOf(REPO)).toBe(REPO);
  });
});
