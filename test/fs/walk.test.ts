/**
 * walkTree over real temporary trees (SPEC §6, §6.1). Pins:
 * - deterministic pre-order, names sorted by code unit (upper case before lower case, '-' and '.' before letters);
 * - the depth limit (1 = direct children) and each entry's depth;
 * - symlinks are reported as links (lstat) and never descended, inside or outside the tree, dangling or not;
 * - a walk without stats (issue #19) takes types from the listing (d_type), the same as lstat's, with a FIFO's
 *   special type, and a small directory read synchronously lists what the thread pool lists;
 * - .gitignore at the root and nested, a deeper `!negation` re-including, anchored patterns relative to their own
 *   directory, ancestors' .gitignore applied when the walk starts in a subdirectory — all in a tree that is not a git
 *   work tree; respect_gitignore false shows the ignored entries;
 * - a .gitignore that is a FIFO, a directory or a symlink is not read (regression: a FIFO .gitignore hung the walk,
 *   and a symlinked one was read from outside the tree; git also ignores a symlinked .gitignore);
 * - the walk's notion of ignored agrees with git's own (`git ls-files --others --exclude-standard`) on a tree of
 *   tricky patterns (negations at three levels, dir-only, anchored, `**`, escaped `#`, escaped space);
 * - .git is listed but never descended;
 * - include/exclude globs: a glob without / matches the basename at any depth; exclude prunes directories;
 * - resuming from a cursor (inclusive and exclusive) yields exactly the remainder, for every position, also when the
 *   cursor's entry has since been deleted;
 * - a walk into a sink (walkInto) hands over the same entries in the same order, each right after its filter call,
 *   and stops where the sink says (false or a promise of it), looking at nothing after;
 * - an unreadable directory is skipped and reported. Tests run as root, and root bypasses permission bits
 *   (CAP_DAC_OVERRIDE: readdir of a mode-000 directory succeeds), so that case runs the walker (bundled by esbuild) in a child
 *   process as the unprivileged user nobody (uid 65534), where EACCES is real.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RACY_MS } from '../../src/fs/listing-cache.js';
import { MAX_PATH_COMPONENTS, pathComponentCount } from '../../src/fs/path-within.js';
import { VerifiedDir } from '../../src/fs/verified-dir.js';
import { walkInto, walkTree, type WalkOptions } from '../../src/fs/walk.js';
import { childOf, type AllowedPath } from '../../src/policy/resolve-path.js';
import { fifo, makeTree, symlink, type TreeSpec } from '../helpers/tree.js';

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups) c();
});

function tree(spec: TreeSpec): string {
  const t = makeTree(spec, 'fs-tools-walk-');
  cleanups.push(t.cleanup);
  return t.dir;
}

type Opts = Partial<Omit<WalkOptions, 'base' | 'rootReal'>> & { base?: string };

async function walk(root: string, opts: Opts = {}): Promise<string[]> {
  return (await walkEntries(root, opts)).map((e) => e.relative);
}

async function walkEntries(root: string, opts: Opts = {}) {
  const skips: Array<[string, string]> = [];
  const out = [];
  for await (const e of walkTree({
    maxDepth: 20,
    respectGitignore: true,
    filter: () => 'ok',
    onSkip: (r, p) => skips.push([r, p]),
    childOf,
    ...opts,
    base: (opts.base ?? root) as AllowedPath,
    rootReal: root,
  }))
    out.push(e);
  return Object.assign(out, { skips });
}

describe('order and depth', () => {
  const root = tree({
    b: { z: '', a: '' },
    a: { c: { d: 'x' }, 'b.txt': '' },
    B: '',
    'a.txt': '',
    'a-b': '',
    _u: '',
  });

  it('is pre-order with names sorted by code unit', async () => {
    const expected = ['B', '_u', 'a', 'a/b.txt', 'a/c', 'a/c/d', 'a-b', 'a.txt', 'b', 'b/a', 'b/z'];
    // ('-' 0x2d < '.' 0x2e, and 'a' sorts before its siblings 'a-b'/'a.txt' because it is a prefix of them.)
    expect(await walk(root)).toEqual(expected);
    expect(await walk(root)).toEqual(expected); // deterministic
  });

  it.each([
    [1, ['B', '_u', 'a', 'a-b', 'a.txt', 'b']],
    [2, ['B', '_u', 'a', 'a/b.txt', 'a/c', 'a-b', 'a.txt', 'b', 'b/a', 'b/z']],
    [3, ['B', '_u', 'a', 'a/b.txt', 'a/c', 'a/c/d', 'a-b', 'a.txt', 'b', 'b/a', 'b/z']],
  ])('maxDepth %i', async (maxDepth, expected) => {
    const entries = await walkEntries(root, { maxDepth });
    expect(entries.map((e) => e.relative)).toEqual(expected);
    for (const e of entries) {
      expect(e.depth).toBe(e.relative.split('/').length);
      expect(e.absolute).toBe(path.join(root, e.relative));
    }
  });

  it('reports lstat kinds and sizes', async () => {
    const entries = await walkEntries(root);
    const d = entries.find((e) => e.relative === 'a/c/d')!;
    expect(d.stats.isFile()).toBe(true);
    expect(d.stats.size).toBe(1);
    expect(entries.find((e) => e.relative === 'a/c')!.stats.isDirectory()).toBe(true);
  });
});

describe('symlinks', () => {
  const outside = tree({ secret: { 'inner.txt': 'outside data' } });
  const root = tree({
    real: { 'f.txt': 'x' },
    'in-link': symlink('real'),
    'out-link': symlink(path.join(outside, 'secret')),
    dangling: symlink('nowhere'),
    'file-link': symlink('real/f.txt'),
  });

  it('are reported as links and never descended', async () => {
    const entries = await walkEntries(root);
    expect(entries.map((e) => e.relative)).toEqual([
      'dangling',
      'file-link',
      'in-link',
      'out-link',
      'real',
      'real/f.txt',
    ]);
    for (const name of ['dangling', 'file-link', 'in-link', 'out-link']) {
      expect(entries.find((e) => e.relative === name)!.stats.isSymbolicLink()).toBe(true);
    }
  });
});

describe('.gitignore (not a git work tree)', () => {
  const root = tree({
    '.gitignore': '*.log\nbuild/\n/top-only.txt\n',
    'a.log': '',
    'a.txt': '',
    'top-only.txt': '',
    build: { 'out.js': '' },
    sub: {
      '.gitignore': '!keep.log\n/local.txt\ngen\n',
      'x.log': '',
      'keep.log': '',
      'local.txt': '',
      'top-only.txt': '',
      gen: { 'g.ts': '' },
      deeper: { 'keep.log': '', 'local.txt': '', 'y.log': '' },
    },
  });

  it('is honoured from the root down; a deeper !negation re-includes; anchored patterns are relative to their dir', async () => {
    expect(readdirSync(root)).not.toContain('.git');
    expect(await walk(root)).toEqual([
      '.gitignore',
      'a.txt',
      'sub',
      'sub/.gitignore',
      'sub/deeper',
      'sub/deeper/keep.log',
      'sub/deeper/local.txt',
      'sub/keep.log',
      'sub/top-only.txt',
    ]);
  });

  it("applies the ancestors' .gitignore files when the walk starts in a subdirectory", async () => {
    expect(await walk(root, { base: path.join(root, 'sub') })).toEqual([
      '.gitignore',
      'deeper',
      'deeper/keep.log',
      'deeper/local.txt',
      'keep.log',
      'top-only.txt',
    ]);
    const deeper = await walkEntries(root, { base: path.join(root, 'sub', 'deeper') });
    expect(deeper.map((e) => e.relative)).toEqual(['keep.log', 'local.txt']);
    expect(deeper.map((e) => e.rootRelative)).toEqual(['sub/deeper/keep.log', 'sub/deeper/local.txt']);
  });

  it('respectGitignore false shows everything', async () => {
    const all = await walk(root, { respectGitignore: false });
    for (const p of [
      'a.log',
      'top-only.txt',
      'build',
      'build/out.js',
      'sub/x.log',
      'sub/local.txt',
      'sub/gen/g.ts',
      'sub/deeper/y.log',
    ])
      expect(all).toContain(p);
    expect(all).toHaveLength(18);
  });

  it('also in a git work tree, where .git is listed but never descended', async () => {
    const repo = tree({ '.gitignore': 'dist/\n', dist: { 'x.js': '' }, 'src.ts': '' });
    execFileSync('git', ['init', '-q', repo]);
    const entries = await walk(repo, { respectGitignore: false });
    expect(entries).toContain('.git');
    expect(entries.filter((p) => p.startsWith('.git/'))).toEqual([]);
    expect(await walk(repo)).toEqual(['.git', '.gitignore', 'src.ts']);
  });

  it('agrees with git itself (git ls-files --others --exclude-standard) on a tree of tricky patterns', async () => {
    const repo = tree({
      '.gitignore': [
        '*.log',
        '!important.log',
        'build/',
        '/root-only.txt',
        'docs/**/*.tmp',
        '**/cache',
        '# comment',
        '\\#hash.txt',
        '*.o',
        '!/keep.o',
        'trailing-dir/',
        'spaced\\ name.txt',
        '',
      ].join('\n'),
      'a.log': '',
      'important.log': '',
      'root-only.txt': '',
      '#hash.txt': '',
      'a.o': '',
      'keep.o': '',
      'readme.md': '',
      'spaced name.txt': '',
      cache: '',
      'trailing-dir': '',
      build: { 'x.js': '' },
      docs: { 'c.tmp': '', 'd.md': '', a: { 'b.tmp': '', 'b.md': '' } },
      x: { cache: { y: '' }, 'z.md': '' },
      sub: {
        '.gitignore': '!debug.log\n*.txt\n!keep.txt\nnested/\n',
        'debug.log': '',
        'other.log': '',
        'a.txt': '',
        'keep.txt': '',
        'root-only.txt': '',
        'keep.o': '',
        nested: { 'n.md': '' },
        deeper: { '.gitignore': '!*.txt\n', 'd.txt': '', 'e.log': '', 'trailing-dir': { 'f.md': '' } },
      },
    });
    execFileSync('git', ['init', '-q', repo]);
    const byGit = execFileSync(
      'git',
      ['-C', repo, '-c', 'core.quotePath=false', 'ls-files', '--others', '--exclude-standard', '-z'],
      { encoding: 'utf8' },
    )
      .split('\0')
      .filter(Boolean)
      .sort();
    const files = (await walkEntries(repo))
      .filter((e) => !e.stats.isDirectory())
      .map((e) => e.relative)
      .filter((p) => p !== '.git' && !p.startsWith('.git/'))
      .sort();
    expect(files).toEqual(byGit);
    expect(files).toContain('sub/debug.log'); // the fixture really exercises negation
    expect(files).toContain('sub/deeper/d.txt');
  });

  it('a .gitignore that is a FIFO, a directory or a symlink is not read (and does not hang the walk)', async () => {
    const outside = tree({ ignore: '*\n' });
    const odd = tree({
      f: { '.gitignore': fifo(), 'a.txt': '' },
      d: { '.gitignore': { 'inside.txt': '' }, 'b.txt': '' },
      l: { '.gitignore': symlink(path.join(outside, 'ignore')), 'c.txt': '' },
    });
    const result = await Promise.race([
      walk(odd),
      new Promise<string>((resolve) => setTimeout(() => resolve('timed out'), 3000)),
    ]);
    expect(result).toEqual([
      'd',
      'd/.gitignore',
      'd/.gitignore/inside.txt',
      'd/b.txt',
      'f',
      'f/.gitignore',
      'f/a.txt',
      'l',
      'l/.gitignore',
      'l/c.txt',
    ]);
  });
});

