/**
 * vitest's v8 coverage provider, plus the coverage of the servers the tests spawn (vitest.config.ts
 * `customProviderModule`; docs/development.md "Coverage").
 *
 * The e2e and attack suites run the built server (dist/cli.js, dist-seams/cli.js, dist-broken/cli.js: each a loader
 * that compiles the program beside it, main.js; scripts/code-cache.mjs) in child processes, which vitest's in-process
 * coverage does not see. Here:
 * 1. At start the provider makes a private directory (0700, under the system's temporary directory) and provides it
 *    to the tests as `spawnedCoverageDir`; the spawn helpers (test/helpers/server.ts `coverageEnv`) start every server
 *    with `NODE_V8_COVERAGE` naming it, so Node writes each server's V8 coverage there when it exits (the kernel wall
 *    grants that directory: docs/security.md "The kernel wall").
 * 2. At the end, of each file written there only the entries of the bundles above are kept, merged per bundle
 *    (V8's per-process coverage, `mergeProcessCovs`), and each bundle is converted once through its source map
 *    (dist/main.js.map) into per-file coverage of src/ — the same conversion vitest applies to the in-process code.
 *    Under NODE_V8_COVERAGE the loader compiles the program without its code cache (cached functions carry no block
 *    counters), so the branches are counted.
 * 3. That coverage is merged into vitest's own before the reports and the thresholds, so a threshold on src/tools,
 *    src/server or src/vcs counts what the spawned servers ran as well as what the in-process tests ran.
 * Without coverage (`--coverage.enabled=false`) none of this runs and the servers get no `NODE_V8_COVERAGE`.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import v8Module from '@vitest/coverage-v8';

/** The programs of the server builds the tests spawn, relative to the project root. */
const BUNDLES = ['dist/main.js', 'dist-seams/main.js', 'dist-broken/main.js'];

/** Whether no statement, function or branch of this file coverage ran (an istanbul FileCoverage). */
function neverRun(fileCoverage) {
  const { s, f, b } = fileCoverage.data;
  return (
    Object.values(s).every((n) => n === 0) &&
    Object.values(f).every((n) => n === 0) &&
    Object.values(b).every((counts) => counts.every((n) => n === 0))
  );
}

export default {
  ...v8Module,
  async getProvider() {
    // Loaded here, not at the top: vitest also loads this module inside each test worker (for startCoverage and
    // takeCoverage), where the provider's own dependencies (vitest/node) are not wanted.
    const { V8CoverageProvider } = await import('@vitest/coverage-v8/dist/provider.js');
    const { mergeProcessCovs } = await import('@bcoe/v8-coverage');

    class SpawnedServerCoverageProvider extends V8CoverageProvider {
      /** @type {string | undefined} */
      spawnedDir;

      initialize(ctx) {
        super.initialize(ctx);
        this.spawnedDir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-spawned-coverage-'));
        ctx.provide('spawnedCoverageDir', this.spawnedDir);
      }

      async generateCoverage(options) {
        const coverageMap = await super.generateCoverage(options);
        const spawned = await this.spawnedServerCoverage();
        // A file no in-process test loaded has only vitest's all-zero entry for it, whose statements are located on
        // vitest's transform of the file, not on the bundle's map (imports, for one, are statements there and gone
        // from the bundle): the spawned servers' entry replaces it instead of adding those never-run statements.
        const spawnedFiles = new Set(spawned.files());
        coverageMap.filter((file) => !spawnedFiles.has(file) || !neverRun(coverageMap.fileCoverageFor(file)));
        coverageMap.merge(spawned);
        return coverageMap;
      }

      /** The spawned servers' coverage of src/ as an istanbul coverage map; the directory is removed afterwards. */
      async spawnedServerCoverage() {
        const root = this.ctx.config.root;
        const urls = new Map(BUNDLES.map((b) => [pathToFileURL(path.join(root, b)).href, b]));
        /** @type {Map<string, { result: object[] }>} merged coverage per bundle URL */
        const merged = new Map();
        /** @type {Map<string, object[]>} entries per bundle URL read since the last merge */
        const pending = new Map();
        // Merged in batches: each merge walks what is merged so far once, so merging file by file cost ~17 s for
        // the ~650 servers of a full run; batches keep that walk rare while holding only a batch of files' entries.
        const flush = (url) => {
          const entries = pending.get(url) ?? [];
          if (entries.length === 0) return;
          const soFar = merged.get(url);
          merged.set(url, mergeProcessCovs([...(soFar ? [soFar] : []), ...entries.map((e) => ({ result: [e] }))]));
          pending.set(url, []);
        };
        const started = performance.now();
        let files = 0;
        const dir = this.spawnedDir;
        try {
          for (const name of readdirSync(dir)) {
            if (!/^coverage-.*\.json$/.test(name)) continue;
            let parsed;
            try {
              parsed = JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
            } catch {
              continue; // a server killed while writing: nothing usable
            }
            files++;
            for (const entry of parsed.result ?? []) {
              if (!urls.has(entry.url)) continue;
              const entries = pending.get(entry.url) ?? [];
              entries.push(entry);
              pending.set(entry.url, entries);
              if (entries.length >= 64) flush(entry.url);
            }
          }
          for (const url of pending.keys()) flush(url);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
        const mergedAt = performance.now();
        const coverageMap = this.createCoverageMap();
        for (const [url, coverage] of merged) {
          const bundle = path.join(root, urls.get(url));
          const map = JSON.parse(readFileSync(`${bundle}.map`, 'utf8'));
          map.sources = map.sources.map((source) => new URL(source, url).href);
          const functions = coverage.result[0].functions;
          const converted = await this.remapCoverage(url, 0, { code: readFileSync(bundle, 'utf8'), map }, functions);
          const src = path.join(root, 'src') + path.sep;
          for (const [file, data] of Object.entries(converted)) {
            if (file.startsWith(src) && this.isIncluded(file)) coverageMap.addFileCoverage(data);
          }
        }
        this.ctx.logger.log(
          ` % spawned servers: ${files} coverage files merged in ${Math.round(mergedAt - started)} ms, ${merged.size} bundles converted in ${Math.round(performance.now() - mergedAt)} ms`,
        );
        return coverageMap;
      }
    }
    return new SpawnedServerCoverageProvider();
  },
};
