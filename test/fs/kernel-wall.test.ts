/**
 * The kernel wall's mechanism (src/fs/kernel-wall.ts) and plan (src/cli/kernel-wall.ts), in-process. The test
 * process itself is never confined here (that would confine the rest of this test file's process): the real addon is
 * loaded and asked its ABI, and the one step that confines is given a stand-in object with the addon's interface —
 * the real confinement is proven against the real server in test/attacks/kernel-wall.test.ts.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, processEnvironment } from '../../src/config.js';
import { gitChildWall, planKernelWall, raiseKernelWall, v8CoverageDir } from '../../src/cli/kernel-wall.js';
import {
  accessRights,
  confineProcess,
  describeWall,
  handledRights,
  loadKernelWallAddon,
  type KernelWallAddon,
} from '../../src/fs/kernel-wall.js';
import { TOOL_NAMES } from '../../src/tools/registry.js';
import { isWithin } from '../../src/fs/path-within.js';
import { fileSha256 } from '../helpers/worker-code.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const ADDON = pathToFileURL(path.join(REPO, `dist/native/${process.platform}-${process.arch}/fs_tools_landlock.node`));

describe('rights per ABI', () => {
  it('handles every right the ABI knows, and no other', () => {
    expect(handledRights(1)).toBe(0x1fff);
    expect(handledRights(2)).toBe(0x3fff);
    expect(handledRights(3)).toBe(0x7fff);
    expect(handledRights(4)).toBe(0x7fff);
    expect(handledRights(5)).toBe(0xffff);
    expect(handledRights(7)).toBe(0xffff);
  });

  it('read-only never writes or executes; rw never executes or makes devices; dev only reads and writes', () => {
    const EXECUTE = 1;
    const WRITE_FILE = 2;
    const MAKE_CHAR = 1 << 6;
    const MAKE_BLOCK = 1 << 11;
    expect(accessRights('ro', 7)).toBe(4 | 8);
    expect(accessRights('rx', 7)).toBe(4 | 8 | EXECUTE);
    expect(accessRights('rw', 7) & (EXECUTE | MAKE_CHAR | MAKE_BLOCK)).toBe(0);
    expect(accessRights('rw', 7) & WRITE_FILE).toBe(WRITE_FILE);
    expect(accessRights('dev', 7)).toBe(2 | 4 | (1 << 14));
    // Rights an older ABI lacks are left out (REFER from 2, TRUNCATE from 3).
    expect(accessRights('rw', 1) & ((1 << 13) | (1 << 14))).toBe(0);
    expect(accessRights('dev', 1)).toBe(2 | 4);
  });
});

describe("poolThreads: the libuv pool size, computed by the addon with libuv's own arithmetic", () => {
  const saved = process.env.UV_THREADPOOL_SIZE;
  afterEach(() => {
    if (saved === undefined) delete process.env.UV_THREADPOOL_SIZE;
    else process.env.UV_THREADPOOL_SIZE = saved;
  });
  // atoi into an unsigned count, 0 → 1, above 1024 → 1024 (libuv src/threadpool.c): "-1" is 1024 threads, not 1.
  it.each([
    [undefined, 4],
    ['', 1],
    ['abc', 1],
    ['0', 1],
    ['1', 1],
    [' 16', 16],
    ['16abc', 16],
    ['5000', 1024],
    ['-1', 1024],
    ['4294967297', 1],
  ])('UV_THREADPOOL_SIZE=%j → %d', (raw, n) => {
    if (raw === undefined) delete process.env.UV_THREADPOOL_SIZE;
    else process.env.UV_THREADPOOL_SIZE = raw;
    expect((loadKernelWallAddon(ADDON, fileSha256(ADDON)) as KernelWallAddon).poolThreads()).toBe(n);
  });
});

describe('the addon', () => {
  it('loads from the build, verified against its digest, and reports the kernel ABI (7 on these machines, at least 1)', () => {
    const addon = loadKernelWallAddon(ADDON, fileSha256(ADDON));
    expect(typeof addon).toBe('object');
    expect((addon as KernelWallAddon).abi()).toBeGreaterThanOrEqual(1);
  });

  it('a missing file, a file that is not the one recorded, or not the addon gives the reason, never a throw', () => {
    expect(loadKernelWallAddon(pathToFileURL('/nonexistent/fs_tools_landlock.node'), 'ab'.repeat(32))).toMatch(
      /not built/,
    );
    // No digest recorded (src/ in-process, or a build without the addon): nothing is loaded.
    expect(loadKernelWallAddon(ADDON, null)).toMatch(/not built/);
    // The built addon under another digest: a planted or replaced file never loads.
    expect(loadKernelWallAddon(ADDON, 'ab'.repeat(32))).toMatch(/not the one this build recorded/);
    // Verified bytes that load but export another interface (content search's addon).
    const other = pathToFileURL(path.join(fileURLToPath(ADDON), '..', 'fs_tools_native.node'));
    expect(loadKernelWallAddon(other, fileSha256(other))).toMatch(/not this version/);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-wall-addon-'));
    try {
      writeFileSync(path.join(dir, 'corrupt.node'), 'not an ELF file');
      const corrupt = pathToFileURL(path.join(dir, 'corrupt.node'));
      expect(loadKernelWallAddon(corrupt, fileSha256(corrupt))).toMatch(/failed to load/);
      expect(readdirSync(dir)).toEqual(['corrupt.node']); // no private copy left beside it
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('confineProcess decides enforced or off (the confining call is a stand-in here)', () => {
  const fake = (abi: number, confine: KernelWallAddon['confineProcess']): KernelWallAddon => ({
    abi: () => abi,
    poolThreads: () => 4,
    confineProcess: confine,
  });

  it('passes the handled rights and each rule as [path, rights]; enforced with the ABI used', async () => {
    const seen: unknown[] = [];
    const state = await confineProcess(
      fake(7, (handled, rules) => {
        seen.push(handled, rules);
        return Promise.resolve(rules.map(() => false));
      }),
      [
        { path: '/r', access: 'rw' },
        { path: '/usr', access: 'rx' },
      ],
      5,
    );
    expect(state).toEqual({ enforced: true, mechanism: 'landlock', abi: 5 });
    expect(seen).toEqual([
      handledRights(5),
      [
        ['/r', accessRights('rw', 5)],
        ['/usr', accessRights('rx', 5)],
      ],
    ]);
  });

  it('off: a reason string, no Landlock, --sandbox-abi=0, or a refusal by the kernel', async () => {
    const never = () => Promise.reject(new Error('must not be called'));
    expect(await confineProcess('the addon was not built', [], null)).toEqual({
      enforced: false,
      reason: 'the addon was not built',
    });
    expect(await confineProcess(fake(-38, never), [], null)).toMatchObject({ enforced: false, reason: /no Landlock/ });
    expect(await confineProcess(fake(7, never), [], 0)).toEqual({
      enforced: false,
      reason: 'Landlock ABI 0 (--sandbox-abi)',
    });
    expect(
      await confineProcess(
        fake(7, () => Promise.reject(new Error('landlock_restrict_self: EPERM'))),
        [],
        null,
      ),
    ).toEqual({ enforced: false, reason: 'the kernel refused the ruleset (landlock_restrict_self: EPERM)' });
  });

  it('describeWall: one line either way', () => {
    expect(describeWall({ enforced: true, mechanism: 'landlock', abi: 7 })).toBe(
      'kernel wall: landlock ABI 7, enforced',
    );
    expect(describeWall({ enforced: false, reason: '--sandbox=off' })).toBe('kernel wall: off (--sandbox=off)');
  });
});

describe('planKernelWall', () => {
  const savedTmp = process.env.TMPDIR;
  const made: string[] = [];
  afterEach(() => {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
    for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  const config = (argv: string[], cwd: string) =>
    parseConfig(argv, { ...processEnvironment(TOOL_NAMES), cwd, home: os.homedir() });

  it('roots and the state directory read-write, a private 0700 run directory as TMPDIR, programs read-execute', () => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-wall-plan-'));
    made.push(work);
    const root = path.join(work, 'root');
    const state = path.join(work, 'state');
    mkdirSync(root);
    const plan = planKernelWall(config([`--state-dir=${state}`, root], work), {
      PATH: `/usr/bin:relative/bin:/`,
    });
    expect('rules' in plan).toBe(true);
    if (!('rules' in plan)) return;
    made.push(plan.runDir);
    const rw = plan.rules.filter((r) => r.access === 'rw').map((r) => r.path);
    expect(rw).toEqual([root, state, plan.runDir]);
    expect(statSync(state).isDirectory()).toBe(true);
    expect(statSync(plan.runDir).mode & 0o777).toBe(0o700);
    expect(process.env.TMPDIR).toBe(plan.runDir);
    expect(path.basename(plan.runDir)).toMatch(new RegExp(`^fs-tools-run-${process.pid}-`));
    const rx = plan.rules.filter((r) => r.access === 'rx').map((r) => r.path);
    expect(rx).toContain('/usr');
    expect(rx).toContain('/usr/bin');
    // Neither a relative PATH entry nor / (too wide) becomes a rule.
    expect(rx).not.toContain('/');
    expect(rx.some((p) => !path.isAbsolute(p))).toBe(false);
    expect(plan.rules).toContainEqual({ path: '/dev/null', access: 'dev' });
    // Nothing of the home directory as a whole, nor /etc as a whole.
    const all = plan.rules.map((r) => r.path);
    expect(all).not.toContain(os.homedir());
    expect(all).not.toContain('/etc');
    expect(all).not.toContain('/proc');
  });

  it('no read grant holds a root, the run or state directory, gh configuration or a world-writable directory', () => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-wall-plan-'));
    made.push(work);
    const root = path.join(work, 'root');
    const gh = path.join(work, 'gh');
    const open = path.join(work, 'open');
    const tools = path.join(work, 'tools');
    for (const d of [root, gh, open, tools]) mkdirSync(d);
    chmodSync(open, 0o777);
    const plan = planKernelWall(config([root], work), {
      PATH: [work, os.tmpdir(), open, tools, '/usr/bin'].join(':'),
      SSL_CERT_DIR: work,
      GH_CONFIG_DIR: gh,
    });
    expect('rules' in plan).toBe(true);
    if (!('rules' in plan)) return;
    made.push(plan.runDir);
    const granted = plan.rules.filter((r) => r.access !== 'rw').map((r) => r.path);
    expect(granted).not.toContain(work);
    expect(granted).not.toContain(realpathSync(os.tmpdir()));
    expect(granted).not.toContain(open);
    expect(granted).toContain(tools);
    expect(granted).toContain('/usr/bin');
    // gh's configuration is the server's (gh runs in its wall), never git's.
    expect(granted).toContain(gh);
    expect(plan.gitRules.map((r) => r.path)).not.toContain(gh);
    for (const g of granted) {
      for (const held of [root, plan.runDir, gh, os.homedir()]) {
        if (g !== held) expect(isWithin(g, held), `${g} holds ${held}`).toBe(false);
      }
    }
  });

  it("NODE_V8_COVERAGE: the server's own directory read-write (never git's); refused when missing, o+w, too wide or inside a grant", () => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-wall-plan-'));
    made.push(work);
    const root = path.join(work, 'root');
    const cov = path.join(work, 'coverage');
    const state = path.join(work, 'state');
    const open = path.join(work, 'open');
    const gh = path.join(work, 'gh');
    for (const d of [root, cov, open, gh, path.join(gh, 'hosts')]) mkdirSync(d);
    chmodSync(open, 0o777);
    const rwFor = (coverage: string) => {
      const plan = planKernelWall(config([`--state-dir=${state}`, root], work), {
        PATH: '/usr/bin',
        GH_CONFIG_DIR: gh,
        NODE_V8_COVERAGE: coverage,
      });
      if (!('rules' in plan)) throw new Error(plan.reason);
      made.push(plan.runDir);
      expect(plan.gitRules.map((r) => r.path)).not.toContain(cov);
      const rw = plan.rules.filter((r) => r.access === 'rw').map((r) => r.path);
      expect(rw.slice(0, 3)).toEqual([root, state, plan.runDir]);
      return rw.slice(3);
    };
    expect(rwFor(cov)).toEqual([cov]);
    // Relative to the working directory, as Node resolves it.
    const cwd = process.cwd();
    process.chdir(work);
    try {
      expect(rwFor('coverage')).toEqual([cov]);
    } finally {
      process.chdir(cwd);
    }
    // Holding a root: refused in the plan. The rest of the refusals directly (each plan adds an exit listener).
    expect(rwFor(work)).toEqual([]);
    writeFileSync(path.join(work, 'file'), '');
    const guarded = [root, gh, os.homedir()];
    const enclosing = [root, gh];
    for (const refused of [
      path.join(work, 'missing'),
      path.join(work, 'file'),
      open,
      '/',
      os.homedir(),
      path.join(gh, 'hosts'),
      path.join(root),
    ]) {
      expect(v8CoverageDir({ NODE_V8_COVERAGE: refused }, guarded, enclosing), refused).toBeNull();
    }
    expect(v8CoverageDir({ NODE_V8_COVERAGE: cov }, guarded, enclosing)).toBe(cov);
    expect(v8CoverageDir({}, [], [])).toBeNull();
    // Another user's directory (/proc/1 belongs to root; as root, a directory made for nobody).
    if (process.getuid?.() === 0) {
      const nobody = path.join(work, 'nobody');
      mkdirSync(nobody);
      chownSync(nobody, 65534, 65534);
      expect(v8CoverageDir({ NODE_V8_COVERAGE: nobody }, [], [])).toBeNull();
      expect(v8CoverageDir({ NODE_V8_COVERAGE: cov }, [], [])).toBe(cov);
    } else {
      expect(v8CoverageDir({ NODE_V8_COVERAGE: '/root' }, [], [])).toBeNull();
    }
  });

  it("git's own directory is the run-directory entry its HOME lies in, never the run directory itself", () => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-wall-plan-'));
    made.push(work);
    const plan = planKernelWall(config([work], work), { PATH: '/usr/bin' });
    if (!('rules' in plan)) throw new Error(plan.reason);
    made.push(plan.runDir);
    const wall = gitChildWall({ ...plan, helper: plan.helper ?? '/bin/true' }, 7)!;
    const rw = accessRights('rw', 7);
    const own = (home: string) =>
      wall('/usr/bin/git', { HOME: home })!.prefix.filter((a) => a.startsWith(`${rw}:${plan.runDir}`));
    expect(own(path.join(plan.runDir, 'view-1', 'home'))).toEqual([`${rw}:${path.join(plan.runDir, 'view-1')}`]);
    for (const home of [plan.runDir, `${plan.runDir}/.`, `${plan.runDir}/x/..`, `${plan.runDir}/../other`, '/']) {
      expect(own(home), home).toEqual([]);
    }
    expect(wall('/usr/bin/gh', { HOME: plan.runDir })).toBeNull();
  });

  it('no command-line roots, or a root at /: nothing to confine to (the reason says which)', async () => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-wall-plan-'));
    made.push(work);
    expect(planKernelWall(config(['/'], work))).toEqual({ reason: 'a root is /' });
    expect(planKernelWall(config(['--client-roots=replace', work], work))).toEqual({
      reason: '--client-roots=replace (client roots may lie outside the command-line roots)',
    });
    // The working-directory default: client roots may replace it, so it is no upper bound — unless they are ignored.
    expect(planKernelWall(config([], work))).toMatchObject({ reason: /no command-line roots/ });
    // `call` has no client: the working-directory default is final, and bounds the wall.
    const oneShot = planKernelWall(config(['call', 'stat', '{}'], work));
    expect('rules' in oneShot && oneShot.rules[0]).toEqual({ path: work, access: 'rw' });
    if ('runDir' in oneShot) made.push(oneShot.runDir);
    const ignored = planKernelWall(config(['--client-roots=ignore'], work));
    expect('rules' in ignored && ignored.rules[0]).toEqual({ path: work, access: 'rw' });
    if ('runDir' in ignored) made.push(ignored.runDir);
    // Every command-line root rejected (missing, not a directory, unreadable): the wall stands with no root in it.
    const missing = path.join(work, 'missing');
    const rejected = planKernelWall(config([missing, path.join(work, 'missing-too')], work));
    expect('rules' in rejected).toBe(true);
    if ('rules' in rejected) {
      made.push(rejected.runDir);
      expect(rejected.rules.filter((r) => r.access === 'rw').map((r) => r.path)).not.toContain(work);
      expect(rejected.rules.some((r) => r.path === missing || isWithin(work, r.path))).toBe(false);
    }
    // No root and none given (`call` with the cwd at / or home): nothing to confine to.
    const none = { ...config(['call', 'stat', '{}'], work), roots: [] };
    expect(planKernelWall(none)).toEqual({
      reason: 'no command-line roots (client roots are not known at start-up)',
    });
    expect(await raiseKernelWall(none)).toMatchObject({ enforced: false });
    expect(await raiseKernelWall({ ...none, sandbox: 'off' })).toEqual({ enforced: false, reason: '--sandbox=off' });
    expect(existsSync(work)).toBe(true);
  });
});
