/**
 * A tolerant unified-diff parser (docs/tools.md), the front of apply_patch. Accepts what `git diff` and `diff -u` write
 * and what agents send: with or without `diff --git` / `---` / `+++` headers, `a/` and `b/` prefixes, one or several
 * files and hunks, wrong hunk counts or none (`@@ @@`), a surrounding ```diff fence, `\ No newline at end of file`,
 * `/dev/null` for create and delete, an empty line standing for an empty context line. Codex `*** Begin Patch`
 * text is recognized on structural lines only (a diff that adds such a line is not Codex format). Text that is not a
 * diff fails loudly: PATCH_FAILED `no_hunks` or `malformed` (with the line), never a silent no-op.
 * Pure: text in, structure out. Hunk location is src/patch/locate-hunks.ts.
 */
import { PatchFailedError, ToolError } from '../errors/tool-error.js';

/** One line of a hunk body. */
export interface HunkLine {
  op: ' ' | '-' | '+';
  text: string;
}

/** One hunk. Header numbers are hints only (they break ties between equal matches). */
export interface Hunk {
  /** 1-based old start line from the header, or null for `@@ @@`. */
  oldStart: number | null;
  newStart: number | null;
  lines: HunkLine[];
  /** `\ No newline at end of file` after the last old-side (context or removed) line. */
  oldNoNewline: boolean;
  /** … after the last new-side (context or added) line. */
  newNoNewline: boolean;
  /** 1-based line of the `@@` header in the patch text. */
  patchLine: number;
  /**
   * The section heading after the closing `@@` (git and `diff -p` write the nearest line above the hunk that starts
   * with a letter, `_` or `$`, cut to 80 characters), or null. A hint only, like the line numbers.
   */
  section?: string | null;
  /**
   * Empty lines right after the hunk that were taken for separators although the counts (absent or wrong) cannot say
   * whether they were empty context lines; 0 when the counts settle it. Placement does not anchor such a hunk at the
   * end of the file when they could be context (src/patch/locate-hunks.ts).
   */
  uncertainTrailingBlanks?: number;
}

/** One file of a patch. Paths are as written, with a/ b/ prefixes removed; null for /dev/null. */
export interface FilePatch {
  oldPath: string | null;
  newPath: string | null;
  /** True when no header named the file (the target comes from the `path` argument). */
  headerless: boolean;
  hunks: Hunk[];
  /** Paths as written in the headers (before prefix stripping), for messages. */
  rawOldPath: string | null;
  rawNewPath: string | null;
}

/** The example given with BEGIN_PATCH (docs/tools.md: a minimal unified diff in the suggestion). */
export const UNIFIED_DIFF_EXAMPLE =
  '--- a/src/app.py\n+++ b/src/app.py\n@@ -1,3 +1,3 @@\n import os\n-x = 1\n+x = 2\n print(x)\n';

const CODEX_STRUCTURAL = /^\*\*\* (Begin Patch|End Patch|Update File: .*|Add File: .*|Delete File: .*|Move to: .*)\s*$/;

/**
 * Throws BEGIN_PATCH when the text is Codex apply_patch format: a structural `*** Begin Patch` / `*** Update File:` /
 * `*** Add File:` / `*** Delete File:` / `*** End Patch` line at the start of a line. A unified diff whose `+` line
 * adds such text is not Codex format (its line starts with `+`).
 * @throws ToolError BEGIN_PATCH with details.line (1-based) and details.marker
 */
export function assertNotBeginPatch(patch: string): void {
  const lines = patch.replace(/\r\n/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = CODEX_STRUCTURAL.exec(lines[i]);
    if (m) {
      throw new ToolError(
        'BEGIN_PATCH',
        `The patch is in Codex "*** Begin Patch" format (line ${i + 1}: "${lines[i].slice(0, 80)}"), not a unified diff.`,
        {
          details: { line: i + 1, marker: m[1].split(':')[0] },
          suggestion: `Send a unified diff instead, for example:\n${UNIFIED_DIFF_EXAMPLE}`,
        },
      );
    }
  }
}

/**
 * Removes one surrounding ```diff / ```patch / ``` fence, if the diff sits inside one. The opening fence must come
 * before the diff starts, and the closing fence has the opening's indentation: a context line of a markdown file,
 * " ```" (space + fence), is a hunk line, never a fence.
 */
function stripFence(text: string): string {
  const lines = text.split('\n');
  const diffStart = lines.findIndex(
    (l, i) =>
      l.startsWith('@@') ||
      l.startsWith('diff --git ') ||
      (l.startsWith('--- ') && (lines[i + 1] ?? '').startsWith('+++ ')),
  );
  const open = lines.findIndex(
    (l, i) => (diffStart === -1 || i < diffStart) && /^\s*```\s*(diff|patch|udiff)?\s*$/i.test(l),
  );
  if (open === -1) return text;
  const indent = /^\s*/.exec(lines[open])![0];
  const close = lines.findIndex((l, i) => i > open && l.startsWith(indent) && /^```\s*$/.test(l.slice(indent.length)));
  return lines.slice(open + 1, close === -1 ? lines.length : close).join('\n');
}

