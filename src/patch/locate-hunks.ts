/**
 * Hunk location and application for one file (SPEC §6.3). Every hunk is located by content in the ORIGINAL file, so
 * hunks may come in any order: exact first, then ignoring trailing whitespace (and line endings, since matching runs
 * on the LF view), then with typographic quotes and dashes normalized. The header's line number only breaks ties
 * between equal matches. A hunk that matches more than once without a tie-break is `ambiguous` (with the candidate
 * lines); one that matches nowhere is `no_match` (with the nearest region), or `already_applied` when its new side is
 * already there; hunks whose regions overlap are refused (`overlap`). Context lines keep the file's own text (its
 * trailing spaces, its curly quotes); only removed and added lines change. Line endings, BOM and final-newline state
 * are preserved through src/patch/eol-text.ts. Pure.
 */
import { PatchFailedError } from '../errors/tool-error.js';
import { applyToOriginal, toEolText, type ViewReplacement } from './eol-text.js';
import { findNearestRegion } from './nearest-region.js';
import type { FilePatch, Hunk } from './parse-unified.js';

/** How a hunk matched. */
export type MatchKind = 'exact' | 'trailing_whitespace' | 'typography';

/** Where one hunk applied. */
export interface HunkReport {
  /** 1-based hunk number in the file's patch. */
  hunk: number;
  /** 1-based line of the original file where the hunk's old side starts (for insertions: where it inserts). */
  line: number;
  match: MatchKind;
}

const TYPOGRAPHY: Array<[RegExp, string]> = [
  [/[\u2018\u2019\u201A\u201B\u2032\u02BC]/g, "'"],
  [/[\u201C\u201D\u201E\u201F\u2033]/g, '"'],
  [/[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]/g, '-'],
  [/\u2026/g, '...'],
  [/[\u00A0\u2007\u202F]/g, ' '],
];

/** Normalizes typographic punctuation to ASCII (curly quotes, dashes, ellipsis, non-breaking spaces). */
export function normalizeTypography(s: string): string {
  let out = s;
  for (const [re, to] of TYPOGRAPHY) out = out.replace(re, to);
  return out;
}

const PASSES: Array<{ kind: MatchKind; norm: (s: string) => string }> = [
  { kind: 'exact', norm: (s) => s },
  { kind: 'trailing_whitespace', norm: (s) => s.replace(/[ \t\r]+$/, '') },
  { kind: 'typography', norm: (s) => normalizeTypography(s).replace(/[ \t\r]+$/, '') },
];

/** Splits an LF view into lines (without terminators) and its final-newline state. */
export function splitView(view: string): { lines: string[]; finalNewline: boolean } {
  if (view === '') return { lines: [], finalNewline: false };
  const lines = view.split('\n');
  const finalNewline = lines[lines.length - 1] === '';
  if (finalNewline) lines.pop();
  return { lines, finalNewline };
}

/** All start indices where `needle` occurs in `hay` as consecutive lines under `norm`. */
function findAll(hay: readonly string[], needle: readonly string[], norm: (s: string) => string, normHay: string[]): number[] {
  const out: number[] = [];
  if (needle.length === 0) return out;
  const n = needle.map(norm);
  outer: for (let i = 0; i + n.length <= hay.length; i++) {
    for (let j = 0; j < n.length; j++) if (normHay[i + j] !== n[j]) continue outer;
    out.push(i);
  }
  return out;
}

interface Located {
  index: number;
  start: number;
  count: number;
  match: MatchKind;
  hunk: Hunk;
}

/**
 * Applies a file's hunks to its current text.
 * @param original the current content (BOM and original line endings included); '' for a file to create
 * @returns the new content and where each hunk applied
 * @throws PatchFailedError no_match (with nearest and expected), ambiguous (with candidates), already_applied, overlap
 */
