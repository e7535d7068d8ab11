/**
 * The one `already_applied` rule shared by apply_patch (src/patch/locate-hunks.ts) and edit_file
 * (src/patch/apply-edits.ts), for a change whose old side matched nowhere: it is reported as already applied only on
 * evidence that the intended change is in the file (docs/errors.md "already_applied only on evidence"). Pure.
 */

/**
 * Least number of non-blank characters in the lines a hunk (or an edit) leaves unchanged before its new text found
 * in the file counts as evidence that the change was already made (docs/errors.md: `already_applied` only on
 * evidence, never because a short or common string occurs somewhere).
 */
export const MIN_EVIDENCE_CHARS = 8;

/**
 * Least number of non-blank characters for a line of the old side to be distinctive: a removed line this long that is
 * still in the file means the change may not have been made (a `}` or `end` proves nothing either way).
 */
export const MIN_DISTINCTIVE_CHARS = 4;

/** Distinctive removed lines looked up in the file (each lookup scans the file once; bounded work). */
const MAX_DISTINCTIVE_LOOKUPS = 16;

/** Non-whitespace characters in `s`. */
export function contentChars(s: string): number {
  return s.replace(/\s+/g, '').length;
}

/** A change that did not match, as the evidence check sees it. */
export interface UnmatchedChange {
  /** The old side (an edit's old_text; a hunk's context and removed lines joined with `\n`), LF line endings. */
  oldText: string;
  /** The new side (an edit's new_text; a hunk's context and added lines joined with `\n`), LF line endings. */
  newText: string;
  /** Non-blank characters of the unchanged context that frames the change (a hunk's context lines; an edit's common
   *  start and end with new_text). */
  contextChars: number;
  /** The caller found the new side at a place its context pins it (a hunk: between its leading and trailing context,
   *  or at the file's end/start for an anchored hunk; an edit: new_text itself, which carries its frame). */
  foundPinned: boolean;
  /** The place is pinned by the file's start or end (an anchored hunk): the boundary is positional evidence, so a pure
   *  deletion found there counts. Never true for an edit. */
  anchored: boolean;
}

/**
 * Whether an unmatched change is already applied, on evidence. All of:
 * - the new side was found where the context pins it (`foundPinned`), and that context carries at least
 *   MIN_EVIDENCE_CHARS non-blank characters;
 * - the new side adds something: unless `anchored`, a new side contained in the old side (a pure deletion, which keeps
 *   only the context) is never evidence — that text was in the file before the change too;
 * - none of the old side's distinctive lines (lines it removes, MIN_DISTINCTIVE_CHARS or more, at most
 *   MAX_DISTINCTIVE_LOOKUPS of them) is still in the file (`view`, the file's LF text): the line the change meant to
 *   remove or rewrite is gone.
 * @param view the file's LF view
 * @returns true: report `already_applied`; false: report `no_match` with the nearest region
 */
export function appliedOnEvidence(view: string, change: UnmatchedChange): boolean {
  if (!change.foundPinned || change.contextChars < MIN_EVIDENCE_CHARS) return false;
  if (!change.anchored && change.oldText.includes(change.newText)) return false;
  const kept = new Set(change.newText.split('\n').map((l) => l.trim()));
  let lookups = 0;
  for (const line of change.oldText.split('\n')) {
    const t = line.trim();
    if (kept.has(t) || contentChars(t) < MIN_DISTINCTIVE_CHARS) continue;
    if (++lookups > MAX_DISTINCTIVE_LOOKUPS) break;
    if (view.includes(t)) return false;
  }
  return true;
}

/** Places of an edit's frame looked at before the evidence check gives up (fails closed: no evidence). */
const MAX_FRAME_PLACES = 1_000;

/**
 * Whether an edit's new_text is in `view` where old_text's frame says it belongs: new_text occurs, and EVERY place the
 * frame occurs holds new_text. The frame is the common start `P` and common end `S` that old_text and new_text share
 * (what the edit keeps); a place of the frame is an occurrence of P followed by the first S after it, with no more
 * lines between them than either side's changed middle has. A frame that also occurs around other text (another
 * function with the same `const level = "` … `";`) pins no place: new_text found there proves nothing about the place
 * the edit meant, whose old line may just differ by a typo (docs/errors.md "already_applied only on evidence").
 * Bounded: at most MAX_FRAME_PLACES places are looked at; past that, false (no evidence: no_match).
 * @param view the file's LF view
 * @param oldText the edit's old_text, LF
 * @param newText the edit's new_text, LF
 */
export function editFramePinned(view: string, oldText: string, newText: string): boolean {
  if (newText === '' || !view.includes(newText)) return false;
  let p = 0;
  while (p < oldText.length && p < newText.length && oldText[p] === newText[p]) p++;
  let q = 0;
  while (
    q < oldText.length - p &&
    q < newText.length - p &&
    oldText[oldText.length - 1 - q] === newText[newText.length - 1 - q]
  )
    q++;
  const prefix = oldText.slice(0, p);
  const suffix = oldText.slice(oldText.length - q);
  const newlines = (s: string) => s.split('\n').length - 1;
  const maxLines = Math.max(
    newlines(oldText.slice(p, oldText.length - q)),
    newlines(newText.slice(p, newText.length - q)),
  );
  const newlineAt: number[] = [];
  for (let k = view.indexOf('\n'); k !== -1; k = view.indexOf('\n', k + 1)) newlineAt.push(k);
  /** 0-based line of a view offset: the newlines before it (binary search). */
  const lineOf = (offset: number) => {
    let lo = 0;
    let hi = newlineAt.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (newlineAt[mid] < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  let places = 0;
  if (prefix !== '') {
    let j = -1; // the first S at or after the current P's end (positions only grow: one pass over the view)
    for (let i = view.indexOf(prefix); i !== -1; i = view.indexOf(prefix, i + 1)) {
      if (++places > MAX_FRAME_PLACES) return false;
      const from = i + prefix.length;
      if (suffix === '') j = from;
      else if (j < from) j = view.indexOf(suffix, from);
      if (j === -1) break; // no S after this P, nor after any later one
      if (lineOf(j) - lineOf(from) > maxLines) continue;
      if (!view.startsWith(newText, i)) return false;
    }
    return true;
  }
  // No common start: the places are the occurrences of S, each of which must end a new_text.
  for (let j = view.indexOf(suffix); j !== -1; j = view.indexOf(suffix, j + 1)) {
    if (++places > MAX_FRAME_PLACES) return false;
    const end = j + suffix.length;
    if (end < newText.length || !view.startsWith(newText, end - newText.length)) return false;
  }
  return true;
}
