/**
 * The worker threads' code, bundled for embedding (docs/security.md "The server's own code and token files"): every
 * src/fs/*-worker.ts becomes one self-contained CommonJS script (it `require`s only Node built-ins), which
 * scripts/bundle.mjs embeds in dist/cli.js as a string and the server starts with `new Worker(code, { eval: true })`.
 * No worker is ever loaded from a file, so a package lying inside a root cannot have its workers rewritten by the
 * agent. test/helpers/worker-code.ts builds the same code from src/ for the unit tests.
 */
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';
import { zodLocalesPlugin } from './zod-locales.mjs';

/**
 * Bundles each src/fs/*-worker.ts under `root`.
 * @param {string} root the checkout (absolute)
 * @returns {Promise<{ code: Record<string, string>, metafiles: import('esbuild').Metafile[] }>} code by worker name
 *   (the file name without `.ts`, e.g. `search-reader-worker`) and esbuild's metafiles (for the licence file)
 */
export async function buildWorkerCode(root) {
  const code = {};
  const metafiles = [];
  const names = readdirSync(`${root}/src/fs`).filter((f) => f.endsWith('-worker.ts')).sort();
  for (const file of names) {
    const result = await build({
      absWorkingDir: root,
      entryPoints: [`src/fs/${file}`],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      write: false,
      metafile: true,
      define: { FS_TOOLS_TEST_SEAMS: 'false' },
      plugins: [zodLocalesPlugin()], // zod's locales trimmed to English, as in dist/cli.js
      logLevel: 'warning',
    });
    code[file.slice(0, -3)] = result.outputFiles[0].text;
    metafiles.push(result.metafile);
  }
  return { code, metafiles };
}
