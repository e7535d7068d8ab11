/**
 * Line-ending-preserving text (docs/tools.md): edits and hunks are matched on an LF view of the file, and written back
 * into the original with every untouched byte (CRLF or LF, final newline or not) exactly as it was. Replacement text
 * takes the line-ending style of the region it replaces (a CRLF file stays CRLF; in a mixed file, untouched lines keep
 * theirs). The BOM is kept out of the view and restored. Pure functions; the passes over a file's lines are also
 * written as steps (src/patch/steps.ts) for the engines that run in slices of event-loop time.
 */
import { runSteps, STEP_LINES, type Steps } from './steps.js';

const BOM = '\uFEFF';

/** An LF view of a file's text, with what is needed to map it back. */
export interface EolText {
  /** The text with every CRLF turned into LF and the BOM removed. */
  view: string;
  /** Indices in `view` of the LFs that were CRLF in the original, ascending. */
  crlfAt: number[];
  bom: boolean;
  /** The dominant style, used for new line breaks where nothing local decides. */
  dominant: '\n' | '\r\n';
}

/** Builds the LF view of `original`. */
export function toEolText(original: string): EolText {
  return runSteps(toEolTextSteps(original));
}

/** `toEolText` as steps: yields every STEP_LINES line breaks. */
export function* toEolTextSteps(original: string): Steps<EolText> {
  const bom = original.startsWith(BOM);
  const body = bom ? original.slice(1) : original;
  // No CR at all (most files): the view is the text itself, found with one scan instead of a step per line.
  if (body.indexOf('\r') === -1) return { view: body, crlfAt: [], bom, dominant: '\n' };
  const crlfAt: number[] = [];
  let view = '';
  let last = 0;
  let removed = 0;
  let lf = 0;
  let breaks = 0;
  for (let i = body.indexOf('\n'); i !== -1; i = body.indexOf('\n', i + 1)) {
    if (i > 0 && body[i - 1] === '\r') {
      view += body.slice(last, i - 1);
      last = i;
      crlfAt.push(i - 1 - removed);
      removed++;
    } else {
      lf++;
    }
    if (++breaks % STEP_LINES === 0) yield;
  }
  view += body.slice(last);
  return { view, crlfAt, bom, dominant: crlfAt.length > lf ? '\r\n' : '\n' };
}

/** Normalizes text an agent sent (old_text, new_text, hunk lines) to LF. */
export function toLf(text: string): string {
  return text.replace(/\r\n/g, '\n');
}

/** One replacement on the LF view: [start, end) replaced by `text` (LF line breaks). */
export interface ViewReplacement {
  start: number;
  end: number;
  text: string;
}

/**
 * Applies non-overlapping replacements (any order) to the original file through its view, keeping every byte
 * outside them. New line breaks take the style of the replaced region: CRLF if any break in it was CRLF, LF if all
 * were LF; with no break inside, the style of the line the region sits on (or the file's dominant style).
 */
export function applyToOriginal(t: EolText, replacements: readonly ViewReplacement[]): string {
  return runSteps(applyToOriginalSteps(t, replacements));
}

/** `applyToOriginal` as steps: yields every STEP_LINES CRLF line breaks restored. */
export function* applyToOriginalSteps(t: EolText, replacements: readonly ViewReplacement[]): Steps<string> {
  // At equal starts an insertion (empty range) goes first: after a non-empty range `pos` is past its start.
  const sorted = [...replacements].sort((a, b) => a.start - b.start || a.end - b.end);
  let out = '';
  let pos = 0; // in view
  // The first newline at or after a position, remembered across the ascending replacements: many replacements on one
  // long line search for its end once, not once each (that was replacements × line length).
  let nl = -2; // not searched yet; -1: none at or after the last position searched (nor any later one)
  const newlineFrom = (p: number): number => {
    if (nl === -2 || (nl !== -1 && nl < p)) nl = t.view.indexOf('\n', p);
    return nl;
  };
  for (const r of sorted) {
    out += yield* mapBack(t, pos, r.start);
    const style = styleFor(t, r.start, r.end, newlineFrom);
    out += style === '\n' ? r.text : r.text.replace(/\n/g, '\r\n');
    pos = r.end;
  }
  out += yield* mapBack(t, pos, t.view.length);
  return (t.bom ? BOM : '') + out;
}

/** The original text of view[from, to), with CRLFs restored; as steps (yields every STEP_LINES CRLFs). */
function* mapBack(t: EolText, from: number, to: number): Steps<string> {
  let out = '';
  let last = from;
  let restored = 0;
  for (let k = lowerBound(t.crlfAt, from); k < t.crlfAt.length && t.crlfAt[k] < to; k++) {
    const i = t.crlfAt[k];
    out += `${t.view.slice(last, i)}\r\n`;
    last = i + 1;
    if (++restored % STEP_LINES === 0) yield;
  }
  return out + t.view.slice(last, to);
}

function styleFor(
  t: EolText,
  start: number,
  end: number,
  newlineFrom: (p: number) => number = (p) => t.view.indexOf('\n', p),
): '\n' | '\r\n' {
  let sawLf = false;
  const first = newlineFrom(start);
  for (let i = first; i !== -1 && i < end; i = t.view.indexOf('\n', i + 1)) {
    if (isCrlf(t, i)) return '\r\n';
    sawLf = true;
  }
  if (sawLf) return '\n';
  // No break inside: the break that ends the line containing `start` (the first at or after `start`, which is past
  // `end` here).
  const next = first;
  if (next !== -1) return isCrlf(t, next) ? '\r\n' : '\n';
  const prev = start > 0 ? t.view.lastIndexOf('\n', start - 1) : -1;
  if (prev !== -1) return isCrlf(t, prev) ? '\r\n' : '\n';
  return t.dominant;
}

function isCrlf(t: EolText, i: number): boolean {
  const k = lowerBound(t.crlfAt, i);
  return k < t.crlfAt.length && t.crlfAt[k] === i;
}

function lowerBound(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** 1-based line number of view offset `i`. */
export function lineOfOffset(view: string, i: number): number {
  let n = 1;
  for (let k = view.indexOf('\n'); k !== -1 && k < i; k = view.indexOf('\n', k + 1)) n++;
  return n;
}