const HUNK_HEADER = /^@@+\s*(?:-(\d+)(?:,(\d+))?\s+\+(\d+)(?:,(\d+))?\s*)?@@+(.*)$/;

function stripPrefix(p: string | null, prefix: 'a/' | 'b/'): string | null {
  if (p === null) return null;
  return p.startsWith(prefix) ? p.slice(2) : p;
}

/** `--- path<TAB>timestamp` → path; `/dev/null` → null; quoted git paths unquoted. */
function headerPath(raw: string): string | null {
  let p = raw.replace(/\t.*$/, '').trim();
  if (p.startsWith('"') && p.endsWith('"')) p = p.slice(1, -1).replace(/\\(.)/g, '$1');
  if (p === '/dev/null') return null;
  return p;
}

function malformed(message: string, line: number, text: string): PatchFailedError {
  return new PatchFailedError(`The patch is malformed at line ${line}: ${message}.`, {
    details: { reason: 'malformed', line, text: text.slice(0, 200) },
    recovery: 'fix_arguments',
    suggestion:
      'Every hunk line starts with " " (context), "-" (removed) or "+" (added); fix that line and send the whole diff again.',
  });
}

/**
 * Parses unified-diff text.
 * @throws PatchFailedError malformed (with details.line) or no_hunks; ToolError BEGIN_PATCH
 */
