#!/usr/bin/env node
/**
 * `npm install` in a checkout (and npm's install from a git URL) runs this: it bundles dist/ so contributors and git
 * installs get a runnable server. It never fails the install: where it cannot build (no src/, no esbuild), it says
 * why on stderr and exits 0 — the published tarball already carries dist/ and never runs it.
 */
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
if (!existsSync(`${root}/src/cli.ts`)) process.exit(0);
const bundled = spawnSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });
if (bundled.status !== 0) {
  process.stderr.write('fs-tools: could not bundle dist/ (is esbuild installed?); run `npm run build` to see why\n');
}
process.exit(0);
