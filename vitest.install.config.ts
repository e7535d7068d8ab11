import { defineConfig } from 'vitest/config';

/**
 * `npm run test:install`: the end-to-end install suite (publish the packed tarball to a local Verdaccio registry on
 * 127.0.0.1, then `npx` and `npm install -g` from an empty directory with an empty cache). Separate from `npm test`
 * because it installs Verdaccio from the npm registry on its first run; `.ci/run` runs it.
 */
export default defineConfig({
  test: {
    include: ['test/install/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: 'forks',
    maxWorkers: 1,
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
