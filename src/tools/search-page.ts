/**
 * search_files, step 3 of 3 (walk → match → page): one page of results (docs/tools.md: at most max_results a
 * page, within the response budget, `truncated` and a cursor to continue), its skip counts and its text. Results are
 * added in walk order; the first result of a page always goes in (a page makes progress); the cursor names where the
 * next page resumes: `{after}` a glob result, or `{file, skip}` (a file, and how many of its matches were returned).
 * This file changes when what a page holds, how it is cut, or how it reads changes.
 */
import type { LineHit } from '../fs/match-lines.js';
import { cutLine, renderMatch, stripCr, type FileLines, type Match } from './search-line.js';
import { quoteName } from './text-safe.js';
import { jsonBytes, jsonStringBytes, ResponseBudget } from './response-budget.js';
import { NO_SKIPS, WALK_SKIPS, type WalkSkipCounts } from './search-walk.js';

/** Skip counts of a page, by reason (docs/tools.md `skipped`). */
export interface SearchSkipped {
  secret: number;
  binary: number;
  too_large: number;
  policy: number;
  unreadable: number;
  too_deep: number;
  name_too_long: number;
  ignore_rules?: number;
}

/** How a page is shaped (from the call's arguments and limits). */
export interface SearchPageOptions {
  mode: 'glob' | 'content';
  outputMode: 'matches' | 'files_with_matches' | 'count';
  /** Results per page (matches, files or counts). */
  maxResults: number;
  /** Context lines before and after each match (0–10). */
  contextLines: number;
  /** Resuming inside this file (relative path), after its first `resumeSkip` matches; null: no such file. */
  resumeFile: string | null;
  resumeSkip: number;
}

/**
 * One page of search results. The `add*` methods return false when the page is full: it is then `truncated`, with
 * `next` set to where the next page resumes, and the caller stops. Walk skips are counted only once the page has
 * consumed past them (`beforeEntry`, then `commitSkips`), so a page boundary never counts a skip twice.
 */
export class SearchPage {
  readonly files: string[] = [];
  readonly matches: Match[] = [];
  readonly counts: Array<{ path: string; count: number }> = [];
  readonly skipped: SearchSkipped = {
    secret: 0,
    binary: 0,
    too_large: 0,
    policy: 0,
    unreadable: 0,
    too_deep: 0,
    name_too_long: 0,
  };
  filesScanned = 0;
  filesMatched = 0;
  truncated = false;
  /** Where the next page resumes (cursor position), when truncated. */
  next: Record<string, unknown> | null = null;
  /** The text lines are built with the results, and both are charged to the response budget. */
  private readonly out: string[] = [];
  private readonly budget = new ResponseBudget();
  /** Whether `uncommitted` may hold a count above zero. */
  private anyUncommitted = false;
  private uncommitted: Record<(typeof WALK_SKIPS)[number], number> = {
    policy: 0,
    unreadable: 0,
    too_deep: 0,
    name_too_long: 0,
  };

  constructor(private readonly o: SearchPageOptions) {
    this.budget.charge(4096); // the fixed fields and the summary line
  }

  /** Records the walk skips that came before the entry about to be considered. */
  beforeEntry(skips: WalkSkipCounts): void {
    if (skips === NO_SKIPS) return;
    for (const k of WALK_SKIPS) this.uncommitted[k] += skips[k];
    this.anyUncommitted = true;
  }

  /** Counts the walk skips recorded so far (the page has consumed past them). */
  commitSkips(): void {
    if (!this.anyUncommitted) return; // called for every file read, nearly always with nothing to count
    this.anyUncommitted = false;
    for (const k of WALK_SKIPS) {
      this.skipped[k] += this.uncommitted[k];
      this.uncommitted[k] = 0;
    }
  }

  /** Ends the page early (the call's time budget ran out) before `relative`, which the next page starts with. */
  stopAt(relative: string): void {
    this.truncated = true;
    this.next = { file: relative, skip: 0 };
    this.commitSkips();
  }

  /** Glob search: adds a matching file. */
  addFile(relative: string): boolean {
    const line = quoteName(relative);
    const cost = jsonStringBytes(relative) + jsonStringBytes(line) + 8;
    if (this.files.length >= this.o.maxResults || (this.files.length > 0 && !this.budget.take(cost))) {
      this.truncated = true;
      this.next = { after: this.files[this.files.length - 1] };
      return false; // the skips since that file are counted again by the next page, so not here
    }
    if (this.files.length === 0) this.budget.charge(cost); // the first always goes (a page makes progress)
    this.commitSkips();
    this.files.push(relative);
    this.out.push(line);
    this.filesMatched++;
    return true;
  }

  /** Content search: a scanned file without a match. */
  scannedWithoutMatch(): void {
    this.filesScanned++;
  }

