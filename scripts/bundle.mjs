#!/usr/bin/env node
/**
 * Builds dist/ from src/ with esbuild: the whole program in one script, dist/main.js (one file instead of a few
 * hundred modules — about half the start-up CPU, which every agent session and every e2e test pays), started by
 * dist/cli.js with V8's code cache of it (dist/main.code-cache; scripts/code-cache.mjs says why a script and a loader,
 * and how the cache is checked), and the native addons (scripts/build-native.mjs). The worker threads' code
 * (scripts/worker-bundles.mjs) is embedded in dist/main.js as strings, and so is the sha256 of each native file built,
 * which the server checks when it loads the content-search addon at start-up: nothing the server runs is loaded from
 * a file after start-up (docs/security.md "The server's own code and token files"). Type checking is tsc's job
 * (`npm run typecheck`); this only bundles.
 */
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { advertisedToolsJson } from './advertised-tools.mjs';
import { sdkPatchPlugin } from './sdk-patch.mjs';
import { CODE_CACHE, PROGRAM, PROGRAM_URL, PROGRAM_WRAPPER, loaderSource, makeCodeCache } from './code-cache.mjs';
import { buildWorkerCode } from './worker-bundles.mjs';
import { zodLocalesPlugin } from './zod-locales.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
// `--broken-containment`: the test build of the kernel wall's suite (test/attacks/kernel-wall.test.ts), written to
// dist-broken/ and never published: the policy layer believes `/` is one more root, so only the kernel wall stands
// between a tool and the rest of the machine. The production bundle folds the switch to false.
const broken = process.argv.includes('--broken-containment');
// `--test-seams`: the test build of the suites that need a seam in the spawned server (a kill point inside a
// transaction, a failing or slow copy; src/cli/seam-flags.ts), written to dist-seams/ and never published. The
// production bundle folds FS_TOOLS_TEST_SEAMS to false: it carries neither the seams nor the flag.
const seams = process.argv.includes('--test-seams');
// `--and-test-seams`: the production build, then the seams build, in this one process (the test suite's global
// setup): the worker threads' code, the native files' digests and esbuild's service are made once for both (the
// same bytes each separate run would make; ~0.8 s of CPU less than two runs).
const andSeams = process.argv.includes('--and-test-seams');
if ([broken, seams, andSeams].filter(Boolean).length > 1) {
  throw new Error('bundle.mjs: --broken-containment, --test-seams and --and-test-seams are separate builds');
}
// The native addons, dist/native/<platform>-<arch>/ (issue #19 and the kernel wall), where a C compiler and Node's
// headers exist (scripts/build-native.mjs says why not otherwise, and never fails the build). Built first: their
// digests go into the bundle. The test builds (--broken-containment, --test-seams) use the production build's.
if (!broken && !seams) spawnSync(process.execPath, [`${root}/scripts/build-native.mjs`], { cwd: root, stdio: 'inherit' });
/** sha256 (hex) of each file in dist/native, by `<platform>-<arch>/<name>`. */
const nativeDigests = {};
if (existsSync(`${root}/dist/native`)) {
  for (const platform of readdirSync(`${root}/dist/native`).sort()) {
    if (!existsSync(`${root}/dist/native/${platform}`)) continue;
    for (const name of readdirSync(`${root}/dist/native/${platform}`).sort()) {
      if (name.includes('.tmp')) continue;
      const bytes = readFileSync(`${root}/dist/native/${platform}/${name}`);
      nativeDigests[`${platform}/${name}`] = createHash('sha256').update(bytes).digest('hex');
    }
  }
}
const workers = await buildWorkerCode(root);
if (broken) await bundle({ broken: true, seams: false });
else if (seams) await bundle({ broken: false, seams: true });
else {
  await bundle({ broken: false, seams: false });
  if (andSeams) await bundle({ broken: false, seams: true });
}

/**
 * Builds one output directory: dist/ (the product), dist-seams/ (seams) or dist-broken/ (broken), from src/cli.ts,
 * the worker code and the native digests above; the product and the seams build with a code cache (the
 * broken-containment build without), the test builds with a copy of dist/native.
 * @param {{ broken: boolean, seams: boolean }} build which build (at most one true)
 * @returns {Promise<void>} when every file is in place
 */
