/**
 * The server's own reader of git's index file (gitformat-index(5)), so git never reads a work-tree path through an
 * index entry the server did not check (docs/security.md "What git may read"). The index is repository data: a
 * crafted entry `../../outside/notes.txt`, `/etc/hostname` or `.git/config` would make git open that file for a diff.
 *
 * `validateIndex` parses versions 2, 3 and 4 (with v4's path prefix compression), every entry and every extension
 * header, checks the trailing checksum, and applies git's own path rule for checkout (`verify_path`, with both the NTFS
 * and the HFS protections on: `.git` in any case, `.git.`, `.git `, `git~1`, `.g\u200cit`, …). Anything it does not
 * understand fails closed. It returns the bytes of a rebuilt index (the same header and entries, a cache tree the
 * server computed from those entries (git-cache-tree.ts), a fresh checksum): the file git reads is exactly what was
 * validated, and none of the repository's extensions (cache tree, untracked cache, split index link, offsets) reaches
 * git.
 *
 * The work runs in slices (`Slicer`): an index of a hundred thousand entries never holds the event loop for long.
 */
import { createHash } from 'node:crypto';
import { cacheTreeExtension, type TreeEntry } from './git-cache-tree.js';
import type { Slicer } from './slicer.js';

/** A failure to accept an index: `corrupt` (git itself would refuse it) or `unsupported` (the server refuses it). */
export class IndexRejection extends Error {
  constructor(
    readonly kind: 'corrupt' | 'unsupported',
    message: string,
    /** Typed facts for the envelope's details: never the entry's path (repository data, possibly an outside path). */
    readonly facts: Record<string, string | number> = {},
  ) {
    super(message);
  }
}

/** Index entry modes git writes: regular file, executable, symlink, gitlink (submodule). */
const MODES = new Set([0o100644, 0o100755, 0o120000, 0o160000]);
/** Extended flags git defines (intent-to-add, skip-worktree); any other bit is a format git does not know. */
const KNOWN_EXTENDED = 0x2000 | 0x4000;
/** Extensions whose presence changes what the entries mean: split index, sparse index. */
const UNSUPPORTED_EXTENSIONS = new Set(['link', 'sdir']);

/** HFS+ ignorable code points (git's `next_hfs_char`, utf8.c): skipped when HFS compares names. */
function isHfsIgnorable(cp: number): boolean {
  return (
    (cp >= 0x200c && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x206a && cp <= 0x206f) || cp === 0xfeff
  );
}

/** True when the component (one name between separators) is `.git` as NTFS sees it: `.git`, `git~1`, + dots/spaces. */
function isNtfsDotGit(c: string): boolean {
  const lower = c.toLowerCase();
  const rest = lower.startsWith('.git') ? lower.slice(4) : lower.startsWith('git~1') ? lower.slice(5) : null;
  if (rest === null) return false;
  // Trailing dots and spaces are dropped by NTFS; an alternate data stream (`.git::$INDEX_ALLOCATION`) names it too.
  const stream = rest.indexOf(':');
  return /^[. ]*$/.test(stream < 0 ? rest : rest.slice(0, stream));
}

/** True when the component is `.git` as HFS+ sees it: case folded, ignorable code points dropped. */
function isHfsDotGit(c: string): boolean {
  let folded = '';
  for (const ch of c) {
    const cp = ch.codePointAt(0)!;
    if (isHfsIgnorable(cp)) continue;
    folded += cp < 0x80 ? ch.toLowerCase() : ch;
    if (folded.length > 4) return false;
  }
  return folded === '.git';
}

/**
 * Why git would refuse `name` (an index entry's path, raw bytes) on checkout, or null when it is a safe relative path:
 * the rule of git's `verify_path` (read-cache.c) with core.protectNTFS and core.protectHFS both on, plus NUL.
 * @returns a rule id: `empty`, `nul`, `absolute`, `trailing_slash`, `empty_component`, `dot_component`,
 *   `dotdot_component`, `dot_git`
 */
