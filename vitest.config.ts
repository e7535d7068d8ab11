import { defineConfig } from 'vitest/config';
import { LONG_SUITES } from './vitest.long.config.js';
import SlowFirstSequencer from './test/helpers/slow-first-sequencer.js';

/** What no project here runs: the install suite (`npm run test:install`) and the long suites (vitest.long.config.ts). */
const EXCLUDED = ['test/install/**', '**/node_modules/**', ...LONG_SUITES];

/**
 * The files that need a fresh module state (a process of their own, vitest's default): they count or reset
 * process-wide state (process slots, the lock site, the native addon's load, the journal's recovery, the git view's
 * caches) and fail when another file ran in the same worker first. Every other file runs in the `shared` project,
 * whose two workers each run many files one after another without reloading modules (docs/development.md "Where
 * `npm test`'s time goes"). A new test file that fails only after others in one worker belongs here.
 */
const FRESH_MODULE_STATE = [
  'test/process-slots.test.ts',
  'test/attacks/replace-in-files-count-races.test.ts',
  'test/fs/native-fallback.test.ts',
  'test/fs/path-lock.test.ts',
  'test/fs/history-shared-prune.test.ts', // mocks node:fs/promises for src/fs/history.ts
  'test/patch/transaction.test.ts',
  'test/vcs/git-view-reuse.test.ts',
  'test/vcs/git-view.test.ts',
];

// Every node process this suite starts (~700 servers, CLI runs, helpers) would parse the CA bundle that
// NODE_EXTRA_CA_CERTS names at start-up: ~70 ms of CPU each on these machines, whose environment sets it to the
// system bundle. Nothing here reaches past 127.0.0.1 (the forge tests give gh their own CA through SSL_CERT_FILE), so
// the suite runs without it (docs/development.md "Where `npm test`'s time goes"). vitest's workers are forked after
// this runs and inherit the environment without it.
delete process.env.NODE_EXTRA_CA_CERTS;

