/**
 * Worker side of src/fs/search-reader.ts: reads (and matches) batches of content-search candidates synchronously.
 * workerData: { progress: Int32Array over a SharedArrayBuffer, epoch: ms }.
 * Message in: { id, files: string[], options: ReaderOptions }.
 * Message out: { id, results: ReadOutcome[] } in the order of `files`; the bytes of `text`/`hits` results are
 * transferred.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { serveBatches } from './search-reader.js';

const data = workerData as { progress: Int32Array; epoch: number };
if (parentPort) serveBatches(parentPort, data.progress, data.epoch);
