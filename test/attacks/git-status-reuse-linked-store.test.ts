/**
 * Review attack on git_status' reuse (src/vcs/git-status-watch.ts): the view accepts an object store's `pack`
 * directory (or a fan-out directory) that is a link to a directory elsewhere inside the roots (git-objects.ts
 * `verifyStore` verifies the link and mirrors its target), but the watch walk never follows a link, so the target is
 * not watched. Objects removed from the target raise no event in the watched set: plain git fails ("bad object
 * HEAD"), the server answers with the kept status of the call before.
 */
import { mkdirSync, readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUS_ARGS } from '../../src/vcs/git.js';
import { isolatedGit, isolatedGitEnv } from '../helpers/isolated-git.js';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {}, root: {} }, 'fs-tools-status-reuse-link-');
const HOME = path.join(scratch.dir, 'home');
const ROOT = path.join(scratch.dir, 'root');
const TOP = path.join(ROOT, 'repo');
const STORE = path.join(ROOT, 'packstore');
const HIDDEN = path.join(ROOT, 'moved-away');
afterAll(() => scratch.cleanup());

const git = (...args: string[]): string => isolatedGit(TOP, HOME, ...args);
/** Plain git's status exit code at this moment. */
const plainExit = (): number | null =>
  spawnSync('git', ['--no-optional-locks', ...STATUS_ARGS], { cwd: TOP, env: isolatedGitEnv(HOME) }).status;

describe.runIf(process.platform === 'linux')('git_status with the pack directory linked elsewhere in the root', () => {
  let client: TestClient;
  beforeAll(async () => {
    mkdirSync(TOP, { recursive: true });
    mkdirSync(HIDDEN);
    git('init', '-q', '-b', 'main');
    writeFileSync(path.join(TOP, 'a.txt'), 'x\n');
    git('add', '-A');
    git('commit', '-q', '-m', 'i');
    git('repack', '-adq');
    renameSync(path.join(TOP, '.git', 'objects', 'pack'), STORE);
    symlinkSync(STORE, path.join(TOP, '.git', 'objects', 'pack'));
    expect(plainExit()).toBe(0);
    client = await connect('modern', {
      args: ['--auto-occ=off', '--state-dir', path.join(scratch.dir, 'state'), ROOT],
      env: { HOME, XDG_CONFIG_HOME: HOME },
    });
  }, 60_000);
  afterAll(async () => {
    await client.close();
  });

  it('the packs moved out of the linked directory: the server fails as plain git does', async () => {
    // First call builds the watches, the second keeps its answer, the third may reuse it.
    for (let i = 0; i < 3; i++) await client.callOk('git_status', { path: TOP });
    for (const f of readdirSync(STORE)) renameSync(path.join(STORE, f), path.join(HIDDEN, f));
    expect(plainExit()).not.toBe(0); // fatal: bad object HEAD
    const r = await client.call('git_status', { path: TOP });
    // Reuse on: isError false, the status of before (HEAD's commit no longer readable by git).
    expect(r.isError).toBe(true);
  });
});

describe.runIf(process.platform === 'linux')('git_status with a fan-out directory linked elsewhere in the root', () => {
  const top = path.join(ROOT, 'repo2');
  const outside = path.join(ROOT, 'fanout-store');
  const g = (...args: string[]): string => isolatedGit(top, HOME, ...args);
  let client: TestClient;
  let fanout = '';
  beforeAll(async () => {
    mkdirSync(top, { recursive: true });
    mkdirSync(outside);
    g('init', '-q', '-b', 'main');
    writeFileSync(path.join(top, 'a.txt'), 'x\n');
    g('add', '-A');
    g('commit', '-q', '-m', 'i');
    // HEAD's commit is loose: its fan-out directory moved out and linked back.
    fanout = g('rev-parse', 'HEAD').trim().slice(0, 2);
    const dir = path.join(top, '.git', 'objects', fanout);
    renameSync(dir, path.join(outside, fanout));
    symlinkSync(path.join(outside, fanout), dir);
    client = await connect('modern', {
      args: ['--auto-occ=off', '--state-dir', path.join(scratch.dir, 'state2'), ROOT],
      env: { HOME, XDG_CONFIG_HOME: HOME },
    });
  }, 60_000);
  afterAll(async () => {
    await client.close();
  });

  it('the loose commit moved out of the linked fan-out directory: the server fails as plain git does', async () => {
    for (let i = 0; i < 3; i++) await client.callOk('git_status', { path: top });
    const d = path.join(outside, fanout);
    for (const f of readdirSync(d)) renameSync(path.join(d, f), path.join(HIDDEN, `loose-${f}`));
    const plain = spawnSync('git', ['--no-optional-locks', ...STATUS_ARGS], { cwd: top, env: isolatedGitEnv(HOME) });
    expect(plain.status).not.toBe(0);
    const r = await client.call('git_status', { path: top });
    expect(r.isError).toBe(true);
  });
});
