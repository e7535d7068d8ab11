/**
 * Finding matching lines in text for search_files (SPEC §6.1). A literal query runs in this thread (an escaped
 * pattern has no backtracking to blow up). A user regular expression runs in a worker thread that is terminated
 * when one file exceeds the time limit, so a catastrophic pattern costs at most that long and never blocks other
 * calls.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { ToolError } from '../errors/tool-error.js';

/** How long one file may take under a user regular expression, ms. */
export const REGEX_FILE_TIMEOUT_MS = 1000;

/** 0-based line index and 0-based column of the first match on that line. */
export type LineHit = [line: number, column: number];

/** A compiled query. */
export interface LineMatcher {
  /** Lines of `text` that match. */
  match(text: string): Promise<LineHit[]>;
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
  if (!options.regex) return { match: async (text) => matchInThread(re, text) };
  return { match: (text) => regexPool.run(source, flags, text) };
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

/** One worker, one job at a time; replaced after a timeout. Unref'd so it never keeps the process alive. */
class RegexWorkerPool {
  private worker: Worker | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;

  run(source: string, flags: string, text: string): Promise<LineHit[]> {
    const job = this.queue.then(() => this.runNow(source, flags, text));
    this.queue = job.catch(() => undefined);
    return job;
  }

  private getWorker(): Worker {
    if (!this.worker) {
      const url = new URL('./regex-worker.js', import.meta.url);
      this.worker = new Worker(fileURLToPath(url));
      this.worker.unref();
    }
    return this.worker;
  }

  private runNow(source: string, flags: string, text: string): Promise<LineHit[]> {
    const worker = this.getWorker();
    const id = this.nextId++;
    return new Promise<LineHit[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        this.worker = null;
        void worker.terminate();
        reject(new ToolError('VALIDATION',
          `The regular expression took longer than ${REGEX_FILE_TIMEOUT_MS} ms on one file and was stopped.`, {
            details: { reason: 'regex_timeout', field: 'query', timeout_ms: REGEX_FILE_TIMEOUT_MS },
            suggestion: 'Simplify the pattern (avoid nested quantifiers such as (a+)+), or use a literal query.',
          }));
      }, REGEX_FILE_TIMEOUT_MS);
      const onMessage = (msg: { id: number; lines: LineHit[] }) => {
        if (msg.id !== id) return;
        cleanup();
        resolve(msg.lines);
      };
      const onError = (error: Error) => {
        cleanup();
        this.worker = null;
        reject(error);
      };
      const cleanup = () => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.postMessage({ id, source, flags, text });
    });
  }
}

const regexPool = new RegexWorkerPool();
