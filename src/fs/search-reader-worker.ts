/**
 * The reader threads of src/fs/search-reader.ts — the process's one pool of worker threads for content search and user
 * regular expressions. Reads (and matches) batches of content-search candidates synchronously
 * (src/fs/search-reader-read.ts), and runs regular-expression jobs (src/fs/search-reader-match.ts: a search's lines on
 * the main thread's path, replace_in_files), publishing the file or job it is on in shared memory for the pool's
 * watchdog, which terminates a thread stuck on one under a user regular expression.
 * workerData: { progress: Int32Array over a SharedArrayBuffer, epoch: ms, nativePath: the native addon the process
 * loaded at start-up (src/fs/native-reader.ts `attachNativeAddon`; the JavaScript path when null or when it does not
 * attach) }. Started from code embedded in the bundle (src/fs/worker-code.ts), never from a file.
 * Messages in: BatchRequest { id, session, options? (first batch of a session), files: runs of one directory each
 * (src/fs/search-reader-protocol.ts `BatchRuns`) }, or
 * RegexJobRequest { id, job }. Messages out: BatchReply { id, kinds: one code per file, found: the files with bytes }
 * (the bytes of `text`/`hits` results are transferred), or RegexJobReply { id, lines | replaced }.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { attachNativeAddon, type NativeAddon } from './native-reader.js';
import { runRegexJob } from './search-reader-match.js';
import {
  batchRuns,
  KIND_CODES,
  P_BATCH,
  P_INDEX,
  P_STARTED,
  WORKER_SESSIONS,
  type BatchReply,
  type BatchRequest,
  type ReaderOptions,
  type ReadOutcome,
  type RegexJobReply,
  type RegexJobRequest,
} from './search-reader-protocol.js';
import { closeDir, keepDir, readerState, readRuns, type BatchHooks, type ReaderState } from './search-reader-read.js';

/**
 * How long a reader thread keeps the verified directories of its last batch open once it has no batch to read, ms: the
 * next batch of the same search goes on from them (src/fs/search-reader-read.ts `keepDir`); an idle thread holds none.
 */
const KEEP_DIRS_IDLE_MS = 20;

/** Answers one batch: every file's outcome code, and the bytes of those that have them (transferred). */
function answerBatch(
  port: MessagePort,
  job: BatchRequest,
  options: ReaderOptions | undefined,
  state: ReaderState,
  hooks: BatchHooks,
): void {
  const { runs, count } = batchRuns(job.files);
  // A file no run holds (a malformed batch) stays `fallback`: the caller reads it.
  const codes: string[] = new Array<string>(count).fill(KIND_CODES.fallback);
  const found: BatchReply['found'] = [];
  const transfer: ArrayBuffer[] = [];
  const each = (i: number, r: ReadOutcome) => {
    codes[i] = KIND_CODES[r.kind];
    if (r.kind === 'text' || r.kind === 'hits') {
      transfer.push(r.bytes.buffer as ArrayBuffer);
      found.push(r.kind === 'hits' ? { index: i, bytes: r.bytes, hits: r.hits } : { index: i, bytes: r.bytes });
    }
  };
  // A session this worker does not know (never sent, or dropped): the caller reads the files itself. The watchdog
  // looks only at batches under a user regular expression (`bounded`), so only those record each file's progress.
  if (options) readRuns(runs, options, state, each, options.match?.bounded ? hooks : undefined);
  // The next batch of this search goes on from these directories, proving each again (search-reader-read.ts).
  keepDir(state.dir);
  const reply: BatchReply = { id: job.id, kinds: codes.join(''), found };
  port.postMessage(reply, transfer);
}

/** The worker loop: answers each batch or job in order, publishing the file it is on in `progress` for the watchdog. */
function serve(port: MessagePort, progress: Int32Array, epoch: number, addon: NativeAddon | null): void {
  const state = readerState(addon);
  const sessions = new Map<number, ReaderOptions>();
  const hooks: BatchHooks = {
    before: (i) => {
      Atomics.store(progress, P_INDEX, i);
      Atomics.store(progress, P_STARTED, Math.max(1, Date.now() - epoch));
    },
    after: () => Atomics.store(progress, P_STARTED, 0),
  };
  const idle = setTimeout(() => closeDir(state.dir), KEEP_DIRS_IDLE_MS);
  idle.unref();
  port.on('message', (msg: BatchRequest | RegexJobRequest) => {
    Atomics.store(progress, P_BATCH, msg.id);
    if ('job' in msg) {
      hooks.before(0);
      let reply: RegexJobReply;
      try {
        reply = runRegexJob(msg, state.scratch.regexes);
      } catch (error) {
        reply = { id: msg.id, error: String((error as Error)?.message ?? error) };
      }
      hooks.after();
      port.postMessage(reply);
      return;
    }
    if (msg.options) {
      sessions.set(msg.session, msg.options);
      if (sessions.size > WORKER_SESSIONS) sessions.delete(sessions.keys().next().value!);
    }
    answerBatch(port, msg, sessions.get(msg.session), state, hooks);
    Atomics.store(progress, P_STARTED, 0);
    idle.refresh();
  });
}

const data = workerData as { progress: Int32Array; epoch: number; nativePath?: string | null };
if (parentPort) {
  serve(parentPort, data.progress, data.epoch, data.nativePath ? attachNativeAddon(data.nativePath) : null);
}
