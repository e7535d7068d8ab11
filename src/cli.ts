#!/usr/bin/env node
/**
 * The fs-tools command (docs/cli.md): flags → Config → one of: serve MCP over stdio (the main job), `call TOOL
 * [JSON_ARGS|-]` and `batch` in-process (src/cli/call.ts), `tools [--json]`, `help [TOPIC]` (src/cli/help.ts),
 * `--version`. A usage error exits with status 2 and one line on stderr. stdout carries only protocol messages (serve)
 * or the command's output (call, batch, tools, help).
 */
import { parseConfig, processEnvironment, type Config } from './config.js';
import { registerSecretsFromEnv } from './errors/redact.js';
import { UsageError } from './errors/usage-error.js';
import { listedTools } from './server/call-tool.js';
import { takeBrokenRoots, type ProcessState } from './server/process-state.js';
import type { AnyTool } from './tools/define-tool.js';
import { TOOL_INDEX, TOOL_INDEX_NAMES } from './tools/tool-index.js';
import { VERSION } from './version.js';
import { takeTestSeams } from './cli/seam-flags.js';
import { describeRejection } from './policy/roots.js';
import { describeNativeReads, loadNativeAddon, nativeLoadReason } from './fs/native-load.js';
import { loadKernelWallAddon } from './fs/kernel-wall.js';
import { removeOwnFilesOnExit } from './fs/own-files.js';
import { startUp } from './cli/start-up.js';
import { OutputClosed, parseArguments, readBounded, runBatch, runCall, type CallOutput } from './cli/call.js';

const HELP = `fs-tools ${VERSION}: a safe filesystem, git and issue MCP server for coding agents

Usage:
  fs-tools [options] [ROOT ...]              serve MCP over stdio (the main job)
  fs-tools [options] call TOOL [JSON_ARGS|-] run one tool call in-process; print its result (--format json|text);
                                             '-' reads the JSON arguments from stdin
  fs-tools [options] batch                   JSON Lines requests on stdin, one JSON line out per request, one session
  fs-tools [options] tools [--json]          list the tools this configuration exposes
  fs-tools help [COMMAND|TOOL|exit-codes]    help of a command, a tool's arguments, the exit codes
  fs-tools --help | --version                (also COMMAND --help, call TOOL --help)
Exit codes: 0 ok, 1 a tool answered with an error envelope, 2 usage error (fs-tools help exit-codes).

Options:
  --root DIR                 sandbox root (repeatable; ROOT arguments are the same). Default: the current
                             directory, unless it is / or your home directory. A leading ~/ is your home
                             directory (client configurations run no shell). A root that does not exist, is not
                             a directory or cannot be read is left out with a line on stderr when serving (and
                             named by list_allowed_directories); call, batch and tools exit 2 on it
  --readonly                 no mutation of files or issues
  --tools=LIST               only these tools or groups (fs-read, fs-write, git, issues)
  --allow-secrets            secret files (.env, *.pem, id_rsa, ...) may be read and written
  --allow-exec-config        RISK: the agent may write files other programs run commands from without asking
                             (.claude/settings.json, .mcp.json, .vscode/tasks.json, .envrc, ...); git directories
                             and core.hooksPath stay protected
  --auto-occ=off|warn|block  implicit optimistic concurrency (default block)
  --on-conflict=fail|merge   default on_conflict of edit_file/apply_patch (default fail; merge: a change made
                             against the read version is merged when only other lines changed since)
  --mutation-budget=N        at most N successful mutating calls (0: unlimited)
  --policy=FILE              JSON file policy: {"rules":[{"pattern":"glob","access":"read_only|hidden|deny"}]}
  --git-remote-allow=LIST    hosts, host/owner or repo URLs the issue tools may reach (default: the configured hosts; 'default' extends, '*' any)
  --client-roots=narrow|replace|ignore   how client-announced roots combine with these (default narrow)
  --audit-log=FILE           append one JSON line per tool call
  --state-dir=DIR            where the mutation journal lives (created 0700 if absent; must be yours, not
                             writable by others, not under /proc, /sys or /dev)
  --max-read-bytes=N         bytes per read (default 262144)
  --max-media-bytes=N        largest image/audio file read_media returns (default 2097152)
  --max-list-entries=N       entries per list_directory page (default 10000; long: 1000)
  --max-search-results=N     matches per search_files page (default 500)
  --max-search-file-bytes=N  larger files are skipped by content search (default 10485760)
  --native=on|off            content search reads files through the bundled native addon when it loads (default
                             on); off: always through Node's own calls
  --sandbox=auto|require|off the kernel wall: Landlock confines the server and its children to the roots, the state
                             directory and what they need to run (default auto: where the kernel has it; require:
                             exit 2 without it)
  --sandbox-abi=N            for tests: use at most Landlock ABI N (0: act as if the kernel had none)
  --max-edit-bytes=N         largest file an edit or patch loads (default 67108864)
  --forge-timeout-ms=N       per gh/GitLab call (default 30000)
  --forge-output-bytes=N     gh/GitLab output cap (default 1048576)
  --git-timeout-ms=N         per git call (default 30000)
  --history-max-changes=N    changes the undo history keeps (default 200)
  --history-max-bytes=N      bytes of undo records kept in the state dir (default 67108864)
`;

