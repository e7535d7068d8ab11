/**
 * The built server loads no file as code after start-up (docs/security.md "The server's own code and token files").
 * - dist/ holds no worker script, the program (dist/main.js) names none, and every worker it can start (in it and in
 *   the worker code it embeds) starts from code with `eval: true`;
 * - a one-shot `call` of a tool that reads no file through the content-search addon does not load it;
 * - watched from inside the process (a `--require` preload that logs every ES module load, every require() of a
 *   non-built-in, every `process.dlopen` and every `new Worker`, in the main thread and in every worker): through a
 *   content search, a regex search and a regex replace_in_files, the only files loaded as code are dist/cli.js itself
 *   (the one ES module) and the program it compiles at start, dist/main.js (the one `vm.Script`: scripts/code-cache.mjs);
 *   the native addon (where built) is opened only as this process's descriptor of its private copy (/proc/self/fd/N),
 *   and every worker starts from code;
 * - a server evaluates each tool's module at the tool's first call, after the kernel wall is up: the first call of every
 *   tool (in a served session with the wall) answers without INTERNAL and loads no file as code.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nativeAddonUrl } from '../../src/fs/native-load.js';
import { TOOL_INDEX_NAMES } from '../../src/tools/tool-index.js';
import { CLI, connect, PROGRAM } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const DIST = path.dirname(CLI);

/** The preload: logs each load of code as one JSON line to $CODE_LOAD_LOG (read by this test, not by the server). */
const PRELOAD = `
const fs = require('node:fs');
const Module = require('node:module');
const wt = require('node:worker_threads');
const LOG = process.env.CODE_LOAD_LOG;
const log = (kind, what) => fs.appendFileSync(LOG, JSON.stringify({ kind, what, pid: process.pid }) + '\\n');
const load = Module._load;
Module._load = function (request, ...rest) {
  if (!Module.isBuiltin(request)) log('require', request);
  return load.call(this, request, ...rest);
};
const dlopen = process.dlopen;
process.dlopen = function (m, f, ...rest) {
  log('dlopen', f);
  return dlopen.call(this, m, f, ...rest);
};
const vm = require('node:vm');
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(code, options) {
    super(code, options);
    log('script', String(options && options.filename));
  }
};
const Worker = wt.Worker;
wt.Worker = class extends Worker {
  constructor(what, options) {
    log(options && options.eval ? 'worker-code' : 'worker-file', options && options.eval ? '' : String(what));
    super(what, options);
  }
};
Module.syncBuiltinESMExports();
if (wt.isMainThread) {
  Module.register('data:text/javascript,' + encodeURIComponent(
    "import { appendFileSync } from 'node:fs';\\n" +
    'export async function load(url, context, next) {\\n' +
    "  if (!url.startsWith('node:')) appendFileSync(" + JSON.stringify(LOG) + ", JSON.stringify({ kind: 'import', what: url, pid: process.pid }) + '\\\\n');\\n" +
    '  return next(url, context);\\n}\\n'));
}
`;

