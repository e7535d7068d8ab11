/**
 * End-to-end install (issue #16), as a user who is not in this checkout: the packed tarball is published to a local
 * Verdaccio registry on 127.0.0.1; then, from an empty directory with an empty npm cache and a fresh HOME:
 * - the README's `npx -y fs-tools-mcp --readonly --allow-secrets` serves MCP to real clients of both protocol eras,
 *   read-only and with secrets readable;
 * - `npm install -g fs-tools-mcp` gives a working `fs-tools` command;
 * - neither prints a warning about an install script;
 * - the installed server's content search runs on the native addon shipped in the tarball (issue #19: verified and
 *   mapped into the server process at start-up from a private copy of the installed file, no compiler involved at
 *   install), and without it on `--native=off`.
 * The tarball's file list and unpacked size are checked and printed.
 *
 * Verdaccio itself comes from the npm registry on the first run (6.8.0 with node-fetch pinned to 2.7.0 by an
 * `overrides` entry: 6.10 needs Node 22) into node_modules/.cache; nothing else leaves 127.0.0.1.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, ERAS } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PKG = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
const VERDACCIO_VERSION = '6.8.0';
const VERDACCIO_HOME = path.join(ROOT, 'node_modules/.cache', `fs-tools-verdaccio-${VERDACCIO_VERSION}`);
/** The content-search addon of this machine (issue #19), in the tarball wherever a C compiler built it. */
const NATIVE_ADDON = `dist/native/${process.platform}-${process.arch}/fs_tools_native.node`;
/** The kernel wall's addon and its exec helper (docs/security.md "The kernel wall"), built beside it. */
const WALL_FILES = [
  `dist/native/${process.platform}-${process.arch}/fs_tools_landlock.node`,
  `dist/native/${process.platform}-${process.arch}/fs_tools_landlock_exec`,
];
const HAS_COMPILER = process.platform === 'linux' && spawnSync('cc', ['--version']).status === 0;
/** What the published package may contain: what runs, and what the licences require. */
const EXPECTED_FILES = [
  'LICENSE',
  'README.md',
  'dist/THIRD-PARTY-LICENSES.txt',
  'dist/cli.js',
  'dist/main.code-cache',
  'dist/main.js',
  ...(HAS_COMPILER ? [...WALL_FILES, NATIVE_ADDON] : []),
  'package.json',
];
/**
 * Upper bound on the unpacked size (bytes); docs/install.md states the measured size. Raised from 4 to 5 MiB on
 * 2026-12-04: the code cache now also covers serving (1.1 → 1.9 MB), which saves ~40 ms of CPU on every server start
 * (docs/benchmarks.md "Server start-up").
 */
const MAX_UNPACKED_BYTES = 5 * 1024 * 1024;

/** The environment of a user's shell: no npm_* variables leaking from `npm run`, a fresh HOME. */
function userEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^npm_/i.test(k) && k !== 'INIT_CWD') env[k] = v;
  }
  return { ...env, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), ...extra };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function ensureVerdaccio(): string {
  const bin = path.join(VERDACCIO_HOME, 'node_modules/verdaccio/bin/verdaccio');
  if (existsSync(bin)) return bin;
  mkdirSync(VERDACCIO_HOME, { recursive: true });
  writeFileSync(
    path.join(VERDACCIO_HOME, 'package.json'),
    JSON.stringify(
      {
        name: 'fs-tools-verdaccio',
        private: true,
        dependencies: { verdaccio: VERDACCIO_VERSION },
        overrides: { 'node-fetch': '2.7.0' },
      },
      null,
      2,
    ),
  );
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: VERDACCIO_HOME,
    stdio: 'inherit',
  });
  return bin;
}

