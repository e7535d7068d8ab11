/**
 * Execution-bearing configuration (docs/security.md "Execution-bearing files and git directories"): files that another
 * program on the user's machine loads and acts on without the user's explicit action — agent hooks, MCP servers
 * (programs), editor tasks that run on folder open, direnv's `.envrc`. The file tools never write them unless the
 * operator passes `--allow-exec-config`; reading them stays allowed. Pure: names only, no IO.
 *
 * Matching is by what the file is wherever it lies: the entry's components are compared with the last components of
 * a path at any depth inside a root (nested projects have their own `.claude/`, and a client opened on a subdirectory
 * reads that one), case-insensitively (a case-insensitive filesystem — macOS, Windows, an ext4 casefold directory —
 * makes `.Claude/Settings.json` the same file; on a case-sensitive one, refusing that spelling costs nothing).
 */
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { lastComponents } from '../fs/path-within.js';
import { GIT_HOOK_NAMES } from './git-hooks-config.js';

/** One execution-bearing configuration file. */
export interface ExecConfigEntry {
  /** Its last path components, lower-case (`['.claude', 'settings.json']`). */
  components: readonly string[];
  /** The class named in the refusal: which program runs what. */
  reason: string;
}

/**
 * The table. Adding a client's file is one line. Source of each entry: the client's documentation of project-level
 * configuration that starts programs (hooks, MCP servers, tasks, shell environment).
 */
export const EXEC_CONFIG: readonly ExecConfigEntry[] = [
  { components: ['.claude', 'settings.json'], reason: 'Claude Code hooks and MCP servers' },
  { components: ['.claude', 'settings.local.json'], reason: 'Claude Code hooks and MCP servers' },
  { components: ['.mcp.json'], reason: 'MCP servers a client starts for the project' },
  { components: ['.cursor', 'mcp.json'], reason: 'Cursor MCP servers' },
  { components: ['.vscode', 'mcp.json'], reason: 'VS Code MCP servers' },
  { components: ['.vscode', 'tasks.json'], reason: 'VS Code tasks (runOn: folderOpen)' },
  { components: ['.gemini', 'settings.json'], reason: 'Gemini CLI hooks and MCP servers' },
  { components: ['.codex', 'config.toml'], reason: 'Codex MCP servers and commands' },
  { components: ['.envrc'], reason: 'direnv (runs on cd)' },
  // husky's generated hooks in `.husky/_` run the script of the same name in `.husky/`, outside the hooks directory
  // core.hooksPath names: every name git runs as a hook (githooks(5), the one list in git-dirs.ts).
  ...[...GIT_HOOK_NAMES].map((hook) => ({
    components: ['.husky', hook],
    reason: 'husky git hook script (run by the hooks in core.hooksPath .husky/_)',
  })),
];

/** The most components any entry of the table reads from a path's end. */
const MAX_COMPONENTS = Math.max(...EXEC_CONFIG.map((e) => e.components.length));

/** The operator flag that lifts this guard. */
export const ALLOW_EXEC_CONFIG_FLAG = '--allow-exec-config';

/** The entry an absolute path (any spelling) is an instance of, or null. */
export function execConfigEntryOf(absolute: string): ExecConfigEntry | null {
  // Only the tail an entry can match: the cost does not grow with the path's depth.
  const parts = lastComponents(absolute, MAX_COMPONENTS, path.sep);
  for (const entry of EXEC_CONFIG) {
    const n = entry.components.length;
    if (parts.length < n) continue;
    let hit = true;
    for (let i = 0; i < n; i++) {
      if (parts[parts.length - n + i].toLowerCase() !== entry.components[i]) {
        hit = false;
        break;
      }
    }
    if (hit) return entry;
  }
  return null;
}

/** FILE_POLICY_DENIED for writing an execution-bearing configuration file. */
export function execConfigRefusal(requested: string, entry: ExecConfigEntry): ToolError {
  return new ToolError(
    'FILE_POLICY_DENIED',
    `${requested} is execution-bearing configuration (${entry.reason}); the file tools do not write it unless ` +
      `the server runs with ${ALLOW_EXEC_CONFIG_FLAG}. Reading it is allowed.`,
    {
      path: requested,
      details: {
        source: 'builtin',
        rule: 'exec_config',
        class: entry.reason,
        flag: ALLOW_EXEC_CONFIG_FLAG,
      },
      suggestion: 'Ask the user to make this change, or to restart the server with --allow-exec-config.',
    },
  );
}

/**
 * Refuses writing an execution-bearing configuration file, checked on every spelling given (the requested path and
 * the resolved real path, so a link to the file is refused too).
 * @throws ToolError FILE_POLICY_DENIED (source builtin, rule exec_config, class, flag)
 */
export function assertNotExecConfig(requested: string, spellings: readonly string[], allow: boolean): void {
  if (allow) return;
  for (const p of spellings) {
    const entry = execConfigEntryOf(p);
    if (entry) throw execConfigRefusal(requested, entry);
  }
}
