/**
 * HEAD and the refs a view needs, read as hostile input (docs/security.md "What git may read"): ref names held to
 * git's check-ref-format rules before they name a file, loose refs read through the verifier, packed-refs checked line
 * by line in slices, symbolic refs followed to depth 5, and an upstream mapped through the fetch refspecs.
 */

import path from 'node:path';
import type { Slicer } from './slicer.js';
import { repoError, VIEW_CAPS, type Verifier } from './git-verifier.js';

/** Git's check-ref-format rules for a full ref name (refs/…); anything else is refused before it names a file. */
export function isSafeRefName(name: string): boolean {
  if (!name.startsWith('refs/') || name.length > 1024) return false;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return false;
  if (name.includes('..') || name.includes('@{') || name.endsWith('.') || name.endsWith('/')) return false;
  return name.split('/').every((c) => c !== '' && !c.startsWith('.') && !c.endsWith('.lock'));
}

export const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** HEAD: a symbolic ref to a safe ref name, or a detached object id. */
export function readHead(
  gitDir: string,
  verify: Verifier,
): { kind: 'symbolic'; ref: string } | { kind: 'detached'; oid: string } {
  const file = path.join(gitDir, 'HEAD');
  const bytes = verify.read(file, 'HEAD', VIEW_CAPS.small);
  const text = bytes?.toString('utf8').trim() ?? '';
  const m = /^ref: (.+)$/.exec(text);
  if (m && isSafeRefName(m[1])) return { kind: 'symbolic', ref: m[1] };
  if (OID.test(text)) return { kind: 'detached', oid: text };
  throw repoError(
    'corrupt_repository',
    file,
    `${file} is not a valid HEAD (missing, empty, or not a ref or object id); ${gitDir} cannot be read as a repository.`,
  );
}

/** Per-worktree refs live in the git dir; every other ref in the common dir (gitrepository-layout(5)). */
function refHome(ref: string, gitDir: string, commonDir: string): string {
  return /^refs\/(?:bisect|worktree|rewritten)\//.test(ref) ? gitDir : commonDir;
}

