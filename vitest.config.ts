import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Issue #20: the in-process test seams exist only in this build of src/ (src/fs/atomic-write.ts); the production
  // bundle defines the constant as false (scripts/bundle.mjs).
  define: { FS_TOOLS_TEST_SEAMS: 'true' },
  test: {
    include: ['test/**/*.test.ts'],
    // The install suite (a local registry, npx, npm install -g) is `npm run test:install`.
    exclude: ['test/install/**', '**/node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // e2e tests spawn server processes; 2 cores.
    maxWorkers: 2,
    globalSetup: ['test/helpers/global-setup.ts'],
    // Issue #20: v8 coverage of the in-process code (e2e tests spawn dist/cli.js, which coverage does not see).
    // Per-file thresholds: every file in a guarded folder must meet them. Measured 2026-12-01 with the unit tests of
    // those folders alone (test/errors, test/patch: a subset of `npm test`, so the full suite meets them too) and set
    // slightly below. Raise them with tests; never lower them to pass.
    // src/policy and src/fs are not guarded yet: with only their own unit tests, gates.ts, occ.ts, git-access.ts,
    // stale-git.ts, open-file.ts and tree-ops.ts are exercised only through tools/e2e tests; they need focused unit
    // tests before a per-file bar can be set there.
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      // Worker-thread entry points run inside worker threads (from dist/), which v8 coverage here does not follow.
      exclude: ['src/**/*-worker.ts'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: {
        perFile: true,
        'src/errors/**': { lines: 80, statements: 77, functions: 85, branches: 55 },
        'src/patch/**': { lines: 85, statements: 77, functions: 71, branches: 65 },
      },
    },
  },
});
