/**
 * Worker side of bounded regular-expression search (docs/tools.md: a user-supplied regular expression can never stall
 * the server). Runs in a worker thread that the main thread terminates when a file takes too long.
 * Message in: { id, source, flags, text }. Message out: { id, lines: [[lineIndex, column], …] } (0-based line,
 * 0-based UTF-16 column of the first match on each matching line).
 * With `replacement` in the message (replace_in_files), the worker replaces instead (src/fs/replace-lines.ts)
 * and answers { id, text, count, tooLarge?, tooMany? } (a result over `maxChars`, or of more than `maxCount` matches,
 * is not built).
 */
import { parentPort } from 'node:worker_threads';
import { replaceLines } from './replace-lines.js';

interface Job {
  id: number;
  source: string;
  flags: string;
  text: string;
  replacement?: string;
  /** With replacement: most UTF-16 code units of the result (src/fs/replace-lines.ts `maxChars`). */
  maxChars?: number;
  /** With replacement: most matches (src/fs/replace-lines.ts `maxCount`). */
  maxCount?: number;
}

let cached: { key: string; re: RegExp } | null = null;

parentPort?.on('message', (job: Job) => {
  const key = `${job.flags}/${job.source}`;
  if (!cached || cached.key !== key) cached = { key, re: new RegExp(job.source, job.flags) };
  const re = cached.re;
  if (job.replacement !== undefined) {
    const r = replaceLines(re, job.text, job.replacement, false, job.maxChars, job.maxCount);
    parentPort!.postMessage({
      id: job.id,
      text: r.text,
      count: r.count,
      ...(r.tooLarge ? { tooLarge: true } : {}),
      ...(r.tooMany ? { tooMany: true } : {}),
    });
    return;
  }
  const out: Array<[number, number]> = [];
  let lineStart = 0;
  let lineIndex = 0;
  const text = job.text;
  while (lineStart <= text.length) {
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd === -1) lineEnd = text.length;
    let line = text.slice(lineStart, lineEnd);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    re.lastIndex = 0;
    const m = re.exec(line);
    if (m) out.push([lineIndex, m.index]);
    if (lineEnd === text.length) break;
    lineStart = lineEnd + 1;
    lineIndex++;
  }
  parentPort!.postMessage({ id: job.id, lines: out });
});

// Loaded and listening: the per-file time limit starts only now (RegexWorkerPool waits for this message), so a
// thread's start-up on a busy machine is not charged to the first file's regular expression.
parentPort?.postMessage({ ready: true });
