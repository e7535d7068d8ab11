import { defineConfig } from 'vitest/config';

export default defineConfig({
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
  },
});