/** `--version`'s second line: what the wall would be when serving (nothing is confined by asking). */
function describeAvailableWall(config: Config): string {
  if (config.sandbox === 'off') return 'kernel wall: off (--sandbox=off)';
  const addon = loadKernelWallAddon();
  if (typeof addon === 'string') return `kernel wall: off (${addon})`;
  const kernel = addon.abi();
  const abi = config.sandboxAbi === null ? kernel : Math.min(kernel, config.sandboxAbi);
  return abi >= 1
    ? `kernel wall: landlock ABI ${abi}, enforced when serving`
    : 'kernel wall: off (the kernel has no Landlock)';
}

/** Whether this is a test build (scripts/bundle.mjs --test-seams); see src/fs/atomic-write.ts. */
declare const FS_TOOLS_TEST_SEAMS: boolean | undefined;

/** Why `--tools` (with `--readonly`) leaves no tool to serve: every tool it names mutates files. */
function noToolsLeft(config: Config): string {
  const named = [...(config.tools ?? [])].join(',');
  return `--tools=${named} with --readonly leaves no tool: every tool named there changes files (add fs-read, or drop --readonly)`;
}

/**
 * Serving with bad command-line roots (docs/security.md "Roots"): one stderr line per root left out and why, and one
 * more when none is left. The server still starts; list_allowed_directories and path envelopes name them too.
 */
function reportRejectedRoots(config: Config): void {
  for (const r of config.rejectedRoots) {
    process.stderr.write(
      `fs-tools: root left out: ${r.given} ${describeRejection(r.reason)} (fix the ROOT arguments in the MCP configuration)\n`,
    );
  }
  if (config.rejectedRoots.length > 0 && config.roots.length === 0) {
    process.stderr.write('fs-tools: no command-line root is left: path tools answer ROOTS_EMPTY\n');
  }
}

/**
 * `--version`'s third line: whether content search would read through the native addon when serving. The addon is
 * loaded the verified way to find out (src/fs/native-load.ts: nothing is left on disk).
 */
function describeAvailableNativeReads(config: Config): string {
  if (config.native === 'off') return describeNativeReads({ inUse: false, reason: '--native=off' });
  const result = loadNativeAddon();
  return describeNativeReads(
    result.loaded
      ? { inUse: true, path: result.loaded.path }
      : { inUse: false, reason: nativeLoadReason(result.reason) },
  );
}

