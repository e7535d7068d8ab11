/**
 * Matching a hunk's lines against a file's lines (docs/errors.md "How edits and hunks match"): the tolerance passes
 * tried in order — exact, then ignoring trailing whitespace (and line endings, since matching runs on the LF view),
 * then with typographic quotes and dashes normalized — the file's lines under each pass's normalization (computed
 * once per pass), and the searches over them. Pure; the scans are steps (src/patch/steps.ts).
 */
import { runSteps, STEP_LINES, type Steps } from './steps.js';

/**
 * How a hunk matched (the tolerance that was needed); `reindented`: whole lines but for one uniform indentation shift,
 * the added lines re-indented the same way (src/patch/reindent.ts, docs/errors.md "How edits and hunks match").
 */
export type MatchKind = 'exact' | 'trailing_whitespace' | 'typography' | 'reindented';

/** One tolerance pass: its kind and the normalization both sides' lines are compared under. */
export interface MatchPass {
  kind: MatchKind;
  norm: (s: string) => string;
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

/** The tolerance passes, in the order they are tried (the first that finds the old side anywhere decides). */
export const PASSES: readonly MatchPass[] = [
  { kind: 'exact', norm: (s) => s },
  { kind: 'trailing_whitespace', norm: (s) => s.replace(/[ \t\r]+$/, '') },
  { kind: 'typography', norm: (s) => normalizeTypography(s).replace(/[ \t\r]+$/, '') },
];

/** Splits an LF view into lines (without terminators) and its final-newline state. */
export function splitView(view: string): { lines: string[]; finalNewline: boolean } {
  return runSteps(splitViewSteps(view));
}

/** `splitView` as steps: yields every STEP_LINES lines. */
export function* splitViewSteps(view: string): Steps<{ lines: string[]; finalNewline: boolean }> {
  const lines: string[] = [];
  if (view === '') return { lines, finalNewline: false };
  let start = 0;
  for (let nl = view.indexOf('\n'); nl !== -1; nl = view.indexOf('\n', start)) {
    lines.push(view.slice(start, nl));
    start = nl + 1;
    if (lines.length % STEP_LINES === 0) yield;
  }
  const finalNewline = start === view.length;
  if (!finalNewline) lines.push(view.slice(start));
  return { lines, finalNewline };
}

/**
 * A file's lines under each pass's normalization, computed on first use and kept (one file, many hunks).
 * @returns a steps function: the lines under `pass.norm` (yields every STEP_LINES lines while it computes them)
 */
export function normalizedLines(lines: readonly string[]): (pass: MatchPass) => Steps<string[]> {
  const cache = new Map<MatchKind, string[]>();
  return function* normalized(pass) {
    let v = cache.get(pass.kind);
    if (!v) {
      v = [];
      for (let i = 0; i < lines.length; i++) {
        v.push(pass.norm(lines[i]));
        if (i % STEP_LINES === STEP_LINES - 1) yield;
      }
      cache.set(pass.kind, v);
    }
    return v;
  };
}

/**
 * All start indices where `needle` occurs in `hay` as consecutive lines under `norm`, as steps: yields about every
 * STEP_LINES line comparisons.
 * @param normHay `hay` under `norm` (normalizedLines)
 */
export function* findAll(
  hay: readonly string[],
  needle: readonly string[],
  norm: (s: string) => string,
  normHay: string[],
): Steps<number[]> {
  const out: number[] = [];
  if (needle.length === 0) return out;
  const n = needle.map(norm);
  let work = 0;
  outer: for (let i = 0; i + n.length <= hay.length; i++) {
    if (work >= STEP_LINES) {
      work = 0;
      yield;
    }
    for (let j = 0; j < n.length; j++) {
      work++;
      if (normHay[i + j] !== n[j]) continue outer;
    }
    out.push(i);
  }
  return out;
}

/** Whether `a` and `b` are the same lines. */
export function sameLines(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Whether `lines` hold `newSide` (non-empty) from 0-based line `at`, compared under `norm`. */
export function alreadyThere(
  lines: readonly string[],
  newSide: readonly string[],
  at: number,
  norm: (s: string) => string = (s) => s,
): boolean {
  if (newSide.length === 0 || at < 0 || at + newSide.length > lines.length) return false;
  for (let j = 0; j < newSide.length; j++) if (norm(lines[at + j]) !== norm(newSide[j])) return false;
  return true;
}
