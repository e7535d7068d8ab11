/**
 * The one subprocess runner (docs/security.md "What git may read"): Node's `spawn` without a shell, with a timeout, an
 * output cap, no stdin unless given, and an environment the caller shapes (nothing inherited: `env` is the whole
 * environment). Everything git, gh and glab run goes through here. A child starts in one of two ways behind one
 * shape (`StartedChild`): Node's `spawn`, or the kernel wall addon's (native/fs_tools_spawn.c), which starts it with
 * posix_spawn — clone with CLONE_VM and CLONE_VFORK — instead of Node's fork of the whole server (docs/benchmarks.md
 * "git_status (2026-12-04, session 15)"; docs/security.md "How a child is started"). The addon's is used once the wall
 * has loaded it (src/cli/kernel-wall.ts); without it, Node's `spawn`.
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { onExit } from 'signal-exit';
import { processSlot } from '../process-slots.js';

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
  /** Bytes the command wrote to stdout (kept: at most the cap), before decoding; absent from results not run here. */
  stdoutBytes?: number;
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

/**
 * Node's `spawn`, taken at the first command rather than at every start: a server that never runs git, gh or glab does
 * not load `child_process` (docs/benchmarks.md "Server start-up"). A built-in module, not a file: the program is a
 * script without an import callback, so it asks the process.
 */
const childProcess = (): typeof import('node:child_process') => process.getBuiltinModule('node:child_process');

/** How long a child stopped by SIGTERM (timeout, output cap, cancel) has before SIGKILL, ms. */
const FORCE_KILL_AFTER_MS = 5000;

/**
 * How children get their narrower layer, set at start-up (src/process-slots.ts); null: none. The children still
 * running, stopped when the server exits (a git, gh or glab never outlives the server that started it).
 */
const children = processSlot('vcs/run-command', () => ({
  childWall: null as ChildWall | null,
  spawner: null as NativeSpawner | null,
  live: new Set<StartedChild>(),
  exitHook: false,
}));

/** Sets (once, at start-up, after the wall is raised) how children get their narrower layer; null: none. */
export function setChildWall(wall: ChildWall | null): void {
  children.childWall = wall;
}

/**
 * Sets (once, at start-up) the kernel wall addon's spawn (`startNative` below), which starts a child without
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
  let child: StartedChild;
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
      stdoutBytes: out.bytes(),
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
function collector(
  cap: number,
  over: () => void,
): { add: (chunk: Buffer) => void; text: () => string; bytes: () => number } {
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
    bytes: () => size,
  };
}

/** The addon's spawn functions (native/fs_tools_spawn.c). */
export interface NativeSpawner {
  /** [pid, stdinFd (-1: none), stdoutFd, stderrFd], or the errno of a start that failed (nothing left running). */
  spawn(
    file: string,
    argv: readonly string[],
    envp: readonly string[],
    cwd: string | null,
    withStdin: boolean,
    fds: readonly number[],
  ): number | [number, number, number, number];
  /** Calls back once the child has exited, after reaping it: exit code, or the number of the signal that ended it. */
  waitExit(pid: number, callback: (code: number | null, signal: number | null) => void): void;
  /** kill(2) of a child whose exit has not been called back; 0 or the errno. */
  signal(pid: number, signo: number): number;
}

/** A started child as the runner uses it. */
export interface StartedChild {
  readonly stdin: Writable | null;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** True once the child has exited (its output may still be open: a process it started may hold it). */
  exited(): boolean;
  /** Sends a signal unless the child has exited. */
  kill(signal: 'SIGTERM' | 'SIGKILL'): void;
  /** `exit`: the child exited; `close`: exited and stdout and stderr closed (code null when a signal ended it). */
  on(event: 'exit', listener: () => void): void;
  on(event: 'close', listener: (code: number | null) => void): void;
  /** Node's path only: the program could not be started (then neither `exit` nor `close` follows). */
  on(event: 'error', listener: (error: Error) => void): void;
}

/** What the child gets: stdin as a pipe when `input` is given, `fds` as its fds 3, 4, … */
export interface StartOptions {
  cwd?: string;
  env: NodeJS.ProcessEnv;
  withStdin: boolean;
  fds: readonly number[];
}

/** Starts `program` with Node's `spawn` (throws what `spawn` throws; start errors come as `error`). */
export function startWithNode(program: string, argv: readonly string[], options: StartOptions): StartedChild {
  const child: ChildProcess = childProcess().spawn(program, [...argv], {
    cwd: options.cwd,
    env: options.env,
    shell: false,
    stdio: [options.withStdin ? 'pipe' : 'ignore', 'pipe', 'pipe', ...options.fds],
  });
  return {
    stdin: child.stdin,
    stdout: child.stdout!,
    stderr: child.stderr!,
    exited: () => child.exitCode !== null || child.signalCode !== null,
    kill: (signal) => void child.kill(signal),
    on: (event: string, listener: (...args: never[]) => void) => {
      if (event === 'error') {
        // Could not be started (ENOENT, EACCES): no exit and no output follow.
        child.on('error', (error) => child.pid === undefined && (listener as (e: Error) => void)(error));
      } else child.on(event, listener as (...args: unknown[]) => void);
    },
  };
}

