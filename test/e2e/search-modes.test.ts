/**
 * search_files output modes (issue #18): `files_with_matches` returns paths only, `count` per-file counts, both with
 * the same paging (cursor), skip counts, result cap and text escaping as `matches`; through real clients of both eras.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, ERAS, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

describe.each(ERAS)('search_files output modes (%s era)', (era) => {
  const tree = makeTree({
    'a.txt': 'needle\nhay\nneedle again\n',
    'b.txt': 'hay only\n',
    'c.txt': 'one needle\n',
    'd\nname.txt': 'needle with an odd name\n',
    '.env': 'needle=secret\n',
    'bin.dat': Buffer.from([0, 1, 2, 0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65]),
    sub: { 'e.txt': 'needle\nneedle\nneedle\n' },
  });
  let client: TestClient;
  beforeAll(async () => {
    client = await connect(era, { args: [tree.dir] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it('files_with_matches returns each matching file once, with the skips counted as for matches', async () => {
    const r = await client.callOk('search_files', { query: 'needle', output_mode: 'files_with_matches' });
    const full = await client.callOk('search_files', { query: 'needle' });
    expect(r.output_mode).toBe('files_with_matches');
    expect(r.files).toEqual(['a.txt', 'c.txt', 'd\nname.txt', 'sub/e.txt']);
    // Issue #15: only the array of the kind asked for.
    expect(r).not.toHaveProperty('matches');
    expect(r).not.toHaveProperty('counts');
    expect(r.files_matched).toBe(4);
    expect(r.skipped).toEqual(full.skipped);
    expect(r.skipped.secret).toBe(1);
    expect(r.skipped.binary).toBe(1);
    expect(r.truncated).toBe(false);
  });

  it('count returns the number of matching lines per file, equal to the matches mode', async () => {
    const r = await client.callOk('search_files', { query: 'needle', output_mode: 'count' });
    const full = await client.callOk('search_files', { query: 'needle' });
    const perFile = new Map<string, number>();
    for (const m of full.matches) perFile.set(m.path, (perFile.get(m.path) ?? 0) + 1);
    expect(r.counts).toEqual([...perFile].map(([path, count]) => ({ path, count })));
    expect(r.counts).toEqual([
      { path: 'a.txt', count: 2 },
      { path: 'c.txt', count: 1 },
      { path: 'd\nname.txt', count: 1 },
      { path: 'sub/e.txt', count: 3 },
    ]);
    expect(r).not.toHaveProperty('files');
    expect(r).not.toHaveProperty('matches');
    expect(r.skipped.secret).toBe(1);
  });

  it('text output quotes unusual names (one line per file)', async () => {
    const f = await client.call('search_files', { query: 'needle', output_mode: 'files_with_matches' });
    const fText = f.content[0].text!;
    expect(fText.split('\n').slice(0, 4)).toEqual(['a.txt', 'c.txt', '"d\\nname.txt"', 'sub/e.txt']);
    const c = await client.call('search_files', { query: 'needle', output_mode: 'count' });
    expect(c.content[0].text!.split('\n').slice(0, 4)).toEqual([
      'a.txt:2',
      'c.txt:1',
      '"d\\nname.txt":1',
      'sub/e.txt:3',
    ]);
    expect(c.content[0].text).toContain('7 matches in 4 files');
  });

  it.each(['files_with_matches', 'count'])(
    '%s pages with the cursor: every file once, the cap honoured',
    async (mode) => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const r = await client.callOk('search_files', {
          query: 'needle',
          output_mode: mode,
          max_results: 1,
          ...(cursor ? { cursor } : {}),
        });
        const page: string[] = mode === 'count' ? r.counts.map((c: any) => c.path) : r.files;
        expect(page.length).toBeLessThanOrEqual(1);
        seen.push(...page);
        cursor = r.next_cursor ?? undefined;
        pages++;
      } while (cursor && pages < 10);
      expect(seen).toEqual(['a.txt', 'c.txt', 'd\nname.txt', 'sub/e.txt']);
    },
  );

  it('a cursor of one mode is refused by another (VALIDATION), count needs a query', async () => {
    const r = await client.callOk('search_files', { query: 'needle', output_mode: 'count', max_results: 1 });
    expect(r.next_cursor).toEqual(expect.any(String));
    expectCode(await client.call('search_files', { query: 'needle', cursor: r.next_cursor }), 'VALIDATION');
    expectCode(await client.call('search_files', { glob: '**/*.txt', output_mode: 'count' }), 'VALIDATION');
    expectCode(await client.call('search_files', { query: 'needle', output_mode: 'lines' }), 'VALIDATION');
  });

  it('files_with_matches without a query is the glob listing', async () => {
    const r = await client.callOk('search_files', { glob: '**/*.txt', output_mode: 'files_with_matches' });
    const g = await client.callOk('search_files', { glob: '**/*.txt' });
    expect(r.files).toEqual(g.files);
  });
});

describe.each(ERAS)('search_files output modes under the response budget (%s era)', (era) => {
  // 1000 files with ~2.2 KB relative paths: over the 3 MiB response budget in one page, so pages are cut by the budget
  // (not by max_results, raised here) and must still return every file exactly once.
  const chain = Array.from({ length: 10 }, (_, i) => `${String(i)}${'d'.repeat(199)}`);
  const leafName = (i: number) => `${String(i).padStart(4, '0')}${'f'.repeat(196)}.txt`;
  const tree = makeTree({});
  const deep = path.join(tree.dir, ...chain);
  let client: TestClient;
  beforeAll(async () => {
    mkdirSync(deep, { recursive: true });
    for (let i = 0; i < 1000; i++) writeFileSync(path.join(deep, leafName(i)), 'needle\n');
    client = await connect(era, { args: ['--max-search-results=100000', tree.dir] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it.each(['files_with_matches', 'count'])(
    '%s: budgeted pages, every file once',
    async (mode) => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const r = await client.call('search_files', {
          query: 'needle',
          output_mode: mode,
          max_results: 100000,
          ...(cursor ? { cursor } : {}),
        });
        const s = r.structuredContent as Record<string, any>;
        const page: string[] = mode === 'count' ? s.counts.map((c: any) => c.path) : s.files;
        if (s.truncated) expect(r.content[0].text).toContain(`continue with cursor: ${s.next_cursor}`);
        expect(Buffer.byteLength(JSON.stringify(s))).toBeLessThan(3 * 1024 * 1024);
        seen.push(...page);
        cursor = s.next_cursor ?? undefined;
        pages++;
      } while (cursor && pages < 20);
      expect(pages).toBeGreaterThan(1);
      expect(seen).toEqual(Array.from({ length: 1000 }, (_, i) => [...chain, leafName(i)].join('/')));
    },
    60_000,
  );
});
