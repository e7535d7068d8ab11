/**
 * Review of the kept listings of small directories (src/fs/listing-cache.ts, SmallListingCache) and of the compiled
 * .gitignore rules shared by text (src/fs/glob/gitignore.ts, sharedGitignoreRules) — attacks on their bounds and
 * on the answers of walks that use them:
 *
 * - memory: a slot of an empty (or nearly empty) directory was counted as `listingBytes` of its listing alone (0 for
 *   an empty one), so 100,000 empty directories were all kept, their paths and identity keys outside the 8 MiB bound;
 * - memory: a shared rules object's directory-verdict memo was bounded by entries only (4,096), each keyed by a
 *   directory path of up to thousands of characters, and is now kept between calls (64 rules objects);
 * - answers: two .gitignore files of the same text in different directories share one rules object, and its memo of
 *   directory verdicts is keyed by paths relative to each file's own directory: anchored rules stay anchored at each
 *   file's directory; verdicts after the memo is emptied equal those of freshly compiled rules;
 * - answers: a directory removed and made again at the same path (maybe the same inode) is read afresh.
 */
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  RACY_MS,
  SmallListingCache,
  clearListingCache,
  listingBytes,
  smallSlotBytes,
} from '../../src/fs/listing-cache.js';
import { GitignoreRules, sharedGitignoreRules } from '../../src/fs/glob/gitignore.js';
import { walkTree } from '../../src/fs/walk.js';
import { childOf, type AllowedPath } from '../../src/policy/resolve-path.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({}, 'fs-tools-kept-review-');
afterAll(() => scratch.cleanup());
beforeEach(() => clearListingCache());

const settle = (p: string) => utimesSync(p, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
const pastRacy = () => new Promise((r) => setTimeout(r, RACY_MS + 50));

/** The listing of `dir` through `cache`, with its fstat taken before the read (as src/fs/walk.ts does). */
function smallRead(cache: SmallListingCache, dir: string) {
  const fd = openSync(dir, 'r');
  try {
    return cache.listing(dir, fd, fstatSync(fd, { bigint: true }), () => readdirSync(dir, { withFileTypes: true }));
  } finally {
    closeSync(fd);
  }
}

async function walk(root: string, base = root, hide = ''): Promise<string[]> {
  const out: string[] = [];
  for await (const e of walkTree({
    maxDepth: 20,
    respectGitignore: true,
    filter: (_abs, _rootRel, name) => (name === hide ? 'omit' : 'ok'),
    childOf,
    base: base as AllowedPath,
    rootReal: root,
  }))
    out.push(e.relative);
  return out;
}

describe('SmallListingCache: what a kept slot costs', () => {
  it('counts each kept directory (its path and identity), so empty directories cannot fill memory unbounded', async () => {
    // 2,000 empty directories of 200-character names: their listings are empty (listingBytes 0); before the fix the
    // cache kept every one under a 64 KiB bound (stats: 2,000 directories, 0 bytes) — 100,000 of them, 100,000 slots.
    const base = path.join(scratch.dir, 'empties');
    mkdirSync(base);
    const dirs: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const d = path.join(base, `${String(i).padStart(5, '0')}${'e'.repeat(195)}`);
      mkdirSync(d);
      settle(d);
      dirs.push(d);
    }
    await pastRacy();
    const maxBytes = 64 * 1024;
    const cache = new SmallListingCache(maxBytes);
    for (const d of dirs) expect(smallRead(cache, d).names).toEqual([]);
    const { directories, bytes } = cache.stats();
    expect(bytes).toBeLessThanOrEqual(maxBytes);
    // Each slot holds at least its path's characters (UTF-16): the bound covers them.
    expect(directories * 2 * dirs[0].length).toBeLessThanOrEqual(maxBytes);
    expect(directories).toBeGreaterThan(0);
    expect(bytes).toBe(directories * smallSlotBytes(dirs[0], { dirents: [], names: [] }));
    expect(smallSlotBytes(dirs[0], { dirents: [], names: [] })).toBeGreaterThan(2 * dirs[0].length);
    // Past its bound it drops to 7/8 of it at once (one eviction per insertion walked the Map's holes each time).
    const one = smallSlotBytes(dirs[0], { dirents: [], names: [] });
    const eight = new SmallListingCache(8 * one);
    for (const d of dirs.slice(0, 9)) smallRead(eight, d);
    expect(eight.stats()).toEqual({ directories: 7, bytes: 7 * one });
  });

  it('a directory removed and made again at its path (the same inode, perhaps) is read afresh', async () => {
    const d = path.join(scratch.dir, 'reborn');
    mkdirSync(d);
    writeFileSync(path.join(d, 'first'), '');
    settle(d);
    await pastRacy();
    const cache = new SmallListingCache();
    expect(smallRead(cache, d).names).toEqual(['first']);
    rmSync(d, { recursive: true });
    mkdirSync(d);
    writeFileSync(path.join(d, 'second'), '');
    settle(d);
    await pastRacy();
    // Whether or not the file system gave the inode back (ext4 often does), the ctime of the new directory differs.
    expect(smallRead(cache, d).names).toEqual(['second']);
    expect(listingBytes(smallRead(cache, d))).toBeGreaterThan(0);
  });
});

