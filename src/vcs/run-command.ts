/**
 * The one subprocess runner (docs/security.md "What git may read"): Node's `spawn` without a shell, with a timeout, an
 * output cap, no stdin unless given, and an environment the caller shapes (nothing inherited: `env` is the whole
 * environment). Everything git, gh and glab run goes through here.
 */
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { onExit } from 'signal-exit';
import { processSlot } from '../process-slots.js';
import { startNative, startWithNode, type NativeSpawner, type StartedChild as Child } from './child-start.js';

/** The outcome of a finished command (a non-zero exit is an outcome, not an exception). */
export interface CommandResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** True when stdout or stderr exceeded `maxOutputBytes` (the command was stopped). */
  outputLimited: boolean;
  /** Set when the program could not be started at all (ENOENT: not installed). */
  spawnError: string | null;
  durationMs: number;
}

/** Options of `runCommand`. */
export interface RunOptions {
  cwd?: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  maxOutputBytes: number;
  input?: string;
  signal?: AbortSignal;
  /**
   * Open descriptors handed to the child as its fds 3, 4, … (git reads a verified index through
   * `/proc/self/fd/3`: the file opened and checked here, not whatever a path names by the time git opens it).
   */
  fds?: readonly number[];
  /**
   * Run in the server's own wall rather than git's narrower layer (`setChildWall`): only for the server's query of the
   * operator's global `safe.directory` (src/vcs/git-locate.ts), which reads the git configuration files that layer
   * leaves out (docs/security.md "The kernel wall"). Never for a git that reads a repository.
   */
  serverWall?: boolean;
}

/**
 * How a child is started under the kernel wall's narrower layer for it (docs/security.md "The kernel wall"): the
 * program to run instead (the exec helper) and the arguments that go before the original program and its arguments.
 * Null: the child runs in the server's own wall.
 */
export type ChildWall = (file: string, env: NodeJS.ProcessEnv) => { file: string; prefix: readonly string[] } | null;

/** How long a child stopped by SIGTERM (timeout, output cap, cancel) has before SIGKILL, ms. */
const FORCE_KILL_AFTER_MS = 5000;

/**
 * How children get their narrower layer, set at start-up (src/process-slots.ts); null: none. The children still
 * running, stopped when the server exits (a git, gh or glab never outlives the server that started it).
 */
const children = processSlot('vcs/run-command', () => ({
  childWall: null as ChildWall | null,
  spawner: null as NativeSpawner | null,
  live: new Set<Child>(),
  exitHook: false,
}));

/** Sets (once, at start-up, after the wall is raised) how children get their narrower layer; null: none. */
export function setChildWall(wall: ChildWall | null): void {
  children.childWall = wall;
}

/**
 * Sets (once, at start-up) the kernel wall addon's spawn (src/vcs/child-start.ts), which starts a child without
 * forking the server; null: Node's `spawn`. Programs named by an absolute path only (a bare name is Node's PATH
 * search).
 */
export function setChildSpawner(spawner: NativeSpawner | null): void {
  children.spawner = spawner;
}

/**
 * Runs `file` with `args` (never through a shell): Node's `spawn` directly (a library around it cost about 3 ms of CPU
 * and more latency per command: docs/benchmarks.md "git_status (2026-12-04, session 14)"). stdout and stderr are
 * decoded as UTF-8 chunk by chunk; more than `maxOutputBytes` bytes on either stops the command. A timeout, the cap or
 * `signal` stops it with SIGTERM, then SIGKILL after 5 s; a stopped command's call returns at its exit even if a
 * process it started still holds its output (an unstopped one returns when its output closes, or at its timeout).
 * Children still running when the server exits are stopped (signal-exit). Never throws for a failing command; throws
 * only for programming errors.
 */
export async function runCommand(file: string, args: readonly string[], options: RunOptions): Promise<CommandResult> {
  const started = performance.now();
  const layer = options.serverWall ? null : (children.childWall?.(file, options.env) ?? null);
  const outcome = await new Promise<Outcome>((resolve) =>
    startChild(layer ? layer.file : file, layer ? [...layer.prefix, file, ...args] : [...args], options, resolve),
  );
  return { ...outcome, durationMs: performance.now() - started };
}

/** A finished command, less its duration. */
type Outcome = Omit<CommandResult, 'durationMs'>;

/**
 * Sends SIGTERM to every command still running: the server is exiting (the exit hook set at the first command), so
 * no git, gh or glab outlives it. Their `runCommand` calls resolve with `exitCode: null` when they end.
 */
