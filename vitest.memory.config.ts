import { defineConfig } from 'vitest/config';

/** `npm run test:memory`: the issue #14 memory test (long; not part of `npm test`). */
export default defineConfig({
  test: {
    include: ['test/memory/**/*.memtest.ts'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    pool: 'forks',
    maxWorkers: 1,
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
