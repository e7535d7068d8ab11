/**
 * Attacks on the verified-access core and the mutation pipeline (issue 11), each injected deterministically, in-process
 * through `callTool` (the path the stdio server uses):
 *  - a directory moved OUT of the roots while a write holds its descriptor: nothing is created there, no temporary
 *    file is left there (the temporary file is removed through the same descriptor);
 *  - decisions inside the path lock: a destination created, or a directory replaced by a file, between authorization
 *    and the lock is judged as it is now (HASH_REQUIRED), never replaced or deleted on the facts of authorization;
 *  - a tree deeper than PATH_MAX: the recursive delete's inspection sees a `.env` below PATH_MAX and refuses the whole
 *    delete; without it, the whole tree is deleted through descriptors;
 *  - effects before checks: move_path with expected_status_hash into a directory that is not a git work tree is
 *    VALIDATION before anything moves, and costs no budget.
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { setWriteFaultInjector } from '../../src/fs/atomic-write.js';
import { withPathLock } from '../../src/fs/path-lock.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';
import { entryObject } from '../helpers/entries.js';

let R: string;
let O: string;
let S: string;
let state: ProcessState;
const cleanups: Array<() => void> = [];

function newState(args: string[]): ProcessState {
  const config = parseConfig(['--state-dir', S, ...args], { cwd: R, home: '/nonexistent-home', toolNames: TOOL_NAMES });
  return createProcessState(config, TOOLS, 'test');
}

beforeAll(() => {
  const r = makeTree({}, 'fs-tools-vm-root-');
  const o = makeTree({}, 'fs-tools-vm-outside-');
  const s = makeTree({}, 'fs-tools-vm-state-');
  cleanups.push(r.cleanup, o.cleanup, s.cleanup);
  R = r.dir;
  O = o.dir;
  S = s.dir;
  state = newState([R]);
});
afterAll(() => {
  for (const c of cleanups) c();
});
afterEach(() => setWriteFaultInjector(null));

const call = (tool: string, args: Record<string, unknown>, st: ProcessState = state): Promise<CallOutcome> =>
  callTool(st, tool, args, new AbortController().signal);
const codeOf = (o: CallOutcome): string => (o.ok ? 'ok' : o.envelope.error.code);

let n = 0;
function area(): string {
  const d = path.join(R, `a${++n}`);
  mkdirSync(d);
  return d;
}

describe('a directory moved out of the roots while the call holds it', () => {
  /**
   * Runs `make(sub)` while, at the atomic writer's "write" step (its temporary file open in `sub`), the real directory
   * `sub` is moved out of the roots; returns the outcome and what the moved directory holds afterwards.
   */
  async function movedOutDuringWrite(
    make: (sub: string) => Promise<CallOutcome>,
  ): Promise<{ code: string; left: string[] }> {
    const d = area();
    const sub = path.join(d, 'sub');
    mkdirSync(sub);
    const away = path.join(O, `moved-${n}`);
    let fired = false;
    setWriteFaultInjector((step) => {
      if (step !== 'write' || fired) return;
      fired = true;
      renameSync(sub, away);
    });
    const outcome = await make(sub);
    expect(fired).toBe(true);
    return { code: codeOf(outcome), left: readdirSync(away) };
  }

  it('write_file creates nothing there and leaves no temporary file there', async () => {
    const r = await movedOutDuringWrite((sub) =>
      call('write_file', { path: path.join(sub, 'new.txt'), content: 'PWNED\n' }),
    );
    expect(r).toEqual({ code: 'NOT_ALLOWED', left: [] });
  });

  it('apply_patch creating a file: the same', async () => {
    const r = await movedOutDuringWrite((sub) =>
      call('apply_patch', {
        patch: `--- /dev/null\n+++ b/${path.relative(R, path.join(sub, 'c.txt'))}\n@@ -0,0 +1 @@\n+PWNED\n`,
      }),
    );
    expect(r).toEqual({ code: 'NOT_ALLOWED', left: [] });
  });
});