export function indexPathProblem(name: Buffer): string | null {
  if (name.length === 0) return 'empty';
  if (name.includes(0)) return 'nul';
  if (name[0] === 0x2f) return 'absolute';
  if (name[name.length - 1] === 0x2f) return 'trailing_slash';
  const text = name.toString('utf8');
  for (const component of text.split('/')) {
    if (component === '') return 'empty_component';
    // git on checkout also treats a backslash as a separator when it protects NTFS: each piece is checked too.
    for (const piece of component.split('\\')) {
      if (piece === '.') return 'dot_component';
      if (piece === '..') return 'dotdot_component';
      if (isNtfsDotGit(piece) || isHfsDotGit(piece)) return 'dot_git';
    }
  }
  return null;
}

/** What `validateIndex` found. */
export interface ValidatedIndex {
  version: number;
  /** Entry paths (raw bytes), in index order. */
  names: Buffer[];
  /** The rebuilt index: write these parts in order (header and entries, the server's cache tree if any, checksum). */
  parts: Buffer[];
}

/** git's sort order of index entries: name bytes, then stage. */
function compareEntries(a: Buffer, sa: number, b: Buffer, sb: number): number {
  return Buffer.compare(a, b) || sa - sb;
}

/**
 * Parses and validates index file `bytes` of a repository whose object ids are `hashBytes` long.
 * @throws IndexRejection corrupt (truncated, bad signature or checksum, malformed entry, unsorted) or unsupported
 *   (unknown version, mode or flag, split or sparse index, an unknown required extension, an entry path git refuses)
 */