async function main(argv: string[]): Promise<number> {
  const config = parseCommandLine(argv);
  if (typeof config === 'number') return config;
  registerSecretsFromEnv(process.env);
  const mode = config.mode;
  // A one-shot command's reader may leave early (`fs-tools tools --json | head -1`): a failed write is reported to
  // its callback (call and batch stop there, src/cli/call.ts), never an unhandled 'error' event with a stack trace.
  if (mode.kind !== 'serve') process.stdout.on('error', () => {});
  if (mode.kind === 'help') {
    const [{ renderHelp }, tools] = await Promise.all([import('./cli/help.js'), toolsFor(mode)]);
    process.stdout.write(renderHelp(mode.topic, HELP, tools));
    return 0;
  }
  if (mode.kind === 'version') {
    process.stdout.write(`${VERSION}\n${describeAvailableWall(config)}\n${describeAvailableNativeReads(config)}\n`);
    return 0;
  }
  // Refused before anything is created (state directory, audit log, journal): a tool set that serves nothing, and
  // call arguments that are not JSON.
  let callArgs: unknown;
  try {
    if (listedTools({ config, tools: TOOL_INDEX }).length === 0) throw new UsageError(noToolsLeft(config));
    if (mode.kind === 'call') {
      callArgs =
        mode.rawArgs === '-'
          ? parseArguments(await readBounded(process.stdin), 'the JSON on stdin')
          : parseArguments(mode.rawArgs, 'JSON_ARGS');
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`fs-tools: ${error.message}\n`);
    return error.exitCode;
  }
  if (mode.kind === 'serve') reportRejectedRoots(config);
  // A server holds the tools' index entries: tools/list answers from the entries the build generated
  // (src/server/tool-schemas.ts) and each tool's module is evaluated at its first call, not at every start.
  const defined = mode.kind === 'serve' ? [] : await toolsFor(mode);
  const state = await startUp(config, mode.kind === 'serve' ? TOOL_INDEX : defined, VERSION);
  if (typeof state === 'number') return state;

  if (mode.kind === 'tools') {
    const tools = listedTools({ config, tools: defined });
    if (mode.json) {
      const { advertise } = await import('./server/tool-schemas.js');
      process.stdout.write(`${JSON.stringify(tools.map(advertise), null, 2)}\n`);
    } else process.stdout.write((await import('./cli/help.js')).renderToolList(tools));
    return 0;
  }
  if (mode.kind === 'call' || mode.kind === 'batch') return await runOneShot(state, mode, callArgs);
  await serve(state, config);
  return -1; // keep running
}

/**
 * The tools `mode` works with: a one-shot `call` only the one it calls (src/tools/tool-index.ts: the other tools'
 * modules are never evaluated), every other mode all of them, in registry order. Part of the bundle either way: no
 * file is loaded.
 */
async function toolsFor(mode: Config['mode']): Promise<readonly AnyTool[]> {
  if (mode.kind === 'call') {
    const entry = TOOL_INDEX.find((t) => t.name === mode.tool);
    if (entry) return [await entry.load()];
  }
  return (await import('./tools/registry.js')).TOOLS;
}

/**
 * The flags, test seams and environment as a Config; the exit status of a usage error (its line is on stderr).
 */
function parseCommandLine(argv: string[]): Config | number {
  // A test build's seams (src/cli/seam-flags.ts). The product bundle defines the constant as false, so esbuild drops
  // this call and the module (scripts/bundle.mjs); an in-process run of src/ without the constant has no seams.
  if (typeof FS_TOOLS_TEST_SEAMS !== 'undefined' && FS_TOOLS_TEST_SEAMS === true) argv = takeTestSeams(argv);
  argv = takeBrokenRoots(argv);
  try {
    return parseConfig(argv, processEnvironment(TOOL_INDEX_NAMES));
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`fs-tools: ${error.message}\n`);
      return error.exitCode;
    }
    throw error;
  }
}

