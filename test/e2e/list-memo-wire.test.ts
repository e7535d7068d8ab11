/**
 * list_directory's page memo on the wire (src/tools/list-memo.ts, src/server/stdio-transport.ts
 * `sealedMessageChunks`): the answer line of a page built and serialized as usual (a racy directory: never kept) and
 * the lines of the same page kept and handed out again (built once, then reused with its encoded bytes) are the same
 * bytes but for the JSON-RPC id — names with quotes, backslashes, line breaks, control characters and non-ASCII, a
 * secret, a FIFO, a directory entry, a truncated page and its cursor. The bytes are the server's alone: one era (2025,
 * raw JSON-RPC lines). Under both eras' SDK clients a kept page is answered again and parses as the built one (the
 * modern era's result fields around a sealed, frozen page).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RACY_MS } from '../../src/fs/listing-cache.js';
import { startRaw, type RawServer } from '../helpers/raw-server.js';
import { connect, ERAS } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

let root: { dir: string; cleanup: () => void };
let stateDir: { dir: string; cleanup: () => void };
let server: RawServer;

beforeAll(async () => {
  root = makeTree({}, 'fs-tools-memo-wire-');
  stateDir = makeTree({}, 'fs-tools-state-');
  server = startRaw([root.dir, '--state-dir', stateDir.dir]);
  await server.ready;
});
afterAll(async () => {
  server.child.stdin.end();
  await server.exited;
  root.cleanup();
  stateDir.cleanup();
});

/** The answer lines of `args` listed `times` times, with their ids masked. */
async function answers(args: Record<string, unknown>, times: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < times; i++) {
    const before = server.lines().length;
    const answer = await server.call('list_directory', args);
    expect(answer?.isError).toBe(false);
    const line = server
      .lines()
      .slice(before)
      .find((l) => l.includes('"structuredContent"'));
    out.push(line!.replace(/"id":\d+/, '"id":N'));
  }
  return out;
}

describe('list_directory page memo on the wire', () => {
  it('writes a kept page byte for byte as a page built afresh', async () => {
    const d = path.join(root.dir, 'names');
    mkdirSync(path.join(d, 'sub'), { recursive: true });
    for (const name of [
      'plain',
      'quote"d',
      'back\\slash',
      'new\nline',
      'tab\there',
      'ümlaut ✓',
      '😀',
      '.env',
      'x\u0001y',
    ])
      writeFileSync(path.join(d, name), '');
    execFileSync('mkfifo', [path.join(d, 'fifo')]);
    const cases = [{ path: d }, { path: d, max_entries: 4 }];
    // Within the racy window: built and serialized as without the memo.
    const built: string[][] = [];
    for (const c of cases) built.push(await answers(c, 2));
    await new Promise((r) => setTimeout(r, RACY_MS + 100));
    // Now kept: the first call builds and keeps, the next ones are the kept page and its bytes.
    const kept: string[][] = [];
    for (const c of cases) kept.push(await answers(c, 3));
    for (let i = 0; i < cases.length; i++) {
      for (const line of [...built[i], ...kept[i]]) expect(line).toBe(built[i][0]);
    }
    expect(built[1][0]).toContain('"truncated":true');
    expect(built[0][0]).toContain('"secret":true');
  });
});

describe.each(ERAS)('list_directory page memo, %s client', (era) => {
  it('answers a kept page again, as the page built first', async () => {
    const d = path.join(root.dir, `era-${era}`);
    mkdirSync(d);
    for (const name of ['a', 'b', 'quote"d', '.env']) writeFileSync(path.join(d, name), '');
    await new Promise((r) => setTimeout(r, RACY_MS + 100));
    const client = await connect(era, { args: [root.dir, '--state-dir', stateDir.dir] });
    try {
      const results = [];
      for (let i = 0; i < 3; i++) results.push(await client.call('list_directory', { path: d, max_entries: 3 }));
      expect(results[0].structuredContent?.entries).toEqual([{ path: '.env', type: 'file', secret: true }, 'a', 'b']);
      for (const r of results.slice(1)) expect(r).toEqual(results[0]);
    } finally {
      await client.close();
    }
  });
});
