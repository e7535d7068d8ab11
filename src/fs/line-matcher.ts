/**
 * Finding matching lines in text for search_files (docs/tools.md). A literal query runs in this thread (an escaped
 * pattern has no backtracking to blow up). A user regular expression runs in a worker thread that is terminated
 * when one file exceeds the time limit, so a catastrophic pattern costs at most that long and never blocks other
 * calls.
 */
import type { Worker } from 'node:worker_threads';
import { ToolError } from '../errors/tool-error.js';
import { replaceLinesSteps, type LineReplacement } from './replace-lines.js';
import { loopSlicer } from './tree-ops.js';
import { embeddedWorkerCode, startWorkerFromCode } from './worker-code.js';

/** How long one file may take under a user regular expression, ms. */
export const REGEX_FILE_TIMEOUT_MS = 1000;

/** How long a fresh regex worker may take to load before its first file, ms (then it fails like a timeout). */
export const REGEX_WORKER_START_TIMEOUT_MS = 30_000;

/** 0-based line index and 0-based column of the first match on that line. */
export type LineHit = [line: number, column: number];

/** A compiled query. */
export interface LineMatcher {
  /** Lines of `text` that match. */
  match(text: string): Promise<LineHit[]>;
  /**
   * UTF-8 bytes that every matching line contains, or null when none is known (case-insensitive queries, a regular
   * expression without a provable literal). A file without them has no match: search skips it without decoding it.
   */
  readonly needle: Buffer | null;
  /**
   * Replaces every match in each line of `text` (src/fs/replace-lines.ts; replace_in_files): a literal query inserts
   * `replacement` as typed, a regular expression expands `$1`, `$<name>`, `$&`, `$$`. A regular expression runs in the
   * same worker and under the same per-file time limit as matching. A result longer than `maxChars` UTF-16 code units
   * is not built: `tooLarge` is set and `text` is the input (a replacement bomb, src/fs/replace-lines.ts); nor is one
   * of more than `maxCount` matches: `tooMany` is set, and counting stopped at the match after `maxCount`.
   * @throws ToolError VALIDATION regex_timeout
   */
  replace(text: string, replacement: string, maxChars: number, maxCount: number): Promise<LineReplacement>;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Compiles a query.
 * @throws ToolError VALIDATION (reason invalid_regex) for a pattern that does not compile
 */
export function createLineMatcher(query: string, options: { regex: boolean; caseSensitive: boolean }): LineMatcher {
  const flags = options.caseSensitive ? 'u' : 'iu';
  const source = options.regex ? query : escapeRegExp(query);
  let re: RegExp;
  try {
    re = new RegExp(source, flags);
  } catch (error) {
    throw new ToolError('VALIDATION', `The regular expression does not compile: ${(error as Error).message}.`, {
      details: { reason: 'invalid_regex', field: 'query' },
      suggestion: 'Fix the pattern (JavaScript syntax, u flag), or pass regex: false for a literal search.',
    });
  }
  if (!options.regex) {
    return {
      match: (text) => Promise.resolve().then(() => matchLines(re, text, options.caseSensitive ? query : null)),
      needle: options.caseSensitive ? Buffer.from(query, 'utf8') : null,
      replace: (text, replacement, maxChars, maxCount) =>
        runSliced(replaceLinesSteps(re, text, replacement, true, maxChars, maxCount)),
    };
  }
  const literal = requiredLiteral(source, flags);
  return {
    match: (text) => regexPool.run(source, flags, text),
    needle: literal === null ? null : Buffer.from(literal, 'utf8'),
    replace: (text, replacement, maxChars, maxCount) =>
      regexPool.replace(source, flags, text, { replacement, maxChars, maxCount }),
  };
}

/**
 * Runs a literal replacement's steps (src/fs/replace-lines.ts) on this thread, letting the event loop answer other
 * calls every ~10 ms (loopSlicer; docs/security.md "Bounded work"). Starts after the current microtask, as before.
 */
async function runSliced(steps: Generator<void, LineReplacement, void>): Promise<LineReplacement> {
  await Promise.resolve();
  const slice = loopSlicer();
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    const wait = slice();
    if (wait) await wait;
  }
}

