/**
 * The cache tree of a rebuilt index (the `TREE` extension, gitformat-index(5)), computed by the server from the
 * validated entries alone (docs/security.md "What git may read"). git's status compares HEAD with the index directory
 * by directory: where the index's cache tree names a directory's tree object and HEAD's tree holds the same object
 * id, git skips that directory's entries without reading its tree. The repository's own cache tree is never passed
 * on (its object ids are claims nobody checked); this one is, for every directory, the id of the tree object git
 * would write for that span of entries, so it says "unchanged" exactly when the entries equal HEAD's tree there.
 *
 * Computed only for an index git would write a tree from: every entry at stage 0, none intent-to-add, no name that
 * is both a file and a directory. Otherwise there is no cache tree, and git compares every entry, as before.
 */
import { createHash } from 'node:crypto';
import type { Slicer } from './slicer.js';

/** One directory of the cache tree: its name in its parent, entries covered, tree object id, subdirectories. */
interface TreeNode {
  name: Buffer;
  count: number;
  oid: Buffer;
  children: TreeNode[];
}

/** A directory being filled: its path prefix (with the trailing `/`), first entry, tree object body so far. */
interface OpenDirectory {
  prefix: Buffer;
  node: TreeNode;
  first: number;
  body: Buffer[];
  /** The names of its files so far (latin1): a directory of the same name is a conflict git refuses to write. */
  files: Set<string>;
}

/** The tree-entry mode strings of the index modes `validateIndex` accepts. */
const MODE_TEXT = new Map<number, string>([
  [0o100644, '100644'],
  [0o100755, '100755'],
  [0o120000, '120000'],
  [0o160000, '160000'],
]);

/** The facts of one validated index entry the cache tree needs. */
export interface TreeEntry {
  /** Path (raw bytes, validated: relative, no empty, `.` or `..` component). */
  name: Buffer;
  /** One of MODE_TEXT's modes. */
  mode: number;
  /** The object id (`hashBytes` long). */
  oid: Buffer;
}

/**
 * The `TREE` extension (signature, size and data) for `entries` (in index order, all stage 0, none intent-to-add),
 * or null when a name is both a file and a directory (git refuses to write such a tree). Subdirectories are written in
 * git's own order (name length, then bytes), so the extension equals, byte for byte, the one git writes after
 * `git write-tree`.
 * @param hashBytes 20 (sha1) or 32 (sha256): the repository's object format
 */
export async function cacheTreeExtension(
  entries: readonly TreeEntry[],
  hashBytes: 20 | 32,
  slicer: Slicer,
): Promise<Buffer | null> {
  if (entries.length === 0) return null;
  const algorithm = hashBytes === 20 ? 'sha1' : 'sha256';
  const treeId = (body: Buffer[]): Buffer => {
    const content = Buffer.concat(body);
    return createHash(algorithm).update(`tree ${content.length}\0`).update(content).digest();
  };
  const root: OpenDirectory = {
    prefix: Buffer.alloc(0),
    node: { name: Buffer.alloc(0), count: 0, oid: Buffer.alloc(0), children: [] },
    first: 0,
    body: [],
    files: new Set(),
  };
  const open: OpenDirectory[] = [root];
  /** Closes the innermost open directory at entry `end`: its count and id, and its line in its parent's body. */
  const close = (end: number): void => {
    const dir = open.pop()!;
    dir.node.count = end - dir.first;
    dir.node.oid = treeId(dir.body);
    const parent = open[open.length - 1];
    parent.body.push(Buffer.from(`40000 `, 'latin1'), dir.node.name, Buffer.from([0]), dir.node.oid);
    parent.node.children.push(dir.node);
  };
  for (let i = 0; i < entries.length; i++) {
    if ((i & 1023) === 1023) {
      const wait = slicer.check();
      if (wait) await wait;
    }
    const { name, mode, oid } = entries[i];
    while (open.length > 1 && !startsWith(name, open[open.length - 1].prefix)) close(i);
    let at = open[open.length - 1].prefix.length;
    for (let slash = name.indexOf(0x2f, at); slash >= 0; slash = name.indexOf(0x2f, at)) {
      const component = name.subarray(at, slash);
      const parent = open[open.length - 1];
      if (parent.files.has(component.toString('latin1'))) return null;
      open.push({
        prefix: name.subarray(0, slash + 1),
        node: { name: component, count: 0, oid: Buffer.alloc(0), children: [] },
        first: i,
        body: [],
        files: new Set(),
      });
      at = slash + 1;
    }
    const base = name.subarray(at);
    const dir = open[open.length - 1];
    dir.files.add(base.toString('latin1'));
    dir.body.push(Buffer.from(`${MODE_TEXT.get(mode)} `, 'latin1'), base, Buffer.from([0]), oid);
  }
  while (open.length > 1) close(entries.length);
  root.node.count = entries.length;
  root.node.oid = treeId(root.body);
  // Top-down, depth first, each directory's subdirectories in git's order (`subtree_name_cmp`: length, then bytes).
  const out: Buffer[] = [];
  const pending: TreeNode[] = [root.node];
  while (pending.length > 0) {
    const node = pending.pop()!;
    const children = [...node.children].sort((a, b) => a.name.length - b.name.length || Buffer.compare(a.name, b.name));
    out.push(node.name, Buffer.from(`\0${node.count} ${children.length}\n`, 'latin1'), node.oid);
    for (let k = children.length - 1; k >= 0; k--) pending.push(children[k]);
  }
  const data = Buffer.concat(out);
  const header = Buffer.alloc(8);
  header.write('TREE', 0, 'latin1');
  header.writeUInt32BE(data.length, 4);
  return Buffer.concat([header, data]);
}

/** True when `name` begins with `prefix`. */
function startsWith(name: Buffer, prefix: Buffer): boolean {
  return name.length > prefix.length && prefix.compare(name, 0, prefix.length, 0, prefix.length) === 0;
}