/** True when bytes [from, to) of `b` are an object id (40 or 64 lower-case hex digits). */
export function isOidBytes(b: Buffer, from: number, to: number): boolean {
  if (to - from !== 40 && to - from !== 64) return false;
  for (let i = from; i < to; i++) {
    const c = b[i];
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

/**
 * packed-refs of a common dir: read (verified, capped) once per view, every line checked in slices (a malformed line
 * fails closed, as git would), then looked up by byte search. Nothing of it is handed to git: the view writes its own
 * packed-refs with the refs it resolved.
 */
export class PackedRefs {
  private bytes: Buffer | null | undefined;
  /** The refs looked up in the same pass that checks the lines: ref → object id of its first line. */
  private readonly found = new Map<string, string>();
  private readonly wanted: Buffer[];
  constructor(
    private readonly commonDir: string,
    private readonly verify: Verifier,
    private readonly slicer: Slicer,
    wanted: readonly string[],
  ) {
    this.wanted = wanted.map((r) => Buffer.from(r, 'utf8'));
  }

  private async load(): Promise<Buffer | null> {
    const file = path.join(this.commonDir, 'packed-refs');
    const found = await this.verify.readLarge(file, 'packed-refs', VIEW_CAPS.packedRefs);
    const b = found?.bytes ?? null;
    if (!b) return null;
    const malformed = () =>
      repoError(
        'corrupt_repository',
        file,
        `${file} has a malformed line; ${this.commonDir} cannot be read as a repository.`,
      );
    for (let at = 0, lines = 0; at < b.length; lines++) {
      if ((lines & 255) === 0) {
        const wait = this.slicer.check();
        if (wait) await wait;
      }
      const c = b[at];
      let i = at;
      let sp = -1;
      if (c !== 0x0a && !(c === 0x0d && (at + 1 === b.length || b[at + 1] === 0x0a)) && c !== 0x23 && c !== 0x5e) {
        // `<object id> <ref>`: the id is checked here, the ref name where it is looked up.
        while (i < b.length && i - at <= 64 && ((b[i] >= 0x30 && b[i] <= 0x39) || (b[i] >= 0x61 && b[i] <= 0x66))) i++;
        if ((i - at !== 40 && i - at !== 64) || b[i] !== 0x20) throw malformed();
        sp = i;
      }
      // To the end of the line: a short loop for ordinary lines, a native search for long ones.
      const stop = Math.min(b.length, i + 512);
      while (i < stop && b[i] !== 0x0a) i++;
      if (i === stop && i < b.length) {
        i = b.indexOf(0x0a, i);
        if (i < 0) i = b.length;
      }
      if (sp >= 0) {
        const nameEnd = b[i - 1] === 0x0d ? i - 1 : i;
        for (const w of this.wanted) {
          if (nameEnd - sp - 1 !== w.length || b.compare(w, 0, w.length, sp + 1, nameEnd) !== 0) continue;
          const ref = w.toString('utf8');
          if (!this.found.has(ref)) this.found.set(ref, b.toString('latin1', at, sp));
        }
      }
      at = i + 1;
    }
    return b;
  }

  /**
   * The object id of `ref` in packed-refs (its first line), or undefined. The search runs in 256 KiB windows, a slice
   * check after each. @throws corrupt_repository
   */
  async get(ref: string): Promise<string | undefined> {
    if (this.bytes === undefined) this.bytes = await this.load();
    const b = this.bytes;
    if (!b) return undefined;
    if (this.wanted.some((w) => w.toString('utf8') === ref)) return this.found.get(ref);
    const needle = Buffer.from(` ${ref}`, 'utf8');
    for (let from = 0; from < b.length;) {
      const windowEnd = Math.min(b.length, from + (1 << 18) + needle.length);
      const at: number = b.subarray(0, windowEnd).indexOf(needle, from);
      if (at < 0) {
        if (windowEnd === b.length) return undefined;
        from = Math.max(from + 1, windowEnd - needle.length + 1);
        const wait = this.slicer.check();
        if (wait) await wait;
        continue;
      }
      from = at + 1;
      const after = at + needle.length;
      const ends =
        after === b.length ||
        b[after] === 0x0a ||
        (b[after] === 0x0d && (after + 1 === b.length || b[after + 1] === 0x0a));
      const lineStart = at === 0 ? 0 : b.lastIndexOf(0x0a, at - 1) + 1;
      if (ends && isOidBytes(b, lineStart, at)) return b.toString('latin1', lineStart, at);
    }
    return undefined;
  }
}

/** The object id `ref` names (loose file, else packed-refs; symbolic refs followed to depth 5), or null. */
export async function resolveRef(
  ref: string,
  gitDir: string,
  commonDir: string,
  verify: Verifier,
  packed: PackedRefs,
  depth: number,
): Promise<string | null> {
  if (depth > 5 || !isSafeRefName(ref)) return null;
  const home = refHome(ref, gitDir, commonDir);
  const file = path.join(home, ...ref.split('/'));
  const bytes = verify.read(file, 'ref', VIEW_CAPS.small);
  if (bytes) {
    const text = bytes.toString('utf8').trim();
    if (OID.test(text)) return text;
    const m = /^ref: (.+)$/.exec(text);
    if (m) return resolveRef(m[1], gitDir, commonDir, verify, packed, depth + 1);
    throw repoError('corrupt_repository', file, `${file} is not a valid ref.`);
  }
  return (await packed.get(ref)) ?? null;
}

/** The remote-tracking ref `merge` maps to through fetch refspecs (`[+]src:dst`, at most one `*` each), or null. */
export function mapThroughRefspecs(merge: string, refspecs: readonly string[]): string | null {
  for (let spec of refspecs) {
    if (spec.startsWith('^')) continue;
    if (spec.startsWith('+')) spec = spec.slice(1);
    const colon = spec.indexOf(':');
    if (colon < 0) continue;
    const src = spec.slice(0, colon);
    const dst = spec.slice(colon + 1);
    const star = src.indexOf('*');
    if (star < 0) {
      if (src === merge) return dst;
      continue;
    }
    const pre = src.slice(0, star);
    const post = src.slice(star + 1);
    if (merge.length >= pre.length + post.length && merge.startsWith(pre) && merge.endsWith(post)) {
      const mid = merge.slice(pre.length, merge.length - post.length);
      return dst.includes('*') ? dst.replace('*', mid) : dst;
    }
  }
  return null;
}

/**
 * The object ids of `wanted` (HEAD's branch and its upstream; nulls skipped), each a loose ref or else looked up in
 * one pass over packed-refs: ref → object id, for the refs that resolve.
 * @throws ToolError corrupt_repository (a malformed ref or packed-refs line), and the verifier's errors
 */
export async function resolveViewRefs(
  wanted: readonly (string | null)[],
  gitDir: string,
  commonDir: string,
  verify: Verifier,
  slicer: Slicer,
): Promise<Map<string, string>> {
  const refs = new Map<string, string>();
  const present = wanted.filter((r): r is string => r !== null);
  const packed = new PackedRefs(commonDir, verify, slicer, present);
  for (const ref of present) {
    const oid = await resolveRef(ref, gitDir, commonDir, verify, packed, 0);
    if (oid) refs.set(ref, oid);
  }
  return refs;
}
