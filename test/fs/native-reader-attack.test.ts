/**
 * The native reader's read-first path (native/fs_tools_native.c, docs/security.md "Native reads for content search")
 * against the JavaScript path on files whose size fstat reports as 0 but whose read fails: /proc/PID/mem (EIO at
 * offset 0) and /proc/PID/pagemap (EINVAL for a length that is not a multiple of 8). The JavaScript path reads the
 * size fstat reported — nothing — and answers an empty text; the addon must answer the same, not unreadable.
 */
import { expect, it } from 'vitest';
import type { NativeAddon } from '../../src/fs/native-reader.js';
import { closeDir, readBatch, readerState } from '../../src/fs/search-reader-read.js';
import type { ReaderOptions, ReadOutcome } from '../../src/fs/search-reader-protocol.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const loaded = loadBuiltAddon()?.addon ?? null;

/** readBatch's outcomes, with bytes as text (latin1: every byte kept). */
function outcomes(files: string[], options: ReaderOptions, addon: NativeAddon | null): Array<Record<string, unknown>> {
  const state = readerState(addon);
  const got: Array<Record<string, unknown>> = [];
  readBatch(files, options, state, (i, r: ReadOutcome) => {
    got[i] = 'bytes' in r ? { ...r, bytes: Buffer.from(r.bytes).toString('latin1') } : { ...r };
  });
  closeDir(state.dir);
  expect(got.length).toBe(files.length);
  return got;
}

it.runIf(loaded !== null)(
  'reads a size-0 file whose read fails (/proc mem, pagemap) as the JavaScript path does',
  () => {
    const dir = `/proc/${process.pid}`;
    const files = [`${dir}/mem`, `${dir}/pagemap`, `${dir}/status`];
    for (const needle of [null, Buffer.from('x')]) {
      const options: ReaderOptions = {
        roots: [{ real: '/proc' }],
        maxFileBytes: 1e6,
        keepMaxBytes: 1e5,
        needle,
        match: null,
      };
      const js = outcomes(files, options, null);
      expect(js[0]).toEqual(needle === null ? { kind: 'text', bytes: '' } : js[2]);
      expect(outcomes(files, options, loaded)).toEqual(js);
    }
  },
);
