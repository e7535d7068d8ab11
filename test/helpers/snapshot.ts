/**
 * Snapshots of a directory tree for "assert absence" checks (STYLE §4.7): every entry's kind, bytes, mode, link target
 * and mtime, never following links. Take one before a rejected call and compare after: nothing may have changed.
 */
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

/** One entry of a snapshot. Bytes are kept as a hex hash plus the text (when short) so diffs stay readable. */
export interface EntrySnapshot {
  kind: 'file' | 'directory' | 'symlink' | 'other';
  mode: number;
  /** Files: sha256 of the bytes and the bytes themselves (base64). */
  sha256?: string;
  base64?: string;
  /** Links: the target as written. */
  target?: string;
  mtimeMs?: number;
}

/** relative path → entry, including the top directory itself as ''. */
export type TreeSnapshot = Record<string, EntrySnapshot>;

/** Snapshots `dir` recursively (never following links). `withMtime` adds file mtimes. */
export function snapshotTree(dir: string, options: { withMtime?: boolean } = {}): TreeSnapshot {
  const out: TreeSnapshot = {};
  const visit = (abs: string, rel: string): void => {
    const st = lstatSync(abs);
    const mode = st.mode & 0o7777;
    if (st.isSymbolicLink()) {
      out[rel] = { kind: 'symlink', mode, target: readlinkSync(abs) };
    } else if (st.isFile()) {
      const bytes = readFileSync(abs);
      out[rel] = {
        kind: 'file',
        mode,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        base64: bytes.toString('base64'),
        ...(options.withMtime ? { mtimeMs: st.mtimeMs } : {}),
      };
    } else if (st.isDirectory()) {
      out[rel] = { kind: 'directory', mode };
      for (const name of readdirSync(abs).sort()) visit(path.join(abs, name), rel === '' ? name : `${rel}/${name}`);
    } else {
      out[rel] = { kind: 'other', mode };
    }
  };
  visit(dir, '');
  return out;
}

/** sha256: + hex of `bytes`, as the server reports content hashes (SPEC §5). */
export function contentHash(bytes: Uint8Array | string): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}
