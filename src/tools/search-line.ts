/**
 * One matching line of search_files (docs/tools.md): its schema, how a long line is cut around the match, and how it
 * reads as text. This file changes when what a match holds or how it reads changes.
 */
import { z } from 'zod';
import { escapeLine, quoteName } from './text-safe.js';

/** Longest line text returned per match, in characters (longer lines are cut around the match). */
const MAX_LINE_CHARS = 400;

/** One matching line (the output schema's element). */
export const MatchSchema = z.object({
  path: z.string().describe('Relative to the searched directory, / separated'),
  line: z.number().int().describe('1-based'),
  column: z.number().int().describe('1-based, in UTF-16 code units'),
  text: z.string().describe('The matching line (without its terminator; long lines are cut around the match)'),
  before: z.array(z.string()).optional(),
  after: z.array(z.string()).optional(),
});

export type Match = z.infer<typeof MatchSchema>;

/** `line` cut to MAX_LINE_CHARS around `column` (an ellipsis marks each cut end). */
export function cutLine(line: string, column: number): string {
  if (line.length <= MAX_LINE_CHARS) return line;
  const start = Math.max(0, Math.min(column - MAX_LINE_CHARS / 4, line.length - MAX_LINE_CHARS));
  return `${start > 0 ? '…' : ''}${line.slice(start, start + MAX_LINE_CHARS)}${start + MAX_LINE_CHARS < line.length ? '…' : ''}`;
}

/** `line` without a final `\r`. */
export function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/**
 * One match as text, grep style: `path:line:column: text` for the match, `path-line- text` for its context lines,
 * `--` after the group when context is shown. The path is quoted when unusual and the line texts have their control
 * characters escaped (src/tools/text-safe.ts), so each match or context line is exactly one line of output.
 */
export function renderMatch(m: Match, withContext: boolean): string {
  const p = quoteName(m.path);
  return [
    ...(m.before ?? []).map((t, i, all) => `${p}-${m.line - all.length + i}- ${escapeLine(t)}`),
    `${p}:${m.line}:${m.column}: ${escapeLine(m.text)}`,
    ...(m.after ?? []).map((t, i) => `${p}-${m.line + 1 + i}- ${escapeLine(t)}`),
    ...(withContext ? ['--'] : []),
  ].join('\n');
}
