/**
 * Command-line flags → Config (docs/cli.md). Parsing uses Node's built-in `util.parseArgs` (strict: an unknown flag is
 * an error). Every failure throws UsageError with a one-line reason; cli.ts turns it into exit status 2.
 * This module reads the filesystem only to resolve roots and load the policy file.
 */
import { accessSync, constants, existsSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import envPaths from 'env-paths';
import { UsageError } from './errors/usage-error.js';
import { loadFilePolicy, type FilePolicy } from './policy/file-policy.js';
import { editDistance } from './policy/near-paths.js';
import { ALLOW_ANY_ENTRY, ALLOW_DEFAULT_ENTRY, parseAllowEntry } from './vcs/host-allow.js';
import { describeRejection, type ConfiguredRoot, type RejectedRoot, type RootRejection } from './policy/roots.js';

export type { ConfiguredRoot, RejectedRoot } from './policy/roots.js';

/** Tool groups accepted by --tools (docs/cli.md). */
export const TOOL_GROUPS = ['fs-read', 'fs-write', 'git', 'issues'] as const;
export type ToolGroup = (typeof TOOL_GROUPS)[number];

/** The command words (docs/cli.md); any other positional is a root. */
export const COMMANDS = ['call', 'batch', 'tools', 'help', 'version'] as const;
export type Command = (typeof COMMANDS)[number];
/** `help` topics beside the commands and the tool names. */
export const HELP_TOPICS = ['exit-codes'] as const;

/**
 * What `fs-tools` was asked to do. `call`'s `rawArgs` is the JSON_ARGS text, or `-` to read it from stdin; `format`
 * is how its result is printed (`json`: the structured result or envelope; `text`: the MCP text content). `help`'s
 * `topic` is absent for the general help, else a command, a tool name or one of HELP_TOPICS.
 */
export type Mode =
  | { kind: 'serve' }
  | { kind: 'call'; tool: string; rawArgs: string; format: 'json' | 'text' }
  | { kind: 'batch' }
  | { kind: 'tools'; json: boolean }
  | { kind: 'help'; topic?: string }
  | { kind: 'version' };

/** Size caps; all in bytes or counts as named. Defaults are documented in the README. */
export interface Limits {
  /** Most bytes of content one read returns (read_file, each read_files entry). Default 262144. */
  maxReadBytes: number;
  /** Largest file read_media returns (bytes). */
  maxMediaBytes: number;
  /**
   * Most entries one list_directory page returns, and the page of a names-and-types listing; a `long` listing's page
   * defaults to the smaller of this and 1000 (src/tools/list-directory.ts). Default 10000.
   */
  maxListEntries: number;
  /** Most matches one search_files page returns. Default 500. */
  maxSearchResults: number;
  /** Files larger than this are skipped by content search (counted as too_large). Default 10 MiB. */
  maxSearchFileBytes: number;
  /** Most bytes a mutating tool reads into memory to edit or patch. Default 64 MiB. */
  maxEditBytes: number;
  /** Per forge (gh/GitLab) call timeout, ms. Default 30000. */
  forgeTimeoutMs: number;
  /** Cap on a forge call's output, bytes. Default 1 MiB. */
  forgeOutputBytes: number;
  /** Per git call timeout, ms. Default 30000. */
  gitTimeoutMs: number;
  /** Undo history bounds (src/fs/history.ts): most changes kept (default 200) and bytes on disk (default 64 MiB). */
  historyMaxChanges: number;
  historyMaxBytes: number;
}

/** The configuration of one fs-tools process. */
export interface Config {
  mode: Mode;
  /** Roots from the command line, or the working-directory default; empty when there is none. */
  roots: ConfiguredRoot[];
  /** True when roots came from ROOT/--root (not the cwd default). Decides client-root narrowing (docs/security.md "Roots"). */
  rootsFromCommandLine: boolean;
  /**
   * Command-line roots left out because they do not exist, are not directories or cannot be read (serve only: every
   * other mode exits 2 on one, see rejectBadRoots). Never replaced by the working-directory default.
   */
  rejectedRoots: RejectedRoot[];
  readonly: boolean;
  /** Tool names and groups enabled by --tools; null means all. */
  tools: Set<string> | null;
  allowSecrets: boolean;
  /**
   * `--allow-exec-config`: the file tools may write execution-bearing configuration (`.claude/settings.json`, `.mcp.json`,
   * `.envrc`, …: src/policy/exec-config.ts). Git directories and core.hooksPath stay guarded. Default off.
   */
  allowExecConfig: boolean;
  autoOcc: 'off' | 'warn' | 'block';
  /**
   * `--on-conflict`: the session default of edit_file's and apply_patch's `on_conflict` (docs/tools.md "Merging
   * instead of refusing"). Default `fail`: an OCC mismatch is refused.
   */
  onConflict: 'fail' | 'merge';
  /** 0 means unlimited. */
  mutationBudget: number;
  policy: FilePolicy;
  policyFile: string | null;
  /** Raw `--git-remote-allow` entries; empty: the default, the hosts the operator configured (src/vcs/host-allow.ts). */
  gitRemoteAllow: string[];
  clientRoots: 'narrow' | 'replace' | 'ignore';
  auditLog: string | null;
  stateDir: string;
  limits: Limits;
  /**
   * `--native=on|off`: content search's reader threads read through the native addon when it loads
   * (src/fs/native-reader.ts), and the git view stats directories in batches through it (src/vcs/git-native-stat.ts);
   * `off` keeps both on the JavaScript path. Default on.
   */
  native: 'on' | 'off';
  /**
   * The kernel wall (docs/security.md "The kernel wall"): `auto` confines the process with Landlock where the kernel
   * offers it, `require` refuses to start without it, `off` never confines.
   */
  sandbox: 'auto' | 'require' | 'off';
  /**
   * For tests: act as if the kernel offered at most this Landlock ABI (0: none). Null: what the kernel offers. It can
   * only lower what the kernel has.
   */
  sandboxAbi: number | null;
}

export const DEFAULT_LIMITS: Limits = {
  maxReadBytes: 262_144,
  maxMediaBytes: 2_097_152,
  maxListEntries: 10_000,
  maxSearchResults: 500,
  maxSearchFileBytes: 10 * 1024 * 1024,
  maxEditBytes: 64 * 1024 * 1024,
  forgeTimeoutMs: 30_000,
  forgeOutputBytes: 1024 * 1024,
  gitTimeoutMs: 30_000,
  historyMaxChanges: 200,
  historyMaxBytes: 64 * 1024 * 1024,
};

const LIMIT_FLAGS: Record<string, keyof Limits> = {
  'max-read-bytes': 'maxReadBytes',
  'max-media-bytes': 'maxMediaBytes',
  'max-list-entries': 'maxListEntries',
  'max-search-results': 'maxSearchResults',
  'max-search-file-bytes': 'maxSearchFileBytes',
  'max-edit-bytes': 'maxEditBytes',
  'forge-timeout-ms': 'forgeTimeoutMs',
  'forge-output-bytes': 'forgeOutputBytes',
  'git-timeout-ms': 'gitTimeoutMs',
  'history-max-changes': 'historyMaxChanges',
  'history-max-bytes': 'historyMaxBytes',
};

const OPTIONS = {
  root: { type: 'string', multiple: true },
  readonly: { type: 'boolean' },
  tools: { type: 'string' },
  'allow-secrets': { type: 'boolean' },
  'allow-exec-config': { type: 'boolean' },
  'auto-occ': { type: 'string' },
  'on-conflict': { type: 'string' },
  'mutation-budget': { type: 'string' },
  policy: { type: 'string' },
  'git-remote-allow': { type: 'string' },
  'client-roots': { type: 'string' },
  'audit-log': { type: 'string' },
  'state-dir': { type: 'string' },
  native: { type: 'string' },
  sandbox: { type: 'string' },
  'sandbox-abi': { type: 'string' },
  json: { type: 'boolean' },
  format: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  ...Object.fromEntries(Object.keys(LIMIT_FLAGS).map((k) => [k, { type: 'string' }])),
} as const;

/** Switches that also take an explicit `=true` / `=false` (see explicitBooleans). */
const EXPLICIT_BOOLEAN_FLAGS = new Set(['readonly', 'allow-secrets', 'allow-exec-config']);

/**
 * Rewrites `--readonly=true` to `--readonly` and drops `--readonly=false` (likewise `--allow-secrets`), so that a
 * launcher which can only substitute a value into a fixed argument list — an MCP Bundle's `user_config` boolean —
 * can switch them. Arguments after `--` are left alone.
 * @throws UsageError for any other value (`--readonly=yes`)
 */
function explicitBooleans(argv: readonly string[]): string[] {
  const out: string[] = [];
  let ended = false;
  for (const arg of argv) {
    const match = ended ? null : /^--([a-z-]+)=(.*)$/s.exec(arg);
    if (arg === '--') ended = true;
    if (!match || !EXPLICIT_BOOLEAN_FLAGS.has(match[1])) {
      out.push(arg);
      continue;
    }
    if (match[2] === 'true') out.push(`--${match[1]}`);
    else if (match[2] !== 'false')
      throw new UsageError(`--${match[1]} takes no value, or =true / =false (see fs-tools --help)`);
  }
  return out;
}

/** Everything the parser needs from the process, so tests can pass their own. */
export interface ParseEnvironment {
  cwd: string;
  home: string;
  /** Names of every tool, so --tools can reject unknown names. */
  toolNames: readonly string[];
}

/**
 * Parses argv (without node and script) into a Config.
 * @throws UsageError for an unknown flag, a bad value, a missing root, or an invalid policy file (docs/cli.md: exit 2)
 */
export function parseConfig(argv: readonly string[], env: ParseEnvironment): Config {
  let parsed;
  try {
    parsed = parseArgs({
      args: explicitBooleans(argv),
      options: OPTIONS,
      allowPositionals: true,
      strict: true,
      tokens: true,
    });
  } catch (error) {
    if (error instanceof UsageError) throw error; // already one line with its pointer (explicitBooleans)
    const message = (error as Error).message.split('\n')[0];
    const unknown = /^Unknown option '([^']+)'/.exec(message);
    throw new UsageError(unknown ? unknownOption(unknown[1]) : `${message} (see fs-tools --help)`);
  }
  const values = parsed.values as Record<string, string | string[] | boolean | undefined>;
  const positionals = [...parsed.positionals];

  const { mode, consumed } = parseMode(values, positionals, env);
  // Roots keep their command-line order (--root and positional ROOTs interleaved): the first root is the base of
  // relative paths. Positionals consumed by `call`/`tools` are not roots.
  const rootArgs: string[] = [];
  let positionalIndex = 0;
  for (const token of parsed.tokens ?? []) {
    if (token.kind === 'positional') {
      if (!consumed.has(positionalIndex++)) rootArgs.push(token.value);
    } else if (token.kind === 'option' && token.name === 'root' && typeof token.value === 'string') {
      rootArgs.push(token.value);
    }
  }
  const rootsFromCommandLine = rootArgs.length > 0;
  // help and version read no root: a root that does not exist must not hide the help (docs/cli.md).
  const needsRoots = mode.kind !== 'help' && mode.kind !== 'version';
  const resolved = needsRoots ? rootArgs.map((r) => resolveRoot(r, env)) : [];
  const roots = !needsRoots
    ? []
    : rootsFromCommandLine
      ? resolved.filter((r): r is ConfiguredRoot => !('reason' in r))
      : defaultRoots(env);
  const rejectedRoots = resolved.filter((r): r is RejectedRoot => 'reason' in r);
  rejectBadRoots(mode, rejectedRoots);
  dedupeRoots(roots);

  const limits: Limits = { ...DEFAULT_LIMITS };
  for (const [flag, key] of Object.entries(LIMIT_FLAGS)) {
    const raw = values[flag];
    if (typeof raw === 'string') limits[key] = parsePositiveInt(flag, raw, 1);
  }

  const policyFile = typeof values.policy === 'string' ? path.resolve(env.cwd, values.policy) : null;
  const policy = policyFile ? loadFilePolicy(policyFile) : { rules: [] };

  return {
    mode,
    roots,
    rootsFromCommandLine,
    rejectedRoots,
    readonly: values.readonly === true,
    tools: typeof values.tools === 'string' ? parseToolList(values.tools, env.toolNames) : null,
    allowSecrets: values['allow-secrets'] === true,
    allowExecConfig: values['allow-exec-config'] === true,
    autoOcc: parseEnum('auto-occ', values['auto-occ'], ['off', 'warn', 'block'] as const, 'block'),
    onConflict: parseEnum('on-conflict', values['on-conflict'], ['fail', 'merge'] as const, 'fail'),
    mutationBudget:
      typeof values['mutation-budget'] === 'string'
        ? parsePositiveInt('mutation-budget', values['mutation-budget'], 0)
        : 0,
    policy,
    policyFile,
    gitRemoteAllow: typeof values['git-remote-allow'] === 'string' ? parseRemoteAllow(values['git-remote-allow']) : [],
    clientRoots: parseEnum('client-roots', values['client-roots'], ['narrow', 'replace', 'ignore'] as const, 'narrow'),
    auditLog: typeof values['audit-log'] === 'string' ? path.resolve(env.cwd, values['audit-log']) : null,
    stateDir: typeof values['state-dir'] === 'string' ? path.resolve(env.cwd, values['state-dir']) : defaultStateDir(),
    limits,
    native: parseEnum('native', values.native, ['on', 'off'] as const, 'on'),
    sandbox: parseEnum('sandbox', values.sandbox, ['auto', 'require', 'off'] as const, 'auto'),
    sandboxAbi: parseSandboxAbi(values['sandbox-abi']),
  };
}