describe('install from a registry', () => {
  let verdaccio: ChildProcess;
  let registry: string;
  let work: { dir: string; cleanup: () => void };
  let npmrc: string;

  beforeAll(async () => {
    const bin = ensureVerdaccio();
    work = makeTree({
      storage: {},
      home: {},
      project: { 'README.md': '# a project\n', '.env': 'TOKEN=from-dotenv\n' },
    });
    const port = await freePort();
    registry = `http://127.0.0.1:${port}/`;
    const config = path.join(work.dir, 'verdaccio.yaml');
    // No uplinks: the registry serves only what is published to it; anything else is a 404, never a proxy.
    writeFileSync(
      config,
      [
        `storage: ${path.join(work.dir, 'storage')}`,
        'auth:',
        '  htpasswd:',
        `    file: ${path.join(work.dir, 'htpasswd')}`,
        '    max_users: 10',
        'uplinks: {}',
        'packages:',
        "  '**':",
        '    access: $all',
        '    publish: $authenticated',
        'log: { type: stdout, format: pretty, level: warn }',
        '',
      ].join('\n'),
    );
    verdaccio = spawn(process.execPath, [bin, '--config', config, '--listen', `127.0.0.1:${port}`], {
      stdio: 'ignore',
    });
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        if ((await fetch(`${registry}-/ping`)).ok) break;
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) throw new Error('verdaccio did not start');
      await new Promise((r) => setTimeout(r, 200));
    }
    const user = await fetch(`${registry}-/user/org.couchdb.user:tester`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'tester', password: 'tester-password' }),
    });
    const { token } = (await user.json()) as { token: string };
    npmrc = path.join(work.dir, 'npmrc');
    writeFileSync(npmrc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
  });

  afterAll(() => {
    verdaccio?.kill();
    work?.cleanup();
  });

  it('packs what runs and what the licences require, and publishes it', () => {
    const packDir = path.join(work.dir, 'pack');
    mkdirSync(packDir);
    const [info] = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', packDir], {
        cwd: ROOT,
        encoding: 'utf8',
        env: userEnv(path.join(work.dir, 'home')),
      }),
    ) as Array<{ filename: string; unpackedSize: number; size: number; files: Array<{ path: string; size: number }> }>;
    const files = info.files.map((f) => f.path).sort();
    process.stdout.write(
      `tarball ${info.filename}: ${info.size} bytes packed, ${info.unpackedSize} unpacked\n${info.files
        .map((f) => `  ${String(f.size).padStart(9)}  ${f.path}`)
        .join('\n')}\n`,
    );
    expect(files).toEqual([...EXPECTED_FILES].sort());
    expect(info.unpackedSize).toBeLessThan(MAX_UNPACKED_BYTES);
    execFileSync('npm', ['publish', path.join(packDir, info.filename), '--userconfig', npmrc, '--registry', registry], {
      encoding: 'utf8',
      env: userEnv(path.join(work.dir, 'home')),
    });
    const published = execFileSync(
      'npm',
      ['view', PKG.name, 'version', '--userconfig', npmrc, '--registry', registry],
      {
        encoding: 'utf8',
        env: userEnv(path.join(work.dir, 'home')),
      },
    ).trim();
    expect(published).toBe(PKG.version);
  });

  describe.each(ERAS)("the README's npx line (%s client)", (era) => {
    it('serves read-only access to the project directory with secrets readable, and warns of no install script', async () => {
      const home = makeTree();
      const project = path.join(work.dir, 'project');
      // An empty cache and a fresh HOME: npx must fetch the package from the registry, as on a new machine.
      const env = userEnv(home.dir, { npm_config_registry: registry, npm_config_cache: path.join(home.dir, 'cache') });
      const client = await connect(era, {
        command: 'npx',
        args: ['-y', PKG.name, '--readonly', '--allow-secrets'],
        cwd: project,
        env,
        // As a real client of the SDK starts the README's command line: `npx` runs twice, the first for the
        // disposable sibling that answers the discover probe (with an empty npm cache, that one installs).
        probe: 'sibling',
      });
      try {
        const names = (await client.listTools()).map((t) => t.name);
        expect(names).toContain('read_file');
        expect(names).not.toContain('write_file');
        const dirs = await client.callOk('list_allowed_directories');
        expect(JSON.stringify(dirs)).toContain(project);
        expect((await client.callOk('read_file', { path: '.env' })).content).toBe('TOKEN=from-dotenv\n');
        expect((await client.callError('write_file', { path: 'new.txt', content: 'x' })).error.code).toBe('READONLY');
        expect(existsSync(path.join(project, 'new.txt'))).toBe(false);
      } finally {
        await client.close();
      }
      expect(client.stderr()).not.toMatch(/install[- ]script|prepare|npm (warn|error|ERR)/i);
      home.cleanup();
    });
  });

  it('npm install -g gives a working fs-tools command, with no install-script warning', () => {
    const home = makeTree();
    const prefix = path.join(home.dir, 'global');
    const env = userEnv(home.dir, { npm_config_registry: registry, npm_config_cache: path.join(home.dir, 'cache') });
    const install = spawnSync('npm', ['install', '-g', '--prefix', prefix, PKG.name], { encoding: 'utf8', env });
    expect(install.status, install.stderr).toBe(0);
    expect(install.stdout + install.stderr).not.toMatch(/install[- ]script|prepare|npm (warn|error|ERR)/i);
    const fsTools = path.join(prefix, 'bin', 'fs-tools');
    expect(execFileSync(fsTools, ['--version'], { encoding: 'utf8', env }).trim()).toContain(PKG.version);
    const project = makeTree({ 'hello.txt': 'hello\n' });
    const result = JSON.parse(
      execFileSync(fsTools, ['call', 'read_file', '{"path":"hello.txt"}'], { cwd: project.dir, encoding: 'utf8', env }),
    );
    expect(result.content).toBe('hello\n');
    expect(existsSync(path.join(prefix, 'lib/node_modules', PKG.name, 'node_modules'))).toBe(false);
    project.cleanup();
    home.cleanup();
  });

  it.runIf(HAS_COMPILER)(
    "the installed server's content search reads through the shipped native addon (and not with --native=off)",
    async () => {
      const home = makeTree();
      const prefix = path.join(home.dir, 'global');
      const env = userEnv(home.dir, {
        npm_config_registry: registry,
        npm_config_cache: path.join(home.dir, 'cache'),
      });
      const install = spawnSync('npm', ['install', '-g', '--prefix', prefix, PKG.name], { encoding: 'utf8', env });
      expect(install.status, install.stderr).toBe(0);
      const installed = path.join(prefix, 'lib/node_modules', PKG.name, NATIVE_ADDON);
      // The very binary the tarball shipped: nothing was compiled at install (no script runs there).
      expect(readFileSync(installed).equals(readFileSync(path.join(ROOT, NATIVE_ADDON)))).toBe(true);
      expect(install.stdout + install.stderr).not.toMatch(/native reads not built|gyp|cc /i);
      const project = makeTree({ 'a.txt': 'one needle\n', 'b.txt': 'hay\n', 'sub/c.txt': 'needle two\n' });
      for (const [flags, mapped] of [
        [[], true],
        [['--native=off'], false],
      ] as const) {
        const client = await connect('legacy', {
          command: path.join(prefix, 'bin', 'fs-tools'),
          args: [...flags, project.dir],
          env,
        });
        try {
          const found = await client.callOk('search_files', { path: project.dir, query: 'needle' });
          expect((found.matches as Array<{ path: string }>).map((m) => m.path).sort()).toEqual(['a.txt', 'sub/c.txt']);
          // Loaded at start-up from a private copy of the installed file (its name removed once opened).
          const maps = readFileSync(`/proc/${client.pid()}/maps`, 'utf8');
          expect(/\/fs-tools-native-[\w-]+\/fs_tools_native\.node \(deleted\)$/m.test(maps)).toBe(mapped);
          expect(maps.includes(installed)).toBe(false);
        } finally {
          await client.close();
        }
      }
      project.cleanup();
      home.cleanup();
    },
  );
});
