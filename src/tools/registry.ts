/**
 * The ordered list of tools. This order is the tools/list order (deterministic, docs/tools.md).
 */
import type { AnyTool } from './define-tool.js';
import { listAllowedDirectories } from './list-allowed-directories.js';
import { listDirectory } from './list-directory.js';
import { readFile } from './read-file.js';
import { readFiles } from './read-files.js';
import { readMedia } from './read-media.js';
import { searchFiles } from './search-files.js';
import { stat } from './stat.js';
import { writeFile } from './write-file.js';
import { editFile } from './edit-file.js';
import { applyPatch } from './apply-patch.js';
import { replaceInFiles } from './replace-in-files.js';
import { movePath } from './move-path.js';
import { copyPath } from './copy-path.js';
import { deletePath } from './delete-path.js';
import { createDirectory } from './create-directory.js';
import { gitStatusTool } from './git-status.js';
import { gitDiff } from './git-diff.js';
import { githubIssues } from './github-issues.js';
import { gitlabIssues } from './gitlab-issues.js';
import { listChanges, revertChanges } from './undo.js';

/** Every tool this build has, in listing order. */
export const TOOLS: readonly AnyTool[] = [
  listAllowedDirectories,
  readFile,
  readFiles,
  readMedia,
  listDirectory,
  searchFiles,
  stat,
  writeFile,
  editFile,
  applyPatch,
  replaceInFiles,
  movePath,
  copyPath,
  deletePath,
  createDirectory,
  listChanges,
  revertChanges,
  gitStatusTool,
  gitDiff,
  githubIssues,
  gitlabIssues,
];

/** Every tool name (for --tools validation). */
export const TOOL_NAMES: readonly string[] = TOOLS.map((t) => t.name);