describe('kept listings under a policy that changes between calls', () => {
  it('a kept listing holds raw names only: what the policy hides now is hidden, whatever the last call showed', async () => {
    const root = makeTree({ a: { secret: '', 'b.txt': '' }, c: { d: { secret: { e: '' } } } });
    try {
      for (const d of ['a', 'c', 'c/d', 'c/d/secret', '']) settle(path.join(root.dir, d));
      await pastRacy();
      const all = ['a', 'a/b.txt', 'a/secret', 'c', 'c/d', 'c/d/secret', 'c/d/secret/e'];
      expect(await walk(root.dir)).toEqual(all);
      expect(await walk(root.dir)).toEqual(all); // now from the kept listings
      expect(await walk(root.dir, root.dir, 'secret')).toEqual(['a', 'a/b.txt', 'c', 'c/d']);
      expect(await walk(root.dir)).toEqual(all);
    } finally {
      root.cleanup();
    }
  });
});

describe('shared .gitignore rules', () => {
  it('a dir-verdict memo keeps at most a bounded number of characters of directory paths', () => {
    const rules = sharedGitignoreRules(`build/\n# ${Math.random()}\n`, 1000);
    // 4,000 directories 3,000 characters deep (with their 10 parents, under the 4,096 entries a memo keeps): before the
    // fix 12 M characters held (by each of 64 kept rules objects, between calls), now at most 256 Ki.
    const deep = Array.from({ length: 10 }, (_, i) => `${i}${'d'.repeat(298)}`).join('/');
    for (let i = 0; i < 4000; i++) rules.testEntry(`${deep}/x${i}`, 'f', false);
    const memo = (rules as unknown as { dirCache: Map<string, unknown> }).dirCache;
    let chars = 0;
    for (const k of memo.keys()) chars += k.length;
    expect(chars).toBeLessThanOrEqual(256 * 1024);
  });

  it('after the memo is emptied (past its bound), verdicts equal those of freshly compiled rules', () => {
    const text = `/top/\nmid*/\n!mid7*/\nx/**/deep/\n# ${Math.random()}\n`;
    const shared = sharedGitignoreRules(text, 10_000);
    const dirs: string[] = [];
    for (let i = 0; i < 4500; i++)
      dirs.push(i % 3 === 0 ? `top/s${i}` : i % 3 === 1 ? `a/mid${i}/b` : `x/y${i}/deep/z`);
    const want = dirs.map((d) => {
      const fresh = new GitignoreRules(text, 10_000);
      return [fresh.testEntry(d, 'n', false), fresh.test(d, true)];
    });
    for (let round = 0; round < 2; round++)
      dirs.forEach((d, i) => expect([shared.testEntry(d, 'n', false), shared.test(d, true)]).toEqual(want[i]));
  });

  it('two .gitignore files of the same text keep their anchored rules at their own directories', async () => {
    const text = '/foo\n/bar/\nsub/baz\n';
    const spec = { foo: '', bar: {}, baz: '', sub: { foo: '', baz: '', bar: { q: '' } } };
    const root = makeTree({ a: { '.gitignore': text, ...spec }, b: { deeper: { '.gitignore': text, ...spec } } });
    try {
      const expected = [
        'a',
        'a/.gitignore',
        'a/baz',
        'a/sub',
        'a/sub/bar',
        'a/sub/bar/q',
        'a/sub/foo',
        'b',
        'b/deeper',
        'b/deeper/.gitignore',
        'b/deeper/baz',
        'b/deeper/sub',
        'b/deeper/sub/bar',
        'b/deeper/sub/bar/q',
        'b/deeper/sub/foo',
      ];
      expect(await walk(root.dir)).toEqual(expected);
      expect(await walk(root.dir)).toEqual(expected); // the rules now shared, their memos filled
      // Walked from inside: the paths the memo sees are relative to the walk's base now, not the root's.
      expect(await walk(root.dir, path.join(root.dir, 'b'))).toEqual(
        expected.filter((p) => p.startsWith('b/')).map((p) => p.slice(2)),
      );
    } finally {
      root.cleanup();
    }
  });
});