export function parseUnifiedDiff(patch: string): FilePatch[] {
  assertNotBeginPatch(patch);
  // The LF that ends the text's last line does not start another (empty) line: it is no empty context line. (Inside
  // a fence, an empty line before the closing fence is a line.)
  const text = patch.replace(/\r\n/g, '\n');
  const lines = stripFence(text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
  const files: FilePatch[] = [];
  let file: FilePatch | null = null;
  let hunk: Hunk | null = null;
  let oldLeft = 0;
  let newLeft = 0;
  let counted = false;
  // Empty lines seen after hunk lines, kept pending: they are context only if more hunk lines follow.
  let pendingBlank = 0;

  const newFile = (
    oldPath: string | null,
    newPath: string | null,
    headerless: boolean,
    rawOld: string | null,
    rawNew: string | null,
  ) => {
    file = { oldPath, newPath, headerless, hunks: [], rawOldPath: rawOld, rawNewPath: rawNew };
    files.push(file);
    hunk = null;
  };
  const flushBlanks = () => {
    if (hunk) for (; pendingBlank > 0; pendingBlank--) pushLine({ op: ' ', text: '' });
    pendingBlank = 0;
  };
  const pushLine = (l: HunkLine) => {
    hunk!.lines.push(l);
    if (l.op !== '+') oldLeft--;
    if (l.op !== '-') newLeft--;
  };
  const finishHunk = () => {
    // Trailing empty lines belong to the hunk only while its header counts still expect lines — and only when both
    // counts expect the same number (what is left can only be context lines then); counts that disagree are wrong
    // counts, and empty lines after a hunk with wrong counts are separators, not context.
    if (hunk && counted && oldLeft === newLeft) {
      while (pendingBlank > 0 && (oldLeft > 0 || newLeft > 0)) {
        pushLine({ op: ' ', text: '' });
        pendingBlank--;
      }
    }
    if (hunk && pendingBlank > 0 && !(counted && oldLeft === 0 && newLeft === 0))
      hunk.uncertainTrailingBlanks = pendingBlank;
    pendingBlank = 0;
    hunk = null;
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const lineNo = i + 1;
    if (line.startsWith('diff --git ')) {
      finishHunk();
      const m = /^diff --git (?:"?a\/(.+?)"? "?b\/(.+?)"?|(\S+) (\S+))$/.exec(line);
      const a = m ? (m[1] ?? m[3]) : null;
      const b = m ? (m[2] ?? m[4]) : null;
      newFile(a, b, false, a, b);
      continue;
    }
    // A ---/+++ pair right after hunk lines is the next file's header only when a hunk header follows it: otherwise
    // it is a removed "-- …" line and an added "++ …" line of a hunk whose counts are missing or wrong.
    if (
      line.startsWith('--- ') &&
      i + 1 < lines.length &&
      lines[i + 1].startsWith('+++ ') &&
      (!hunk || (!(counted && (oldLeft > 0 || newLeft > 0)) && (lines[i + 2] ?? '').startsWith('@@')))
    ) {
      finishHunk();
      const rawOld = headerPath(line.slice(4));
      const rawNew = headerPath(lines[i + 1].slice(4));
      const cur = file as FilePatch | null;
      if (cur && cur.hunks.length === 0 && !cur.headerless) {
        // The ---/+++ pair of a `diff --git` section: refine its paths (and learn /dev/null).
        cur.rawOldPath = rawOld;
        cur.rawNewPath = rawNew;
        cur.oldPath = rawOld;
        cur.newPath = rawNew;
      } else {
        newFile(rawOld, rawNew, false, rawOld, rawNew);
      }
      i++;
      continue;
    }
    const header = HUNK_HEADER.exec(line);
    if (header && line.startsWith('@@')) {
      finishHunk();
      if (!file) newFile(null, null, true, null, null);
      const [, os, oc, ns, nc, rest] = header;
      const section = rest.trim();
      hunk = {
        oldStart: os !== undefined ? Number(os) : null,
        newStart: ns !== undefined ? Number(ns) : null,
        lines: [],
        oldNoNewline: false,
        newNoNewline: false,
        patchLine: lineNo,
        section: section === '' ? null : section,
      };
      counted = os !== undefined;
      oldLeft = os !== undefined ? (oc !== undefined ? Number(oc) : 1) : 0;
      newLeft = ns !== undefined ? (nc !== undefined ? Number(nc) : 1) : 0;
      (file as unknown as FilePatch).hunks.push(hunk);
      continue;
    }
    if (!hunk) {
      // Outside a hunk: headers (index, mode, rename, similarity), prose, email headers — skipped.
      if (file && /^rename from /.test(line)) (file as FilePatch).oldPath = line.slice('rename from '.length);
      if (file && /^rename to /.test(line)) (file as FilePatch).newPath = line.slice('rename to '.length);
      continue;
    }
    const h = hunk;
    if (line === '') {
      pendingBlank++;
      continue;
    }
    const op = line[0];
    if (op === ' ' || op === '-' || op === '+') {
      flushBlanks();
      pushLine({ op, text: line.slice(1) });
      continue;
    }
    if (op === '\\') {
      flushBlanks();
      const last = h.lines[h.lines.length - 1];
      if (last) {
        if (last.op === '-') h.oldNoNewline = true;
        else if (last.op === '+') h.newNoNewline = true;
        else {
          h.oldNoNewline = true;
          h.newNoNewline = true;
        }
      }
      continue;
    }
    // A line that is not a hunk line. Inside a hunk that still expects lines, or followed by more hunk lines before
    // the next header, it is a broken hunk line (a context line missing its leading space); otherwise the hunk ended.
    const expectsMore = counted && (oldLeft > 0 || newLeft > 0);
    if (expectsMore || moreHunkLinesFollow(lines, i + 1))
      throw malformed(`"${line.slice(0, 60)}" is not a hunk line`, lineNo, line);
    finishHunk();
  }
  finishHunk();

  for (const f of files) {
    // Strip git's a/ b/ prefixes when the headers use them (before deciding what is a rename: a/x → b/x is none).
    const gitStyle =
      (f.oldPath === null || f.oldPath.startsWith('a/')) &&
      (f.newPath === null || f.newPath.startsWith('b/')) &&
      !(f.oldPath === null && f.newPath === null);
    if (gitStyle) {
      f.oldPath = stripPrefix(f.oldPath, 'a/');
      f.newPath = stripPrefix(f.newPath, 'b/');
    }
  }
  const withHunks = files.filter(
    (f) => f.hunks.length > 0 || (f.oldPath !== f.newPath && f.oldPath !== null && f.newPath !== null),
  );
  if (withHunks.length === 0) {
    throw new PatchFailedError(
      'The text contains no unified-diff hunks (no "@@" lines), so there is nothing to apply.',
      {
        details: { reason: 'no_hunks' },
        recovery: 'fix_arguments',
        suggestion: `Send a unified diff, for example:\n${UNIFIED_DIFF_EXAMPLE}`,
      },
    );
  }
  for (const f of withHunks) {
    for (const h of f.hunks) {
      if (h.lines.length === 0) {
        throw new PatchFailedError(`Hunk at patch line ${h.patchLine} has no lines.`, {
          details: { reason: 'malformed', line: h.patchLine },
          recovery: 'fix_arguments',
          suggestion: 'Give each hunk its context, removed and added lines.',
        });
      }
    }
  }
  return withHunks;
}

/**
 * True when hunk body lines (" ", "+", "-") continue right after index `from` (before a blank line, a header or the
 * end): then the line before them was inside the hunk. Prose after a diff is separated by a blank line.
 */
function moreHunkLinesFollow(lines: readonly string[], from: number): boolean {
  for (let j = from; j < lines.length; j++) {
    const l = lines[j];
    if (
      l === '' ||
      l.startsWith('@@') ||
      l.startsWith('diff --git ') ||
      (l.startsWith('--- ') && lines[j + 1]?.startsWith('+++ '))
    )
      return false;
    if (l[0] === ' ' || l[0] === '+' || l[0] === '-') return true;
  }
  return false;
}