export default defineConfig({
  // Issue #20: the in-process test seams exist only in this build of src/ (src/fs/atomic-write.ts); the production
  // bundle defines the constant as false (scripts/bundle.mjs).
  define: { FS_TOOLS_TEST_SEAMS: 'true', FS_TOOLS_BROKEN_CONTAINMENT: 'false' },
  test: {
    exclude: EXCLUDED,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // e2e tests spawn server processes; 2 cores.
    maxWorkers: 2,
    globalSetup: ['test/helpers/global-setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          isolate: false,
          include: ['test/**/*.test.ts'],
          exclude: [...EXCLUDED, ...FRESH_MODULE_STATE],
        },
      },
      { extends: true, test: { name: 'fresh', include: FRESH_MODULE_STATE } },
    ],
    sequence: { sequencer: SlowFirstSequencer },
    // Large byte arrays compare with Buffer#equals instead of vitest's per-element walk (same verdicts); per-file CPU
    // accounting when FS_TOOLS_TEST_CPU_LOG is set (test/helpers/cpu-per-file.ts).
    setupFiles: ['test/helpers/byte-equality.ts', 'test/helpers/cpu-per-file.ts'],
    // `npm run test:coverage` (not `npm test`: docs/development.md "Coverage"): v8 coverage of the in-process code and of
    // the spawned servers (e2e tests spawn dist/cli.js).
    // Per-file thresholds: every file in a guarded folder must meet its folder's bar, and the files named below their
    // own. src/errors and src/patch: measured 2026-12-01 with test/errors and test/patch alone, set slightly below.
    // src/policy and src/fs: measured 2026-12-01 with test/fs, test/policy, test/patch, test/tools, test/errors alone
    // (a subset of `npm test`, so the full suite meets them too), each set 1 point below the floor of the measured
    // percentage. A folder's bar is its lowest file's; it is low in src/policy because authorize.ts and
    // builtin-guards.ts are exercised mostly by the in-process attack tests (containment fuzzing), not in that subset.
    // Files other branches are changing (search, listing, walk, glob, line matching, history) have the folder's bar
    // only. Raise them with tests; never lower them to pass.
    // src/server, src/tools and src/vcs count the spawned servers too (test/helpers/spawned-coverage.mjs): measured
    // 2026-12-03 from the first 233 of the 619 servers of a full run, spawned coverage alone (a subset of what the full
    // run counts); a folder's bar 3 points below its lowest file, a file's own bar 5 points below it (at most 95),
    // written only where it is well above the folder's. Files main changed after that measurement (the merge mode
    // of the mutations, the tool reference, the server's start-up) have their folder's bar only until measured again.
    coverage: {
      // vitest's v8 provider plus the spawned servers' coverage (NODE_V8_COVERAGE, mapped through dist/main.js.map).
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
        'src/server/**': { lines: 45, statements: 44, functions: 35, branches: 22 },
        'src/server/call-tool.ts': { lines: 83, statements: 79, functions: 86, branches: 81 },
        'src/server/process-state.ts': { lines: 70, statements: 65, functions: 61, branches: 45 },
        'src/server/shutdown.ts': { lines: 60, statements: 57, functions: 65, branches: 61 },
        'src/server/stdio-transport.ts': { lines: 83, statements: 76, functions: 71, branches: 67 },
        'src/server/validate-arguments.ts': { lines: 82, statements: 76, functions: 80, branches: 60 },
        'src/tools/**': { lines: 36, statements: 32, functions: 37, branches: 13 },
        'src/tools/create-directory.ts': { lines: 87, statements: 87, functions: 95, branches: 86 },
        'src/tools/cursor.ts': { lines: 82, statements: 77, functions: 95, branches: 69 },
        'src/tools/delete-path.ts': { lines: 92, statements: 91, functions: 95, branches: 74 },
        'src/tools/git-diff.ts': { lines: 93, statements: 91, functions: 95, branches: 83 },
        'src/tools/git-status.ts': { lines: 95, statements: 91, functions: 95, branches: 79 },
        'src/tools/github-issues.ts': { lines: 95, statements: 95, functions: 95, branches: 95 },
        'src/tools/gitlab-issues.ts': { lines: 95, statements: 95, functions: 95, branches: 95 },
        'src/tools/heavy-calls.ts': { lines: 36, statements: 37, functions: 37, branches: 21 },
        'src/tools/issue-hostname.ts': { lines: 75, statements: 75, functions: 95, branches: 45 },
        'src/tools/issue-pages.ts': { lines: 90, statements: 88, functions: 95, branches: 78 },
        'src/tools/issue-render.ts': { lines: 81, statements: 77, functions: 84, branches: 53 },
        'src/tools/issue-rules.ts': { lines: 81, statements: 83, functions: 95, branches: 84 },
        'src/tools/issue-schema.ts': { lines: 95, statements: 95, functions: 95, branches: 95 },
        'src/tools/issue-target.ts': { lines: 91, statements: 92, functions: 95, branches: 83 },
        'src/tools/issue-tool.ts': { lines: 91, statements: 88, functions: 95, branches: 78 },
        'src/tools/issue-untrusted.ts': { lines: 81, statements: 77, functions: 84, branches: 53 },
        'src/tools/list-directory.ts': { lines: 90, statements: 86, functions: 95, branches: 81 },
        'src/tools/read-file.ts': { lines: 86, statements: 86, functions: 76, branches: 89 },
        'src/tools/read-files.ts': { lines: 83, statements: 84, functions: 70, branches: 66 },
        'src/tools/read-media.ts': { lines: 84, statements: 84, functions: 61, branches: 70 },
        'src/tools/registry.ts': { lines: 95, statements: 95, functions: 95, branches: 95 },
        'src/tools/response-budget.ts': { lines: 85, statements: 82, functions: 95, branches: 66 },
        'src/tools/search-files.ts': { lines: 90, statements: 86, functions: 85, branches: 85 },
        'src/tools/search-match.ts': { lines: 36, statements: 32, functions: 50, branches: 13 },
        'src/tools/search-page.ts': { lines: 86, statements: 86, functions: 90, branches: 81 },
        'src/tools/search-walk.ts': { lines: 90, statements: 87, functions: 95, branches: 70 },
        'src/tools/stat.ts': { lines: 95, statements: 91, functions: 95, branches: 85 },
        'src/tools/text-safe.ts': { lines: 82, statements: 85, functions: 95, branches: 61 },
        // src/mutation holds what src/tools/file-mutation.ts held when src/tools was measured: the tools' bar.
        'src/mutation/**': { lines: 36, statements: 32, functions: 37, branches: 13 },
        'src/tools/undo.ts': { lines: 91, statements: 89, functions: 93, branches: 79 },
        'src/tools/write-file.ts': { lines: 95, statements: 95, functions: 95, branches: 91 },
        'src/vcs/**': { lines: 11, statements: 12, functions: 47, branches: 12 },
        'src/vcs/diff-output.ts': { lines: 84, statements: 86, functions: 78, branches: 74 },
        'src/vcs/egress-guard.ts': { lines: 72, statements: 67, functions: 78, branches: 51 },
        'src/vcs/find-cli.ts': { lines: 90, statements: 86, functions: 70, branches: 58 },
        'src/vcs/forge-errors.ts': { lines: 86, statements: 78, functions: 95, branches: 67 },
        'src/vcs/forge-hosts.ts': { lines: 93, statements: 86, functions: 81, branches: 81 },
        'src/vcs/forge-response.ts': { lines: 91, statements: 88, functions: 95, branches: 72 },
        'src/vcs/git-config.ts': { lines: 84, statements: 75, functions: 75, branches: 71 },
        'src/vcs/git-index.ts': { lines: 74, statements: 63, functions: 95, branches: 49 },
        'src/vcs/git.ts': { lines: 55, statements: 53, functions: 81, branches: 36 },
        'src/vcs/github-classify.ts': { lines: 91, statements: 90, functions: 91, branches: 84 },
        'src/vcs/github-request.ts': { lines: 92, statements: 92, functions: 95, branches: 84 },
        'src/vcs/github-target.ts': { lines: 95, statements: 95, functions: 95, branches: 89 },
        'src/vcs/github-token.ts': { lines: 84, statements: 87, functions: 95, branches: 88 },
        'src/vcs/github.ts': { lines: 95, statements: 95, functions: 95, branches: 79 },
        'src/vcs/gitlab-classify.ts': { lines: 69, statements: 66, functions: 55, branches: 60 },
        'src/vcs/gitlab-https.ts': { lines: 95, statements: 91, functions: 78, branches: 80 },
        'src/vcs/gitlab-instance.ts': { lines: 78, statements: 67, functions: 80, branches: 57 },
        'src/vcs/gitlab-token.ts': { lines: 82, statements: 83, functions: 95, branches: 52 },
        'src/vcs/gitlab.ts': { lines: 95, statements: 93, functions: 95, branches: 76 },
        'src/vcs/host-allow.ts': { lines: 79, statements: 78, functions: 95, branches: 72 },
        'src/vcs/issues.ts': { lines: 95, statements: 95, functions: 95, branches: 78 },
        'src/vcs/porcelain-v2.ts': { lines: 93, statements: 93, functions: 95, branches: 80 },
        'src/vcs/remotes.ts': { lines: 87, statements: 75, functions: 95, branches: 69 },
        'src/vcs/run-command.ts': { lines: 95, statements: 95, functions: 95, branches: 86 },
        'src/vcs/slicer.ts': { lines: 95, statements: 95, functions: 95, branches: 95 },
      },
    },
  },
});
