/**
 * The tools/list entries of every tool, computed once by the build (docs/benchmarks.md "Server start-up"): the JSON
 * Schemas of tools/list are generated from the tools' zod schemas (src/server/tool-schemas.ts `advertise`), which took
 * a served session 50–100 ms of CPU at its first tools/list — every MCP session and every server `npm test` starts
 * paid it. The entries depend only on the tools' declarations, which are part of the program, so scripts/bundle.mjs
 * embeds them in dist/main.js as one JSON string (`FS_TOOLS_ADVERTISED`) and `advertise` returns the embedded entry
 * of a tool instead of generating it. They are generated here by the same code from the same sources (src/ bundled
 * with the same plugins and switches as the program), so they are the same bytes; test/distribution/advertised-tools
 * .test.ts compares the built program's entries with the ones src/ generates.
 */
import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { zodLocalesPlugin } from './zod-locales.mjs';

/**
 * Bundles src/tools/registry.ts and src/server/tool-schemas.ts under `root` into a temporary module, evaluates it and
 * returns every tool's advertised entry by name, as the JSON text the program embeds.
 * @param {string} root the checkout (absolute)
 * @param {Record<string, string>} define the program's build switches (FS_TOOLS_TEST_SEAMS, ...), so the declarations
 *   are the ones of the build they are embedded in
 * @returns {Promise<string>} JSON of `{ [name]: AdvertisedTool }`, in registry order
 */
export async function advertisedToolsJson(root, define) {
  const result = await build({
    absWorkingDir: root,
    stdin: {
      contents: [
        "import { TOOLS } from './src/tools/registry.ts';",
        "import { advertise } from './src/server/tool-schemas.ts';",
        'export const entries = Object.fromEntries(TOOLS.map((tool) => [tool.name, advertise(tool)]));',
      ].join('\n'),
      resolveDir: root,
      sourcefile: 'advertised-tools-entry.ts',
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    define,
    plugins: [zodLocalesPlugin()],
    logLevel: 'warning',
  });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-advertised-'));
  try {
    const file = path.join(dir, 'advertised.mjs');
    writeFileSync(file, result.outputFiles[0].text);
    const { entries } = await import(pathToFileURL(file).href);
    return JSON.stringify(entries);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
