/**
 * The start-up code cache of dist/ (docs/security.md "The server's own code and token files", docs/benchmarks.md
 * "Start-up, read_file and memory"). Node 20 has no compile cache for ES modules, so the program is built as a
 * script and started by a small loader:
 *
 *   dist/cli.js           the loader (the `fs-tools` command): an ES module of a few lines, generated here
 *   dist/main.js          the program (src/cli.ts and everything it imports, one script: a function of `require`
 *                         and the program's own URL, which stands for `import.meta.url`)
 *   dist/main.js.map      its source map (not published)
 *   dist/main.code-cache  V8's code cache of dist/main.js, made by the build after one representative
 *                         `fs-tools call read_file` (the functions it compiled, so a start compiles almost nothing)
 *
 * V8 checks a code cache only against the source's length and its own version and flags: a cache that does not
 * belong to the source would run other code than the file shows. So the loader uses the cache only when the sha256
 * of dist/main.js and of the cache are the ones this build recorded in dist/cli.js, on the Node version and
 * architecture that made it, and not under NODE_V8_COVERAGE (cached functions carry no block counters: coverage of
 * the spawned servers would lose its branches). Anything else — no cache, another digest, another Node, a cache V8
 * rejects — is a plain compile of dist/main.js, as before the cache existed. The loader reads both files from its
 * own directory only (never from a root or the state directory), before anything else runs; nothing writes a cache
 * at run time (the build makes it; a running server could not anyway: the kernel wall refuses it).
 *
 * Run as a script (`node scripts/code-cache.mjs --make DIR`), it is the build's representative run: it compiles
 * DIR/main.js the way the loader does, runs it twice in one process — `call read_file` on a small file in a
 * temporary root, then a served MCP session (initialize, tools/list, read_file, git_status, stdin closed) — and writes
 * V8's code cache of what ran (`script.createCachedData()`) into that root, which scripts/bundle.mjs then moves to
 * DIR. Both runs share the one compiled script, so the cache holds what a one-shot call compiles and what serving
 * compiles before and at its first requests (the SDK, the modules of the tools it calls and their schemas, the
 * kernel wall, the subprocess runner): without the second, every `fs-tools` server compiled those at start
 * (docs/benchmarks.md "Server start-up"). A server evaluates a tool's module at the tool's first call; calling every
 * tool here as well made the cache 7% larger and no start or first call measurably cheaper.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Script } from 'node:vm';

/** The program's file name in dist/. */
export const PROGRAM = 'main.js';
/** The code cache's file name in dist/. */
export const CODE_CACHE = 'main.code-cache';
/** What the program's text stands for `import.meta.url` (esbuild `define`): its own file URL, a parameter. */
export const PROGRAM_URL = '__fsToolsProgramUrl';
/**
 * The program is one function expression (esbuild's CommonJS output between these two lines): the loader calls it
 * with a `require` for Node's built-ins and the program's URL. Strict, as the ES modules it is built from.
 */
export const PROGRAM_WRAPPER = {
  banner: `(function (require, ${PROGRAM_URL}) {'use strict';`,
  footer: '})',
};

/** sha256 of bytes, hex. */
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/**
 * The text of dist/cli.js for the program and cache in `dir`.
 * @param {string} dir where main.js (and, when `withCache`, main.code-cache) lie
 * @param {{ withCache: boolean }} options
 * @returns {string}
 */
export function loaderSource(dir, { withCache }) {
  const record = {
    program: PROGRAM,
    programSha256: sha256(readFileSync(path.join(dir, PROGRAM))),
    cache: withCache ? CODE_CACHE : null,
    cacheSha256: withCache ? sha256(readFileSync(path.join(dir, CODE_CACHE))) : null,
    cacheBytes: withCache ? statSync(path.join(dir, CODE_CACHE)).size : null,
    node: process.version,
    arch: process.arch,
  };
  return `#!/usr/bin/env node
// fs-tools: starts the program (${PROGRAM}) with the code cache this build made for it (scripts/code-cache.mjs).
import { hash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Script } from 'node:vm';

const BUILD = ${JSON.stringify(record)};
const programUrl = new URL(BUILD.program, import.meta.url);
const program = readFileSync(programUrl);
let cachedData;
if (BUILD.cache && process.version === BUILD.node && process.arch === BUILD.arch && !process.env.NODE_V8_COVERAGE) {
  let fd;
  try {
    // Only a regular file of the recorded size is read: a FIFO, a device or a link to one is a plain compile, not a
    // wait or an unbounded read (the cache is optional).
    fd = openSync(new URL(BUILD.cache, import.meta.url), constants.O_RDONLY | constants.O_NONBLOCK);
    const stat = fstatSync(fd);
    const cache = stat.isFile() && stat.size === BUILD.cacheBytes ? readFileSync(fd) : null;
    if (cache && hash('sha256', cache) === BUILD.cacheSha256 && hash('sha256', program) === BUILD.programSha256) {
      cachedData = cache;
    }
  } catch {
    // No cache (or unreadable): a plain compile.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
const script = new Script(program.toString('utf8'), { filename: programUrl.href, cachedData });
script.runInThisContext()(createRequire(programUrl), programUrl.href);
`;
}