describe('dist/: no file is loaded as code after start-up', () => {
  it('no worker script in dist/; every worker in dist/main.js starts from code (eval: true)', () => {
    expect(readdirSync(DIST).filter((n) => /worker/i.test(n))).toEqual([]);
    const bundle = readFileSync(PROGRAM, 'utf8');
    expect(bundle).not.toMatch(/-worker\.js/);
    const starts = [...bundle.matchAll(/new [\w$.]*\bWorker\(([^)]*)\)/g)].map((m) => m[1]);
    // One start, src/fs/worker-code.ts `startWorkerFromCode`: the one pool of reader threads (content search and user
    // regular expressions); the embedded worker code starts no thread of its own.
    expect(starts).toHaveLength(1);
    for (const args of starts) expect(args).toMatch(/eval: true/);
    // No require() of a computed path: both native addons (content search's and the kernel wall's) are loaded by
    // descriptor after their digest check (src/fs/native-load.ts).
    const computed = [...bundle.matchAll(/createRequire\([^)]*\)\(([^)'"][^)]*)\)/g)].map((m) => m[1]);
    expect(computed).toEqual([]);
    expect(bundle).toMatch(/function loadKernelWallAddon\(/);
  });

  it('dist/main.js keeps no dynamic import(): each lazily evaluated module is inside the one script', () => {
    // esbuild turns `await import()` of a bundled module into a call inside the program; one of a Node built-in or an
    // external package is left as a real import(), which the program (a vm.Script without an import callback) would
    // fail at run time (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), or which would load a file.
    expect([...readFileSync(PROGRAM, 'utf8').matchAll(/\bimport\((?!\))[^)]{0,80}\)/g)].map((m) => m[0])).toEqual([]);
  });

  it('watched from inside: only dist/cli.js and dist/main.js are loaded; the addon by descriptor; workers from code', async () => {
    const root = makeTree(
      { 'src/a.txt': 'one needle\n', 'src/b.txt': 'needle two\n', 'log/.keep': '' },
      'fs-tools-code-loading-root-',
    );
    // Inside the root: with the kernel wall on (the default), the server can write nowhere else.
    // The preload too: worker threads inherit `--require` and load it after the wall is up.
    const logFile = path.join(root.dir, 'log', 'loads.jsonl');
    const preload = path.join(root.dir, 'log', 'preload.cjs');
    writeFileSync(preload, PRELOAD);
    const src = path.join(root.dir, 'src');
    const state = makeTree({}, 'fs-tools-code-loading-state-');
    const client = await connect('modern', {
      command: process.execPath,
      args: ['--require', preload, CLI, '--sandbox=require', '--state-dir', state.dir, root.dir],
      env: { CODE_LOAD_LOG: logFile },
    });
    let events: Array<{ kind: string; what: string; pid: number }>;
    try {
      await client.callOk('search_files', { path: src, query: 'needle' });
      await client.callOk('search_files', { path: src, query: 'ne+dle\\s\\w+', regex: true });
      const q = { path: src, query: '(ne+dle)', regex: true, replacement: '[$1]' };
      const preview = await client.callOk('replace_in_files', { ...q, dry_run: true });
      const hashes = Object.fromEntries(
        preview.files.map((f: { path: string; previous_hash: string }) => [f.path, f.previous_hash]),
      );
      expect((await client.callOk('replace_in_files', { ...q, expected_hashes: hashes })).replacements).toBe(2);
    } finally {
      await client.close();
      events = readFileSync(logFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { kind: string; what: string; pid: number });
      root.cleanup();
      state.cleanup();
    }
    // Per process (the client may start more than one), one module: dist/cli.js, which compiles one script:
    // dist/main.js.
    const imports = events.filter((e) => e.kind === 'import');
    expect(imports.length).toBeGreaterThan(0);
    expect(new Set(imports.map((e) => e.what))).toEqual(new Set([pathToFileURL(CLI).href]));
    expect(new Set(imports.map((e) => e.pid)).size).toBe(imports.length);
    const scripts = events.filter((e) => e.kind === 'script');
    expect(new Set(scripts.map((e) => e.what))).toEqual(new Set([pathToFileURL(PROGRAM).href]));
    expect(scripts.map((e) => e.pid).sort()).toEqual(imports.map((e) => e.pid).sort());
    expect(events.filter((e) => e.kind === 'require' || e.kind === 'worker-file')).toEqual([]);
    expect(events.filter((e) => e.kind === 'worker-code').length).toBeGreaterThanOrEqual(2); // readers and regex
    const dlopens = events.filter((e) => e.kind === 'dlopen').map((e) => e.what);
    for (const p of dlopens) expect(p).toMatch(/^\/proc\/self\/fd\/\d+$/);
    if (existsSync(nativeAddonUrl(pathToFileURL(`${DIST}/`)))) expect(dlopens.length).toBeGreaterThan(0);
  }, 60_000);

  it("watched from inside: each tool's first call (its module evaluated then, after the wall) loads no file as code", async () => {
    // A server evaluates a tool's module at the tool's first call (src/tools/tool-index.ts), so every tool's code and
    // its dependencies' first run after the kernel wall is up: none may need a file, and none may load one as code.
    const root = makeTree({ 'a.txt': 'one needle\n', 'log/.keep': '' }, 'fs-tools-code-loading-first-');
    const logFile = path.join(root.dir, 'log', 'loads.jsonl');
    const preload = path.join(root.dir, 'log', 'preload.cjs');
    writeFileSync(preload, PRELOAD);
    const state = makeTree({}, 'fs-tools-code-loading-first-state-');
    const client = await connect('modern', {
      command: process.execPath,
      args: ['--require', preload, CLI, '--sandbox=require', '--state-dir', state.dir, root.dir],
      env: { CODE_LOAD_LOG: logFile },
    });
    let events: Array<{ kind: string; what: string; pid: number }>;
    try {
      expect((await client.listTools()).map((t) => t.name)).toEqual(TOOL_INDEX_NAMES);
      // Every tool once, with no arguments: the module is evaluated before the arguments are judged, so each answers
      // its result or an envelope (VALIDATION for most), never INTERNAL.
      for (const name of TOOL_INDEX_NAMES) {
        const r = await client.call(name, {});
        if (r.isError) {
          const { error } = JSON.parse(r.content[0].text!) as { error: { code: string } };
          expect(error.code, name).not.toBe('INTERNAL');
        }
      }
    } finally {
      await client.close();
      events = readFileSync(logFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { kind: string; what: string; pid: number });
      root.cleanup();
      state.cleanup();
    }
    expect(new Set(events.filter((e) => e.kind === 'import').map((e) => e.what))).toEqual(
      new Set([pathToFileURL(CLI).href]),
    );
    expect(new Set(events.filter((e) => e.kind === 'script').map((e) => e.what))).toEqual(
      new Set([pathToFileURL(PROGRAM).href]),
    );
    expect(events.filter((e) => e.kind === 'require' || e.kind === 'worker-file')).toEqual([]);
    for (const e of events.filter((x) => x.kind === 'dlopen')) expect(e.what).toMatch(/^\/proc\/self\/fd\/\d+$/);
  }, 60_000);

  it('a one-shot call loads the content-search addon only for a tool that reads through it', () => {
    const addon = existsSync(nativeAddonUrl(pathToFileURL(`${DIST}/`)));
    const root = makeTree({ 'a.txt': 'one needle\n', 'log/.keep': '' }, 'fs-tools-code-loading-call-');
    try {
      writeFileSync(path.join(root.dir, 'log', 'preload.cjs'), PRELOAD);
      // Without the kernel wall (its own addon is the other dlopen), one call each; the dlopens of each process.
      const dlopens = (tool: string, args: Record<string, unknown>): number => {
        const log = path.join(root.dir, 'log', `${tool}.jsonl`);
        writeFileSync(log, '');
        const r = spawnSync(
          process.execPath,
          [
            '--require',
            path.join(root.dir, 'log', 'preload.cjs'),
            CLI,
            '--sandbox=off',
            '--state-dir',
            path.join(root.dir, 'log', `state-${tool}`),
            root.dir,
            'call',
            tool,
            JSON.stringify(args),
          ],
          { encoding: 'utf8', env: { ...process.env, CODE_LOAD_LOG: log }, timeout: 60_000 },
        );
        expect(r.status).toBe(0);
        return readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"dlopen"')).length;
      };
      expect(dlopens('read_file', { path: path.join(root.dir, 'a.txt') })).toBe(0);
      expect(dlopens('stat', { path: path.join(root.dir, 'a.txt') })).toBe(0);
      // The main thread's load and each reader thread's attach to the loaded copy.
      const searched = dlopens('search_files', { path: root.dir, query: 'needle' });
      if (addon) expect(searched).toBeGreaterThan(0);
      else expect(searched).toBe(0);
    } finally {
      root.cleanup();
    }
  }, 60_000);
});
