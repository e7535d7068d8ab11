import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Issue #20: the in-process test seams exist only in this build of src/ (src/fs/atomic-write.ts); the production
  // bundle defines the constant as false (scripts/bundle.mjs).
  define: { FS_TOOLS_TEST_SEAMS: 'true', FS_TOOLS_BROKEN_CONTAINMENT: 'false' },
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
    // Per-file thresholds: every file in a guarded folder must meet its folder's bar, and the files named below their
    // own. src/errors and src/patch: measured 2026-12-01 with test/errors and test/patch alone, set slightly below.
    // src/policy and src/fs: measured 2026-12-01 with test/fs, test/policy, test/patch, test/tools, test/errors alone
    // (a subset of `npm test`, so the full suite meets them too), each set 1 point below the floor of the measured
    // percentage. A folder's bar is its lowest file's; it is low in src/policy because authorize.ts and
    // builtin-guards.ts are exercised mostly by the in-process attack tests (containment fuzzing), not in that subset.
    // Files other branches are changing (search, listing, walk, glob, line matching, history) have the folder's bar
    // only. Raise them with tests; never lower them to pass.
    coverage: {
      // vitest's v8 provider plus the spawned servers' coverage (NODE_V8_COVERAGE, mapped through dist/cli.js.map).
      provider: 'custom',
      customProviderModule: './test/helpers/spawned-coverage.mjs',
      include: ['src/**/*.ts'],
      // Worker-thread entry points run inside worker threads (from dist/), which v8 coverage here does not follow.
      exclude: ['src/**/*-worker.ts'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: {
        perFile: true,
        'src/errors/**': { lines: 80, statements: 77, functions: 85, branches: 55 },
        'src/patch/**': { lines: 85, statements: 77, functions: 71, branches: 65 },
        'src/policy/**': { lines: 30, statements: 25, functions: 36, branches: 24 },
        'src/policy/authorize.ts': { lines: 30, statements: 32, functions: 43, branches: 34 },
        'src/policy/builtin-guards.ts': { lines: 36, statements: 25, functions: 36, branches: 24 },
        'src/policy/containment.ts': { lines: 99, statements: 99, functions: 99, branches: 91 },
        'src/policy/file-policy.ts': { lines: 90, statements: 91, functions: 99, branches: 84 },
        'src/policy/gates.ts': { lines: 99, statements: 99, functions: 99, branches: 99 },
        'src/policy/git-access.ts': { lines: 99, statements: 99, functions: 99, branches: 99 },
        'src/policy/near-paths.ts': { lines: 99, statements: 92, functions: 93, branches: 83 },
        'src/policy/occ.ts': { lines: 99, statements: 99, functions: 99, branches: 89 },
        'src/policy/resolve-path.ts': { lines: 86, statements: 82, functions: 75, branches: 79 },
        'src/policy/roots.ts': { lines: 94, statements: 94, functions: 99, branches: 87 },
        'src/policy/secrets.ts': { lines: 96, statements: 97, functions: 99, branches: 94 },
        'src/policy/stale-git.ts': { lines: 92, statements: 89, functions: 99, branches: 80 },
        'src/fs/**': { lines: 71, statements: 68, functions: 51, branches: 56 },
        'src/fs/atomic-write.ts': { lines: 94, statements: 85, functions: 82, branches: 79 },
        'src/fs/content-cache.ts': { lines: 95, statements: 96, functions: 87, branches: 99 },
        'src/fs/hash.ts': { lines: 99, statements: 99, functions: 99, branches: 99 },
        'src/fs/journal.ts': { lines: 89, statements: 83, functions: 87, branches: 56 },
        'src/fs/media-type.ts': { lines: 99, statements: 99, functions: 99, branches: 99 },
        'src/fs/open-file.ts': { lines: 90, statements: 87, functions: 69, branches: 59 },
        'src/fs/path-lock.ts': { lines: 75, statements: 74, functions: 86, branches: 58 },
        'src/fs/path-within.ts': { lines: 99, statements: 92, functions: 99, branches: 94 },
        'src/fs/process-identity.ts': { lines: 96, statements: 85, functions: 99, branches: 65 },
        'src/fs/read-current.ts': { lines: 84, statements: 85, functions: 99, branches: 80 },
        'src/fs/read-range.ts': { lines: 94, statements: 92, functions: 60, branches: 92 },
        'src/fs/text.ts': { lines: 99, statements: 99, functions: 99, branches: 99 },
        'src/fs/tree-ops.ts': { lines: 88, statements: 82, functions: 99, branches: 70 },
        'src/fs/verified-dir.ts': { lines: 80, statements: 73, functions: 76, branches: 59 },
      },
    },
  },
});