  /** Content search: a candidate skipped (binary files count as scanned, docs/tools.md). */
  skippedFile(reason: 'secret' | 'too_large' | 'unreadable' | 'binary'): void {
    if (reason === 'binary') this.filesScanned++;
    this.skipped[reason]++;
  }

  /**
   * Content search: a scanned file with matching lines `hits` (0-based [line, column]) among `lines`. In `matches` mode
   * adds them (the page may end inside the file); otherwise one result per file.
   */
  addFileMatches(relative: string, lines: FileLines, hits: readonly LineHit[]): boolean {
    this.filesScanned++;
    if (this.o.outputMode !== 'matches') return this.addFileResult(relative, hits.length);
    const contextLines = this.o.contextLines;
    const skip = this.o.resumeFile === relative ? this.o.resumeSkip : 0;
    for (let h = skip; h < hits.length; h++) {
      if (this.matches.length >= this.o.maxResults) {
        this.truncated = true;
        this.next = { file: relative, skip: h };
        return false;
      }
      // Counted with its first match on this page (a file whose matches all go to the next page is not counted here).
      if (h === skip) this.filesMatched++;
      const [lineIndex, column] = hits[h];
      const lineText = lines.line(lineIndex);
      const match: Match = {
        path: relative,
        line: lineIndex + 1,
        column: column + 1,
        text: cutLine(stripCr(lineText ?? ''), column),
      };
      if (contextLines > 0) {
        match.before = lines.slice(Math.max(0, lineIndex - contextLines), lineIndex).map((l) => cutLine(stripCr(l), 0));
        match.after = lines.slice(lineIndex + 1, lineIndex + 1 + contextLines).map((l) => cutLine(stripCr(l), 0));
        if (lineIndex + 1 + contextLines >= lines.count && lines.line(lines.count - 1) === '') {
          match.after = match.after.slice(0, Math.max(0, lines.count - 1 - (lineIndex + 1)));
        }
      }
      const rendered = renderMatch(match, contextLines > 0);
      const cost = jsonBytes(match) + jsonStringBytes(rendered) + 8;
      if (this.matches.length === 0)
        this.budget.charge(cost); // the first always goes (a page makes progress)
      else if (!this.budget.take(cost)) {
        this.truncated = true;
        this.next = { file: relative, skip: h };
        if (h === skip) this.filesMatched--; // its first match goes to the next page
        return false;
      }
      this.matches.push(match);
      this.out.push(rendered);
    }
    return true;
  }

  /**
   * One result per file (its path, or its path and count), paged by file: the cursor resumes at the first
   * file not returned, with the same result cap and response budget as matches.
   */
  private addFileResult(relative: string, count: number): boolean {
    const line = this.o.outputMode === 'count' ? `${quoteName(relative)}:${count}` : quoteName(relative);
    const cost = jsonStringBytes(relative) * 2 + 24 + 8;
    const returned = this.files.length + this.counts.length;
    if (returned >= this.o.maxResults || (returned > 0 && !this.budget.take(cost))) {
      this.truncated = true;
      this.next = { file: relative, skip: 0 }; // resumes at this file (its skips are already counted)
      return false;
    }
    if (returned === 0) this.budget.charge(cost);
    if (this.o.outputMode === 'count') this.counts.push({ path: relative, count });
    else this.files.push(relative);
    this.out.push(line);
    this.filesMatched++;
    return true;
  }

  /**
   * Closes a page the walk finished (not truncated): counts what the walk skipped after the last entry it yielded.
   */
  finishWalk(trailing: WalkSkipCounts): void {
    this.commitSkips();
    this.beforeEntry(trailing);
    this.commitSkips();
  }

  /**
   * The page's text: one line per result (grep style for matches), `(no matches)` when there is none, then a summary
   * line with the counts, the skips and the cursor.
   */
  text(nextCursor: string | null): string {
    const out = this.out.length === 0 ? ['(no matches)'] : [...this.out];
    const skippedParts = Object.entries(this.skipped)
      .filter(([, n]) => (n as number) > 0)
      .map(([k, n]) => `${n} ${k}`);
    const summary =
      this.o.mode === 'glob'
        ? `${this.files.length} files`
        : this.o.outputMode === 'count'
          ? `${this.counts.reduce((n, c) => n + c.count, 0)} matches in ${this.filesMatched} files, ${this.filesScanned} scanned`
          : this.o.outputMode === 'files_with_matches'
            ? `${this.filesMatched} files with matches, ${this.filesScanned} scanned`
            : `${this.matches.length} matches in ${this.filesMatched} files, ${this.filesScanned} scanned`;
    out.push(
      `[${summary}${skippedParts.length ? `; skipped ${skippedParts.join(', ')}` : ''}` +
        `${this.truncated ? `; truncated, continue with cursor: ${nextCursor}` : ''}]`,
    );
    return out.join('\n');
  }
}
