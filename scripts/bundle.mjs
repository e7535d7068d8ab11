#!/usr/bin/env node
/**
 * Builds dist/ from src/ with esbuild: dist/cli.js (the whole server in one ES module, so a start loads one file
 * instead of a few hundred — about half the start-up CPU, which every agent session and every e2e test pays) and
 * one file per worker thread (src/fs/*-worker.ts → dist/*-worker.js, loaded by URL next to cli.js), and the optional
 * native addon of content search (scripts/build-native.mjs). Type checking is tsc's job
 * (`npm run typecheck`); this only bundles.
 */
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// `--broken-containment`: the test build of the kernel wall's suite (test/attacks/kernel-wall.test.ts), written to
// dist-broken/ and never published: the policy layer believes `/` is one more root, so only the kernel wall stands
// between a tool and the rest of the machine. The production bundle folds the switch to false.
const broken = process.argv.includes('--broken-containment');
const outDir = broken ? 'dist-broken' : 'dist';
// Build beside dist/ and rename each file in: a server started meanwhile (a concurrent test run) never sees a
// missing or half-written dist/cli.js.
const staging = `${outDir}.staging-${process.pid}`;
const result = await build({
  absWorkingDir: root,
  // Every src/fs/*-worker.ts is a worker-thread entry loaded by URL next to cli.js (`new URL('./x-worker.js',
  // import.meta.url)`): the regex worker, the content-search readers. Each is bundled as its own file.
  entryPoints: {
    cli: 'src/cli.ts',
    ...Object.fromEntries(readdirSync(`${root}/src/fs`).filter((f) => f.endsWith('-worker.ts'))
      .map((f) => [f.slice(0, -3), `src/fs/${f}`])),
  },

  outdir: staging,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Maps stay in dist/ for debugging (`node --enable-source-maps`) but carry no sourceMappingURL comment: the
  // published package leaves them out (package.json "files"), and a comment would point at a missing file.
  sourcemap: 'external',
  metafile: true,
  // Issue #20: the in-process test seams (src/fs/atomic-write.ts setWriteFaultInjector) are compiled out of the
  // product: the constant folds to false, so the bundle carries no setter and never calls an injector.
  define: { FS_TOOLS_TEST_SEAMS: 'false', FS_TOOLS_BROKEN_CONTAINMENT: broken ? 'true' : 'false' },
  logLevel: 'warning',
  // CommonJS dependencies call require() for Node built-ins; give the ES module one.
  banner: { js: "import { createRequire as __fsToolsCreateRequire } from 'node:module'; const require = __fsToolsCreateRequire(import.meta.url);" },
});

writeFileSync(`${root}/${staging}/THIRD-PARTY-LICENSES.txt`, thirdPartyLicenses(result.metafile));
mkdirSync(`${root}/${outDir}`, { recursive: true });
for (const name of readdirSync(`${root}/${staging}`)) renameSync(`${root}/${staging}/${name}`, `${root}/${outDir}/${name}`);
rmSync(`${root}/${staging}`, { recursive: true, force: true });
if (broken) {
  // The addons of the production build, next to the test bundle (it loads them relative to itself).
  rmSync(`${root}/dist-broken/native`, { recursive: true, force: true });
  if (existsSync(`${root}/dist/native`)) cpSync(`${root}/dist/native`, `${root}/dist-broken/native`, { recursive: true });
  process.exit(0);
}
// Issue #19: the content-search addon, dist/native/<platform>-<arch>/fs_tools_native.node, where a C compiler and
// Node's headers exist (scripts/build-native.mjs says why not otherwise, and never fails the build).
spawnSync(process.execPath, [`${root}/scripts/build-native.mjs`], { cwd: root, stdio: 'inherit' });

/**
 * The licence texts of every npm package whose code the bundle inlines (found from esbuild's metafile inputs), one
 * after another: MIT, ISC, BSD and Apache licences require the notice to travel with the code. Sorted by package name
 * so the file is stable between builds.
 * @param {import('esbuild').Metafile} metafile
 * @returns {string}
 */
function thirdPartyLicenses(metafile) {
  const packageDirs = new Set();
  for (const input of Object.keys(metafile.inputs)) {
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
