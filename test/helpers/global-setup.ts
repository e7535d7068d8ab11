/**
 * Builds dist/ (and the seams test build, dist-seams/) once before the suite (like the SDK's ensureBuilt): e2e tests spawn dist/cli.js, the real server, as
 * an agent would run it. Type checking is a separate step of `npm test` (tsc), so this only bundles (esbuild).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  // dist/, then the test build with the seams (dist-seams/cli.js: test/helpers/server.ts SEAMS_CLI), which copies the
  // native addons from dist/: one process, so the worker threads' code and esbuild's service are made once for both.
  execFileSync(process.execPath, ['scripts/bundle.mjs', '--and-test-seams'], { cwd: root, stdio: 'inherit' });
}
