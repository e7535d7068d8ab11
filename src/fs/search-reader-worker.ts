/**
 * Worker side of src/fs/search-reader.ts: reads (and matches) batches of content-search candidates synchronously.
 * workerData: { progress: Int32Array over a SharedArrayBuffer, epoch: ms, native: load the native addon
 * (src/fs/native-reader.ts; the JavaScript path when false or when it does not load) }.
 * Message in: BatchRequest { id, session, options? (first batch of a session), files: NUL-separated paths }.
 * Message out: BatchReply { id, kinds: one code per file, found: the files with bytes }; the bytes of `text`/`hits` results are
 * transferred.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadNativeAddon } from './native-reader.js';
import { serveBatches } from './search-reader.js';

const data = workerData as { progress: Int32Array; epoch: number; native?: boolean };
if (parentPort) serveBatches(parentPort, data.progress, data.epoch, data.native ? loadNativeAddon() : null);
