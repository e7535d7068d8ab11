/**
 * The worker threads' code, held in memory (docs/security.md "The server's own code and token files"). The server
 * never starts a worker from a file: a package installed inside a root (`npm i -D fs-tools-mcp` in the project, or
 * this checkout served) would otherwise let the agent rewrite a worker script with `write_file`, and the next search
 * would run it inside the server. scripts/bundle.mjs bundles each src/fs/*-worker.ts into one self-contained
 * CommonJS script (scripts/worker-bundles.mjs) and embeds them in dist/cli.js as the build constant
 * `FS_TOOLS_WORKER_CODE`; `startWorkerFromCode` starts one with `eval: true`.
 *
 * Run from src/ (vitest) the constant is not defined: `embeddedWorkerCode` returns null, content search then reads on
 * the main thread and a bounded regular expression fails (the pools say so); unit tests pass code built from src/ by
 * test/helpers/worker-code.ts.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** The worker threads (their file names in src/fs without `.ts`). */
export type WorkerName = 'search-reader-worker';

/** Set by scripts/bundle.mjs: each worker's bundled code by name. Undefined when running from src/. */
declare const FS_TOOLS_WORKER_CODE: Readonly<Record<string, string>> | undefined;

/**
 * The code of worker `name` embedded in this build, or null in a build without it (src/ run by vitest).
 * @param table the embedded code by name (default: this build's `FS_TOOLS_WORKER_CODE`)
 */
export function embeddedWorkerCode(
  name: WorkerName,
  table: Readonly<Record<string, string>> | undefined = typeof FS_TOOLS_WORKER_CODE === 'undefined'
    ? undefined
    : FS_TOOLS_WORKER_CODE,
): string | null {
  return table?.[name] ?? null;
}

/**
 * Starts a worker thread running `code` (a CommonJS script that requires only Node built-ins); no file is read.
 * @throws what `new Worker` throws synchronously (resource limits)
 */
export function startWorkerFromCode(code: string, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  return new Worker(code, { ...options, eval: true });
}