/** An error with an errno code, as Node's `spawn` reports one (`code` only: no path, no message content). */
function codeError(code: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(code);
  error.code = code;
  return error;
}

/** The name of an errno number (`ENOENT`), or `ESPAWN`. */
function errnoName(errno: number): string {
  for (const [name, value] of Object.entries(os.constants.errno)) if (value === errno) return name;
  return 'ESPAWN';
}

/**
 * Starts `program` (an absolute path) through the addon. Throws an error whose `code` is the errno name when it could
 * not be started (`ERR_INVALID_ARG_VALUE` for a NUL byte in any string, as Node's `spawn`).
 */
export function startNative(
  spawner: NativeSpawner,
  program: string,
  argv: readonly string[],
  options: StartOptions,
): StartedChild {
  const envp: string[] = [];
  for (const [key, value] of Object.entries(options.env)) if (value !== undefined) envp.push(`${key}=${value}`);
  const strings = [program, ...argv, ...envp, options.cwd ?? ''];
  if (strings.some((s) => s.includes('\0'))) throw codeError('ERR_INVALID_ARG_VALUE');
  const started = spawner.spawn(program, [program, ...argv], envp, options.cwd ?? null, options.withStdin, [
    ...options.fds,
  ]);
  if (typeof started === 'number') throw codeError(errnoName(started));
  const [pid, inFd, outFd, errFd] = started;
  return nativeChild(spawner, pid, inFd, outFd, errFd);
}

/** The runner's view of a child the addon started: its sockets wrapped as streams, its exit from the addon's waiter. */
function nativeChild(spawner: NativeSpawner, pid: number, inFd: number, outFd: number, errFd: number): StartedChild {
  let stdout: net.Socket | null = null;
  let stderr: net.Socket | null = null;
  let stdin: net.Socket | null = null;
  try {
    stdout = new net.Socket({ fd: outFd, readable: true, writable: false });
    stderr = new net.Socket({ fd: errFd, readable: true, writable: false });
    if (inFd >= 0) stdin = new net.Socket({ fd: inFd, readable: false, writable: true });
  } catch (error) {
    // Not expected (the descriptors are fresh sockets): stop the child, close what is not wrapped, reap it.
    for (const [socket, fd] of [
      [stdout, outFd],
      [stderr, errFd],
      [stdin, inFd],
    ] as const) {
      if (socket) socket.destroy();
      else if (fd >= 0) closeSync(fd);
    }
    spawner.signal(pid, os.constants.signals.SIGKILL);
    try {
      spawner.waitExit(pid, () => {});
    } catch {
      // No waiter: the addon has stopped and reaped the child itself.
    }
    throw error;
  }
  const out = stdout;
  const err = stderr;
  let exited = false;
  let code: number | null = null;
  let open = 2;
  const onExit: Array<() => void> = [];
  const onClose: Array<(code: number | null) => void> = [];
  const maybeClose = (): void => {
    if (exited && open === 0) for (const listener of onClose) listener(code);
  };
  for (const stream of [out, err]) {
    stream.on('close', () => {
      open--;
      maybeClose();
    });
  }
  try {
    spawner.waitExit(pid, (exitCode) => {
      exited = true;
      code = exitCode;
      // As Node's `spawn` does: input not taken by now is dropped, even if a process the child started holds its
      // stdin (else the socket and its unwritten input stay in the server until that process ends).
      stdin?.destroy();
      for (const listener of onExit) listener();
      maybeClose();
    });
  } catch (error) {
    // No waiter could be started (no thread): the addon has stopped and reaped the child; its sockets go too.
    for (const stream of [stdin, out, err]) stream?.destroy();
    throw error;
  }
  return {
    stdin,
    stdout: out,
    stderr: err,
    exited: () => exited,
    kill: (signal) => {
      // Until its exit is called back the child is not reaped, so its pid is still its own.
      if (!exited) spawner.signal(pid, os.constants.signals[signal]);
    },
    on: (event: string, listener: (...args: never[]) => void) => {
      if (event === 'exit') onExit.push(listener);
      else if (event === 'close') onClose.push(listener as (code: number | null) => void);
    },
  };
}

/** The addon's spawn functions when it has them (an addon built before them has not: Node's `spawn` then). */
export function nativeSpawner(addon: object): NativeSpawner | null {
  const candidate = addon as Partial<NativeSpawner>;
  return typeof candidate.spawn === 'function' &&
    typeof candidate.waitExit === 'function' &&
    typeof candidate.signal === 'function'
    ? (candidate as NativeSpawner)
    : null;
}
