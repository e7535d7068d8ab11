/**
 * Worker side of src/fs/search-reader.ts: reads (and matches) batches of content-search candidates synchronously.
 * workerData: { progress: Int32Array over a SharedArrayBuffer, epoch: ms }.
 * Message in: BatchRequest { id, session, options? (first batch of a session), files: NUL-separated paths }.
 * Message out: BatchReply { id, kinds: one code per file, found: the files with bytes }; the bytes of `text`/`hits` results are
 * transferred.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { serveBatches } from './search-reader.js';

const data = workerData as { progress: Int32Array; epoch: number };
if (parentPort) serveBatches(parentPort, data.progress, data.epoch);
