import { defineConfig } from 'vitest/config';

/**
 * The long suites: not part of `npm test` (a developer's loop), each run by its own script in .ci/run at the count
 * that proves its property (docs/development.md "Test suites"):
 * - concurrent-sessions: `npm run test:concurrency` (500 rounds per mix);
 * - verified-access-race: `npm run test:race` (500 calls per batch);
 * - kill-leftovers: `npm run test:kill` (100 runs per tool);
 * - patch-bench-sample: `npm run test:patch-sample` (the real-commit patch sample through one real session).
 * No coverage here: the thresholds are `npm test`'s.
 */
export const LONG_SUITES = [
  'test/attacks/concurrent-sessions.test.ts',
  'test/attacks/verified-access-race.test.ts',
  'test/attacks/kill-leftovers.test.ts',
  'test/e2e/patch-bench-sample.test.ts',
];

// As in vitest.config.ts: no start-up parse of the machine's CA bundle in the thousands of processes these suites
// start; nothing here reaches past 127.0.0.1.
delete process.env.NODE_EXTRA_CA_CERTS;

export default defineConfig({
  define: { FS_TOOLS_TEST_SEAMS: 'true', FS_TOOLS_BROKEN_CONTAINMENT: 'false' },
  test: {
    include: LONG_SUITES,
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
