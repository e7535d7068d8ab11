/**
 * Writes git index files byte by byte (gitformat-index(5)), for tests that need entries git itself refuses to create:
 * `../x`, `/etc/x`, `.git/x`, names with NUL, a declared name length that disagrees with the NUL, version 4 prefix
 * compression, extensions. Every field is taken as given; nothing is validated (that is the server's job).
 */
import { createHash } from 'node:crypto';

/** One entry as written. `path` is raw bytes (a string is UTF-8). */
export interface IndexEntrySpec {
  path: string | Buffer;
  oid: string;
  mode?: number;
  size?: number;
  /** Seconds; the other stat fields are 0 unless given. */
  mtime?: number;
  stage?: number;
  /** Overrides the 12-bit name length of the flags (default: min(length, 0xfff)). */
  nameLength?: number;
  /** Version 3+: the extended flags word (skip-worktree, intent-to-add). */
  extended?: number;
}

export interface IndexSpec {
  version?: 2 | 3 | 4;
  entries: IndexEntrySpec[];
  /** Raw extensions: 4-byte signature and data. */
  extensions?: Array<{ signature: string; data: Buffer }>;
  /** Overrides the entry count in the header. */
  count?: number;
  /** Object id length in bytes (20 sha1, 32 sha256). */
  hashBytes?: 20 | 32;
  /** Write a zero trailing checksum (index.skipHash), or a wrong one. */
  checksum?: 'right' | 'zero' | 'wrong';
}

function varint(n: number): Buffer {
  // git's offset encoding (varint.c): big-endian 7-bit groups, each continuation adds one.
  const bytes = [n & 0x7f];
  while ((n >>= 7)) {
    n--;
    bytes.unshift(0x80 | (n & 0x7f));
  }
  return Buffer.from(bytes);
}

/** The bytes of an index file. */
export function buildIndex(spec: IndexSpec): Buffer {
  const version = spec.version ?? 2;
  const hashBytes = spec.hashBytes ?? 20;
  const parts: Buffer[] = [];
  const header = Buffer.alloc(12);
  header.write('DIRC', 0, 'latin1');
  header.writeUInt32BE(version, 4);
  header.writeUInt32BE(spec.count ?? spec.entries.length, 8);
  parts.push(header);
  let previous: Buffer = Buffer.alloc(0);
  for (const e of spec.entries) {
    const name = typeof e.path === 'string' ? Buffer.from(e.path, 'utf8') : e.path;
    const extended = version >= 3 && e.extended !== undefined;
    const fixed = Buffer.alloc(40 + hashBytes + 2 + (extended ? 2 : 0));
    fixed.writeUInt32BE(e.mtime ?? 0, 0); // ctime s
    fixed.writeUInt32BE(e.mtime ?? 0, 8); // mtime s
    fixed.writeUInt32BE(e.mode ?? 0o100644, 24);
    fixed.writeUInt32BE(e.size ?? 0, 36);
    Buffer.from(e.oid, 'hex').copy(fixed, 40);
    const flags = (extended ? 0x4000 : 0) | ((e.stage ?? 0) << 12) | (e.nameLength ?? Math.min(name.length, 0xfff));
    fixed.writeUInt16BE(flags, 40 + hashBytes);
    if (extended) fixed.writeUInt16BE(e.extended!, 42 + hashBytes);
    if (version === 4) {
      let common = 0;
      while (common < previous.length && common < name.length && previous[common] === name[common]) common++;
      parts.push(fixed, varint(previous.length - common), name.subarray(common), Buffer.from([0]));
    } else {
      const len = fixed.length + name.length;
      const padded = (len + 8) & ~7;
      parts.push(fixed, name, Buffer.alloc(padded - len));
    }
    previous = name;
  }
  for (const x of spec.extensions ?? []) {
    const h = Buffer.alloc(8);
    h.write(x.signature, 0, 'latin1');
    h.writeUInt32BE(x.data.length, 4);
    parts.push(h, x.data);
  }
  const body = Buffer.concat(parts);
  const mode = spec.checksum ?? 'right';
  const sum =
    mode === 'zero'
      ? Buffer.alloc(hashBytes)
      : createHash(hashBytes === 20 ? 'sha1' : 'sha256')
          .update(mode === 'wrong' ? Buffer.concat([body, Buffer.from('x')]) : body)
          .digest();
  return Buffer.concat([body, sum]);
}

/** The object id git gives `content` as a blob (sha1). */
export function blobId(content: string | Buffer): string {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  return createHash('sha1')
    .update(Buffer.concat([Buffer.from(`blob ${bytes.length}\0`), bytes]))
    .digest('hex');
}
