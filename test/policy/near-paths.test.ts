/**
 * src/policy/near-paths.ts (issue 21): the near paths NOT_FOUND offers. Real directories (no mocks): what is never
 * offered (symlinks — even one whose name is the exact match and whose target is outside —, `.git` internals,
 * secrets, hidden and denied paths, paths under a hidden directory), the list's cap, and the walk's bound.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { ToolError } from '../../src/errors/tool-error.js';
import {
  editDistance,
  NEAR_LIMIT,
  NEAR_MAX_DIRS,
  nearPaths,
  outsideNearPaths,
  withOutsideNear,
} from '../../src/policy/near-paths.js';
import { resolveInRoots } from '../../src/policy/resolve-path.js';

let T = '';
let R = '';
let OUT = '';
const ctx = (over: Partial<PolicyContext> = {}): PolicyContext => ({
  roots: [{ given: R, real: R, source: 'cli' }],
  allowSecrets: false,
  policy: {
    rules: [
      { pattern: 'hid/**', access: 'hidden' },
      { pattern: 'den/**', access: 'deny' },
    ],
  },
  ...over,
});
const near = async (rel: string, c = ctx()) => nearPaths(await resolveInRoots(rel, c.roots, { followFinal: true }), c);
const put = (rel: string) => {
  mkdirSync(path.dirname(path.join(R, rel)), { recursive: true });
  writeFileSync(path.join(R, rel), 'x\n');
};

beforeAll(() => {
  T = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'near-paths-')));
  R = path.join(T, 'root');
  OUT = path.join(T, 'outside');
  mkdirSync(R);
  mkdirSync(OUT);
  writeFileSync(path.join(OUT, 'target.ts'), 'secret\n');
  put('a/util.ts');
  symlinkSync(path.join(OUT, 'target.ts'), path.join(R, 'a', 'target.ts'));
  put('.git/HEAD');
  put('a/id_rsa');
  put('hid/plan.md');
  put('den/plan.md');
  put('b/x/plan.md');
  for (let i = 0; i < 8; i++) put(`many/file${i}.ts`);
});
afterAll(() => rmSync(T, { recursive: true, force: true }));

describe('editDistance', () => {
  it.each([
    ['util', 'utils', 1],
    ['utils.ts', 'util.ts', 1],
    ['abc', 'abc', 0],
    ['kitten', 'sitting', Infinity],
    ['ab', 'ba', 2],
  ])('%s ~ %s = %s (capped at 2)', (a, b, d) => expect(editDistance(a, b)).toBe(d));
});

describe('nearPaths', () => {
  it('offers a same-directory near name', async () => {
    expect(await near('a/utl.ts')).toEqual([path.join(R, 'a/util.ts')]);
  });
  it('never a symlink, even one with the exact case-insensitive name whose target is outside', async () => {
    expect(await near('a/Target.ts')).toEqual([]);
  });
  it('never a secret (unless --allow-secrets), never .git internals', async () => {
    expect(await near('a/id_rsb')).toEqual([]);
    expect(await near('a/id_rsb', ctx({ allowSecrets: true }))).toEqual([path.join(R, 'a/id_rsa')]);
    expect(await near('x/HEAD')).toEqual([]);
  });
  it('never a hidden or denied path, nor anything under them: plan.md elsewhere is only b/x/plan.md', async () => {
    expect(await near('c/plan.md')).toEqual([path.join(R, 'b/x/plan.md')]);
  });
  it('a directory swapped for a link to outside after the path was resolved: no outside name is offered', async () => {
    // Attack (review of the merged near paths): a process loops rename(dir, dir.real); symlink(OUTSIDE, dir). The
    // state at the moment of the read is pinned here: the path resolved while `sw` was a real directory, and `sw`
    // (and the missing parent `sw/zz`'s grandparent) is now a link to a directory outside holding `outside-name.ts`.
    const swapOut = path.join(T, 'swap-outside');
    mkdirSync(path.join(swapOut, 'zz'), { recursive: true });
    writeFileSync(path.join(swapOut, 'outside-name.ts'), 'o\n');
    writeFileSync(path.join(swapOut, 'zz', 'outside-name.ts'), 'o\n');
    put('sw/keep.txt');
    const c = ctx();
    const resolvedSib = await resolveInRoots('sw/outside-nam.ts', c.roots, { followFinal: true });
    const resolvedUncle = await resolveInRoots('sw/zy/outside-name.ts', c.roots, { followFinal: true });
    rmSync(path.join(R, 'sw'), { recursive: true });
    symlinkSync(swapOut, path.join(R, 'sw'));
    try {
      for (const r of [resolvedSib, resolvedUncle]) {
        const got = await nearPaths(r, c);
        expect(got.filter((g) => g.includes('outside-name'))).toEqual([]);
      }
    } finally {
      rmSync(path.join(R, 'sw'));
    }
  });
  it(`at most ${NEAR_LIMIT}, closest first`, async () => {
    const got = await near('many/file.ts');
    expect(got).toHaveLength(NEAR_LIMIT);
    expect(got.every((g) => /many\/file\d\.ts$/.test(g))).toBe(true);
  });
  it(`the walk is bounded: a name beyond ${NEAR_MAX_DIRS} directories is not found, and the call stays fast`, async () => {
    for (let i = 0; i < NEAR_MAX_DIRS + 50; i++)
      mkdirSync(path.join(R, 'wide', `d${String(i).padStart(5, '0')}`), { recursive: true });
    writeFileSync(path.join(R, 'wide', `d${String(NEAR_MAX_DIRS + 49).padStart(5, '0')}`, 'needle.txt'), 'x\n');
    try {
      const started = Date.now();
      expect(await near('zzz/needle.txt')).toEqual([]);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      rmSync(path.join(R, 'wide'), { recursive: true }); // the later cases walk the tree within the time bound
    }
  });
});

describe('nearPaths: a backslash meant as a separator (issue 30)', () => {
  it.skipIf(path.sep !== '/')(
    '`a\\util.ts` offers a/util.ts first; the backslash name itself is never taken',
    async () => {
      expect((await near('a\\util.ts'))[0]).toBe(path.join(R, 'a/util.ts'));
    },
  );
  it.skipIf(path.sep !== '/')('never a secret, a hidden path or a link, and nothing outside', async () => {
    expect(await near('a\\id_rsa')).toEqual([]);
    expect(await near('hid\\plan.md')).not.toContain(path.join(R, 'hid/plan.md'));
    expect(await near('a\\target.ts')).toEqual([]);
    expect(await near('..\\outside\\target.ts')).toEqual([]);
  });
});

describe('outsideNearPaths (NOT_ALLOWED, issue 30)', () => {
  it('the tail of an outside path re-rooted: /home/me/proj/a/util.ts → ROOT/a/util.ts', async () => {
    expect(await outsideNearPaths('/home/me/proj/a/util.ts', ctx())).toEqual([path.join(R, 'a/util.ts')]);
  });
  it('a path whose tail exists nowhere: the same name elsewhere, most matching components first', async () => {
    put('c/x/plan.md');
    try {
      expect(await outsideNearPaths('/srv/other/x/plan.md', ctx())).toEqual([
        path.join(R, 'b/x/plan.md'),
        path.join(R, 'c/x/plan.md'),
      ]);
      expect(await outsideNearPaths('/srv/c/x/plan.md', ctx())).toEqual([
        path.join(R, 'c/x/plan.md'),
        path.join(R, 'b/x/plan.md'),
      ]);
    } finally {
      rmSync(path.join(R, 'c'), { recursive: true });
    }
  });
  it('never a secret, a hidden or denied path, .git internals or a link; nothing for a name absent inside', async () => {
    expect(await outsideNearPaths('/x/a/id_rsa', ctx())).toEqual([]);
    expect(await outsideNearPaths('/x/hid/plan.md', ctx())).toEqual([path.join(R, 'b/x/plan.md')]);
    expect(await outsideNearPaths('/x/.git/HEAD', ctx())).toEqual([]);
    expect(await outsideNearPaths(path.join(OUT, 'target.ts'), ctx())).toEqual([]);
    expect(await outsideNearPaths('/nowhere/none.txt', ctx())).toEqual([]);
    expect(await outsideNearPaths('/', ctx())).toEqual([]);
  });
  it('withOutsideNear adds details.near only to NOT_ALLOWED outside_roots, and leaves every other error as it is', async () => {
    const outside = new ToolError('NOT_ALLOWED', 'Outside the roots.', {
      path: '/home/me/proj/a/util.ts',
      details: { reason: 'outside_roots', roots: [R] },
    });
    const e = (await withOutsideNear(outside, ctx())) as ToolError;
    expect(e.code).toBe('NOT_ALLOWED');
    expect(e.path).toBe('/home/me/proj/a/util.ts');
    expect(e.details).toEqual({ reason: 'outside_roots', roots: [R], near: [path.join(R, 'a/util.ts')] });
    expect(e.suggestion).toContain(path.join(R, 'a/util.ts'));
    const viaLink = new ToolError('NOT_ALLOWED', 'x', {
      path: '/a/util.ts',
      details: { reason: 'symlink_target_outside' },
    });
    expect(await withOutsideNear(viaLink, ctx())).toBe(viaLink);
    const none = new ToolError('NOT_ALLOWED', 'x', { path: '/q/none.txt', details: { reason: 'outside_roots' } });
    expect(await withOutsideNear(none, ctx())).toBe(none);
    const noPath = new ToolError('NOT_ALLOWED', 'x', { details: { reason: 'outside_roots' } });
    expect(await withOutsideNear(noPath, ctx())).toBe(noPath);
    const other = new Error('boom');
    expect(await withOutsideNear(other, ctx())).toBe(other);
  });
});

describe('editDistance is banded', () => {
  it('long, nearly equal names: exact answers, and 2,000 comparisons of 255-character names stay fast (banded: O(length · 2))', () => {
    const a = 'x'.repeat(250) + 'abcde';
    expect(editDistance(a, 'x'.repeat(250) + 'abcdf')).toBe(1);
    expect(editDistance(a, 'x'.repeat(250) + 'abdce')).toBe(2);
    expect(editDistance(a, 'x'.repeat(250) + 'edcba')).toBe(Infinity);
    expect(editDistance('abc', 'xyzabc', 3)).toBe(3);
    expect(editDistance('kitten', 'sitting', 3)).toBe(3);
    expect(editDistance('flaw', 'lawn', 2)).toBe(2);
    const started = Date.now();
    for (let i = 0; i < 2000; i++) editDistance(a, 'x'.repeat(251) + 'bcd' + String.fromCharCode(97 + (i % 26)));
    expect(Date.now() - started).toBeLessThan(1500);
  });
});

describe('editDistance equals the full Levenshtein distance within the band (property)', () => {
  const full = (a: string, b: string): number => {
    const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
    for (let j = 1; j <= b.length; j++) d[0][j] = j;
    for (let i = 1; i <= a.length; i++)
      for (let j = 1; j <= b.length; j++) {
        d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      }
    return d[a.length][b.length];
  };
  it('1,000 random pairs over a 3-letter alphabet', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const word = () => Array.from({ length: Math.floor(rnd() * 8) }, () => 'abc'[Math.floor(rnd() * 3)]).join('');
    for (let k = 0; k < 1000; k++) {
      const a = word();
      const b = word();
      const f = full(a, b);
      expect(editDistance(a, b), `${a} ~ ${b}`).toBe(f <= 2 ? f : Infinity);
    }
  });
});