export async function validateIndex(bytes: Buffer, hashBytes: 20 | 32, slicer: Slicer): Promise<ValidatedIndex> {
  const corrupt = (message: string, facts: Record<string, string | number> = {}) =>
    new IndexRejection('corrupt', message, facts);
  if (bytes.length < 12 + hashBytes || bytes.toString('latin1', 0, 4) !== 'DIRC')
    throw corrupt('is not an index file (no DIRC signature, or truncated)');
  const version = bytes.readUInt32BE(4);
  if (version < 2 || version > 4)
    throw new IndexRejection('unsupported', `has index version ${version}, which the git tools do not read`, {
      version,
    });
  const count = bytes.readUInt32BE(8);
  const end = bytes.length - hashBytes;

  // The trailing checksum over everything before it; all zeros when written with index.skipHash.
  const trailer = bytes.subarray(end);
  if (trailer.some((b) => b !== 0)) {
    const hash = createHash(hashBytes === 20 ? 'sha1' : 'sha256');
    for (let at = 0; at < end; at += 1 << 20) {
      hash.update(bytes.subarray(at, Math.min(end, at + (1 << 20))));
      await slicer.check();
    }
    if (!hash.digest().equals(trailer)) throw corrupt('has a wrong checksum');
  }

  const names: Buffer[] = [];
  // What the cache tree is computed from; null once an entry is unmerged or intent-to-add (git writes no tree then).
  let treeEntries: TreeEntry[] | null = [];
  let refused: IndexRejection | null = null;
  let at = 12;
  let previous: Buffer = Buffer.alloc(0);
  let previousStage = -1;
  const fixed = 40 + hashBytes + 2; // stat fields, mode, size, object id, flags
  for (let i = 0; i < count; i++) {
    const wait = slicer.check();
    if (wait) await wait;
    if (at + fixed > end) throw corrupt('is truncated inside an entry', { entry: i });
    const mode = bytes.readUInt32BE(at + 24);
    const flags = bytes.readUInt16BE(at + 40 + hashBytes);
    const entryAt = at;
    let nameAt = at + fixed;
    if (flags & 0x4000) {
      if (version < 3) throw corrupt('has an extended entry in a version 2 index', { entry: i });
      if (nameAt + 2 > end) throw corrupt('is truncated inside an entry', { entry: i });
      const extended = bytes.readUInt16BE(nameAt);
      if (extended & ~KNOWN_EXTENDED)
        throw new IndexRejection('unsupported', 'has an entry flag the git tools do not know', { entry: i });
      if (extended & 0x2000) treeEntries = null; // intent-to-add
      nameAt += 2;
    }
    if (!MODES.has(mode))
      throw new IndexRejection('unsupported', 'has an entry of a mode the git tools do not read', { entry: i });
    const stage = (flags >> 12) & 3;
    const declared = flags & 0xfff;
    let name: Buffer;
    if (version === 4) {
      // Prefix compression: a varint of bytes to drop from the previous name, then the NUL-terminated rest.
      let p = nameAt;
      if (p >= end) throw corrupt('is truncated inside an entry', { entry: i });
      let c = bytes[p++];
      let strip = c & 0x7f;
      while (c & 0x80) {
        if (p >= end || strip > 0xffffff) throw corrupt('has a malformed entry name', { entry: i });
        c = bytes[p++];
        strip = (strip + 1) * 128 + (c & 0x7f);
      }
      if (strip > previous.length) throw corrupt('has a malformed entry name', { entry: i });
      const nul = bytes.indexOf(0, p);
      if (nul < 0 || nul >= end) throw corrupt('is truncated inside an entry', { entry: i });
      name = Buffer.concat([previous.subarray(0, previous.length - strip), bytes.subarray(p, nul)]);
      at = nul + 1;
    } else {
      const nul = bytes.indexOf(0, nameAt);
      if (nul < 0 || nul >= end) throw corrupt('is truncated inside an entry', { entry: i });
      name = bytes.subarray(nameAt, nul);
      // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes (counted from the entry's start).
      const size = (nul - at + 8) & ~7;
      const next = at + size;
      if (next > end) throw corrupt('is truncated inside an entry', { entry: i });
      for (let z = nul; z < next; z++) if (bytes[z] !== 0) throw corrupt('has a malformed entry', { entry: i });
      at = next;
    }
    // The declared length must be the real one (git copies `declared` bytes: a NUL inside would cut the name short
    // for one reader and not for another).
    if (declared !== Math.min(name.length, 0xfff))
      throw corrupt('has an entry whose name length is wrong', { entry: i });
    const problem = indexPathProblem(name);
    // Reported after the extensions are read: a split index (whose entries mean something else) is named as such.
    if (problem !== null && refused === null)
      refused = new IndexRejection(
        'unsupported',
        `has an entry git refuses to check out (${problem.replace(/_/g, ' ')})`,
        { entry: i, rule: problem },
      );
    if (refused === null && i > 0 && compareEntries(previous, previousStage, name, stage) >= 0)
      throw corrupt('has entries out of order or repeated', { entry: i });
    names.push(name);
    if (stage !== 0) treeEntries = null;
    treeEntries?.push({ name, mode, oid: bytes.subarray(entryAt + 40, entryAt + 40 + hashBytes) });
    previous = name;
    previousStage = stage;
  }
  const entriesEnd = at;

  // Extensions: a 4-byte signature and a 32-bit size each. Optional ones (upper-case first letter) are dropped from
  // the rebuilt index; a required one git would need to understand is refused.
  while (at < end) {
    if (at + 8 > end) throw corrupt('is truncated inside an extension');
    const signature = bytes.toString('latin1', at, at + 4);
    const size = bytes.readUInt32BE(at + 4);
    if (at + 8 + size > end) throw corrupt('is truncated inside an extension');
    if (UNSUPPORTED_EXTENSIONS.has(signature) || !(signature[0] >= 'A' && signature[0] <= 'Z'))
      throw new IndexRejection(
        'unsupported',
        signature === 'link'
          ? 'is a split index, which the git tools do not read'
          : signature === 'sdir'
            ? 'is a sparse index, which the git tools do not read'
            : 'uses an index extension the git tools do not know',
      );
    at += 8 + size;
  }
  if (refused) throw refused;

  const body = bytes.subarray(0, entriesEnd);
  const tree = treeEntries ? await cacheTreeExtension(treeEntries, hashBytes, slicer) : null;
  const hash = createHash(hashBytes === 20 ? 'sha1' : 'sha256');
  for (let p = 0; p < body.length; p += 1 << 20) {
    hash.update(body.subarray(p, Math.min(body.length, p + (1 << 20))));
    await slicer.check();
  }
  if (tree) hash.update(tree);
  return { version, names, parts: tree ? [body, tree, hash.digest()] : [body, hash.digest()] };
}