/** Shortest literal worth a prefilter (a 1–2 character needle occurs in nearly every file). */
const MIN_REQUIRED_LITERAL = 3;

/**
 * A string that every match of the regular expression `source` (with `flags`) contains, or null when none can be
 * proven. Conservative by construction: only literal characters in the top-level sequence count (a group, a class, an
 * escape class, `.`, an anchor or an optional quantifier ends a run of literals, and a top-level `|` gives up); a
 * case-insensitive (`i`) or `v`-mode expression gives up. Returns the longest run of at least 3 characters.
 * Used to skip files that cannot match before running the expression (as ripgrep's literal extraction does).
 */
export function requiredLiteral(source: string, flags: string): string | null {
  if (flags.includes('i') || flags.includes('v')) return null;
  const runs: string[] = [];
  let run = '';
  /** Code-point length of the last atom appended to `run` (0: the last atom was not a literal). */
  let lastLiteral = 0;
  const endRun = () => {
    if (run) runs.push(run);
    run = '';
    lastLiteral = 0;
  };
  let i = 0;
  /** Skips from an opening `(` or `[` to just past its match; returns false when unbalanced. */
  const skipGroup = (): boolean => {
    let depth = 0;
    let inClass = false;
    for (; i < source.length; i++) {
      const c = source[i];
      if (c === '\\') {
        i++;
        continue;
      }
      if (inClass) {
        if (c === ']') inClass = false;
        continue;
      }
      if (c === '[') {
        inClass = true;
        continue;
      }
      if (c === '(') depth++;
      else if (c === ')') {
        depth--;
        if (depth === 0) {
          i++;
          return true;
        }
      }
    }
    return false;
  };
  const skipClass = (): boolean => {
    for (i++; i < source.length; i++) {
      if (source[i] === '\\') {
        i++;
        continue;
      }
      if (source[i] === ']') {
        i++;
        return true;
      }
    }
    return false;
  };
  while (i < source.length) {
    const c = source[i];
    if (c === '*' || c === '?' || c === '+' || c === '{') {
      let min = c === '+' ? 1 : 0;
      if (c === '{') {
        const m = /^\{(\d+)(,\d*)?\}/.exec(source.slice(i));
        if (!m) return null;
        min = Number(m[1]);
        i += m[0].length;
      } else {
        i++;
      }
      if (source[i] === '?') i++; // lazy
      if (lastLiteral > 0 && min === 0) run = run.slice(0, run.length - lastLiteral); // the character is optional
      endRun();
      continue;
    }
    if (c === '|') return null;
    if (c === '(') {
      endRun();
      if (!skipGroup()) return null;
      continue;
    }
    if (c === '[') {
      endRun();
      if (!skipClass()) return null;
      continue;
    }
    if (c === ')' || c === ']' || c === '}') return null; // unbalanced (does not compile with the u flag)
    if (c === '.' || c === '^' || c === '$') {
      endRun();
      i++;
      continue;
    }
    if (c === '\\') {
      const e = source[i + 1];
      if (e === undefined) return null;
      if (/[0-9A-Za-z]/.test(e)) {
        // An escape class, assertion, back reference or code escape: not a literal we can vouch for.
        endRun();
        i += 2;
        if (e === 'u' && source[i] === '{') {
          const close = source.indexOf('}', i);
          if (close < 0) return null;
          i = close + 1;
        } else if (e === 'u') i += 4;
        else if (e === 'x') i += 2;
        else if (e === 'c') i += 1;
        else if ((e === 'p' || e === 'P') && source[i] === '{') {
          const close = source.indexOf('}', i);
          if (close < 0) return null;
          i = close + 1;
        } else if (e === 'k' && source[i] === '<') {
          const close = source.indexOf('>', i);
          if (close < 0) return null;
          i = close + 1;
        } else if (/[0-9]/.test(e)) {
          while (/[0-9]/.test(source[i] ?? '')) i++;
        }
        continue;
      }
      const cp = String.fromCodePoint(source.codePointAt(i + 1)!);
      run += cp;
      lastLiteral = cp.length;
      i += 1 + cp.length;
      continue;
    }
    const cp = String.fromCodePoint(source.codePointAt(i)!);
    run += cp;
    lastLiteral = cp.length;
    i += cp.length;
  }
  endRun();
  let best: string | null = null;
  for (const r of runs) if (r.length >= MIN_REQUIRED_LITERAL && (best === null || r.length > best.length)) best = r;
  return best;
}

