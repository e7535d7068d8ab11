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

/**
 * The lines of a file with matches, as `text.split('\n')` has them: from its text, or from its bytes (UTF-8 that the
 * binary test passed, so every `\n` is a 0x0A byte and a line decodes alone to the same string), where only the lines
 * asked for are decoded (a reader thread's file is not decoded whole, nor split, for a match or two).
 */
export class FileLines {
  private lines: string[] | null = null;
  private readonly bytes: Buffer | null;
  /**
   * Byte offsets where lines 0 … starts.length - 1 begin (bytes only), found once each: a line asked for again, or
   * before one asked for already (a match's context before it), costs no scan (each byte is looked at once per file,
   * however the lines are asked for).
   */
  private readonly starts: number[] = [0];
  /** True once the scan reached the last line (no `\n` after starts' last entry). */
  private scanned = false;

  constructor(source: string | Buffer) {
    if (typeof source === 'string') {
      this.lines = source.split('\n');
      this.bytes = null;
    } else this.bytes = source;
  }

  /** Line `i` (0-based, without its `\n`), or undefined past the last. */
  line(i: number): string | undefined {
    if (this.lines !== null || this.bytes === null) return this.lines![i];
    const bytes = this.bytes;
    if (!(i >= 0) || !this.reach(i)) return undefined;
    const at = this.starts[i];
    const end = bytes.indexOf(0x0a, at);
    return bytes.toString('utf8', at, end === -1 ? bytes.length : end);
  }

  /** How many lines (`\n`s + 1). */
  get count(): number {
    if (this.lines !== null) return this.lines.length;
    this.reach(Infinity);
    return this.starts.length;
  }

  /** Lines [from, to) that exist, as `lines.slice(from, to)`. */
  slice(from: number, to: number): string[] {
    const out: string[] = [];
    for (let i = Math.max(0, from); i < Math.min(to, this.count); i++) out.push(this.line(i)!);
    return out;
  }

  /** Finds line starts up to line `i`; false when the file has no line `i`. */
  private reach(i: number): boolean {
    const bytes = this.bytes!;
    const starts = this.starts;
    while (starts.length <= i && !this.scanned) {
      const nl = bytes.indexOf(0x0a, starts[starts.length - 1]);
      if (nl === -1) this.scanned = true;
      else starts.push(nl + 1);
    }
    return i < starts.length;
  }
}
