/**
 * Issue #14 memory test (its own script: `npm run test:memory`; ~1-2 min, creates 200,000 files): 150 concurrent
 * list_directory calls (each a different page) and 60 concurrent glob searches of one 200,000-entry directory,
 * all in flight together against one real server process. Every call must be answered correctly (the exact page,
 * the exact first 500 matches) and the server's peak RSS (VmHWM, Linux) must stay under the bound the README
 * documents (MEMORY_BOUND_MIB). Before issue #14 the same load peaked at 4.5 GB (listings) and 731 MB (searches).
 */
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { CLI } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';
import { entryPath } from '../helpers/entries.js';

/** The documented bound on the server's peak RSS under this load (README "Limits"). */
const MEMORY_BOUND_MIB = 300;
const ENTRIES = 200_000;
const PAGE = 1000;

const scratch = makeTree({}, 'fs-tools-mem-');
const DIR = path.join(scratch.dir, 'huge');
const name = (i: number) => `f${String(i).padStart(6, '0')}`;

function peakRss(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error('no VmHWM');
  return Number(m[1]) * 1024;
}

/**
 * The client: the real 2026-era SDK client, built here rather than through test/helpers/server.ts only to raise its
 * per-request timeout (60 s by default): 210 calls queue behind a concurrency of 4 on a 2-core machine that other
 * jobs share, and the test is about memory and correctness, not latency.
 */
let client: Client;
let transport: StdioClientTransport;
async function callOk(name: string, args: Record<string, unknown>): Promise<Record<string, any>> {
  const r = (await client.callTool({ name, arguments: args }, { timeout: 600_000 })) as {
    isError?: boolean;
    structuredContent?: Record<string, any>;
    content: Array<{ text?: string }>;
  };
  if (r.isError) throw new Error(`${name} failed: ${r.content[0]?.text}`);
  return r.structuredContent!;
}

beforeAll(async () => {
  mkdirSync(DIR);
  for (let i = 0; i < ENTRIES; i++) writeFileSync(path.join(DIR, name(i)), '');
  const past = new Date(Date.now() - 60_000);
  utimesSync(DIR, past, past);
  await new Promise((r) => setTimeout(r, 1500)); // out of the listing cache's racy window (ctime)
  transport = new StdioClientTransport({ command: process.execPath, args: [CLI, scratch.dir], stderr: 'inherit' });
  client = new Client(
    { name: 'fs-tools-memtest', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(transport);
}, 300_000);
afterAll(async () => {
  await client?.close();
  scratch.cleanup();
}, 120_000);

describe('memory under concurrency (200,000-entry directory)', () => {
  it('150 concurrent listings and 60 concurrent glob searches: all correct, peak RSS under the bound', async () => {
    // The page cursors, from one sequential pass (as an agent would get them).
    const passStarted = Date.now();
    const cursors: Array<string | undefined> = [undefined];
    for (let cursor: string | undefined; ;) {
      const s = await callOk('list_directory', { path: DIR, max_entries: PAGE, ...(cursor ? { cursor } : {}) });
      if (!s.next_cursor) break;
      cursor = s.next_cursor;
      cursors.push(cursor);
    }
    expect(cursors).toHaveLength(ENTRIES / PAGE);
    console.log(`sequential pass over ${ENTRIES / PAGE} pages: ${Date.now() - passStarted} ms`);
    const before = peakRss(transport.pid!);
    const started = Date.now();

    const listings = Array.from({ length: 150 }, async (_, k) => {
      const s = await callOk('list_directory', {
        path: DIR,
        max_entries: PAGE,
        ...(cursors[k] ? { cursor: cursors[k] } : {}),
      });
      expect(s.entries.map(entryPath)).toEqual(Array.from({ length: PAGE }, (_, i) => name(k * PAGE + i)));
      expect(s.truncated).toBe(true);
    });
    const searches = Array.from({ length: 60 }, async (_, k) => {
      const suffix = String(k).padStart(2, '0');
      const s = await callOk('search_files', { path: DIR, glob: `*${suffix}` });
      const expected = Array.from({ length: 500 }, (_, i) => name(i * 100 + k));
      expect(s.files).toEqual(expected);
      expect(s.truncated).toBe(true);
    });
    await Promise.all([...listings, ...searches]);
    const peak = peakRss(transport.pid!);
    console.log(
      `210 concurrent calls in ${Date.now() - started} ms; server VmHWM ${(before / 2 ** 20).toFixed(1)} MiB ` +
        `before, ${(peak / 2 ** 20).toFixed(1)} MiB after (bound ${MEMORY_BOUND_MIB} MiB)`,
    );
    expect(peak).toBeLessThan(MEMORY_BOUND_MIB * 2 ** 20);
  }, 600_000);
});