/** `call` and `batch` (src/cli/call.ts): runs them with SIGTERM and Ctrl-C handled; returns the exit status. */
async function runOneShot(
  state: ProcessState,
  mode: Extract<Config['mode'], { kind: 'call' | 'batch' }>,
  callArgs: unknown,
): Promise<number> {
  const output: CallOutput = {
    out: (text) =>
      new Promise((resolve, reject) =>
        process.stdout.write(text, (error) => (error ? reject(new OutputClosed(error.message)) : resolve())),
      ),
    err: (text) => process.stderr.write(text),
  };
  // SIGTERM or Ctrl-C during a call or batch: shut down as serve does (docs/cli.md "Signals"): no new call starts,
  // the call in flight finishes (or is cancelled after the grace) so its lock files and temporaries are removed, then
  // the one-shot command ends through its normal path (the 'exit' hook of start-up removes what is still in flight).
  // A second signal kills at once (the handlers are `once`).
  const interrupt = (signal: NodeJS.Signals): void => {
    void (async () => {
      const running = state.calls.size;
      const left = await state.calls.drain();
      process.stderr.write(
        `fs-tools: ${signal}: ${running - left} call(s) in flight finished${left > 0 ? `, ${left} cut off` : ''}\n`,
      );
      process.stdin.destroy(); // a batch waiting for its next line ends now
      setTimeout(() => process.exit(1), 1000).unref();
    })();
  };
  process.once('SIGTERM', interrupt);
  process.once('SIGINT', interrupt);
  if (mode.kind === 'call') return await runCall(state, mode.tool, callArgs, mode.format, output);
  return await runBatch(state, process.stdin, output);
}

/**
 * Serves MCP over stdio through our own transport: the stdin guard frames, parses and checks each line once and
 * answers malformed ones (docs/tools.md). Graceful shutdown (src/server/shutdown.ts): on stdin end or SIGTERM, stop
 * taking calls, let those in flight finish (or cancel them after the grace), answer them, remove this process's own
 * files still in flight, exit. Idle worker threads (search, regex) must not keep the process alive, hence the
 * explicit exit.
 */
async function serve(state: ProcessState, config: Config): Promise<void> {
  // The MCP SDK and the server's wiring are evaluated only when serving (a one-shot command needs neither): part of
  // the bundle (scripts/bundle.mjs), evaluated here before the first request is read — no file is loaded.
  const [{ serveStdio }, { createServer }, { GuardedStdioTransport }] = await Promise.all([
    import('@modelcontextprotocol/server/stdio'),
    import('./server/create-server.js'),
    import('./server/stdio-transport.js'),
  ]);
  if (config.roots.length === 0 && !config.rootsFromCommandLine && config.clientRoots !== 'ignore') {
    process.stderr.write('fs-tools: no roots given and the current directory is / or home; waiting for client roots\n');
  }
  let draining: Promise<void> | null = null;
  const shutdown = (why: string): Promise<void> => {
    draining ??= (async () => {
      const running = state.calls.size;
      const left = await state.calls.drain();
      if (running > 0)
        process.stderr.write(
          `fs-tools: ${why}: ${running - left} call(s) in flight answered${left > 0 ? `, ${left} cut off` : ''}\n`,
        );
      // The undo history's prunes queued after the last answers (the module is loaded with the tools by now).
      await (await import('./fs/history-prune.js')).allHistoriesSettled(2000);
      // git_status' watch descriptors and the mount table's (src/vcs/git-status-watch.ts).
      (await import('./vcs/git-status-watch.js')).closeStatusWatches();
      removeOwnFilesOnExit();
      // The answers are queued on stdout: exit once it has taken them (a client that left makes the write fail).
      process.stdout.write('', () => process.exit(0));
      setTimeout(() => process.exit(0), 1000).unref();
    })();
    return draining;
  };
  serveStdio(() => createServer(state), {
    transport: new GuardedStdioTransport(process.stdin, process.stdout, () => shutdown('stdin closed')),
    onerror: (error) => process.stderr.write(`fs-tools: ${error.message}\n`),
  });
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

main(process.argv.slice(2)).then(
  (code) => {
    // The one-shot modes end here, once stdout is flushed: worker threads or pooled handles kept for a long-lived
    // server must not keep a finished `fs-tools call` alive.
    if (code >= 0) process.stdout.write('', () => process.exit(code));
  },
  (error: unknown) => {
    process.stderr.write(`fs-tools: fatal: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
