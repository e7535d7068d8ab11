/**
 * Parser for `git diff` / `git diff-files -p` output (git-diff(1) "GENERATING PATCH TEXT WITH -P"), as the view runs it:
 * fixed `a/` `b/` prefixes, C-quoted unusual names, `-M` renames, combined diffs for unmerged paths. Pure.
 */
import { unquote } from './porcelain-v2.js';

/** One file's part of `git diff` output. */
export interface FileChunk {
  /** The file's path (after a rename: the new one), relative to the work tree, C-quoting undone. */
  path: string;
  /** Renames and copies: the path before. */
  oldPath?: string;
  /** Git printed no text (binary patch or "Binary files differ"), or the text holds a NUL byte. */
  binary: boolean;
  /** The chunk as shown: git's text, or for a NUL-carrying "text" diff its header and "Binary files differ". */
  text: string;
}

/**
 * Splits `git diff` output into per-file chunks at `diff --git` headers, and at `diff --cc` / `diff --combined`
 * headers (an unmerged path's combined diff, which git prints first: it must be a chunk of its own with its own
 * policy verdict, not dropped as text before the first `diff --git`).
 */
export function splitDiff(raw: string): FileChunk[] {
  const chunks: FileChunk[] = [];
  const starts: number[] = [];
  const re = /^diff --(?:git|cc|combined) /gm;
  for (let m = re.exec(raw); m; m = re.exec(raw)) starts.push(m.index);
  for (let i = 0; i < starts.length; i++) {
    const text = raw.slice(starts[i], i + 1 < starts.length ? starts[i + 1] : raw.length);
    const header = text.slice(0, text.indexOf('\n') === -1 ? text.length : text.indexOf('\n'));
    // The extended header ends where the first hunk starts; only it may name paths (a hunk line may look like one).
    const hunk = text.search(/^@@/m);
    const head = hunk === -1 ? text : text.slice(0, hunk);
    const plus = /^\+\+\+ (.*)$/m.exec(head);
    const minus = /^--- (.*)$/m.exec(head);
    const renameTo = /^(?:rename|copy) to (.*)$/m.exec(head);
    const renameFrom = /^(?:rename|copy) from (.*)$/m.exec(head);
    const plusPath = plus ? pathOfFileLine(plus[1], 'b/') : null;
    const p =
      (renameTo ? unquote(renameTo[1]) : null) ??
      plusPath ??
      (minus ? pathOfFileLine(minus[1], 'a/') : null) ??
      (header.startsWith('diff --git ')
        ? pathOfHeader(header.slice('diff --git '.length))
        : pathOfCombinedHeader(header.slice(header.indexOf(' ', 'diff --'.length) + 1)));
    // A NUL byte means binary content even when .gitattributes (`diff`, `-binary`) made git print it as text.
    const forcedText = text.includes('\0');
    chunks.push({
      path: p,
      ...(renameFrom ? { oldPath: unquote(renameFrom[1]) } : {}),
      binary: forcedText || /^Binary files .* differ$/m.test(head) || /^GIT binary patch$/m.test(head),
      text: forcedText
        ? `${head
            .split('\n')
            .filter((l) => !/^(?:---|\+\+\+) /.test(l))
            .join('\n')
            .replace(/\n*$/, '\n')}Binary files differ\n`
        : text,
    });
  }
  return chunks;
}

/**
 * The path of a `--- a/x` / `+++ b/x` line: C-quoted as a whole when unusual (`"b/\303\244.txt"`: the prefix is
 * inside the quotes), with a trailing tab when it contains a space; null for /dev/null.
 */
export function pathOfFileLine(value: string, prefix: string): string | null {
  const name = value.startsWith('"') ? unquote(quotedToken(value)) : value.replace(/\t$/, '');
  if (name === '/dev/null') return null;
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/** The leading C-quoted token of `s` (with its quotes). */
function quotedToken(s: string): string {
  for (let i = 1; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '"') return s.slice(0, i + 1);
  }
  return s;
}

/** The path of a `diff --cc x` header (one name, no prefix, C-quoted when unusual). */
function pathOfCombinedHeader(rest: string): string {
  return rest.startsWith('"') ? unquote(quotedToken(rest)) : rest;
}

/**
 * The path of a `diff --git a/x b/x` header without ---/+++ lines (binary or mode-only changes; renames are read from
 * their own lines). Both sides name the same path, so an unquoted header splits in its middle even when the path
 * contains " b/".
 */
export function pathOfHeader(rest: string): string {
  if (rest.startsWith('"')) {
    const name = unquote(quotedToken(rest));
    return name.startsWith('a/') ? name.slice(2) : name;
  }
  const half = (rest.length - 5) / 2;
  if (Number.isInteger(half) && half > 0) {
    const name = rest.slice(2, 2 + half);
    if (rest === `a/${name} b/${name}`) return name;
  }
  const h = /^a\/(.*) b\/(.*)$/.exec(rest);
  return h ? h[2] : rest;
}