/** The error of a regular expression stopped after REGEX_FILE_TIMEOUT_MS on one file (VALIDATION regex_timeout). */
export function regexTimeoutError(): ToolError {
  return new ToolError(
    'VALIDATION',
    `The regular expression took longer than ${REGEX_FILE_TIMEOUT_MS} ms on one file and was stopped.`,
    {
      details: { reason: 'regex_timeout', field: 'query', timeout_ms: REGEX_FILE_TIMEOUT_MS },
      suggestion: 'Simplify the pattern (avoid nested quantifiers such as (a+)+), or use a literal query.',
    },
  );
}

/**
 * The (source, flags) a search reader thread compiles to match lines itself (src/fs/search-reader.ts), and whether
 * it is a user regular expression (then its time per file is bounded by REGEX_FILE_TIMEOUT_MS).
 */
export function matcherSpec(
  query: string,
  options: { regex: boolean; caseSensitive: boolean },
): { source: string; flags: string; bounded: boolean } {
  return {
    source: options.regex ? query : escapeRegExp(query),
    flags: options.caseSensitive ? 'u' : 'iu',
    bounded: options.regex,
  };
}

/**
 * Matching lines of `text`: each line (split on `\n`, a final `\r` removed) tested once; 0-based line index and
 * 0-based UTF-16 column of the first match. `re` must not be global or sticky.
 *
 * With `literal` — a string every matching line contains (the query itself for a case-sensitive literal search, or
 * `requiredLiteral` of a regular expression: the same promise the `needle` prefilter relies on) — only the lines that
 * contain it are tested (a regular expression whose literal is in most files was run on every line of
 * each; now the lines are found with `indexOf`, and each candidate line is still tested with `re` exactly as above,
 * so the hits are the same).
 */
export function matchLines(re: RegExp, text: string, literal?: string | null): LineHit[] {
  return literal ? matchLiteralLines(re, text, literal) : matchInThread(re, text);
}

/** `matchLines` over the lines that contain `literal` (non-empty) only. */
function matchLiteralLines(re: RegExp, text: string, literal: string): LineHit[] {
  const out: LineHit[] = [];
  let at = text.indexOf(literal);
  let lineStart = 0;
  let lineIndex = 0;
  while (at !== -1) {
    // Move to the line holding `at`, counting the lines passed.
    let lineEnd = text.indexOf('\n', lineStart);
    while (lineEnd !== -1 && lineEnd < at) {
      lineIndex++;
      lineStart = lineEnd + 1;
      lineEnd = text.indexOf('\n', lineStart);
    }
    if (lineEnd === -1) lineEnd = text.length;
    const line = text.slice(lineStart, lineEnd);
    const m = re.exec(line.endsWith('\r') ? line.slice(0, -1) : line);
    if (m) out.push([lineIndex, m.index]);
    if (lineEnd === text.length) break;
    lineStart = lineEnd + 1;
    lineIndex++;
    at = text.indexOf(literal, lineStart);
  }
  return out;
}

function matchInThread(re: RegExp, text: string): LineHit[] {
  const out: LineHit[] = [];
  let lineStart = 0;
  let lineIndex = 0;
  while (lineStart <= text.length) {
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd === -1) lineEnd = text.length;
    const line = text.slice(lineStart, lineEnd);
    const m = re.exec(line.endsWith('\r') ? line.slice(0, -1) : line);
    if (m) out.push([lineIndex, m.index]);
    if (lineEnd === text.length) break;
    lineStart = lineEnd + 1;
    lineIndex++;
  }
  return out;
}

/** A worker's answer: matching lines, or a replaced text and its count (src/fs/regex-worker.ts). */
interface WorkerReply {
  id: number;
  lines?: LineHit[];
  text?: string;
  count?: number;
  tooLarge?: true;
  tooMany?: true;
}

