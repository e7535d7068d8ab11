/**
 * One page of git_diff (docs/tools.md "git_diff"): the files of a split diff from a resume position, each shown, shown
 * as a placeholder (secret or policy-protected: omitted) or skipped (policy-hidden: behaves as absent), cut to the
 * page's byte limit and the response budget; a file larger than the page is cut at a line boundary and continued
 * inside it by the next page.
 */
import type { FileChunk } from '../vcs/diff-output.js';
import { jsonBytes, jsonStringBytes, prefixWithinJsonBytes, ResponseBudget } from './response-budget.js';
import { quoteName } from './text-safe.js';

/** One file of a page (the `files` entries of git_diff's output). */
export interface DiffFileEntry {
  path: string;
  old_path?: string;
  binary: boolean;
  omitted?: 'secret' | 'policy';
}

/** The policy verdict on one path of a diff (both names of a rename or copy are asked). */
export interface DiffPathVerdict {
  hidden: boolean;
  secret: boolean;
  denied: boolean;
}

/** A page: its text, its files, and where the next page resumes (null: this page ends the diff). */
export interface DiffPage {
  text: string;
  files: DiffFileEntry[];
  next: { index: number; offset: number } | null;
}

/**
 * The longest prefix of `s` (whole characters: never half a surrogate pair or UTF-8 sequence) whose UTF-8 encoding
 * fits `maxBytes`, computed in one pass. At least one character, so a page always makes progress (a page of a
 * max_bytes smaller than one character holds that one character).
 */
export function prefixWithinBytes(s: string, maxBytes: number): string {
  let t = s.slice(0, maxBytes);
  const last = t.charCodeAt(t.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) t = t.slice(0, -1);
  const buf = Buffer.from(t, 'utf8');
  let cut = t;
  if (buf.length > maxBytes) {
    let end = maxBytes;
    while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
    cut = buf.subarray(0, end).toString('utf8');
  }
  if (cut === '' && s !== '') cut = String.fromCodePoint(s.codePointAt(0)!);
  return cut;
}

/**
 * The page of `chunks` starting at file `start.index`, UTF-16 offset `start.offset` inside what that file shows.
 * @param maxBytes the page's limit on the diff text (UTF-8 bytes)
 * @param reserved bytes of the response budget already taken by the rest of the answer
 * @param verdictOf the policy verdict on a work-tree-relative path
 */
export function pageDiff(
  chunks: readonly FileChunk[],
  start: { index: number; offset: number },
  maxBytes: number,
  reserved: number,
  verdictOf: (relative: string) => DiffPathVerdict,
): DiffPage {
  let { index, offset } = start;
  let out = '';
  let outBytes = 0;
  const budget = new ResponseBudget();
  budget.charge(reserved);
  const files: DiffFileEntry[] = [];
  for (; index < chunks.length; index++, offset = 0) {
    const c = chunks[index];
    // A rename or copy shows the old file's lines too (removed and context lines): both names must be shareable.
    const verdicts = [c.path, ...(c.oldPath !== undefined ? [c.oldPath] : [])].map(verdictOf);
    // docs/security.md: a policy-hidden file behaves as absent: not even named.
    if (verdicts.some((v) => v.hidden)) continue;
    const omitted = verdicts.some((v) => v.secret)
      ? 'secret'
      : verdicts.some((v) => v.hidden || v.denied)
        ? 'policy'
        : undefined;
    const entry: DiffFileEntry = {
      path: c.path,
      ...(c.oldPath ? { old_path: c.oldPath } : {}),
      binary: c.binary,
      ...(omitted ? { omitted } : {}),
    };
    // The offset continues inside whatever this file shows, its placeholder included (a placeholder longer than
    // max_bytes is cut like a diff, so paging always moves on).
    const full = omitted
      ? `diff --git ${quoteName(`a/${c.path}`)} ${quoteName(`b/${c.path}`)}\n(fs-tools: diff omitted: ${omitted} file)\n`
      : c.text;
    let body = full.slice(offset);
    const bodyBytes = Buffer.byteLength(body);
    // The body goes out twice (diff + text), JSON-escaped, beside its files entry.
    const cost = 2 * jsonStringBytes(body) + jsonBytes(entry) + 2;
    if (out.length > 0 && (outBytes + bodyBytes > maxBytes || cost > budget.remaining))
      return { text: out, files, next: { index, offset } };
    if (bodyBytes > maxBytes || cost > budget.remaining) {
      // One file larger than the page: cut at a line boundary and continue inside it.
      const room = Math.max(1, Math.floor((budget.remaining - jsonBytes(entry) - 2) / 2));
      let cut = prefixWithinBytes(body, maxBytes);
      if (jsonStringBytes(cut) > room)
        cut = prefixWithinJsonBytes(cut, room) || String.fromCodePoint(body.codePointAt(0)!);
      const nl = cut.lastIndexOf('\n');
      if (nl > 0) cut = cut.slice(0, nl + 1);
      body = cut;
      files.push(entry);
      return { text: out + body, files, next: { index, offset: offset + body.length } };
    }
    out += body;
    outBytes += bodyBytes;
    budget.charge(cost);
    files.push(entry);
  }
  return { text: out, files, next: null };
}
