/**
 * `npm test`'s static checks, run at the same time (test/helpers/npm-test.mjs starts this beside vitest, at nice 19):
 * `node test/helpers/static-checks.mjs typecheck lint format:check` runs `npm run <name>` for each name concurrently, prints each one's output whole when it ends (never interleaved),
 * and exits 1 if any failed (after all have ended), 0 otherwise.
 *
 * Each check is one single-threaded process (tsc ~21 s of CPU, eslint ~48 s with its type-aware rules, prettier
 * ~18 s on these machines); one after another they took ~65 s of `npm test` on 2 cores, side by side about as long as
 * eslint alone, and beside vitest at the lowest priority they mostly use the CPU the suite leaves idle.
 *
 * `typecheck` and `lint` asked together run as one process, test/helpers/typed-checks.mjs: the same diagnostics and
 * report, with eslint's type-aware rules reading tsc's program instead of building and checking their own (about a
 * quarter less CPU than the two apart; docs/development.md "Where `npm test`'s time goes"). Its output is printed under
 * the name `typecheck+lint`.
 */
import { spawn } from 'node:child_process';

const asked = process.argv.slice(2);
if (asked.length === 0) {
  console.error('usage: node test/helpers/static-checks.mjs <npm script>...');
  process.exit(2);
}
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const together = asked.includes('typecheck') && asked.includes('lint');
/** Each check to run: its name and its command. */
const checks = asked
  .filter((name) => !together || (name !== 'typecheck' && name !== 'lint'))
  .map((name) => ({ name, command: [npm, 'run', name] }));
if (together) checks.unshift({ name: 'typecheck+lint', command: [process.execPath, 'test/helpers/typed-checks.mjs'] });
const root = new URL('../..', import.meta.url);
const started = Date.now();
const results = await Promise.all(
  checks.map(
    ({ name, command }) =>
      new Promise((resolve) => {
        const child = spawn(command[0], command.slice(1), { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
        const chunks = [];
        child.stdout.on('data', (d) => chunks.push(d));
        child.stderr.on('data', (d) => chunks.push(d));
        child.on('error', (error) => resolve({ name, code: 1, output: `${String(error)}\n` }));
        child.on('close', (code, signal) => {
          const output = Buffer.concat(chunks).toString();
          process.stdout.write(
            `> ${name}: ${code === 0 ? 'passed' : `FAILED (${signal ?? code})`} in ${Math.round((Date.now() - started) / 1000)} s\n${output}`,
          );
          resolve({ name, code: code ?? 1, output });
        });
      }),
  ),
);
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
