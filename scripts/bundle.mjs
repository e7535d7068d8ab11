#!/usr/bin/env node
/**
 * Builds dist/ from src/ with esbuild: dist/cli.js (the whole server in one ES module, so a start loads one file
 * instead of a few hundred — about half the start-up CPU, which every agent session and every e2e test pays) and
 * one file per worker thread (src/fs/*-worker.ts → dist/*-worker.js, loaded by URL next to cli.js). Type checking is tsc's job
 * (`npm run typecheck`); this only bundles.
 */
import { build } from 'esbuild';
import { mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// Build beside dist/ and rename each file in: a server started meanwhile (a concurrent test run) never sees a
// missing or half-written dist/cli.js.
const staging = `dist.staging-${process.pid}`;
await build({
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
  sourcemap: 'linked',
  logLevel: 'warning',
  // CommonJS dependencies call require() for Node built-ins; give the ES module one.
  banner: { js: "import { createRequire as __fsToolsCreateRequire } from 'node:module'; const require = __fsToolsCreateRequire(import.meta.url);" },
});

mkdirSync(`${root}/dist`, { recursive: true });
for (const name of readdirSync(`${root}/${staging}`)) renameSync(`${root}/${staging}/${name}`, `${root}/dist/${name}`);
rmSync(`${root}/${staging}`, { recursive: true, force: true });