/**
 * One worker, one job at a time; replaced after a timeout. Unref'd so it never keeps the process alive.
 * `code`: the regex worker's code (src/fs/worker-code.ts: embedded in the bundle, never read from a file); unit
 * tests, which run this module from src/, pass code built from src/. Null (src/ without it): every job fails.
 */
export class RegexWorkerPool {
  private worker: Worker | null = null;
  private ready: Promise<unknown> = Promise.resolve();
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;

  constructor(private readonly code: string | null = embeddedWorkerCode('regex-worker')) {}

  run(source: string, flags: string, text: string): Promise<LineHit[]> {
    return this.enqueue<LineHit[]>(source, flags, text, undefined, (msg) => msg.lines!);
  }

  /** Replaces in `text` in the worker (same queue, same time limit). */
  replace(
    source: string,
    flags: string,
    text: string,
    job: { replacement: string; maxChars: number; maxCount: number },
  ): Promise<LineReplacement> {
    return this.enqueue<LineReplacement>(source, flags, text, job, (msg) => ({
      text: msg.text!,
      count: msg.count!,
      ...(msg.tooLarge ? { tooLarge: true as const } : {}),
      ...(msg.tooMany ? { tooMany: true as const } : {}),
    }));
  }

  private enqueue<T>(
    source: string,
    flags: string,
    text: string,
    replacement: { replacement: string; maxChars: number; maxCount: number } | undefined,
    pick: (msg: WorkerReply) => T,
  ): Promise<T> {
    const job = this.queue.then(() => this.runNow(source, flags, text, replacement)).then(pick);
    this.queue = job.catch(() => undefined);
    return job;
  }

  /**
   * The worker, started if needed, once it has loaded (its `{ready: true}` message): the per-file limit then times
   * the regular expression's work, not the thread's start-up (a fresh worker under load took over a second).
   * @throws the regex timeout error when the worker does not load within REGEX_WORKER_START_TIMEOUT_MS, or its error;
   *   Error when this build has no worker code
   */
  private async getWorker(): Promise<Worker> {
    if (!this.worker) {
      if (this.code === null) throw new Error('this build embeds no regex worker (run the bundle, dist/cli.js)');
      const worker = startWorkerFromCode(this.code);
      worker.unref();
      this.worker = worker;
      this.ready = this.reply(worker, (msg) => (msg.ready === true ? true : undefined), REGEX_WORKER_START_TIMEOUT_MS);
    }
    const worker = this.worker;
    await this.ready;
    return worker;
  }

  private async runNow(
    source: string,
    flags: string,
    text: string,
    replacement: { replacement: string; maxChars: number; maxCount: number } | undefined,
  ): Promise<WorkerReply> {
    const worker = await this.getWorker();
    const id = this.nextId++;
    const reply = this.reply(worker, (msg) => (msg.id === id ? msg : undefined), REGEX_FILE_TIMEOUT_MS);
    worker.postMessage(
      replacement === undefined ? { id, source, flags, text } : { id, source, flags, text, ...replacement },
    );
    return reply;
  }

  /**
   * The first message of `worker` that `accept` takes (its result), within `timeoutMs`; on the timeout the worker
   * is terminated and dropped (the next job starts a fresh one), and on its error it is dropped.
   * @throws the regex timeout error, or the worker's error
   */
  private reply<T>(
    worker: Worker,
    accept: (msg: WorkerReply & { ready?: boolean }) => T | undefined,
    timeoutMs: number,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const drop = () => {
        if (this.worker === worker) this.worker = null;
      };
      const timer = setTimeout(() => {
        cleanup();
        drop();
        void worker.terminate();
        reject(regexTimeoutError());
      }, timeoutMs);
      const onMessage = (msg: WorkerReply & { ready?: boolean }) => {
        const value = accept(msg);
        if (value === undefined) return;
        cleanup();
        resolve(value);
      };
      const onError = (error: Error) => {
        cleanup();
        drop();
        reject(error);
      };
      const cleanup = () => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
    });
  }
}

const regexPool = new RegexWorkerPool();