export function applyHunks(original: string, file: FilePatch, absolute: string): { text: string; hunks: HunkReport[] } {
  const t = toEolText(original);
  const { lines, finalNewline } = splitView(t.view);
  const total = file.hunks.length;
  const located: Located[] = [];
  const normCache = new Map<MatchKind, string[]>();
  const normalized = (kind: MatchKind, norm: (s: string) => string) => {
    let v = normCache.get(kind);
    if (!v) { v = lines.map(norm); normCache.set(kind, v); }
    return v;
  };

  file.hunks.forEach((hunk, index) => {
    const oldSide = hunk.lines.filter((l) => l.op !== '+').map((l) => l.text);
    const newSide = hunk.lines.filter((l) => l.op !== '-').map((l) => l.text);
    const label = `hunk ${index + 1} of ${total}${total > 1 || file.newPath ? ` (${file.newPath ?? file.oldPath ?? 'file'})` : ''}`;
    if (oldSide.length === 0) {
      // Pure insertion: no context to locate by; only the header can place it (or the file is empty/new).
      if (lines.length === 0) {
        located.push({ index, start: 0, count: 0, match: 'exact', hunk });
        return;
      }
      if (hunk.oldStart === null) {
        throw new PatchFailedError(`${label} has no context lines and no line numbers, so it cannot be placed.`, {
          path: absolute, details: { reason: 'no_match', hunk: index + 1, hunks: total, expected: [] },
          suggestion: 'Add a few unchanged lines around the insertion as context (lines starting with a space).',
        });
      }
      // "-N,0" inserts after line N.
      const at = Math.min(Math.max(hunk.oldStart, 0), lines.length);
      if (alreadyThere(lines, newSide, at)) {
        throw alreadyApplied(label, absolute, index, total);
      }
      located.push({ index, start: at, count: 0, match: 'exact', hunk });
      return;
    }
    for (const pass of PASSES) {
      const candidates = findAll(lines, oldSide, pass.norm, normalized(pass.kind, pass.norm));
      if (candidates.length === 0) continue;
      // Already applied: the new side sits where the old side matched (an append whose context still matches).
      if (newSide.length > oldSide.length && candidates.every((c) => alreadyThere(lines, newSide, c, pass.norm))) {
        throw alreadyApplied(label, absolute, index, total);
      }
      let chosen = candidates[0];
      if (candidates.length > 1) {
        const hint = hunk.oldStart === null ? null : hunk.oldStart - 1;
        const ranked = hint === null ? [] : [...candidates].sort((a, b) => Math.abs(a - hint) - Math.abs(b - hint));
        if (hint === null || Math.abs(ranked[0] - hint) === Math.abs(ranked[1] - hint)) {
          throw new PatchFailedError(`${label} matches ${candidates.length} places (lines ${candidates.slice(0, 20).map((c) => c + 1).join(', ')}) and its header cannot tell which.`, {
            path: absolute,
            details: { reason: 'ambiguous', hunk: index + 1, hunks: total, count: candidates.length, candidates: candidates.slice(0, 50).map((c) => c + 1), expected: oldSide.slice(0, 50) },
            suggestion: 'Add more context lines so the hunk matches once, or give the correct @@ -line numbers.',
          });
        }
        chosen = ranked[0];
      }
      located.push({ index, start: chosen, count: oldSide.length, match: pass.kind, hunk });
      return;
    }
    // No match at all: already applied, or a real mismatch with a diagnosis.
    for (const pass of PASSES) {
      if (newSide.length > 0 && findAll(lines, newSide, pass.norm, normalized(pass.kind, pass.norm)).length > 0
        && hunk.lines.some((l) => l.op !== ' ')) {
        throw alreadyApplied(label, absolute, index, total);
      }
    }
    const nearest = findNearestRegion(lines, oldSide);
    throw new PatchFailedError(`${label} does not match ${absolute}${nearest ? `; the closest region starts at line ${nearest.line}` : ''}.`, {
      path: absolute,
      details: { reason: 'no_match', hunk: index + 1, hunks: total, expected: oldSide.slice(0, 50), ...(nearest ? { nearest } : {}) },
      suggestion: 'Read the file and regenerate this hunk from its current content; do not resend the same patch.',
    });
  });

  // Overlaps (in original coordinates).
  const byStart = [...located].sort((a, b) => a.start - b.start || a.count - b.count);
  for (let k = 1; k < byStart.length; k++) {
    const prev = byStart[k - 1];
    const cur = byStart[k];
    if (cur.start < prev.start + prev.count || (cur.start === prev.start && cur.count === 0 && prev.count === 0)) {
      throw new PatchFailedError(`Hunks ${prev.index + 1} and ${cur.index + 1} overlap (original lines ${prev.start + 1}-${prev.start + Math.max(prev.count, 1)} and ${cur.start + 1}-${cur.start + Math.max(cur.count, 1)}).`, {
        path: absolute,
        details: { reason: 'overlap', hunk: cur.index + 1, hunks: total, candidates: [prev.start + 1, cur.start + 1] },
        suggestion: 'Merge the overlapping hunks into one and send the diff again.',
      });
    }
  }

  // Build view replacements. Line i starts at lineStart[i]; lineStart[lines.length] is the end of the view.
  const lineStart: number[] = [0];
  for (let i = 0; i < lines.length; i++) lineStart.push(lineStart[i] + lines[i].length + (i < lines.length - 1 || finalNewline ? 1 : 0));
  const replacements: ViewReplacement[] = [];
  for (const loc of located) {
    const h = loc.hunk;
    const out: string[] = [];
    let cursor = loc.start;
    for (const l of h.lines) {
      if (l.op === ' ') out.push(lines[cursor++] ?? l.text); // keep the file's own text for context
      else if (l.op === '-') cursor++;
      else out.push(l.text);
    }
    const endLine = loc.start + loc.count;
    const touchesEof = endLine === lines.length;
    let text = out.map((l) => `${l}\n`).join('');
    let start = lineStart[loc.start];
    if (touchesEof) {
      // Final-newline state after this hunk: the new side's marker decides; otherwise the file keeps its state,
      // unless the old side's marker said the old last line had none (then the patch adds one).
      const keepsNone = h.newNoNewline || (!h.oldNoNewline && !finalNewline && loc.count > 0);
      if (keepsNone && text.endsWith('\n')) text = text.slice(0, -1);
      if (loc.count === 0 && !finalNewline && lines.length > 0 && text.length > 0) {
        // Appending after a last line without a terminator: terminate it first.
        text = `\n${text}`;
        if (!h.newNoNewline && text.endsWith('\n') && !finalNewline) text = text.slice(0, -1);
      }
    }
    if (touchesEof && loc.count === 0) start = t.view.length;
    replacements.push({ start, end: touchesEof ? t.view.length : lineStart[endLine], text });
  }
  const text = applyToOriginal(t, replacements);
  const hunks = located.sort((a, b) => a.index - b.index).map((l) => ({ hunk: l.index + 1, line: l.start + 1, match: l.match }));
  return { text, hunks };
}

function alreadyThere(lines: readonly string[], newSide: readonly string[], at: number, norm: (s: string) => string = (s) => s): boolean {
  if (newSide.length === 0 || at + newSide.length > lines.length) return false;
  for (let j = 0; j < newSide.length; j++) if (norm(lines[at + j]) !== norm(newSide[j])) return false;
  return true;
}

function alreadyApplied(label: string, absolute: string, index: number, total: number): PatchFailedError {
  return new PatchFailedError(`${label} looks already applied to ${absolute}: its new lines are already there.`, {
    path: absolute, details: { reason: 'already_applied', hunk: index + 1, hunks: total },
    suggestion: 'Read the file to confirm; do not apply this patch again.',
  });
}
