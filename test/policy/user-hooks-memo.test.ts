/**
 * The git-directory guard's kept reading of the user's git configuration (src/policy/git-hooks-config.ts `userHooks`,
 * src/policy/path-stamps.ts), in-process on real trees. The clock is set 10 s ahead so files written here are not
 * "racy" and the reading is kept; every change below also changes a size, an inode or a link, so a coarse timestamp
 * cannot hide it. Pins: after any change to the configuration files or a directory on the way to them (content,
 * creation of a missing file, the file or its directory replaced by a link), the next check sees it exactly as a
 * check with nothing kept does; the reading is kept only while no link is on the way.
 */
import { mkdirSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { assertNotInGitDirectory } from '../../src/policy/git-dirs.js';
import { clearGitDirCache, clearRepositorySearchCache, gitDirState } from '../../src/policy/git-dirs-state.js';
import type { EffectiveRoot } from '../../src/policy/roots.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({}, 'fs-tools-user-hooks-memo-');
afterAll(() => T.cleanup());
const R = T.dir;
const roots = [{ given: R, real: R, source: 'cli' }] as unknown as EffectiveRoot[];
const ctx: PolicyContext = { roots, allowSecrets: false, policy: { rules: [] } };
const H = (...p: string[]) => path.join(R, 'home', ...p);
const W = (...p: string[]) => path.join(R, 'w', ...p);

const KEYS = ['HOME', 'GIT_CONFIG_GLOBAL', 'GIT_CONFIG_NOSYSTEM', 'XDG_CONFIG_HOME'] as const;
const savedEnv = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
beforeEach(() => {
  for (const d of ['home', 'home2', 'w', 'elsewhere']) rmSync(path.join(R, d), { recursive: true, force: true });
  mkdirSync(H(), { recursive: true });
  mkdirSync(W('hooks'), { recursive: true });
  mkdirSync(path.join(R, 'elsewhere'));
  writeFileSync(H('.gitconfig'), '[user]\n\tname = me\n');
  process.env.HOME = H();
  process.env.GIT_CONFIG_NOSYSTEM = '1';
  delete process.env.GIT_CONFIG_GLOBAL;
  delete process.env.XDG_CONFIG_HOME;
  clearGitDirCache();
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.now() + 10_000);
});
afterEach(() => {
  vi.useRealTimers();
  for (const k of KEYS) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

/** The refusal's details, or null when allowed. */
function verdict(p: string): Record<string, unknown> | null {
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
/** The verdict with the kept reading (if any), then with nothing kept: they must agree. */
function both(p: string): Record<string, unknown> | null {
  const kept = verdict(p);
  clearGitDirCache();
  expect(verdict(p)).toEqual(kept);
  return kept;
}

describe("the user's configuration, kept between checks", () => {
  it('is kept while nothing changes, and a hooksPath added to ~/.gitconfig is seen at the next check', () => {
    expect(verdict(W('hooks', 'pre-commit'))).toBeNull();
    expect(gitDirState.user).not.toBeNull();
    expect(verdict(W('hooks', 'pre-commit'))).toBeNull();
    writeFileSync(H('.gitconfig'), `[core]\n\thooksPath = ${W('hooks')}\n`);
    expect(both(W('hooks', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir', reason: 'core_hookspath' });
  });

  it('a missing ~/.config/git/config created later is read', () => {
    expect(verdict(W('hooks', 'pre-push'))).toBeNull();
    expect(gitDirState.user).not.toBeNull();
    mkdirSync(H('.config', 'git'), { recursive: true });
    writeFileSync(H('.config', 'git', 'config'), `[core]\n\thooksPath = ${W('hooks')}\n`);
    expect(both(W('hooks', 'pre-push'))).toMatchObject({ rule: 'hooks_dir', reason: 'core_hookspath' });
  });

  it('~/.gitconfig replaced by a link: its target is guarded as the user configuration; nothing is kept', () => {
    const target = path.join(R, 'elsewhere', 'real.cfg');
    expect(verdict(target)).toBeNull();
    renameSync(H('.gitconfig'), target);
    symlinkSync(target, H('.gitconfig'));
    expect(both(target)).toMatchObject({ rule: 'git_dir', reason: 'user_config', config: target });
    expect(gitDirState.user).toBeNull();
  });

  it('the home directory replaced by a link: the configuration at its new real place is guarded', () => {
    const moved = path.join(R, 'home2', '.gitconfig');
    expect(verdict(moved)).toBeNull();
    expect(gitDirState.user).not.toBeNull();
    renameSync(H(), path.join(R, 'home2'));
    symlinkSync(path.join(R, 'home2'), H());
    expect(both(moved)).toMatchObject({ rule: 'git_dir', reason: 'user_config' });
  });
});

/**
 * Review (session 15, r15-review-misc): changes an attacker outside the server could make to the user's configuration
 * without a link on the way, each of which must be seen at the next check exactly as with nothing kept. All held on
 * 97844c8 (none is a failing case); kept as pins of the stamps' coverage.
 */
describe("review: the user's configuration changed behind a kept reading", () => {
  const hooksConfig = () => `[core]\n\thooksPath = ${W('hooks')}\n`;

  it('a same-size edit with the mtime set back to the old one is seen (ctime changes)', () => {
    const next = hooksConfig();
    const before = `#${'x'.repeat(next.length - 2)}\n`;
    writeFileSync(H('.gitconfig'), before);
    clearGitDirCache();
    const old = statSync(H('.gitconfig'));
    expect(verdict(W('hooks', 'pre-commit'))).toBeNull();
    expect(gitDirState.user).not.toBeNull();
    writeFileSync(H('.gitconfig'), next);
    utimesSync(H('.gitconfig'), old.atime, old.mtime);
    expect(statSync(H('.gitconfig')).size).toBe(old.size);
    expect(both(W('hooks', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir', reason: 'core_hookspath' });
  });

  it('the home directory swapped by renames (no link) for one whose ~/.gitconfig names a hooks directory', () => {
    expect(verdict(W('hooks', 'pre-commit'))).toBeNull();
    expect(gitDirState.user).not.toBeNull();
    mkdirSync(path.join(R, 'home2'));
    writeFileSync(path.join(R, 'home2', '.gitconfig'), hooksConfig());
    renameSync(H(), path.join(R, 'elsewhere', 'old-home'));
    renameSync(path.join(R, 'home2'), H());
    expect(both(W('hooks', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir', reason: 'core_hookspath' });
  });

  it('HOME, XDG_CONFIG_HOME or GIT_CONFIG_GLOBAL changed to name another configuration', () => {
    mkdirSync(path.join(R, 'home2', 'xdg', 'git'), { recursive: true });
    writeFileSync(path.join(R, 'home2', '.gitconfig'), hooksConfig());
    writeFileSync(path.join(R, 'home2', 'xdg', 'git', 'config'), hooksConfig());
    for (const change of [
      () => (process.env.HOME = path.join(R, 'home2')),
      () => (process.env.XDG_CONFIG_HOME = path.join(R, 'home2', 'xdg')),
      () => (process.env.GIT_CONFIG_GLOBAL = path.join(R, 'home2', '.gitconfig')),
    ]) {
      process.env.HOME = H();
      delete process.env.XDG_CONFIG_HOME;
      delete process.env.GIT_CONFIG_GLOBAL;
      clearGitDirCache();
      expect(verdict(W('hooks', 'pre-commit'))).toBeNull();
      expect(gitDirState.user).not.toBeNull();
      change();
      expect(both(W('hooks', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir', reason: 'core_hookspath' });
    }
  });

  it('an include added to ~/.gitconfig, then a hooksPath added to the included file: both seen, nothing kept', () => {
    const inc = path.join(R, 'elsewhere', 'inc.cfg');
    writeFileSync(inc, '[user]\n\temail = me@example.com\n');
    expect(verdict(W('hooks', 'pre-commit'))).toBeNull();
    writeFileSync(H('.gitconfig'), `[include]\n\tpath = ${inc}\n`);
    expect(both(inc)).toMatchObject({ rule: 'git_dir', reason: 'included_config' });
    expect(gitDirState.user).toBeNull();
    writeFileSync(inc, hooksConfig());
    expect(both(W('hooks', 'pre-commit'))).toMatchObject({ rule: 'hooks_dir', reason: 'core_hookspath' });
  });
});
