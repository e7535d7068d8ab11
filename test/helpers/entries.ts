/**
 * list_directory's compact entries (issue #15; src/tools/list-directory.ts): a plain file is its path, a plain
 * directory its path with `/` after it, anything else an object with `path`. Tests compare paths and objects.
 */

/** The path of one entry, without a directory's trailing `/`. */
export function entryPath(e: unknown): string {
  return typeof e === 'string' ? e.replace(/\/$/, '') : (e as { path: string }).path;
}

/** An entry as the object it stands for: a string becomes `{path, type}`. */
export function entryObject(e: unknown): Record<string, unknown> {
  if (typeof e !== 'string') return e as Record<string, unknown>;
  return e.endsWith('/') ? { path: e.slice(0, -1), type: 'directory' } : { path: e, type: 'file' };
}
