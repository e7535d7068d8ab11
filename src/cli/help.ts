/**
 * The command line's help beside `fs-tools --help` (docs/cli.md): `help COMMAND` / `COMMAND --help`, `help TOOL` /
 * `call TOOL --help` (rendered from the tool's schema by src/server/tool-docs.ts, the renderer of docs/tools.md),
 * `help exit-codes`, and the one-line-per-tool listing of `fs-tools tools`.
 */
import type { Command } from '../config.js';
import { renderToolHelp } from '../server/tool-docs.js';
import type { AnyTool } from '../tools/define-tool.js';

/** Exit statuses of every command (docs/cli.md "Exit codes"). */
export const EXIT_CODES_HELP = `Exit codes:
  0  success (serve: the client closed stdin or sent SIGTERM; call: the tool answered with a result; batch: every
     line did)
  1  a tool answered with an error envelope (call: printed on stdout; batch: any line's "ok" is false)
  2  usage error, nothing was run: an unknown or malformed flag, command, tool or help topic (with "did you mean"
     for a near miss), call arguments that are not JSON, a bad policy file, a bad root (call, batch, tools; serve
     leaves it out and names it), a --tools list that leaves no tool; one line on stderr starting "fs-tools: "
`;

const COMMAND_HELP: Record<Command, string> = {
  call: `fs-tools [options] [ROOT ...] call TOOL [JSON_ARGS|-] [--format json|text]

Runs one tool call in this process, with the same options and roots as the server, and prints the outcome.
  JSON_ARGS        the arguments as one JSON object (default {}); '-' reads them from stdin (at most 10 MiB)
  --format json    the structured result, or the error envelope, as JSON (default)
  --format text    the text content an MCP client's model would see for the same result or envelope
Exit 0: a result; 1: an error envelope (on stdout); 2: usage error (on stderr).
Each call is a new process: an edit after a read in another call has no hash memory (HASH_REQUIRED). Pass the
read's content_hash as expected_hash, run both in one \`fs-tools batch\`, or use --auto-occ=off.
A tool's arguments: fs-tools help TOOL (or fs-tools call TOOL --help).
Example:
  fs-tools call read_file '{"path":"README.md","head":5}' --format text
  echo '{"path":"src"}' | fs-tools call list_directory -
`,
  batch: `fs-tools [options] [ROOT ...] batch < requests.jsonl

Runs many tool calls in one session: reads JSON Lines on stdin, one request per line,
  {"tool": "read_file", "arguments": {"path": "a.txt"}}
and writes one JSON line per request on stdout, in order, as each finishes:
  {"tool": "read_file", "ok": true, "result": {...}}
  {"tool": "read_file", "ok": false, "error": {"code": "NOT_FOUND", ...}}
One start-up for all lines, and one hash memory: an edit_file after a read_file of the same file in the same batch
needs no expected_hash. A line that is not such a request (bad JSON, unknown tool, over 10 MiB) gets an error line
with code VALIDATION and the batch goes on; blank lines are skipped. End of stdin ends the batch.
Exit 0: every line succeeded; 1: any line failed; 2: usage error (nothing read).
`,
  tools: `fs-tools [options] tools [--json]

Lists the tools this configuration exposes (after --tools and --readonly), one per line with its purpose.
  --json   the tools/list entries as JSON: name, title, description, input and output schemas, annotations
A tool's arguments: fs-tools help TOOL.
`,
  help: `fs-tools help [COMMAND|TOOL|exit-codes]

Prints the help of a command (call, batch, tools, help, version), of a tool (its arguments with types, defaults,
required marks and an example), or the exit codes. Without a topic: the same as fs-tools --help.
`,
  version: `fs-tools version (or --version)

Prints the version, then whether the kernel wall (Landlock) would be enforced when serving.
`,
};

/**
 * One short purpose per tool for `fs-tools tools` (what it is for, not its title). A tool missing here is listed with
 * its title; test/e2e/cli-commands.test.ts fails when one is missing.
 */
const TOOL_PURPOSES: Record<string, string> = {
  list_allowed_directories: 'the roots in force, where they came from, the flags, budget and version',
  read_file: 'read a text file, whole or a line/byte range, with its content_hash',
  read_files: 'read up to 100 files in one call, each result or its own envelope',
  read_media: 'an image or audio file as a content block the model can look at',
  list_directory: 'list a directory tree to a depth, paged, .gitignore respected',
  search_files: 'find files by glob and lines by text or regex, with context',
  stat: 'type, size, times, mode, link target and content hash of a path',
  write_file: 'create a file or replace its whole content, atomically',
  edit_file: 'replace exact text in a file, all or none; returns the unified diff',
  apply_patch: 'apply a unified diff to one or more files as one transaction',
  replace_in_files: 'replace text across the files under a directory: preview, then apply',
  move_path: 'move or rename a file, link or directory',
  copy_path: 'copy a file, link or directory tree',
  delete_path: 'delete a file, link or directory',
  create_directory: 'create a directory and its missing parents',
  list_changes: 'the file changes this server made, newest first',
  revert_changes: 'undo changes this server made',
  git_status: "a work tree's branch, upstream and changed entries",
  git_diff: 'the unified diff of the work tree or the index, paged by file',
  github_issues: 'list, view, create, comment on, close and edit GitHub issues',
  gitlab_issues: 'list, view, create, comment on, close and edit GitLab issues',
};

/** The purpose `fs-tools tools` prints for `tool`. */
export function toolPurpose(tool: AnyTool): string {
  return TOOL_PURPOSES[tool.name] ?? tool.title;
}

/** `fs-tools tools`: one line per tool, its name then its purpose. */
export function renderToolList(tools: readonly AnyTool[]): string {
  const width = Math.max(...tools.map((t) => t.name.length)) + 2;
  return tools.map((t) => `${t.name.padEnd(width)}${toolPurpose(t)}\n`).join('');
}

/**
 * The help for `topic`: a command, a tool name (looked up in `tools`, all tools of the registry), `exit-codes`, or
 * absent for the general help `general`. The topic was checked by the parser (src/config.ts).
 */
export function renderHelp(topic: string | undefined, general: string, tools: readonly AnyTool[]): string {
  if (topic === undefined) return general;
  if (topic === 'exit-codes') return EXIT_CODES_HELP;
  if (topic in COMMAND_HELP) return COMMAND_HELP[topic as Command];
  const tool = tools.find((t) => t.name === topic);
  return tool ? renderToolHelp(tool) : general;
}