/**
 * The command and its arguments from the positionals (docs/cli.md "Commands"): the first positional that is a command
 * word (COMMANDS) is the command; positionals before it are roots, those after it are the command's own. `--help`
 * anywhere asks for the help of what the command line names (`tools --help`, `call TOOL --help`), never runs it.
 * `consumed` holds the indexes of the positionals that are not roots.
 * @throws UsageError for a missing or extra argument, an unknown tool or help topic, a flag that does not apply to the
 *   command, or a word that is no existing path but close to a command word (with "did you mean")
 */
function parseMode(
  values: Record<string, string | string[] | boolean | undefined>,
  positionals: readonly string[],
  env: ParseEnvironment,
): { mode: Mode; consumed: Set<number> } {
  const at = positionals.findIndex((p) => (COMMANDS as readonly string[]).includes(p));
  const command = at >= 0 ? (positionals[at] as Command) : undefined;
  const rest = at >= 0 ? positionals.slice(at + 1) : [];
  const consumed = new Set(at >= 0 ? positionals.map((_, i) => i).filter((i) => i >= at) : []);
  const extra = (after: string, max: number) => {
    if (rest.length > max)
      throw new UsageError(
        `unexpected argument after ${after}: ${rest[max]} (roots go before the command or in --root)`,
      );
  };
  const tool = (name: string): string => {
    if (env.toolNames.includes(name)) return name;
    throw new UsageError(`unknown tool '${name}'${didYouMean(name, env.toolNames)} (see fs-tools tools)`);
  };

  let mode: Mode;
  if (values.help === true || command === 'help') {
    let topic: string | undefined;
    if (command === 'help') {
      extra('help TOPIC', 1);
      topic = rest[0] ?? (values.help === true ? 'help' : undefined);
    } else if (command === 'call' && rest[0] !== undefined) topic = tool(rest[0]);
    else topic = command;
    if (topic !== undefined && ![...COMMANDS, ...HELP_TOPICS, ...env.toolNames].includes(topic)) {
      throw new UsageError(
        `unknown help topic '${topic}'${didYouMean(topic, [...COMMANDS, ...HELP_TOPICS, ...env.toolNames])} (topics: ${[...COMMANDS, ...HELP_TOPICS].join(', ')}, or a tool name)`,
      );
    }
    mode = topic === undefined ? { kind: 'help' } : { kind: 'help', topic };
  } else if (values.version === true || command === 'version') {
    extra('version', 0);
    mode = { kind: 'version' };
  } else if (command === 'call') {
    if (rest[0] === undefined)
      throw new UsageError('call needs a tool name: fs-tools [options] call TOOL [JSON_ARGS|-]');
    extra('JSON_ARGS', 2);
    const format = parseEnum('format', values.format, ['json', 'text'] as const, 'json');
    mode = { kind: 'call', tool: tool(rest[0]), rawArgs: rest[1] ?? '{}', format };
  } else if (command === 'tools') {
    extra('tools', 0);
    mode = { kind: 'tools', json: values.json === true };
  } else if (command === 'batch') {
    extra('batch', 0);
    mode = { kind: 'batch' };
  } else {
    // No command word: every positional is a root. A word that names no path but is one typo from a command is
    // the command mistyped (`fs-tools tols`), not a root that does not exist.
    for (const word of positionals) {
      const near = suggest(word, COMMANDS);
      if (near !== null && !word.includes('/') && !existsSync(path.resolve(env.cwd, word))) {
        throw new UsageError(`unknown command '${word}'; did you mean ${near}? (a root of that name: ./${word})`);
      }
    }
    mode = { kind: 'serve' };
  }
  if (values.json === true && mode.kind !== 'tools' && mode.kind !== 'help') {
    throw new UsageError('--json only applies to `fs-tools tools`');
  }
  if (values.format !== undefined && mode.kind !== 'call' && mode.kind !== 'help') {
    throw new UsageError('--format only applies to `fs-tools call`');
  }
  return { mode, consumed };
}

