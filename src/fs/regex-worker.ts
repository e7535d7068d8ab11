/**
 * Worker side of bounded regular-expression search (SPEC §6.1: a user-supplied regular expression can never stall
 * the server). Runs in a worker thread that the main thread terminates when a file takes too long.
 * Message in: { id, source, flags, text, literal? }. Message out: { id, lines: [[lineIndex, column], …] } (0-based line,
 * 0-based UTF-16 column of the first match on each matching line).
 * With `replacement` in the message (replace_in_files, issue 18), the worker replaces instead (src/fs/replace-lines.ts)
 * and answers { id, text, count, tooLarge? } (a result over `maxChars` is not built).
 */
import { parentPort } from 'node:worker_threads';
import { matchLines } from './line-matcher.js';
import { replaceLines } from './replace-lines.js';

interface Job {
  id: number;
  source: string;
  flags: string;
  text: string;
  replacement?: string;
  /** With replacement: most UTF-16 code units of the result (src/fs/replace-lines.ts `maxChars`). */
  maxChars?: number;
  /** Without replacement: a string every matching line contains; only lines holding it are tested (issue #19). */
  literal?: string;
}

let cached: { key: string; re: RegExp } | null = null;

parentPort?.on('message', (job: Job) => {
  const key = `${job.flags}/${job.source}`;
  if (!cached || cached.key !== key) cached = { key, re: new RegExp(job.source, job.flags) };
  const re = cached.re;
  if (job.replacement !== undefined) {
    const r = replaceLines(re, job.text, job.replacement, false, job.maxChars);
    parentPort!.postMessage({ id: job.id, text: r.text, count: r.count, ...(r.tooLarge ? { tooLarge: true } : {}) });
    return;
  }
  parentPort!.postMessage({ id: job.id, lines: matchLines(re, job.text, job.literal) });
});