describe('decisions are taken inside the path lock, on the current state', () => {
  /** Starts `make()` while the lock of `paths` is held, runs `meanwhile` after it authorized, then releases. */
  async function whileLocked(
    paths: string[],
    make: () => Promise<CallOutcome>,
    meanwhile: () => void,
  ): Promise<CallOutcome> {
    let pending!: Promise<CallOutcome>;
    await withPathLock(paths, S, async () => {
      pending = make();
      await new Promise((r) => setTimeout(r, 300)); // authorization is done; the call waits for the lock
      meanwhile();
    });
    return await pending;
  }

  it('move_path overwrite: a destination created after authorization needs its hash (nothing replaced)', async () => {
    const d = area();
    writeFileSync(path.join(d, 'src.txt'), 'source\n');
    const dst = path.join(d, 'dst.txt');
    const outcome = await whileLocked(
      [dst],
      () => call('move_path', { source: path.join(d, 'src.txt'), destination: dst, overwrite: true }),
      () => writeFileSync(dst, 'THEIRS\n'),
    );
    expect(codeOf(outcome)).toBe('HASH_REQUIRED');
    expect(readFileSync(dst, 'utf8')).toBe('THEIRS\n');
    expect(readFileSync(path.join(d, 'src.txt'), 'utf8')).toBe('source\n');
  });

  it('delete_path: a directory replaced by a file after authorization is judged as a file (hash required)', async () => {
    const d = area();
    const target = path.join(d, 'x');
    mkdirSync(target);
    const outcome = await whileLocked(
      [target],
      () => call('delete_path', { path: target, recursive: true }),
      () => {
        rmSync(target, { recursive: true });
        writeFileSync(target, 'precious\n');
      },
    );
    expect(codeOf(outcome)).toBe('HASH_REQUIRED');
    expect(readFileSync(target, 'utf8')).toBe('precious\n');
  });

  it('delete_path recursive: a secret planted after authorization refuses the delete', async () => {
    const d = area();
    const target = path.join(d, 'tree');
    mkdirSync(path.join(target, 'a'), { recursive: true });
    const outcome = await whileLocked(
      [target],
      () => call('delete_path', { path: target, recursive: true }),
      () => writeFileSync(path.join(target, 'a', '.env'), 'TOKEN=1\n'),
    );
    expect(codeOf(outcome)).toBe('SECRET_DENIED');
    expect(readFileSync(path.join(target, 'a', '.env'), 'utf8')).toBe('TOKEN=1\n');
  });
});

describe('a tree deeper than PATH_MAX', () => {
  const NAME = 'd'.repeat(60);
  const LEVELS = 80; // 80 × 61 bytes: about 4,900 bytes below the top, more than PATH_MAX

  /** Builds the chain through directory descriptors (a path string that long cannot be used); returns the top. */
  function deepTree(withSecret: boolean): string {
    const top = path.join(area(), 'deep');
    mkdirSync(top);
    let fd = openSync(top, constants.O_RDONLY | constants.O_DIRECTORY);
    for (let i = 0; i < LEVELS; i++) {
      mkdirSync(`/proc/self/fd/${fd}/${NAME}`);
      writeFileSync(`/proc/self/fd/${fd}/f${i}.txt`, 'x\n');
      const next = openSync(`/proc/self/fd/${fd}/${NAME}`, constants.O_RDONLY | constants.O_DIRECTORY);
      closeSync(fd);
      fd = next;
    }
    if (withSecret) writeFileSync(`/proc/self/fd/${fd}/.env`, 'TOKEN=1\n');
    closeSync(fd);
    return top;
  }

  const supported = existsSync('/proc/self/fd');

  it.runIf(supported)(
    'the inspection finds a .env below PATH_MAX and refuses the whole delete (dry run too)',
    async () => {
      const top = deepTree(true);
      try {
        for (const dryRun of [true, false]) {
          const outcome = await call('delete_path', { path: top, recursive: true, dry_run: dryRun });
          expect(codeOf(outcome)).toBe('SECRET_DENIED');
        }
        expect(readdirSync(top).sort()).toEqual([NAME, 'f0.txt'].sort());
      } finally {
        execFileSync('rm', ['-rf', top]);
      }
    },
  );

  it.runIf(supported)('without one, the dry run counts every entry and the delete removes the whole tree', async () => {
    const top = deepTree(false);
    try {
      const dry = await call('delete_path', { path: top, recursive: true, dry_run: true });
      expect(dry.ok && dry.structured.entries).toBe(LEVELS * 2);
      const done = await call('delete_path', { path: top, recursive: true });
      expect(codeOf(done)).toBe('ok');
      expect(existsSync(top)).toBe(false);
    } finally {
      execFileSync('rm', ['-rf', top]);
    }
  });
});