/**
 * The candidate closest to `name` (case-insensitive edit distance at most max(2, a third of its length); the first
 * wins a tie), or null when none is that close. The one "did you mean" rule of the command line (docs/cli.md).
 */
export function suggest(name: string, candidates: readonly string[]): string | null {
  const wanted = name.toLowerCase();
  const max = Math.max(2, Math.ceil(wanted.length / 3));
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = editDistance(wanted, candidate.toLowerCase(), max);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

/** `; did you mean X?` for the closest candidate, or '' (see suggest). */
export function didYouMean(name: string, candidates: readonly string[]): string {
  const near = suggest(name, candidates);
  return near === null ? '' : `; did you mean ${near}?`;
}

/** The message for an option parseArgs does not know, with the closest long option. */
function unknownOption(given: string): string {
  const flag = given.split('=')[0];
  const near = flag.startsWith('--')
    ? didYouMean(
        flag,
        Object.keys(OPTIONS).map((k) => `--${k}`),
      )
    : '';
  return `unknown option '${flag}'${near} (see fs-tools --help)`;
}

/**
 * `--git-remote-allow=LIST` (docs/cli.md, src/vcs/host-allow.ts): comma-separated entries, trimmed, empties dropped. An
 * empty result means the default (the hosts the operator configured); `default` and `*` are kept as given.
 * @throws UsageError for an entry that is not a host, host/path or repository URL (it would silently admit nothing)
 */
function parseRemoteAllow(raw: string): string[] {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of entries) {
    if (entry === ALLOW_ANY_ENTRY || entry.toLowerCase() === ALLOW_DEFAULT_ENTRY) continue;
    if (!parseAllowEntry(entry)) {
      throw new UsageError(
        `--git-remote-allow: '${entry}' is not a host, host/path or repository URL (use 'default' or '*' for the special lists)`,
      );
    }
  }
  return entries;
}

