/**
 * Attack: the server's own code lies inside a root (docs/security.md "The server's own code and token files"). The
 * package installed in the project (`npm i -D fs-tools-mcp`, then `npx fs-tools` there: ROOT/node_modules/fs-tools-mcp)
 * and a served checkout (ROOT/dist/cli.js serving ROOT). The agent writes, through the server, JavaScript over each
 * worker script the server used to load lazily (dist/search-reader-worker.js, dist/regex-worker.js) and a shared
 * object whose constructor runs agent code over the native addon; then runs content search, regex search and a regex
 * replace_in_files (preview and apply), and restarts the server. A marker file outside the root is never created.
 * Positive controls: each planted file does create its marker when Node loads it (so the negative assertion can
 * fail), and the first server did use the addon (mapped from its private copy) before and after the planting.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeAddonUrl } from '../../src/fs/native-load.js';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const CHECKOUT = fileURLToPath(new URL('../..', import.meta.url));
const ADDON_REL = path.relative(CHECKOUT, fileURLToPath(nativeAddonUrl(new URL('../../dist/', import.meta.url))));
const HAS_ADDON = existsSync(path.join(CHECKOUT, ADDON_REL));
const HAS_CC = spawnSync('cc', ['--version']).status === 0;

const outside = makeTree({}, 'fs-tools-own-code-outside-');
const MARKER = path.join(outside.dir, 'agent-code-ran');
afterAll(() => outside.cleanup());

/** The files the agent plants, relative to the package directory, with their bytes. */
function plants(): Array<[string, Buffer]> {
  const js = Buffer.from(
    `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(MARKER)}, 'worker\\n');\n`,
  );
  const out: Array<[string, Buffer]> = [
    ['dist/search-reader-worker.js', js],
    ['dist/regex-worker.js', js],
  ];
  if (HAS_CC) out.push([ADDON_REL, evilAddon()]);
  return out;
}

/** A shared object whose constructor appends to the marker when it is loaded (any dlopen runs it). */
function evilAddon(): Buffer {
  const src = path.join(outside.dir, 'evil.c');
  const so = path.join(outside.dir, 'evil.node');
  if (!existsSync(so)) {
    writeFileSync(
      src,
      `#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void ran(void) {\n` +
        `  int fd = open(${JSON.stringify(MARKER)}, O_WRONLY | O_CREAT | O_APPEND, 0644);\n` +
        `  if (fd >= 0) { (void)!write(fd, "addon\\n", 6); close(fd); }\n}\n`,
    );
    execFileSync('cc', ['-shared', '-fPIC', '-o', so, src]);
  }
  return readFileSync(so);
}

/** Copies the built package (what package.json "files" ships, and package.json) into `dir`. */
function installPackage(dir: string): void {
  mkdirSync(path.join(dir, 'dist'), { recursive: true });
  cpSync(path.join(CHECKOUT, 'package.json'), path.join(dir, 'package.json'));
  for (const file of ['cli.js', 'main.js', 'main.code-cache']) {
    cpSync(path.join(CHECKOUT, 'dist', file), path.join(dir, 'dist', file));
  }
  if (HAS_ADDON) cpSync(path.join(CHECKOUT, ADDON_REL), path.join(dir, ADDON_REL));
}

const mapsOf = (c: TestClient): string => readFileSync(`/proc/${c.pid()}/maps`, 'utf8');
const usesPrivateAddon = (c: TestClient): boolean =>
  /\/fs-tools-native-[\w-]+\/fs_tools_native\.node \(deleted\)$/m.test(mapsOf(c));

