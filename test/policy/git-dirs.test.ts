/**
 * The built-in guards against planted execution (src/policy/git-dirs.ts, src/policy/exec-config.ts, the `.git`
 * spellings of src/policy/file-policy.ts, `assertMayChange` of src/policy/authorize.ts), in-process on real trees.
 * Pins:
 *  - a git directory is recognised by two of HEAD, objects, refs, commondir, whatever its name — at the path, above it
 *    (up to the root itself), but not beside it; creating the second of those names in a directory is refused;
 *  - the verdict of a directory follows a change to it (the per-directory cache is keyed by identity and version, and
 *    a directory changed within two seconds is never cached);
 *  - core.hooksPath: relative to the work tree, absolute, `~/`, through include.path, from the user's global
 *    configuration (GIT_CONFIG_GLOBAL), through a `.git` file; an unexpandable `~user/` or a config git would refuse
 *    fails closed;
 *  - `.git` in every spelling git refuses (case, HFS+ ignorables, NTFS trailing dots/spaces, streams, `git~1`);
 *  - the execution-bearing configuration table: matched at any depth, case-insensitively, on every spelling; lifted by
 *    allowExecConfig; a directory landing as `.claude` with `settings.json` in it.
 */
import { mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { assertMayChange, type PolicyContext } from '../../src/policy/authorize.js';
import { authorizeTreeEntries } from '../../src/policy/tree-authorize.js';
import { EXEC_CONFIG, execConfigEntryOf } from '../../src/policy/exec-config.js';
import { isDotGitName } from '../../src/policy/file-policy.js';
import { assertNotInGitDirectory, repositoryShapeLockPath } from '../../src/policy/git-dirs.js';
import { clearGitDirCache, clearRepositorySearchCache } from '../../src/policy/git-dirs-state.js';
import { REPOSITORY_SEARCH_REUSE_MS } from '../../src/policy/git-repository-search.js';
import type { EffectiveRoot } from '../../src/policy/roots.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({}, 'fs-tools-git-dirs-');
afterAll(() => T.cleanup());
const R = T.dir;
const roots = [{ given: R, real: R, source: 'cli' }] as unknown as EffectiveRoot[];
const ctx: PolicyContext = { roots, allowSecrets: false, policy: { rules: [] } };

const savedEnv = { HOME: process.env.HOME, GIT_CONFIG_GLOBAL: process.env.GIT_CONFIG_GLOBAL };
beforeEach(() => {
  rmSync(path.join(R, 'w'), { recursive: true, force: true });
  mkdirSync(path.join(R, 'w'));
  mkdirSync(path.join(R, 'home'), { recursive: true });
  process.env.HOME = path.join(R, 'home');
  process.env.GIT_CONFIG_GLOBAL = '/dev/null';
  clearGitDirCache();
});
afterEach(() => {
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const W = (...p: string[]) => path.join(R, 'w', ...p);
function put(rel: string, content = ''): void {
  mkdirSync(path.dirname(W(rel)), { recursive: true });
  writeFileSync(W(rel), content);
}
/** The refusal's details, or null when allowed. */
function verdict(p: string): Record<string, unknown> | null {
  // Each verdict sees a fresh repository search: these tests create repositories between verdicts; the search's
  // reuse window (REPOSITORY_SEARCH_REUSE_MS) has a test of its own.
  clearRepositorySearchCache();
  try {
    assertNotInGitDirectory(ctx, p, p);
    return null;
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    expect(error.code).toBe('FILE_POLICY_DENIED');
    return error.details;
  }
}
/** Makes every directory under w/ look old, so the cache may keep it (the racy rule). */
function age(): void {
  const old = new Date(Date.now() - 60_000);
  const visit = (d: string) => {
    utimesSync(d, old, old);
  };
  visit(W());
  for (const d of ['x', 'x/sub']) {
    try {
      visit(W(d));
    } catch {
      /* absent */
    }
  }
}

describe('git directories by shape', () => {
  it.each([
    ['HEAD + objects + refs (bare repo.git)', ['HEAD', 'objects/', 'refs/']],
    ['HEAD + commondir (worktrees/NAME)', ['HEAD', 'commondir']],
    ['objects + refs (a common dir without HEAD)', ['objects/', 'refs/']],
    ['HEAD + refs (partial: fails closed)', ['HEAD', 'refs/']],
  ])('%s: inside, at, and below it refused; beside it allowed', (_label, entries) => {
    for (const e of entries) {
      if (e.endsWith('/')) mkdirSync(W('x', e), { recursive: true });
      else put(`x/${e}`, 'ref: refs/heads/main\n');
    }
    mkdirSync(W('x', 'sub'), { recursive: true });
    expect(verdict(W('x', 'config'))).toMatchObject({ source: 'builtin', rule: 'git_dir', reason: 'inside_git_dir' });
    expect(verdict(W('x', 'sub', 'deep', 'new.txt'))).toMatchObject({ rule: 'git_dir', git_dir: W('x') });
    expect(verdict(W('x'))).toMatchObject({ rule: 'git_dir', reason: 'is_git_dir' });
    expect(verdict(W('beside.txt'))).toBeNull();
    expect(verdict(W('x-sibling', 'a.txt'))).toBeNull();
  });

  it('one repository entry alone is an ordinary directory; the second is refused in every order and kind', () => {
    const names = ['HEAD', 'objects', 'refs', 'commondir'];
    for (const first of names) {
      rmSync(W('x'), { recursive: true, force: true });
      put(`x/${first}`);
      expect(verdict(W('x', 'notes.txt'))).toBeNull();
      for (const second of names.filter((n) => n !== first)) {
        expect(verdict(W('x', second))).toMatchObject({ rule: 'git_dir', reason: 'would_create_git_dir' });
        // Below it (create_dirs, a directory named `refs`), and in another case (a case-folding filesystem).
        expect(verdict(W('x', second, 'heads', 'main'))).toMatchObject({ reason: 'would_create_git_dir' });
        expect(verdict(W('x', second.toUpperCase()))).toMatchObject({ reason: 'would_create_git_dir' });
      }
    }
  });

  it('the root itself as a git directory guards everything in it', () => {
    const inner = makeTree({ HEAD: 'ref: refs/heads/main\n', objects: {}, refs: {}, 'a.txt': 'a' }, 'fs-tools-bare-');
    try {
      const c = { roots: [{ given: inner.dir, real: inner.dir, source: 'cli' }] as unknown as EffectiveRoot[] };
      expect(() => assertNotInGitDirectory(c, 'a.txt', path.join(inner.dir, 'a.txt'))).toThrow(/git directory/);
    } finally {
      inner.cleanup();
    }
  });

  it('a directory that changes is judged as it is now (cache keyed by identity and version)', () => {
    mkdirSync(W('x', 'objects'), { recursive: true });
    age();
    expect(verdict(W('x', 'a.txt'))).toBeNull();
    expect(verdict(W('x', 'a.txt'))).toBeNull(); // cached now (old directory)
    mkdirSync(W('x', 'refs')); // changes x's mtime and ctime
    expect(verdict(W('x', 'a.txt'))).toMatchObject({ rule: 'git_dir' });
    rmSync(W('x', 'refs'), { recursive: true });
    age(); // the mtime set back to an older value: the ctime still moved, so the verdict follows
    expect(verdict(W('x', 'a.txt'))).toBeNull();
  });

  it('a link on the way fails closed (NOT_ALLOWED), never followed', () => {
    mkdirSync(W('real'), { recursive: true });
    expect(() => assertNotInGitDirectory(ctx, 'p', W('real', 'a.txt'))).not.toThrow();
    rmSync(W('real'), { recursive: true });
    mkdirSync(W('elsewhere'));
    // `real` is now a link: a path authorized as real before the swap is refused, not resolved again.
    symlinkSync(W('elsewhere'), W('real'));
    expect(() => assertNotInGitDirectory(ctx, 'p', W('real', 'a.txt'))).toThrow(ToolError);
  });

  it('repositoryShapeLockPath: one lock per directory for every repository entry name', () => {
    expect(repositoryShapeLockPath('/r/x/refs')).toBe('/r/x/HEAD');
    expect(repositoryShapeLockPath('/r/x/Objects')).toBe('/r/x/HEAD');
    expect(repositoryShapeLockPath('/r/x/HEAD')).toBe('/r/x/HEAD');
    expect(repositoryShapeLockPath('/r/x/readme')).toBeNull();
  });
});

describe('core.hooksPath', () => {
  /** A work tree at w/wt with `.git/` holding a config. */
  function repo(config: string): void {
    put('wt/.git/config', config);
    mkdirSync(W('wt', 'src'), { recursive: true });
  }

  it('relative to the work tree: the directory and everything in it refused, the rest of the tree allowed', () => {
    repo('[core]\n\thooksPath = .githooks\n');
    expect(verdict(W('wt', '.githooks', 'pre-commit'))).toMatchObject({
      source: 'builtin',
      rule: 'hooks_dir',
      reason: 'core_hookspath',
    });
    expect(verdict(W('wt', '.githooks'))).toMatchObject({ rule: 'hooks_dir' });
    expect(verdict(W('wt', 'src', 'a.ts'))).toBeNull();
    expect(verdict(W('wt', '.githooks-other', 'x'))).toBeNull();
  });

  it('absolute, `~/`, and through include.path (relative to the including file)', () => {
    repo(`[core]\n\thooksPath = ${W('abs-hooks')}\n[include]\n\tpath = ../extra.cfg\n`);
    put('wt/extra.cfg', '[core]\n\thooksPath = ~/tilde-hooks\n'); // wt/.git/../extra.cfg
    process.env.HOME = W('wt', 'in');
    // The repository lies in the root, so the directory it names is guarded wherever it is in the root.
    expect(verdict(W('abs-hooks', 'pre-push'))).toMatchObject({ rule: 'hooks_dir', hooks_dir: W('abs-hooks') });
    expect(verdict(W('abs-hooks-other', 'pre-push'))).toBeNull();
    expect(verdict(W('wt', 'src', 'x'))).toBeNull();
    expect(verdict(W('wt', 'in', 'tilde-hooks', 'post-merge'))).toMatchObject({ rule: 'hooks_dir' });
    mkdirSync(W('wt', 'abs-hooks'));
    repo(`[core]\n\thooksPath = ${W('wt', 'abs-hooks')}\n`);
    expect(verdict(W('wt', 'abs-hooks', 'pre-push'))).toMatchObject({ rule: 'hooks_dir' });
  });

  it("the user's global configuration (GIT_CONFIG_GLOBAL), absolute: guarded with or without a repository", () => {
    put('global.cfg', `[core]\n\thooksPath = ${W('global-hooks')}\n`);
    process.env.GIT_CONFIG_GLOBAL = W('global.cfg');
    expect(verdict(W('global-hooks', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir' });
  });

  it('through a `.git` file (a linked work tree): the common config names the hooks', () => {
    put('gd/HEAD', 'ref: refs/heads/main\n');
    put('gd/commondir', '../common\n');
    mkdirSync(W('common', 'objects'), { recursive: true });
    mkdirSync(W('common', 'refs'), { recursive: true });
    put('common/config', '[core]\n\thooksPath = hooks-here\n');
    put('lw/.git', `gitdir: ${W('gd')}\n`);
    expect(verdict(W('lw', 'hooks-here', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir' });
    expect(verdict(W('lw', 'other.txt'))).toBeNull();
  });

  it('a repository directly below the root: its shared hooks directory outside its work tree is guarded', () => {
    const sib = path.join(R, 'sib');
    try {
      mkdirSync(path.join(sib, '.git'), { recursive: true });
      writeFileSync(path.join(sib, '.git', 'config'), '[core]\n\thooksPath = ../w/shared-hooks\n');
      expect(verdict(W('shared-hooks', 'pre-commit'))).toMatchObject({
        rule: 'hooks_dir',
        hooks_dir: W('shared-hooks'),
      });
      // A config git would refuse: that work tree is refused, the rest of the root is not.
      writeFileSync(path.join(sib, '.git', 'config'), '[core\n');
      clearGitDirCache(); // the config was rewritten within the same second: its cache entry would still match
      expect(verdict(path.join(sib, 'a.txt'))).toMatchObject({ reason: 'config_undecidable' });
      expect(verdict(W('shared-hooks', 'pre-commit'))).toBeNull();
    } finally {
      rmSync(sib, { recursive: true, force: true });
    }
  });

  it('a repository another process creates is found once the root search reuse window has passed', () => {
    expect(verdict(W('win-hooks', 'pre-commit'))).toBeNull(); // a fresh search, cached from here
    const start = Date.now();
    vi.useFakeTimers({ now: start, toFake: ['Date'] });
    try {
      put('win/repo/.git/config', `[core]\n\thooksPath = ${W('win-hooks')}\n`);
      // Within the window the root's list of repositories is reused (the file tools cannot create one); after it, the
      // new repository's hooks directory is guarded. The checks along the path's own repositories are never reused.
      vi.setSystemTime(start + REPOSITORY_SEARCH_REUSE_MS + 1);
      expect(() => assertNotInGitDirectory(ctx, W('win-hooks', 'pre-commit'), W('win-hooks', 'pre-commit'))).toThrow(
        ToolError,
      );
      expect(verdict(W('win', 'repo', 'hooks-not-named.txt'))).toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a repository at any depth of the root; a directory changed since its listing was cached is listed again', () => {
    put('a/b/c/d/.git/config', `[core]\n\thooksPath = ${W('deep-hooks')}\n`);
    age();
    expect(verdict(W('deep-hooks', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir', hooks_dir: W('deep-hooks') });
    // A new, deeper repository in an aged (cached) tree: its directory's version changed, so it is listed again.
    put('a/b/c/d/e/f/.git/config', `[core]\n\thooksPath = ${W('deeper-hooks')}\n`);
    expect(verdict(W('deeper-hooks', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir' });
    // A bare repository (a git directory by shape) deep in the root names one too.
    put('x/y/bare.git/HEAD', 'ref: refs/heads/main\n');
    mkdirSync(W('x/y/bare.git/objects'));
    put('x/y/bare.git/config', `[core]\n\tbare = true\n\thooksPath = ${W('bare-hooks')}\n`);
    expect(verdict(W('bare-hooks', 'update'))).toMatchObject({ rule: 'hooks_dir' });
    // Any name in it: a hook there may run a helper beside it (a sourced `common.sh`), so the whole directory is
    // guarded, whatever repository names it (test/attacks/git-hooks-gate-review.test.ts).
    expect(verdict(W('bare-hooks', 'common.sh'))).toMatchObject({ rule: 'hooks_dir' });
    expect(verdict(W('a', 'b', 'plain.txt'))).toBeNull();
  });

  it('the user configuration file inside a root is guarded itself (user_config)', () => {
    put('user.gitconfig', '[user]\n\tname = me\n');
    process.env.GIT_CONFIG_GLOBAL = W('user.gitconfig');
    expect(verdict(W('user.gitconfig'))).toMatchObject({ rule: 'git_dir', reason: 'user_config' });
    expect(verdict(W('other.txt'))).toBeNull();
  });

  it('commondir and .git files are read as git reads them: only trailing CRs and LFs are trimmed', () => {
    // git uses `../common ` (trailing space) for the common dir; a decoy `../common` must not be read in its place.
    put('common /HEAD', 'ref: refs/heads/main\n');
    mkdirSync(W('common /objects'));
    mkdirSync(W('common /refs'));
    put('common /config', '[core]\n\thooksPath = hooks-rel\n');
    put('common/config', '[user]\n\tname = decoy\n');
    put('gd/HEAD', 'ref: refs/heads/main\n');
    put('gd/commondir', '../common \n');
    put('wt/.git', 'gitdir: ../gd\n');
    expect(verdict(W('wt/hooks-rel/pre-commit'))).toMatchObject({ rule: 'hooks_dir', reason: 'core_hookspath' });
  });

  it('hooks reached through links: the target of every link in the hooks directory git uses, and a linked hooks dir', () => {
    put('lk/.git/config', '');
    put('lk/scripts/pre-commit', 'true\n');
    mkdirSync(W('lk/.git/hooks'));
    symlinkSync('../../scripts/pre-commit', W('lk/.git/hooks/pre-commit'));
    // A chain ending in a target not written yet.
    symlinkSync('../../scripts/chain', W('lk/.git/hooks/post-commit'));
    symlinkSync('missing-hook', W('lk/scripts/chain'));
    expect(verdict(W('lk/scripts/pre-commit'))).toMatchObject({ rule: 'hooks_dir', reason: 'core_hookspath' });
    expect(verdict(W('lk/scripts/missing-hook'))).toMatchObject({ rule: 'hooks_dir' });
    expect(verdict(W('lk/scripts/other'))).toBeNull();
    // A hooks directory that is itself a link out of the git directory.
    put('ld/.git/config', '');
    mkdirSync(W('shared-hooks'));
    symlinkSync('../../shared-hooks', W('ld/.git/hooks'));
    expect(verdict(W('shared-hooks/pre-push'))).toMatchObject({ rule: 'hooks_dir' });
    // A link loop fails closed for the work tree of the repository whose hooks it is in.
    put('lp/.git/config', '');
    mkdirSync(W('lp/.git/hooks'));
    symlinkSync('loop', W('lp/.git/hooks/loop'));
    expect(verdict(W('lp/a.txt'))).toMatchObject({ rule: 'hooks_dir', reason: 'config_undecidable' });
  });

  it('a capped search fails closed: an entry named as a git hook is refused anywhere in the root, others are not', () => {
    let rel = 'deep';
    for (let i = 0; i < 130; i++) rel += '/d';
    mkdirSync(W(rel), { recursive: true });
    expect(verdict(W('some', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir', reason: 'search_capped' });
    expect(verdict(W('some', 'POST-CHECKOUT'))).toMatchObject({ reason: 'search_capped' });
    expect(verdict(W('some', 'pre-commit.md'))).toBeNull();
    expect(verdict(W('some', 'a.txt'))).toBeNull();
    rmSync(W('deep'), { recursive: true });
    expect(verdict(W('some', 'pre-commit'))).toBeNull();
  });

  it("`~user/` expands to that user's home (this process's user: its HOME)", () => {
    const sib = path.join(R, 'sib2');
    try {
      mkdirSync(path.join(sib, '.git'), { recursive: true });
      writeFileSync(path.join(sib, '.git', 'config'), `[core]\n\thooksPath = ~${os.userInfo().username}/user-hooks\n`);
      expect(verdict(path.join(R, 'home', 'user-hooks', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir' });
      expect(verdict(path.join(R, 'home', 'other', 'x'))).toBeNull();
    } finally {
      rmSync(sib, { recursive: true, force: true });
    }
  });

  it('fails closed: `~user/`, and a config git would refuse', () => {
    repo('[core]\n\thooksPath = ~someoneelse/hooks\n');
    expect(verdict(W('wt', 'src', 'a.ts'))).toMatchObject({ rule: 'hooks_dir', reason: 'config_undecidable' });
    repo('[core\n\thooksPath = x\n');
    clearGitDirCache();
    expect(verdict(W('wt', 'src', 'a.ts'))).toMatchObject({ reason: 'config_undecidable' });
  });
});

describe('trees (treeGitGuard, through authorizeTreeEntries)', () => {
  const place = (rel: string) => ({
    requested: rel,
    absolute: W(rel),
    real: W(rel),
    root: roots[0],
    stats: null,
    viaSymlink: false,
  });
  it('a tree carrying a git directory (two repository entries in one directory) is refused, at any depth', () => {
    mkdirSync(W('proj'), { recursive: true });
    const judge = authorizeTreeEntries(ctx, 'move', place('proj') as never, place('proj2') as never);
    const entries: Array<[string, boolean]> = [
      ['docs', true],
      ['docs/refs', true],
      ['repo.git', true],
      ['repo.git/config', false],
      ['repo.git/HEAD', false],
      ['repo.git/objects', true],
    ];
    for (const [relative, isDirectory] of entries) judge.entry({ relative, isDirectory });
    expect(() => judge.assertAllowed()).toThrow(expect.objectContaining({ code: 'FILE_POLICY_DENIED' }));
    try {
      judge.assertAllowed();
    } catch (error) {
      expect((error as ToolError).details).toMatchObject({ source: 'builtin', rule: 'git_dir' });
      expect((error as ToolError).details.entries).toEqual([
        { path: W('proj', 'repo.git', 'objects'), side: 'source', kind: 'git_dir' },
      ]);
    }
    // One repository entry per directory is an ordinary tree.
    const ok = authorizeTreeEntries(ctx, 'copy', place('proj') as never, place('proj3') as never);
    for (const e of ['a/HEAD', 'b/refs', 'c/objects', 'c/x']) ok.entry({ relative: e, isDirectory: false });
    expect(() => ok.assertAllowed()).not.toThrow();
  });

  it('a tree holding a hooks directory refuses a move and a delete; landing one inside a hooks directory too', () => {
    put('wt/.git/config', '[core]\n\thooksPath = tools/hooks\n');
    mkdirSync(W('wt', 'tools', 'hooks'), { recursive: true });
    const del = authorizeTreeEntries(ctx, 'delete', place('wt/tools') as never, null);
    del.entry({ relative: 'hooks', isDirectory: true });
    expect(() => del.assertAllowed()).toThrow(expect.objectContaining({ code: 'FILE_POLICY_DENIED' }));
    const into = authorizeTreeEntries(ctx, 'copy', place('wt/src') as never, place('wt/tools/hooks/more') as never);
    // (the top itself is refused by the single-path check; here its entries are)
    into.entry({ relative: 'pre-commit', isDirectory: false });
    expect(() => into.assertAllowed()).toThrow(expect.objectContaining({ code: 'FILE_POLICY_DENIED' }));
  });
});

describe('.git in every spelling', () => {
  it.each([
    '.git',
    '.GIT',
    '.Git',
    '.git.',
    '.git ',
    '.git. .',
    '.g\u200cit',
    '\ufeff.git',
    '.git::$INDEX_ALLOCATION',
    'GIT~1',
  ])('%j is .git', (name) => {
    expect(isDotGitName(name)).toBe(true);
    expect(() => assertMayChange(ctx, W('a', name, 'config'), W('a', name, 'config'))).toThrow(/\.git/);
  });
  it.each(['.gitignore', '.github', 'git', 'x.git', '.gitattributes', 'git~2'])('%j is not', (name) => {
    expect(isDotGitName(name)).toBe(false);
  });
});

describe('execution-bearing configuration', () => {
  it.each(EXEC_CONFIG.map((e) => e.components.join('/')))(
    '%s: at the top, nested, in any case, unless allowed',
    (rel) => {
      for (const p of [W(rel), W('nested', 'project', rel), W(rel.toUpperCase())]) {
        let caught: unknown;
        try {
          assertMayChange(ctx, p, p);
        } catch (error) {
          caught = error;
        }
        expect(caught).toBeInstanceOf(ToolError);
        expect((caught as ToolError).details).toMatchObject({
          source: 'builtin',
          rule: 'exec_config',
          flag: '--allow-exec-config',
        });
        expect((caught as ToolError).message).toContain('execution-bearing configuration (');
        expect(() => assertMayChange({ ...ctx, allowExecConfig: true }, p, p)).not.toThrow();
      }
    },
  );

  it('a link spelling to the file is refused (either spelling matches)', () => {
    expect(() => assertMayChange(ctx, W('innocent.json'), W('.claude', 'settings.json'))).toThrow(/Claude Code/);
  });

  it('lookalikes are allowed', () => {
    for (const rel of [
      'claude/settings.json',
      '.claude/settings.json.bak',
      '.claude-x/settings.json',
      'mcp.json',
      'a.envrc',
    ]) {
      expect(execConfigEntryOf(W(rel))).toBeNull();
    }
  });

  it('a directory landing as .claude with settings.json: its entry is judged at the new place (tree walk)', () => {
    const source = {
      requested: 'tmp',
      absolute: W('tmp'),
      real: W('tmp'),
      root: roots[0],
      stats: null,
      viaSymlink: false,
    };
    const dest = { ...source, requested: '.claude', absolute: W('.claude'), real: W('.claude') };
    const judge = authorizeTreeEntries(ctx, 'move', source as never, dest as never);
    expect(() => judge.entry({ relative: 'settings.json', isDirectory: false })).not.toThrow();
    expect(() => judge.assertAllowed()).toThrow(/exec_config|Claude Code|may not carry/);
    const allowed = authorizeTreeEntries({ ...ctx, allowExecConfig: true }, 'move', source as never, dest as never);
    allowed.entry({ relative: 'settings.json', isDirectory: false });
    expect(() => allowed.assertAllowed()).not.toThrow();
  });
});