/**
 * A leading `~/` (or a bare `~`) of a command-line root becomes the home directory: MCP clients start the server from a
 * JSON configuration without a shell, so `"~/proj"` arrives as written. `~user` and a `~` elsewhere are left alone
 * (README "Troubleshooting"; tool paths never expand `~`), and so is every `~` when `home` is not an absolute path
 * (HOME set empty or relative: `~` would name the working directory or a path under it).
 */
export function expandHome(raw: string, home: string): string {
  if (!path.isAbsolute(home)) return raw;
  if (raw === '~') return home;
  return raw.startsWith('~/') ? path.join(home, raw.slice(2)) : raw;
}

/**
 * One command-line root: resolved (after `~/` expansion) against the working directory to its real path, or the
 * reason it is left out (it does not exist, is not a directory, or this process may not list and enter it).
 * @throws UsageError for an empty root or one with a NUL byte (a malformed argument, whatever the mode)
 */
function resolveRoot(raw: string, env: ParseEnvironment): ConfiguredRoot | RejectedRoot {
  // An empty root would silently resolve to cwd (`--root=$UNSET_VAR` must not widen the sandbox).
  if (raw === '') throw new UsageError('root is empty');
  if (raw.includes('\0')) throw new UsageError('root contains a NUL byte');
  const given = path.resolve(env.cwd, expandHome(raw, env.home));
  const rejected = (reason: RootRejection): RejectedRoot => ({ given, source: 'cli', reason });
  let real: string;
  try {
    real = realpathSync.native(given);
  } catch (error) {
    return rejected((error as NodeJS.ErrnoException).code === 'EACCES' ? 'unreadable' : 'missing');
  }
  try {
    if (!statSync(real).isDirectory()) return rejected('not_a_directory');
    accessSync(real, constants.R_OK | constants.X_OK);
  } catch {
    return rejected('unreadable');
  }
  return { given, real, source: 'cli' };
}

