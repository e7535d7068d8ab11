/**
 * The two ways the one subprocess runner (src/vcs/run-command.ts) starts a child, behind one shape: Node's `spawn`,
 * and the kernel wall's addon (native/fs_tools_spawn.c), which starts it with posix_spawn — clone with CLONE_VM and
 * CLONE_VFORK — instead of Node's fork of the whole server (docs/benchmarks.md "git_status (2026-12-04, session
 * 15)"). The addon is used once the wall has loaded it (src/cli/kernel-wall.ts); without it, Node's `spawn`.
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import type { Readable, Writable } from 'node:stream';

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

/** Node's `spawn`, taken at the first command (a server that never runs a child does not load `child_process`). */
const childProcess = (): typeof import('node:child_process') => process.getBuiltinModule('node:child_process');

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
    spawner.waitExit(pid, () => {});
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
  spawner.waitExit(pid, (exitCode) => {
    exited = true;
    code = exitCode;
    for (const listener of onExit) listener();
    maybeClose();
  });
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
