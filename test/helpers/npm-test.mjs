/**
 * `npm test`: the vitest suite and the static checks (test/helpers/static-checks.mjs: tsc, eslint, prettier) at the
 * same time, the static checks at the lowest CPU priority (docs/development.md "Where `npm test`'s time goes").
 *
 * Usage: `node test/helpers/npm-test.mjs [VITEST_ARGS...]`; the arguments go to `vitest run` (`npm test --
 * test/e2e` runs that folder, still with every static check).
 *
 * Why side by side and niced: the suite keeps the 2 cores of these machines busy only ~80 % of the time (its tests
 * wait on servers, child processes, timers and disks), and the static checks (~90 s of CPU) fill most of the rest. At
 * nice 19 they get a core only when no test process wants it (Linux's scheduler gives a nice-19 task ~1.5 % of a
 * nice-0 task's share), so the suite's event-loop bounds see about the machine they saw before; run before the
 * suite, the checks added ~48 s of wall time to every `npm test`. vitest's output streams as it runs; the checks'
 * output is printed after vitest ends, whole. Exit status: vitest's when it failed, else 1 when a check failed, else 0.
 */
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const started = Date.now();
const seconds = () => Math.round((Date.now() - started) / 1000);

/**
 * Runs `node ARGS` in the project root; resolves with its exit status, the time it ended (seconds since start) and,
 * when `capture`, its output.
 */
function runNode(args, { capture, nice }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    // Lowered before the child has started anything (node takes ~0.1 s to boot), so the npm, tsc, eslint and
    // prettier processes it starts inherit the priority.
    if (nice && child.pid !== undefined) {
      try {
        setPriority(child.pid, 19);
      } catch {
        // Not permitted here: the checks run at normal priority (the same verdicts, a slower suite).
      }
    }
    const chunks = [];
    child.stdout?.on('data', (d) => chunks.push(d));
    child.stderr?.on('data', (d) => chunks.push(d));
    child.on('error', (error) => resolve({ code: 1, output: `${String(error)}\n`, at: seconds() }));
    child.on('close', (code, signal) =>
      resolve({ code: code ?? 1, signal, output: Buffer.concat(chunks).toString(), at: seconds() }),
    );
  });
}

const checks = runNode(['test/helpers/static-checks.mjs', 'typecheck', 'lint', 'format:check'], {
  capture: true,
  nice: true,
});
const vitest = await runNode(['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)], {
  capture: false,
  nice: false,
});
const staticChecks = await checks;
const verdict = (r) => (r.code === 0 ? 'passed' : `FAILED (${r.signal ?? `exit ${r.code}`})`);
process.stdout.write(
  `\n> static checks (run beside vitest at nice 19): ${verdict(staticChecks)}\n${staticChecks.output}`,
);
process.stdout.write(
  `> npm test: vitest ${verdict(vitest)} at ${vitest.at} s, static checks ${verdict(staticChecks)} at ${staticChecks.at} s; ${seconds()} s in all\n`,
);
process.exit(vitest.code !== 0 ? vitest.code : staticChecks.code !== 0 ? 1 : 0);