describe('checks that can fail run before the first effect', () => {
  it('move_path with expected_status_hash into a directory outside any work tree: VALIDATION, nothing moved, no budget', async () => {
    const repo = makeTree({ 'f.txt': 'tracked\n' }, 'fs-tools-vm-repo-');
    const plain = makeTree({}, 'fs-tools-vm-plain-');
    cleanups.push(repo.cleanup, plain.cleanup);
    const git = (...a: string[]) =>
      execFileSync('git', ['-C', repo.dir, '-c', 'user.email=t@t', '-c', 'user.name=t', ...a], { stdio: 'pipe' });
    git('init', '-q');
    git('add', '.');
    git('commit', '-qm', 'init');
    const st = newState(['--mutation-budget=1', repo.dir, plain.dir]);
    const status = await call('git_status', { path: repo.dir }, st);
    expect(codeOf(status)).toBe('ok');
    const hash = (status as unknown as { structured: { status_hash: string } }).structured.status_hash;
    const before = snapshotTree(repo.dir);
    const moved = await call(
      'move_path',
      {
        source: path.join(repo.dir, 'f.txt'),
        destination: path.join(plain.dir, 'f.txt'),
        expected_status_hash: hash,
      },
      st,
    );
    expect(codeOf(moved)).toBe('VALIDATION');
    expect(snapshotTree(repo.dir)).toEqual(before);
    expect(readdirSync(plain.dir)).toEqual([]);
    expect(st.budget.used).toBe(0);
    // The one unit is still there for a mutation that happens.
    expect(codeOf(await call('write_file', { path: path.join(plain.dir, 'n.txt'), content: 'n\n' }, st))).toBe('ok');
    expect(st.budget.used).toBe(1);
    expect(lstatSync(path.join(plain.dir, 'n.txt')).isFile()).toBe(true);
  });
});

describe('list_directory applies the policy to link targets', () => {
  it('a link to a hidden or denied entry reports no target type; a link to a plain inside file does', async () => {
    const d = area();
    mkdirSync(path.join(d, 'hid'));
    mkdirSync(path.join(d, 'den'));
    writeFileSync(path.join(d, 'plain.txt'), 'p\n');
    symlinkSync(path.join(d, 'hid'), path.join(d, 'to-hidden'));
    symlinkSync(path.join(d, 'den'), path.join(d, 'to-denied'));
    symlinkSync(path.join(d, 'plain.txt'), path.join(d, 'to-plain'));
    const rel = path.relative(R, d);
    const policy = path.join(S, `policy-${n}.json`);
    writeFileSync(
      policy,
      JSON.stringify({
        rules: [
          { pattern: `${rel}/hid`, access: 'hidden' },
          { pattern: `${rel}/den`, access: 'deny' },
        ],
      }),
    );
    const st = newState([`--policy=${policy}`, R]);
    const listed = await call('list_directory', { path: d }, st);
    expect(codeOf(listed)).toBe('ok');
    const entries = (listed as unknown as { structured: { entries: unknown[] } }).structured.entries.map(entryObject);
    const byName = Object.fromEntries(entries.map((e) => [e.path, e.link_target_type]));
    expect(Object.keys(byName).sort()).toEqual(['plain.txt', 'to-denied', 'to-hidden', 'to-plain']);
    expect(byName['to-hidden']).toBeNull();
    expect(byName['to-denied']).toBeNull();
    expect(byName['to-plain']).toBe('file');
  });
});