async function bundle({ broken, seams }) {
  const testBuild = broken || seams;
  const outDir = broken ? 'dist-broken' : seams ? 'dist-seams' : 'dist';
  // Build beside dist/ and rename each file in: a server started meanwhile (a concurrent test run) never sees a
  // missing or half-written dist/cli.js.
  const staging = `${outDir}.staging-${process.pid}`;
  /** The build switches of this build: the program's and the advertised entries' (scripts/advertised-tools.mjs). */
  const switches = {
    FS_TOOLS_TEST_SEAMS: seams ? 'true' : 'false',
    FS_TOOLS_BROKEN_CONTAINMENT: broken ? 'true' : 'false',
  };
  const result = await buildProgram(staging, switches);
  writeFileSync(
    `${root}/${staging}/THIRD-PARTY-LICENSES.txt`,
    thirdPartyLicenses([result.metafile, ...workers.metafiles]),
  );
  asciiComments(`${root}/${staging}/${PROGRAM}`);

  // The code cache, made by the representative run (a call, then a served session) of the staged program (which loads
  // the native files beside it; a test build's come from dist/, built first), for the product and for the seams test
  // build, whose servers `npm test` starts ~35 times (~0.1 s of CPU less per start, ~0.5 s more for the build); the
  // broken-containment build, started by one suite a few times, compiles at every start (scripts/code-cache.mjs).
  let withCache = false;
  if (!broken) {
    if (existsSync(`${root}/dist/native`)) cpSync(`${root}/dist/native`, `${root}/${staging}/native`, { recursive: true });
    const why = makeCodeCache(`${root}/${staging}`, `${root}/${outDir}`);
    rmSync(`${root}/${staging}/native`, { recursive: true, force: true });
    if (why !== null) process.stderr.write(`bundle.mjs: no code cache (every start compiles ${outDir}/${PROGRAM}): ${why}\n`);
    withCache = why === null;
  }
  writeFileSync(`${root}/${staging}/cli.js`, loaderSource(`${root}/${staging}`, { withCache }), { mode: 0o755 });
  mkdirSync(`${root}/${outDir}`, { recursive: true });
  if (!withCache) rmSync(`${root}/${outDir}/${CODE_CACHE}`, { force: true });
  // The loader last: a start meanwhile runs either the previous build or this one (a loader whose digests do not match
  // the files beside it compiles without the cache).
  const names = readdirSync(`${root}/${staging}`).sort((a, b) => Number(a === 'cli.js') - Number(b === 'cli.js'));
  for (const name of names) renameSync(`${root}/${staging}/${name}`, `${root}/${outDir}/${name}`);
  rmSync(`${root}/${staging}`, { recursive: true, force: true });
  // The source map of the ES-module bundle of earlier builds (dist/cli.js is the loader now and has none).
  rmSync(`${root}/${outDir}/cli.js.map`, { force: true });
  if (testBuild) {
    // The addons of the production build, next to the test bundle (it loads them relative to itself).
    rmSync(`${root}/${outDir}/native`, { recursive: true, force: true });
    if (existsSync(`${root}/dist/native`)) cpSync(`${root}/dist/native`, `${root}/${outDir}/native`, { recursive: true });
    return;
  }
  // Worker scripts of earlier builds (dist/*-worker.js): nothing loads them any more, and package.json "files" would
  // ship them.
  for (const name of readdirSync(`${root}/dist`)) {
    if (/-worker\.js(\.map)?$/.test(name)) rmSync(`${root}/dist/${name}`, { force: true });
  }
}

/**
 * esbuild's bundle of src/cli.ts into `staging` (the program, PROGRAM, and its source map) with the build switches.
 * @param {string} staging the output directory, relative to the root
 * @param {Record<string, string>} switches FS_TOOLS_TEST_SEAMS and FS_TOOLS_BROKEN_CONTAINMENT, 'true' or 'false'
 * @returns {Promise<import('esbuild').BuildResult>} esbuild's result, with the metafile
 */