describe.each([
  ['installed in the project (ROOT/node_modules/fs-tools-mcp)', 'node_modules/fs-tools-mcp'],
  ['a served checkout (ROOT/dist/cli.js)', '.'],
])('the package inside a root: %s', (_name, pkgRel) => {
  it('no planted worker or addon runs: content search, regex search, regex replace, restart', async () => {
    const root = makeTree({ 'src/a.txt': 'one needle\nhay\n', 'src/b.txt': 'needle two\n' }, 'fs-tools-own-code-');
    const state = makeTree({}, 'fs-tools-own-code-state-');
    const pkg = path.join(root.dir, pkgRel);
    installPackage(pkg);
    const start = async () => {
      const c = await connect('modern', {
        command: process.execPath,
        args: [path.join(pkg, 'dist/cli.js'), '--state-dir', state.dir, root.dir],
        cwd: root.dir,
      });
      await c.listTools(); // the server has started (the modern era has no handshake)
      return c;
    };
    let client = await start();
    try {
      if (HAS_ADDON) expect(usesPrivateAddon(client)).toBe(true);
      for (const [rel, bytes] of plants()) {
        // An existing file is overwritten as an agent would: with the hash the server tells it (OCC).
        const target = path.join(pkg, rel);
        const current = existsSync(target)
          ? `sha256:${createHash('sha256').update(readFileSync(target)).digest('hex')}`
          : null;
        const w = await client.call('write_file', {
          path: target,
          content_base64: bytes.toString('base64'),
          ...(current ? { expected_hash: current } : {}),
        });
        expect(w.isError, JSON.stringify(w)).toBeFalsy();
        expect(readFileSync(path.join(pkg, rel)).equals(bytes)).toBe(true);
      }
      const src = path.join(root.dir, 'src');
      /** One call; no agent code ran during it (checked before its result, which agent code could spoil). */
      const ok = async (c: TestClient, tool: string, args: Record<string, unknown>) => {
        const r = await c.call(tool, args);
        expect(existsSync(MARKER), `agent code ran during ${tool}`).toBe(false);
        expect(r.isError, JSON.stringify(r)).toBeFalsy();
        return r.structuredContent as Record<string, any>;
      };
      const runAll = async (c: TestClient) => {
        const found = await ok(c, 'search_files', { path: src, query: 'needle' });
        expect(found.matches.map((m: { path: string }) => m.path).sort()).toEqual(['a.txt', 'b.txt']);
        const regex = await ok(c, 'search_files', { path: src, query: 'ne+dle\\s\\w+', regex: true });
        expect(regex.matches.map((m: { path: string }) => m.path)).toEqual(['b.txt']);
        const q = { path: src, query: '(ne+dle)', regex: true, replacement: '[$1]' };
        const preview = await ok(c, 'replace_in_files', { ...q, dry_run: true });
        const hashes = Object.fromEntries(
          preview.files.map((f: { path: string; previous_hash: string }) => [f.path, f.previous_hash]),
        );
        const applied = await ok(c, 'replace_in_files', { ...q, expected_hashes: hashes });
        expect(applied.replacements).toBe(2);
        // Undo, so the restarted server finds the same content.
        writeFileSync(path.join(src, 'a.txt'), 'one needle\nhay\n');
        writeFileSync(path.join(src, 'b.txt'), 'needle two\n');
      };
      await runAll(client);
      expect(existsSync(MARKER)).toBe(false);
      if (HAS_ADDON) expect(usesPrivateAddon(client)).toBe(true);

      // Restart from the same (planted) install: the workers are still the embedded ones, and the addon is refused.
      await client.close();
      client = await start();
      await runAll(client);
      expect(existsSync(MARKER)).toBe(false);
      if (HAS_CC) {
        expect(client.stderr()).toMatch(/native addon .* not the one this build recorded/);
        expect(usesPrivateAddon(client)).toBe(false);
        expect(mapsOf(client)).not.toContain(path.join(pkg, ADDON_REL));
      }
    } finally {
      await client.close();
    }
    try {
      // Positive control: each planted file, loaded by Node, does run (so the assertions above could fail).
      for (const [rel] of plants()) {
        rmSync(MARKER, { force: true });
        const file = path.join(pkg, rel);
        const load = rel.endsWith('.node')
          ? `try { process.dlopen({ exports: {} }, ${JSON.stringify(file)}); } catch {}`
          : `await import(${JSON.stringify(`file://${file}`)});`;
        execFileSync(process.execPath, ['--input-type=module', '-e', load]);
        expect(existsSync(MARKER), rel).toBe(true);
      }
    } finally {
      rmSync(MARKER, { force: true });
      root.cleanup();
      state.cleanup();
    }
  }, 60_000);
});

/**
 * The kernel wall's own native files (dist/native/<platform>-<arch>/fs_tools_landlock.node, the exec helper
 * fs_tools_landlock_exec) planted in the install directory: the server runs neither, the wall is off with a reason
 * naming the file, and `--sandbox=require` refuses to start (exit 2). Positive control: the same install untouched
 * starts with the wall enforced.
 */
describe('the kernel wall’s addon and exec helper, planted in the install directory', () => {
  const NATIVE_DIR = path.dirname(ADDON_REL);
  const HAS_WALL = existsSync(path.join(CHECKOUT, NATIVE_DIR, 'fs_tools_landlock_exec'));

  /** Starts the installed server with `--sandbox=require`, closes stdin at once; its exit status and stderr. */
  const run = (pkg: string, root: string, state: string) => {
    const r = spawnSync(
      process.execPath,
      [path.join(pkg, 'dist/cli.js'), '--sandbox=require', '--state-dir', state, root],
      { input: '', encoding: 'utf8', timeout: 30_000 },
    );
    return { status: r.status, stderr: r.stderr };
  };

  it.runIf(HAS_WALL && HAS_CC)(
    'a planted addon or helper never runs; the wall is off and require exits 2',
    () => {
      const root = makeTree({ 'a.txt': 'x\n' }, 'fs-tools-own-code-wall-');
      const state = makeTree({}, 'fs-tools-own-code-wall-state-');
      const pkg = path.join(root.dir, 'node_modules/fs-tools-mcp');
      try {
        installPackage(pkg);
        cpSync(path.join(CHECKOUT, NATIVE_DIR), path.join(pkg, NATIVE_DIR), { recursive: true });
        // Positive control: the untouched install raises the wall.
        const clean = run(pkg, root.dir, state.dir);
        expect(clean.status, clean.stderr).toBe(0);
        expect(clean.stderr).toMatch(/kernel wall.*(on|enforced)/i);

        const addon = path.join(pkg, NATIVE_DIR, 'fs_tools_landlock.node');
        const original = readFileSync(addon);
        writeFileSync(addon, evilAddon());
        const planted = run(pkg, root.dir, state.dir);
        expect(planted.status).toBe(2);
        expect(planted.stderr).toMatch(/--sandbox=require: .*kernel-wall addon is not the one this build recorded/);
        expect(existsSync(MARKER)).toBe(false);
        writeFileSync(addon, original);

        const helper = path.join(pkg, NATIVE_DIR, 'fs_tools_landlock_exec');
        writeFileSync(helper, `#!/bin/sh\necho helper >> ${JSON.stringify(MARKER)}\nexec "$@"\n`, { mode: 0o755 });
        const plantedHelper = run(pkg, root.dir, state.dir);
        expect(plantedHelper.status).toBe(2);
        expect(plantedHelper.stderr).toMatch(/--sandbox=require: .*exec helper is not the one this build recorded/);
        expect(existsSync(MARKER)).toBe(false);
      } finally {
        rmSync(MARKER, { force: true });
        root.cleanup();
        state.cleanup();
      }
    },
    60_000,
  );
});
