/**
 * Builds dist/ once before the suite (like the SDK's ensureBuilt): e2e tests spawn dist/cli.js, the real server.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  execFileSync(process.execPath, [fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url)), '-p', 'tsconfig.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}