/**
 * A bad command-line root stops every mode but serving (and --help/--version, which use no root): `call`, `batch`
 * and `tools` exit 2 with the first root's reason. Serving starts without it instead (docs/security.md "Roots"):
 * a client that only shows "connection closed" would leave its user no way to learn what was wrong.
 * @throws UsageError naming the first rejected root and why
 */
function rejectBadRoots(mode: Mode, rejected: readonly RejectedRoot[]): void {
  if (rejected.length === 0 || mode.kind === 'serve' || mode.kind === 'help' || mode.kind === 'version') return;
  const first = rejected[0];
  throw new UsageError(`root ${describeRejection(first.reason)}: ${first.given}`);
}

/** docs/cli.md: the cwd is the default root unless it is the filesystem root or the home directory. */
function defaultRoots(env: ParseEnvironment): ConfiguredRoot[] {
  let real: string;
  try {
    real = realpathSync.native(env.cwd);
  } catch {
    return [];
  }
  let home = env.home;
  try {
    home = realpathSync.native(env.home);
  } catch {
    /* keep as given */
  }
  if (real === path.parse(real).root || real === home) return [];
  return [{ given: path.resolve(env.cwd), real, source: 'cwd' }];
}

/** Drops later duplicates (same realpath) in place, so the first root (relative paths' base) stays first. */
function dedupeRoots(roots: ConfiguredRoot[]): void {
  const seen = new Set<string>();
  const unique = roots.filter((r) => (seen.has(r.real) ? false : (seen.add(r.real), true)));
  roots.splice(0, roots.length, ...unique);
}

