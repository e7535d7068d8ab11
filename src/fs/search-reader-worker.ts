/**
 * Worker side of src/fs/search-reader.ts: reads (and matches) batches of content-search candidates synchronously.
 * workerData: { progress: Int32Array over a SharedArrayBuffer, epoch: ms, nativePath: the native addon the process
 * loaded at start-up (src/fs/native-reader.ts `attachNativeAddon`; the JavaScript path when null or when it does not
 * attach) }. Started from code embedded in the bundle (src/fs/worker-code.ts), never from a file.
 * Message in: BatchRequest { id, session, options? (first batch of a session), files: NUL-separated paths }.
 * Message out: BatchReply { id, kinds: one code per file, found: the files with bytes }; the bytes of `text`/`hits` results are
 * transferred.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { attachNativeAddon } from './native-reader.js';
import { serveBatches } from './search-reader.js';

const data = workerData as { progress: Int32Array; epoch: number; nativePath?: string | null };
if (parentPort) {
  serveBatches(parentPort, data.progress, data.epoch, data.nativePath ? attachNativeAddon(data.nativePath) : null);
}