export function stopRunningCommands(): void {
  for (const child of children.live) child.kill('SIGTERM');
}

/** Starts `program` and calls `done` once, when it has exited and its output is closed (or it could not start). */
function startChild(program: string, argv: string[], options: RunOptions, done: (outcome: Outcome) => void): void {
  if (!children.exitHook) {
    children.exitHook = true;
    // signal-exit (what execa used): on `exit` and also when SIGINT, SIGHUP or SIGTERM ends the process by default,
    // where Node emits no `exit`. It re-raises a signal only when its listeners are the only ones, and the server's
    // own (src/fs/owned-temp.ts, the graceful shutdown) count it.
    onExit(() => stopRunningCommands());
  }
  const how = { cwd: options.cwd, env: options.env, withStdin: options.input !== undefined, fds: options.fds ?? [] };
  let child: Child;
  try {
    const spawner = path.isAbsolute(program) ? children.spawner : null;
    child = spawner ? startNative(spawner, program, argv, how) : startWithNode(program, argv, how);
  } catch (error) {
    done(notStarted(error));
    return;
  }
  const out = collector(options.maxOutputBytes, () => stop('limit'));
  const err = collector(options.maxOutputBytes, () => stop('limit'));
  let stopped: 'timeout' | 'limit' | 'cancel' | null = null;
  let forceKill: NodeJS.Timeout | null = null;
  let finished = false;
  function stop(why: 'timeout' | 'limit' | 'cancel'): void {
    if (stopped !== null || finished) return;
    stopped = why;
    if (child.exited()) {
      // Exited, but a process it started still holds its output: stop waiting for it (the call returns now).
      child.stdout.destroy();
      child.stderr.destroy();
      return;
    }
    child.kill('SIGTERM');
    forceKill = setTimeout(() => child.kill('SIGKILL'), FORCE_KILL_AFTER_MS);
    forceKill.unref();
  }
  const timer = setTimeout(() => stop('timeout'), options.timeoutMs);
  const onAbort = (): void => stop('cancel');
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) stop('cancel');
  children.live.add(child);
  const finish = (outcome: Outcome): void => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    if (forceKill) clearTimeout(forceKill);
    options.signal?.removeEventListener('abort', onAbort);
    children.live.delete(child);
    done(outcome);
  };
  child.stdout.on('data', out.add);
  child.stderr.on('data', err.add);
  if (options.input !== undefined && child.stdin) {
    // A child that exits without reading its input closes the pipe (EPIPE): that is its outcome, not an error here.
    child.stdin.on('error', () => {});
    child.stdin.end(options.input, 'utf8');
  }
  // Could not be started (ENOENT, EACCES: Node's path): no exit and no output follow.
  child.on('error', (error) => finish(notStarted(error)));
  // A stopped command's output is not waited for past its exit (a process it started may still hold the pipes).
  child.on('exit', () => {
    if (stopped === null) return;
    child.stdout.destroy();
    child.stderr.destroy();
  });
  child.on('close', (code) =>
    finish({
      exitCode: stopped === null ? code : null,
      stdout: out.text(),
      stderr: err.text(),
      timedOut: stopped === 'timeout',
      outputLimited: stopped === 'limit',
      spawnError: null,
    }),
  );
}

/** The outcome of a program that could not be started: its errno code (ENOENT: not installed). */
function notStarted(error: unknown): Outcome {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return {
    exitCode: null,
    stdout: '',
    stderr: '',
    timedOut: false,
    outputLimited: false,
    spawnError: typeof code === 'string' ? code : 'ESPAWN',
  };
}

/**
 * Collects a stream's bytes up to `cap`; calls `over` once when more arrive. Each chunk is decoded as UTF-8 as it
 * arrives (a sequence split across chunks is joined), so a large output is not decoded in one stretch of the event
 * loop at the end (60 MB in one toString held it for 300–430 ms). `text()`: what was kept.
 */
function collector(cap: number, over: () => void): { add: (chunk: Buffer) => void; text: () => string } {
  const decoder = new StringDecoder('utf8');
  const parts: string[] = [];
  let size = 0;
  let full = false;
  return {
    add: (chunk) => {
      if (full) return;
      if (size + chunk.length > cap) {
        full = true;
        parts.push(decoder.write(chunk.subarray(0, cap - size)));
        size = cap;
        over();
        return;
      }
      parts.push(decoder.write(chunk));
      size += chunk.length;
    },
    text: () => {
      const rest = decoder.end();
      if (rest !== '') parts.push(rest);
      return parts.length === 1 ? parts[0] : parts.join('');
    },
  };
}