function parsePositiveInt(flag: string, raw: string, min: number): number {
  const text = raw.trim();
  if (/^-\d+$/.test(text) || (/^\d+$/.test(text) && Number(text) < min)) {
    throw new UsageError(`--${flag} must be ${min} or more, got '${raw}'`);
  }
  if (!/^\d+$/.test(text)) throw new UsageError(`--${flag} needs a whole number, got '${raw}'`);
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${flag} is too large, got '${raw}'`);
  return n;
}

function parseEnum<T extends string>(flag: string, raw: unknown, allowed: readonly T[], fallback: T): T {
  if (raw === undefined) return fallback;
  if (typeof raw === 'string' && (allowed as readonly string[]).includes(raw)) return raw as T;
  throw new UsageError(
    `--${flag} must be one of ${allowed.join('|')}, got '${typeof raw === 'string' ? raw : JSON.stringify(raw)}'`,
  );
}

/** `--sandbox-abi=N` (tests): a Landlock ABI from 0 to 99, or null when absent. */
function parseSandboxAbi(raw: unknown): number | null {
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || !/^\d{1,2}$/.test(raw)) {
    throw new UsageError(
      `--sandbox-abi must be a Landlock ABI from 0 to 99, got '${typeof raw === 'string' ? raw : JSON.stringify(raw)}'`,
    );
  }
  return Number(raw);
}

function parseToolList(raw: string, toolNames: readonly string[]): Set<string> {
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.length === 0) throw new UsageError('--tools needs at least one tool or group');
  for (const item of items) {
    if (!(TOOL_GROUPS as readonly string[]).includes(item) && !toolNames.includes(item)) {
      throw new UsageError(
        `--tools: unknown tool or group '${item}'${didYouMean(item, [...TOOL_GROUPS, ...toolNames])} (groups: ${TOOL_GROUPS.join(', ')})`,
      );
    }
  }
  return new Set(items);
}

/**
 * The platform's user state directory for fs-tools (docs/cli.md --state-dir): $XDG_STATE_HOME/fs-tools or
 * ~/.local/state/fs-tools on Linux (XDG Base Directory spec); env-paths' data directory elsewhere
 * (~/Library/Application Support/fs-tools, %LOCALAPPDATA%\fs-tools\Data).
 */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string {
  if (process.platform === 'linux') {
    const base =
      env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME)
        ? env.XDG_STATE_HOME
        : path.join(home, '.local', 'state');
    return path.join(base, 'fs-tools');
  }
  return envPaths('fs-tools', { suffix: '' }).data;
}

/** Default ParseEnvironment from the running process. */
export function processEnvironment(toolNames: readonly string[]): ParseEnvironment {
  return { cwd: process.cwd(), home: os.homedir(), toolNames };
}
