/**
 * Review of r17-literal (content search: a matched file from a reader thread decoded line by line, FileLines in
 * src/tools/search-line.ts): the page asks for a match's line, then its context lines before it, then after it. A
 * FileLines over bytes walks forward from its last line and starts again from byte 0 whenever a line before it is
 * asked for, so with context_lines > 0 every match rescans the file from its start: a page of 500 matches at the end
 * of a 32 KiB file (the largest a reader thread hands back, READ_AHEAD_MAX_FILE_BYTES) of 31,768 short lines is
 * ~16 million `indexOf` calls in one synchronous `addFileMatches`, ~0.6-1 s on the event loop (main's build: one
 * `split`, a few ms). The rule: no call holds the event loop over ~100 ms.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileLines } from '../../src/tools/search-line.js';
import { SearchPage } from '../../src/tools/search-page.js';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

/** 31,768 empty lines, then 500 lines `a`: 32,768 bytes, the matches all at the end. */
const TEXT = '\n'.repeat(32_000 - 1_000) + 'a\n'.repeat(500);
const HITS: Array<[number, number]> = Array.from({ length: 500 }, (_, k) => [31_000 + k, 0]);

/** One page of `matches` with 10 context lines over `lines`; the page and the ms its one synchronous call took. */
function pageOf(lines: FileLines): { page: SearchPage; ms: number } {
  const page = new SearchPage({
    mode: 'content',
    outputMode: 'matches',
    maxResults: 500,
    contextLines: 10,
    resumeFile: null,
    resumeSkip: 0,
  });
  const t0 = performance.now();
  page.addFileMatches('quad.txt', lines, HITS);
  return { page, ms: performance.now() - t0 };
}

describe('FileLines over bytes, matches with context lines', () => {
  it('a page of 500 matches with context at the end of a 32 KiB file is paged in one pass, not one per match', () => {
    const fromText = pageOf(new FileLines(TEXT));
    const fromBytes = pageOf(new FileLines(Buffer.from(TEXT)));
    // The same page either way (what main's build answers) ...
    expect(fromBytes.page.matches).toEqual(fromText.page.matches);
    expect(fromBytes.page.matches.length).toBeGreaterThan(0);
    // ... in about the time of the text's split (a few ms here), never the ~100 ms of the event-loop rule.
    expect(fromBytes.ms).toBeLessThan(100);
  });
});

describe('through the server', () => {
  const t = makeTree({ 'quad.txt': TEXT }, 'fs-tools-file-lines-review-');
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('modern', { args: [t.dir] });
  });
  afterAll(async () => {
    await client?.close();
    t.cleanup();
  });

  /** The server's CPU time so far (all its threads), ms. */
  const cpuMs = (): number => {
    const f = readFileSync(`/proc/${client.pid()}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  };

  it.runIf(process.platform === 'linux')(
    'a search with context lines on that file costs the server no second',
    async () => {
      const args = { query: 'a', path: '.', context_lines: 10 };
      await client.callOk('search_files', args); // reader threads started
      const before = cpuMs();
      const s = await client.callOk('search_files', args);
      const spent = cpuMs() - before;
      expect(s.matches).toHaveLength(500);
      expect(s.matches[0]).toMatchObject({ path: 'quad.txt', line: 31_001, text: 'a' });
      // main's build: ~10-30 ms of CPU for this call; r17-literal: ~600 ms, nearly all of it one synchronous page.
      expect(spent).toBeLessThan(250);
    },
  );
});
