/**
 * Worker threads start from code, never from a file (src/fs/worker-code.ts): from src/ nothing is embedded (null);
 * a build's table gives each worker's code; `startWorkerFromCode` runs a script given as a string.
 */
import { describe, expect, it } from 'vitest';
import { embeddedWorkerCode, startWorkerFromCode } from '../../src/fs/worker-code.js';

describe('worker code', () => {
  it('src/ alone embeds none; a build table gives each by name', () => {
    expect(embeddedWorkerCode('search-reader-worker')).toBeNull();
    const table = { 'search-reader-worker': 'code A' };
    expect(embeddedWorkerCode('search-reader-worker', table)).toBe('code A');
    expect(embeddedWorkerCode('search-reader-worker', { 'other-worker': 'code B' })).toBeNull();
  });

  it('starts a worker from a string (eval), with its workerData', async () => {
    const worker = startWorkerFromCode(
      "const { parentPort, workerData } = require('node:worker_threads'); parentPort.postMessage(workerData * 2);",
      { workerData: 21 },
    );
    try {
      expect(await new Promise((resolve) => worker.once('message', resolve))).toBe(42);
    } finally {
      await worker.terminate();
    }
  });
});