async function buildProgram(staging, switches) {
  const advertised = await advertisedToolsJson(root, switches);
  return build({
    absWorkingDir: root,
    entryPoints: { [PROGRAM.replace(/\.js$/, '')]: 'src/cli.ts' },

    outdir: staging,
    bundle: true,
    platform: 'node',
    // A script, not an ES module: Node 20 takes a code cache only for scripts (scripts/code-cache.mjs).
    format: 'cjs',
    target: 'node20',
    // Maps stay in dist/ for debugging (`node --enable-source-maps`) but carry no sourceMappingURL comment: the
    // published package leaves them out (package.json "files"), and a comment would point at a missing file.
    sourcemap: 'external',
    // Every non-ASCII character of a string, template, regular expression or name is escaped (esbuild's default, stated
    // here because asciiComments below relies on it).
    charset: 'ascii',
    metafile: true,
    // The test seams (src/fs/atomic-write.ts setWriteFaultInjector, src/cli/seam-flags.ts) are compiled out of the
    // product: the constant folds to false, so the bundle carries no setter, no seam flag and never calls an injector.
    // The worker threads' code (src/fs/worker-code.ts), the native files' digests (src/fs/native-load.ts) and the tools'
    // advertised entries, one JSON string (src/server/tool-schemas.ts).
    define: {
      ...switches,
      FS_TOOLS_ADVERTISED: JSON.stringify(advertised),
      FS_TOOLS_WORKER_CODE: JSON.stringify(workers.code),
      FS_TOOLS_NATIVE_DIGESTS: JSON.stringify(nativeDigests),
      'import.meta.url': PROGRAM_URL,
    },
    // The one upstream-style change to the MCP SDK (scripts/sdk-patch.mjs: requests are classified first), and zod's
    // locales trimmed to English (scripts/zod-locales.mjs).
    plugins: [sdkPatchPlugin(), zodLocalesPlugin()],
    logLevel: 'warning',
    // One function of `require` (for Node built-ins) and the program's URL, which the loader calls.
    banner: { js: PROGRAM_WRAPPER.banner },
    footer: { js: PROGRAM_WRAPPER.footer },
  });
}

/**
 * Makes the program's text ASCII: the comments esbuild keeps (from dependencies: a `—`, an `…`, confusable letters)
 * are the only non-ASCII characters left (charset: 'ascii' escapes every other), and one of them makes Node decode
 * the whole 2 MB file into a two-byte string at every start (a slower decode, twice the memory, slower scans for
 * every function compiled later). Each UTF-16 unit of such a character becomes `?`, so every line and column — the
 * source map's positions — stays where it was.
 * @param {string} file the program, rewritten in place
 * @throws Error when a non-ASCII character is on a line where it does not follow `//` or continue a block comment
 */
function asciiComments(file) {
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  for (const [i, line] of lines.entries()) {
    const at = line.search(/[^\x00-\x7f]/);
    if (at === -1) continue;
    const before = line.slice(0, at);
    const lead = line.trimStart();
    if (!before.includes('//') && !lead.startsWith('*') && !lead.startsWith('/*')) {
      throw new Error(`bundle.mjs: ${file}:${i + 1}: a non-ASCII character outside a comment (charset: 'ascii' should escape it)`);
    }
  }
  writeFileSync(file, text.replace(/[^\x00-\x7f]/g, '?'));
}

/**
 * The licence texts of every npm package whose code the bundle inlines (found from esbuild's metafile inputs), one
 * after another: MIT, ISC, BSD and Apache licences require the notice to travel with the code. Sorted by package name
 * so the file is stable between builds.
 * @param {import('esbuild').Metafile[]} metafiles the main bundle's and the embedded workers'
 * @returns {string}
 */
function thirdPartyLicenses(metafiles) {
  const packageDirs = new Set();
  for (const input of metafiles.flatMap((m) => Object.keys(m.inputs))) {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match) packageDirs.add(match[1]);
  }
  const sections = [];
  for (const dir of packageDirs) {
    const manifest = JSON.parse(readFileSync(`${root}/${dir}/package.json`, 'utf8'));
    const licenceFile = readdirSync(`${root}/${dir}`).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    const text = licenceFile && existsSync(`${root}/${dir}/${licenceFile}`)
      ? readFileSync(`${root}/${dir}/${licenceFile}`, 'utf8').trim()
      : `(no licence file shipped; package.json says: ${manifest.license ?? 'unknown'})`;
    const noticeFile = readdirSync(`${root}/${dir}`).find((f) => /^notice(\.|$)/i.test(f));
    const notice = noticeFile ? `\n\nNOTICE:\n${readFileSync(`${root}/${dir}/${noticeFile}`, 'utf8').trim()}` : '';
    sections.push({ name: `${manifest.name}@${manifest.version}`, text: `${manifest.name}@${manifest.version} (${manifest.license ?? 'unknown'})\n\n${text}${notice}` });
  }
  sections.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return `fs-tools bundles code from these packages into dist/*.js. Their licences follow.\n\n${sections
    .map((s) => s.text).join(`\n\n${'-'.repeat(78)}\n\n`)}\n`;
}