describe('kept listings and compiled .gitignore rules (a settled tree walked again)', () => {
  /** Puts a path's times a minute back (its ctime stays: only waiting leaves the racy window). */
  const settle = (p: string) => utimesSync(p, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
  const pastRacy = () => new Promise((r) => setTimeout(r, RACY_MS + 50));

  it('sees every change of a small directory and of a .gitignore, however its times are put back', async () => {
    const root = tree({ '.gitignore': '*.log\n', 'a.log': '', 'a.txt': '', sub: { 'b.txt': '', 'b.log': '' } });
    for (const d of [root, path.join(root, 'sub')]) settle(d);
    await pastRacy();
    expect(await walk(root)).toEqual(['.gitignore', 'a.txt', 'sub', 'sub/b.txt']);
    expect(await walk(root)).toEqual(['.gitignore', 'a.txt', 'sub', 'sub/b.txt']); // kept listings, shared rules
    // The .gitignore rewritten to the same size, its times put back: the new text is read, its rules compiled.
    writeFileSync(path.join(root, '.gitignore'), '*.txt\n');
    settle(path.join(root, '.gitignore'));
    expect(await walk(root)).toEqual(['.gitignore', 'a.log', 'sub', 'sub/b.log']);
    // An entry created and one removed in sub/, the directory's mtime put back: its ctime tells.
    await pastRacy();
    writeFileSync(path.join(root, 'sub', 'c.log'), '');
    rmSync(path.join(root, 'sub', 'b.log'));
    settle(path.join(root, 'sub'));
    expect(await walk(root)).toEqual(['.gitignore', 'a.log', 'sub', 'sub/c.log']);
    // sub/ swapped for another directory (a new inode), settled.
    await pastRacy();
    renameSync(path.join(root, 'sub'), path.join(root, 'old'));
    mkdirSync(path.join(root, 'sub'));
    writeFileSync(path.join(root, 'sub', 'd.log'), '');
    for (const d of [root, path.join(root, 'sub')]) settle(d);
    await pastRacy();
    expect(await walk(root)).toEqual(['.gitignore', 'a.log', 'old', 'old/c.log', 'sub', 'sub/d.log']);
    // The .gitignore removed: nothing is ignored any more.
    rmSync(path.join(root, '.gitignore'));
    settle(root);
    expect(await walk(root)).toEqual(['a.log', 'a.txt', 'old', 'old/b.txt', 'old/c.log', 'sub', 'sub/d.log']);
  });
});

describe('include and exclude', () => {
  const root = tree({
    'README.md': '',
    'top.ts': '',
    src: { 'a.ts': '', 'a.js': '', deep: { 'b.ts': '', 'c.md': '' } },
    node_modules: { pkg: { 'index.ts': '' } },
  });

  it.each([
    [{ include: ['*.ts'] }, ['node_modules/pkg/index.ts', 'src/a.ts', 'src/deep/b.ts', 'top.ts']],
    [{ include: ['src/*.ts'] }, ['src/a.ts']],
    [{ include: ['src/**/*.ts'] }, ['src/a.ts', 'src/deep/b.ts']],
    [{ include: ['*.ts'], exclude: ['node_modules'] }, ['src/a.ts', 'src/deep/b.ts', 'top.ts']],
    [{ exclude: ['*.md', 'node_modules', 'deep'] }, ['src', 'src/a.js', 'src/a.ts', 'top.ts']],
    [
      { exclude: ['src/deep'] },
      [
        'README.md',
        'node_modules',
        'node_modules/pkg',
        'node_modules/pkg/index.ts',
        'src',
        'src/a.js',
        'src/a.ts',
        'top.ts',
      ],
    ],
    [{ include: ['*.TS'], nocase: true }, ['node_modules/pkg/index.ts', 'src/a.ts', 'src/deep/b.ts', 'top.ts']],
    [{ include: ['*.TS'] }, []],
  ] as Array<[Opts, string[]]>)('%j', async (opts, expected) => {
    expect(await walk(root, opts)).toEqual(expected);
  });
});

describe('resume cursor', () => {
  const root = tree({
    '.gitignore': 'ignored/\n*.tmp\n',
    a: { a1: { x: '', y: '' }, 'a2.txt': '', 'z.tmp': '' },
    b: '',
    c: { d: { e: { f: '' } } },
    ignored: { g: '' },
    'm.txt': '',
    z: { last: '' },
  });

  it.each([
    ['plain', {}],
    ['with include', { include: ['*.txt', 'f'] }],
    ['depth 2', { maxDepth: 2 }],
  ] as Array<[string, Opts]>)('yields exactly the remainder from every position (%s)', async (_name, opts) => {
    const all = await walk(root, opts);
    expect(all.length).toBeGreaterThan(2);
    for (let i = 0; i < all.length; i++) {
      const components = all[i].split('/');
      expect(await walk(root, { ...opts, resume: { components, inclusive: true } })).toEqual(all.slice(i));
      expect(await walk(root, { ...opts, resume: { components, inclusive: false } })).toEqual(all.slice(i + 1));
    }
  });

  it('continues after where a deleted cursor entry would sort', async () => {
    const r = tree({ a: { '1': '', '3': '' }, b: '', c: { x: '' } });
    const all = await walk(r);
    expect(all).toEqual(['a', 'a/1', 'a/3', 'b', 'c', 'c/x']);
    rmSync(path.join(r, 'b'));
    expect(await walk(r, { resume: { components: ['b'], inclusive: false } })).toEqual(['c', 'c/x']);
    expect(await walk(r, { resume: { components: ['a', '2'], inclusive: true } })).toEqual(['a/3', 'c', 'c/x']);
    rmSync(path.join(r, 'a'), { recursive: true });
    expect(await walk(r, { resume: { components: ['a', '3'], inclusive: false } })).toEqual(['c', 'c/x']);
  });
});

describe('unreadable directories', () => {
  // The walker, bundled on its own (esbuild) into a world-readable temp dir, so an unprivileged child can load it.
  const walkDir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-walk-'));
  const WALK_JS = path.join(walkDir, 'walk.mjs');
  beforeAll(async () => {
    chmodSync(walkDir, 0o755);
    await build({
      entryPoints: [fileURLToPath(new URL('../../src/fs/walk.ts', import.meta.url))],
      outfile: WALK_JS,
      bundle: true,
      platform: 'node',
      format: 'esm',
      logLevel: 'silent',
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    });
    chmodSync(WALK_JS, 0o644);
  });
  afterAll(() => rmSync(walkDir, { recursive: true, force: true }));
  const NOBODY = 65534;

  it('root bypasses permission bits here (why the next test runs as nobody)', () => {
    const r = tree({ locked: { 'x.txt': '' } });
    chmodSync(path.join(r, 'locked'), 0o000);
    try {
      if (process.getuid?.() === 0) expect(readdirSync(path.join(r, 'locked'))).toEqual(['x.txt']);
      else expect(() => readdirSync(path.join(r, 'locked'))).toThrow(/EACCES/);
    } finally {
      chmodSync(path.join(r, 'locked'), 0o755);
    }
  });

  it('are skipped and reported (walker run as an unprivileged user)', () => {
    const r = tree({ a: { 'ok.txt': '' }, locked: { 'hidden.txt': '' }, z: { 'ok.txt': '' } });
    chmodSync(r, 0o755); // mkdtemp makes 0700; nobody must reach the tree
    chmodSync(path.join(r, 'locked'), 0o000);
    const script = `
      const { walkTree } = await import(${JSON.stringify(WALK_JS)});
      const skips = []; const entries = [];
      for await (const e of walkTree({ base: process.argv[1], rootReal: process.argv[1], maxDepth: 10,
        respectGitignore: true, filter: () => 'ok', childOf: (d, n) => d + '/' + n, onSkip: (reason, p) => skips.push([reason, p]) })) entries.push(e.relative);
      process.stdout.write(JSON.stringify({ uid: process.getuid(), entries, skips }));`;
    const asRoot = process.getuid?.() === 0;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, r], {
      encoding: 'utf8',
      timeout: 20_000,
      ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    chmodSync(path.join(r, 'locked'), 0o755);
    expect(child.stderr).toBe('');
    const out = JSON.parse(child.stdout) as { uid: number; entries: string[]; skips: string[][] };
    expect(out.uid).not.toBe(0);
    expect(out.entries).toEqual(['a', 'a/ok.txt', 'locked', 'z', 'z/ok.txt']);
    expect(out.skips).toEqual([['unreadable', 'locked']]);
  });
});

describe('policy filter', () => {
  it('omitted entries are neither yielded nor descended, and are reported', async () => {
    const r = tree({ keep: { 'a.txt': '' }, hide: { 'b.txt': '' }, 'deny.txt': '' });
    const entries = await walkEntries(r, {
      filter: (_abs, rel) => (rel === 'hide' || rel === 'deny.txt' ? 'omit' : 'ok'),
    });
    expect(entries.map((e) => e.relative)).toEqual(['keep', 'keep/a.txt']);
    expect(entries.skips).toEqual([
      ['policy', 'deny.txt'],
      ['policy', 'hide'],
    ]);
  });
});

describe('a walk into a sink (walkInto, issue #19)', () => {
  const root = tree({ b: { z: '', a: { deep: '' } }, a: { 'b.txt': '' }, c: '', '.gitignore': 'c\n' });
  const base = { maxDepth: 20, respectGitignore: true, base: root as AllowedPath, rootReal: root, childOf };

  it('hands over what walkTree yields, in the same order, each right after the filter saw it (with its name)', async () => {
    const events: string[] = [];
    await walkInto(
      {
        ...base,
        filter: (abs, rel, name) => {
          expect(abs).toBe(path.join(root, rel));
          expect(name).toBe(path.basename(rel));
          events.push(`filter ${rel}`);
          return 'ok';
        },
      },
      (item) => {
        events.push(`sink ${item.relative}`);
        return true;
      },
    );
    const yielded = await walk(root);
    expect(yielded).toEqual(['.gitignore', 'a', 'a/b.txt', 'b', 'b/a', 'b/a/deep', 'b/z']);
    // (`c` is asked about, then left out by the .gitignore: the filter runs before the ignore rules.)
    expect(events).toEqual(
      [...yielded, 'c'].sort().flatMap((rel) => [`filter ${rel}`, ...(rel === 'c' ? [] : [`sink ${rel}`])]),
    );
  });

  it.each([
    ['false', () => false],
    ['a promise of false', () => Promise.resolve(false)],
  ])('stops when the sink answers %s, also from a subdirectory', async (_label, stop) => {
    const seen: string[] = [];
    const filtered: string[] = [];
    await walkInto(
      {
        ...base,
        filter: (_abs, rel) => {
          filtered.push(rel);
          return 'ok';
        },
      },
      (item) => {
        seen.push(item.relative);
        return item.relative === 'b/a/deep' ? stop() : Promise.resolve(true);
      },
    );
    expect(seen).toEqual(['.gitignore', 'a', 'a/b.txt', 'b', 'b/a', 'b/a/deep']);
    expect(filtered).toEqual(seen); // nothing after the stop was even looked at
  });
});

describe('types from the listing (issue #19)', () => {
  const root = tree({ d: { f: 'x' }, f: 'y', pipe: fifo(), link: symlink('f') });

  it('a walk without stats reports the same types as lstat, and which special file an `other` is', async () => {
    const withStats = await walkEntries(root);
    const withoutStats = await walkEntries(root, { stats: false });
    expect(withoutStats.map((e) => e.relative)).toEqual(withStats.map((e) => e.relative));
    for (const e of withoutStats) expect('stats' in e).toBe(false);
    const types = Object.fromEntries(withoutStats.map((e) => [e.relative, [e.type, e.special]]));
    expect(types).toEqual({
      d: ['directory', undefined],
      'd/f': ['file', undefined],
      f: ['file', undefined],
      link: ['symlink', undefined],
      pipe: ['other', 'fifo'],
    });
    expect(withStats.find((e) => e.relative === 'pipe')!.stats.isFIFO()).toBe(true);
  });

  it('a directory read on this thread lists what the thread pool lists', async () => {
    const dir = VerifiedDir.open(root, (p) => p === root || p.startsWith(`${root}/`));
    try {
      const names = (ds: { name: string }[]) => ds.map((d) => d.name).sort();
      expect(names(dir.readdirSync())).toEqual(names(await dir.readdir()));
      expect(names(dir.readdirSync())).toEqual(['d', 'f', 'link', 'pipe']);
    } finally {
      dir.close();
    }
  });
});

describe('the path depth bound (MAX_PATH_COMPONENTS)', () => {
  it('offers no entry past the bound and reports each directory it leaves out as too_deep, whatever maxDepth', async () => {
    const root = tree({});
    const room = MAX_PATH_COMPONENTS - pathComponentCount(root);
    const chain = (n: number) => Array.from({ length: n }, () => 'd').join('/');
    mkdirSync(path.join(root, chain(room + 2)), { recursive: true });
    const base = path.join(root, chain(room - 2));
    const entries = await walkEntries(root, { base, maxDepth: 20 });
    expect(entries.map((e) => e.relative)).toEqual(['d', 'd/d']);
    expect(entries.skips).toEqual([['too_deep', 'd/d']]);
    for (const e of entries) expect(pathComponentCount(e.absolute)).toBeLessThanOrEqual(MAX_PATH_COMPONENTS);
    // A base at the bound: its own entries are past it.
    const atBound = await walkEntries(root, { base: path.join(root, chain(room)) });
    expect([atBound.length, atBound.skips]).toEqual([0, [['too_deep', '']]]);
  });
});
