/**
 * Every tool by name, with what the command line needs before any tool module is evaluated (its `--tools` group and
 * whether every call of it mutates) and a loader of its definition. A one-shot `fs-tools call` evaluates the module
 * of the one tool it calls (building a tool's zod schemas and its dependencies' was most of a call's start after
 * compiling: docs/benchmarks.md "Start-up, read_file and memory"); a server holds these entries and evaluates a
 * tool's module at the tool's first call (tools/list answers from the entries the build generated:
 * src/server/tool-schemas.ts); the other modes take the whole list (src/tools/registry.ts). The loaders are dynamic imports inside the one bundle (scripts/bundle.mjs): no file is
 * read. test/tools/tool-index.test.ts keeps this list equal to the registry's, entry for entry.
 */
import type { ToolGroup } from '../config.js';
import type { AnyTool } from './define-tool.js';

/** One tool of the index. */
export interface ToolIndexEntry {
  name: string;
  group: ToolGroup;
  /** True when every call mutates (the tool's `mutating: true`); false when none does or it depends on the call. */
  mutating: boolean;
  /** The tool's definition (its module is evaluated on the first load). */
  load: () => Promise<AnyTool>;
}

/** Every tool, in registry (listing) order. */
export const TOOL_INDEX: readonly ToolIndexEntry[] = [
  {
    name: 'list_allowed_directories',
    group: 'fs-read',
    mutating: false,
    load: async () => (await import('./list-allowed-directories.js')).listAllowedDirectories,
  },
  { name: 'read_file', group: 'fs-read', mutating: false, load: async () => (await import('./read-file.js')).readFile },
  {
    name: 'read_files',
    group: 'fs-read',
    mutating: false,
    load: async () => (await import('./read-files.js')).readFiles,
  },
  {
    name: 'read_media',
    group: 'fs-read',
    mutating: false,
    load: async () => (await import('./read-media.js')).readMedia,
  },
  {
    name: 'list_directory',
    group: 'fs-read',
    mutating: false,
    load: async () => (await import('./list-directory.js')).listDirectory,
  },
  {
    name: 'search_files',
    group: 'fs-read',
    mutating: false,
    load: async () => (await import('./search-files.js')).searchFiles,
  },
  { name: 'stat', group: 'fs-read', mutating: false, load: async () => (await import('./stat.js')).stat },
  {
    name: 'write_file',
    group: 'fs-write',
    mutating: true,
    load: async () => (await import('./write-file.js')).writeFile,
  },
  { name: 'edit_file', group: 'fs-write', mutating: true, load: async () => (await import('./edit-file.js')).editFile },
  {
    name: 'apply_patch',
    group: 'fs-write',
    mutating: true,
    load: async () => (await import('./apply-patch.js')).applyPatch,
  },
  {
    name: 'replace_in_files',
    group: 'fs-write',
    mutating: true,
    load: async () => (await import('./replace-in-files.js')).replaceInFiles,
  },
  { name: 'move_path', group: 'fs-write', mutating: true, load: async () => (await import('./move-path.js')).movePath },
  { name: 'copy_path', group: 'fs-write', mutating: true, load: async () => (await import('./copy-path.js')).copyPath },
  {
    name: 'delete_path',
    group: 'fs-write',
    mutating: true,
    load: async () => (await import('./delete-path.js')).deletePath,
  },
  {
    name: 'create_directory',
    group: 'fs-write',
    mutating: true,
    load: async () => (await import('./create-directory.js')).createDirectory,
  },
  {
    name: 'list_changes',
    group: 'fs-read',
    mutating: false,
    load: async () => (await import('./undo.js')).listChanges,
  },
  {
    name: 'revert_changes',
    group: 'fs-write',
    mutating: true,
    load: async () => (await import('./undo.js')).revertChanges,
  },
  {
    name: 'git_status',
    group: 'git',
    mutating: false,
    load: async () => (await import('./git-status.js')).gitStatusTool,
  },
  { name: 'git_diff', group: 'git', mutating: false, load: async () => (await import('./git-diff.js')).gitDiff },
  {
    name: 'github_issues',
    group: 'issues',
    mutating: false,
    load: async () => (await import('./github-issues.js')).githubIssues,
  },
  {
    name: 'gitlab_issues',
    group: 'issues',
    mutating: false,
    load: async () => (await import('./gitlab-issues.js')).gitlabIssues,
  },
];

/** Every tool name, in registry order (for `--tools` and the command line's checks). */
export const TOOL_INDEX_NAMES: readonly string[] = TOOL_INDEX.map((t) => t.name);

/**
 * A tool as a process holds it: its definition, or its index entry whose module is evaluated on the tool's first call
 * (a server: src/cli.ts). Both carry the name, group and always-mutating flag the listing needs.
 */
export type ToolEntry = AnyTool | ToolIndexEntry;

/** The definition of a tool entry, evaluating its module on first use (the module system keeps it after). */
export async function toolDefinition(entry: ToolEntry): Promise<AnyTool> {
  return 'load' in entry ? await entry.load() : entry;
}