/**
 * Makes DIR/main.code-cache by the representative run (a call, then a served session) in a child process (this file
 * with `--make`).
 *
 * The program is compiled under the name it will have in `outDir`, not the staging name: on Node 20 the code
 * deserialized from a cache keeps the script name it was made with (stack traces, CPU profiles), whatever name the
 * loader then gives. So a build's stack traces name `outDir/main.js`; a package installed elsewhere names the path it
 * was built at.
 * @param {string} dir the staging directory holding main.js and the native files it loads (native/)
 * @param {string} outDir where main.js will be (absolute)
 * @returns {string | null} null when made, else why not (the build then ships no cache: every start compiles)
 */
export function makeCodeCache(dir, outDir) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-code-cache-root-'));
  const state = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-code-cache-state-'));
  try {
    const file = path.join(root, 'small-4k.txt');
    writeFileSync(file, `${'x'.repeat(63)}\n`.repeat(64));
    // A work tree, so the session's git_status runs git (and evaluates the subprocess runner); without git on the
    // build machine that call answers an envelope and the cache simply lacks that code. In `root` whatever the build's
    // environment says (a GIT_DIR exported to a hook or script running the build made this init create or reinitialize
    // the repository it names), and with neither the system's nor the builder's git configuration (an `include.path`
    // naming a FIFO held it, and so the build, forever); bounded in time like the run below.
    const gitEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_')));
    spawnSync('git', ['init', '-q'], {
      cwd: root,
      stdio: 'ignore',
      timeout: 30_000,
      env: { ...gitEnv, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    });
    const made = spawnSync(
      process.execPath,
      [
        fileURLToPath(import.meta.url),
        '--make',
        dir,
        pathToFileURL(path.join(outDir, PROGRAM)).href,
        root,
        '--state-dir',
        state,
        '--',
        JSON.stringify({ path: file }),
      ],
      // A run that hangs (a server that never sees its stdin end) fails the cache, never the build.
      { encoding: 'utf8', cwd: root, input: servedSession(file), timeout: 120_000 },
    );
    const why = representativeFailure(made.stdout);
    if (made.status !== 0 || why !== null) {
      return `the representative run failed (status ${made.status}; ${why ?? 'exit status'}): ${made.stderr.trim().slice(0, 500)}`;
    }
    copyFileSync(path.join(root, CODE_CACHE), path.join(dir, CODE_CACHE));
    return null;
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  }
}

/**
 * The served session's requests (JSON Lines on the server's stdin): initialize, tools/list, read_file of `file`,
 * git_status of the root.
 */
function servedSession(file) {
  const messages = [
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'code-cache', version: '1' } },
    },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'read_file', arguments: { path: file } } },
    { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'git_status', arguments: {} } },
  ];
  return messages.map((m) => `${JSON.stringify(m)}\n`).join('');
}

/**
 * Why the representative run's stdout is not what both runs answer, or null: the call's result (pretty JSON, a
 * 4,096-byte file) and then one answer line per request of the served session, the read_file call's without error.
 * @param {string} stdout
 * @returns {string | null}
 */
function representativeFailure(stdout) {
  const at = stdout.indexOf('\n{"');
  if (at === -1) return 'no served answers';
  let size;
  try {
    size = JSON.parse(stdout.slice(0, at)).size;
  } catch {
    size = undefined;
  }
  if (size !== 4096) return 'the call read no 4,096-byte file';
  let answers;
  try {
    answers = stdout
      .slice(at + 1)
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
  } catch {
    return 'a served answer is not JSON';
  }
  const read = answers.find((a) => a.id === 3);
  if (answers.length !== 4 || !Array.isArray(read?.result?.content) || read.result.isError === true) {
    return 'the served session did not answer initialize, tools/list, read_file and git_status';
  }
  return null;
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--make') {
  // argv: --make DIR NAME ROOT ...OPTIONS -- READ_ARGS: run DIR/main.js, compiled as NAME, twice: `ROOT ...OPTIONS
  // --sandbox=off call read_file READ_ARGS`, then, when that exits with 0, `ROOT ...OPTIONS` serving the session on
  // stdin. ROOT comes first: it is where the cache is written at exit, the one place besides the state directory that
  // the served run's kernel wall lets the program write. The call runs without the wall (the served run raises it):
  // a wall raised twice in one process would confine the second start-up's own files (native addon) as no real start
  // is. The program ends each run with process.exit: the first one starts the served run instead.
  const [, , , dir, filename, root, ...rest] = process.argv;
  const options = rest.slice(0, rest.indexOf('--'));
  const readArgs = rest[rest.indexOf('--') + 1];
  const programUrl = pathToFileURL(path.join(dir, PROGRAM));
  const script = new Script(readFileSync(programUrl, 'utf8'), { filename });
  const run = (args) => {
    process.argv = [process.argv[0], fileURLToPath(programUrl), root, ...args];
    script.runInThisContext()(createRequire(programUrl), programUrl.href);
  };
  const exit = process.exit.bind(process);
  process.exit = (code) => {
    process.exit = exit;
    if (code !== 0) exit(code);
    setImmediate(() => run(options));
  };
  process.on('exit', (code) => {
    if (code === 0) writeFileSync(path.join(root, CODE_CACHE), script.createCachedData());
  });
  run([...options, '--sandbox=off', 'call', 'read_file', readArgs]);
}
