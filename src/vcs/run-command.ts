/**
 * The one subprocess runner (docs/security.md "What git may read"): execa without a shell, with a timeout, an output cap, no stdin unless
 * given, and an environment the caller shapes. Everything git, gh and glab run goes through here.
 */
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

/** execa's entry point. */
type Execa = typeof import('execa').execa;

/**
 * How children get their narrower layer, set at start-up (src/process-slots.ts); null: none. And execa, once
 * evaluated: it is part of the bundle (scripts/bundle.mjs; no file is loaded), evaluated at the first command rather
 * than at every start (its module, its signal tables and Node's child-process modules cost a server that never runs a
 * command about 10 ms of CPU: docs/benchmarks.md "Server start-up").
 */
const children = processSlot('vcs/run-command', () => ({
  childWall: null as ChildWall | null,
  execa: null as Execa | null,
}));

/** Sets (once, at start-up, after the wall is raised) how children get their narrower layer; null: none. */
export function setChildWall(wall: ChildWall | null): void {
  children.childWall = wall;
}

/**
 * Runs `file` with `args` (never through a shell). Never throws for a failing command; throws only for programming
 * errors.
 */
export async function runCommand(file: string, args: readonly string[], options: RunOptions): Promise<CommandResult> {
  const execa = children.execa ?? (children.execa = (await import('execa')).execa);
  const started = performance.now();
  const layer = options.serverWall ? null : (children.childWall?.(file, options.env) ?? null);
  const result = await execa(layer ? layer.file : file, layer ? [...layer.prefix, file, ...args] : args, {
    cwd: options.cwd,
    env: options.env,
    extendEnv: false,
    shell: false,
    timeout: options.timeoutMs,
    maxBuffer: options.maxOutputBytes,
    input: options.input,
    // execa passes a number at index ≥ 3 to the child as that descriptor (its types only know the standard three).
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', ...(options.fds ?? [])] as unknown as [
      'pipe',
      'pipe',
      'pipe',
    ],
    reject: false,
    stripFinalNewline: false,
    cancelSignal: options.signal,
    encoding: 'utf8',
    windowsHide: true,
  });
  const spawnError =
    result.failed &&
    result.exitCode === undefined &&
    !result.timedOut &&
    !result.isMaxBuffer &&
    !result.isCanceled &&
    (result.cause as NodeJS.ErrnoException | undefined)?.code
      ? String((result.cause as NodeJS.ErrnoException).code)
      : null;
  return {
    exitCode: result.exitCode ?? null,
    stdout: typeof result.stdout === 'string' ? result.stdout : '',
    stderr: typeof result.stderr === 'string' ? result.stderr : '',
    timedOut: result.timedOut === true,
    outputLimited: result.isMaxBuffer === true,
    spawnError,
    durationMs: performance.now() - started,
  };
}
