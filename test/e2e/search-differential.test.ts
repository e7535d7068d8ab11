/**
 * Content search against a model (issue #19: the main thread's walk, read-ahead and paging were rewritten; this pins
 * what a search returns). A seeded tree of about 1,400 entries — more than the read-ahead window of 1,024 and several
 * reader batches of 256 — with nested `.gitignore` files (a negation, an ignored directory), secret files, binary
 * files, files above the reader threads' 32 KiB read-ahead size (read on the main thread) and above
 * --max-search-file-bytes, is searched by a real server (the bundled reader threads), and
 * - every result, in order, and the skip counts equal an independent model: a sorted recursive walk (code-unit
 *   order, pre-order) with the `ignore` package for `.gitignore`, the secret name, NUL for binary, the size cap, and
 *   per-line matching (literal, case-insensitive, regular expression) in all three output modes;
 * - the pages of a small `max_results` (many cursors), with or without context lines, concatenate to the single
 *   page, and their skip counts add up to the single page's (a page boundary counts nothing twice).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ignore from 'ignore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const MAX_FILE_BYTES = 100_000;

/** mulberry32: a small seeded PRNG, so the tree is the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LINES = [
  'plain text without anything',
  'a needle in the middle',
  'Needle at the start, needle later',
  'NEEDLE shouted',
  '// TODO(bob): fix this',
  '// TODO(alice): and that',
  '// TODO(carol): not matched by the regex',
  'needleneedle twice',
  'unicode é needle ü',
  '',
];

/** Writes the seeded tree; returns nothing (the model reads the disk like the server). */
function writeSeeded(root: string): void {
  const rand = prng(19);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const text = (lines: number) => Array.from({ length: lines }, () => pick(LINES)).join('\n') + '\n';
  writeFileSync(path.join(root, '.gitignore'), '*.log\n!keep.log\nbuild/\n');
  const dirs = [''];
  for (let i = 0; i < 40; i++) {
    const parent = pick(dirs);
    const name = pick(['src', 'lib', 'docs', 'build', 'Zeta', 'a', 'b-c', 'ü']) + String(i % 7);
    const dir = parent ? `${parent}/${name}` : name;
    if (dirs.includes(dir) || dir.split('/').length > 4) continue;
    dirs.push(dir);
  }
  dirs.push('build', 'src0/build');
  for (const dir of dirs) mkdirSync(path.join(root, dir), { recursive: true });
  writeFileSync(path.join(root, 'src0', '.gitignore'), '*.tmp\n!keep.tmp\n');
  for (let i = 0; i < 1350; i++) {
    const dir = pick(dirs);
    const kind = rand();
    const base = pick(['f', 'g', 'File', 'x_', '~', 'Ä']) + String(i);
    let name: string;
    let content: string | Buffer;
    if (kind < 0.03) {
      name = pick(['.env', '.env.local', 'id_rsa']);
      content = 'needle=secret\n';
    } else if (kind < 0.06) {
      name = `${base}.bin`;
      content = Buffer.concat([Buffer.from('needle\n'), Buffer.from([0, 1, 2]), Buffer.from('needle\n')]);
    } else if (kind < 0.075) {
      name = `${base}.big.txt`; // above the 32 KiB read-ahead size: read when the page gets to it
      content = `${'plain text without anything\n'.repeat(1300)}${text(8)}${'plain\n'.repeat(100)}${text(4)}`;
    } else if (kind < 0.08) {
      name = `${base}.huge.txt`; // above --max-search-file-bytes
      content = 'needle\n'.repeat(MAX_FILE_BYTES / 7 + 10);
    } else if (kind < 0.12) {
      name = pick(['x.log', 'keep.log', 'y.tmp', 'keep.tmp']);
      content = text(3);
    } else {
      name = `${base}.${pick(['txt', 'ts', 'md'])}`;
      content = text(1 + Math.floor(rand() * 6));
    }
    writeFileSync(path.join(root, dir, name), content);
  }
}

interface Query {
  query: string;
  regex?: boolean;
  case_sensitive?: boolean;
}

interface Expected {
  matches: string[];
  counts: Array<{ path: string; count: number }>;
  skipped: Record<string, number>;
  files_scanned: number;
}

/** The model: what a content search of `root` must return. */
async function model(root: string, q: Query): Promise<Expected> {
  const { readdirSync, readFileSync, statSync } = await import('node:fs');
  const re = q.regex
    ? new RegExp(q.query, 'u')
    : new RegExp(q.query.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), q.case_sensitive === false ? 'iu' : 'u');
  const out: Expected = { matches: [], counts: [], skipped: {}, files_scanned: 0 };
  const skip = (reason: string) => (out.skipped[reason] = (out.skipped[reason] ?? 0) + 1);
  const walk = (rel: string, rules: Array<{ dir: string; ig: ReturnType<typeof ignore> }>) => {
    const abs = path.join(root, rel);
    const names = readdirSync(abs).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    let mine = rules;
    if (names.includes('.gitignore')) {
      mine = [...rules, { dir: rel, ig: ignore().add(readFileSync(path.join(abs, '.gitignore'), 'utf8')) }];
    }
    for (const name of names) {
      const childRel = rel ? `${rel}/${name}` : name;
      const st = statSync(path.join(root, childRel));
      const isDir = st.isDirectory();
      // Deepest .gitignore with a verdict wins (ignore's `test` tells ignored from unignored).
      let ignored = false;
      for (let i = mine.length - 1; i >= 0; i--) {
        const within = mine[i].dir ? childRel.slice(mine[i].dir.length + 1) : childRel;
        const verdict = mine[i].ig.test(isDir ? `${within}/` : within);
        if (verdict.ignored || verdict.unignored) {
          ignored = verdict.ignored;
          break;
        }
      }
      if (ignored) continue;
      if (isDir) {
        walk(childRel, mine);
        continue;
      }
      if (['.env', '.env.local', 'id_rsa'].includes(name)) {
        skip('secret');
        continue;
      }
      if (st.size > MAX_FILE_BYTES) {
        skip('too_large');
        continue;
      }
      const bytes = readFileSync(path.join(root, childRel));
      out.files_scanned++;
      if (bytes.includes(0)) {
        skip('binary');
        continue;
      }
      let count = 0;
      bytes
        .toString('utf8')
        .split('\n')
        .forEach((line, i) => {
          const m = re.exec(line);
          if (m) {
            out.matches.push(`${childRel}:${i + 1}:${m.index + 1}`);
            count++;
          }
        });
      if (count > 0) out.counts.push({ path: childRel, count });
    }
  };
  walk('', []);
  return out;
}

type Page = Record<string, any>;

/** Every page of a search (structured results). */
async function allPages(client: TestClient, args: Record<string, unknown>): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.callOk('search_files', cursor ? { ...args, cursor } : args);
    pages.push(page);
    cursor = page.next_cursor as string | undefined;
    expect(pages.length).toBeLessThan(2000);
  } while (cursor);
  return pages;
}

function sumSkips(pages: Page[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const p of pages) for (const [k, n] of Object.entries(p.skipped ?? {})) sum[k] = (sum[k] ?? 0) + (n as number);
  return sum;
}

const QUERIES: Query[] = [
  { query: 'needle' },
  { query: 'NEEDLE', case_sensitive: false },
  { query: '\\bTODO\\((alice|bob)\\):', regex: true },
  { query: 'needle(needle)?\\b', regex: true },
];

describe('content search equals its model, page by page', () => {
  const tree = makeTree({}, 'fs-tools-search-model-');
  let client: TestClient;
  beforeAll(async () => {
    writeSeeded(tree.dir);
    client = await connect('modern', { args: [`--max-search-file-bytes=${MAX_FILE_BYTES}`, tree.dir] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it.each(QUERIES)('%j: results, order, skips and counts in every output mode', async (q) => {
    const expected = await model(tree.dir, q);
    expect(expected.matches.length).toBeGreaterThan(100); // the tree exercises what it should
    expect(expected.skipped).toMatchObject({ secret: expect.any(Number), binary: expect.any(Number) });
    const matches = await allPages(client, { ...q, max_results: 500 });
    expect(matches[0].matches.length).toBe(Math.min(500, expected.matches.length));
    expect(matches.flatMap((p) => p.matches.map((m: Page) => `${m.path}:${m.line}:${m.column}`))).toEqual(
      expected.matches,
    );
    expect(sumSkips(matches)).toEqual(expected.skipped);

    const counts = await allPages(client, { ...q, output_mode: 'count' });
    // Each page ends at the file that did not fit, which the next page scans again.
    expect(counts.reduce((n, p) => n + (p.files_scanned as number), 0)).toBe(
      expected.files_scanned + counts.length - 1,
    );
    expect(counts.flatMap((p) => p.counts)).toEqual(expected.counts);
    expect(sumSkips(counts)).toEqual(expected.skipped);
    // 13-21 pages of 47 files (pages of 17, ~2.8× as many, cost ~2 s of CPU more over the four queries).
    const files = await allPages(client, { ...q, output_mode: 'files_with_matches', max_results: 47 });
    expect(files.flatMap((p) => p.files)).toEqual(expected.counts.map((c) => c.path));
    expect(sumSkips(files)).toEqual(expected.skipped);
  });

  it('small pages (many cursors), with context lines, concatenate to the large ones; skips add up', async () => {
    for (const q of [QUERIES[0], QUERIES[2]]) {
      for (const context_lines of [0, 2]) {
        const large = await allPages(client, { ...q, context_lines, max_results: 500 });
        // 15-29 pages of 59 matches, each boundary a resumed cursor (pages of 23, 2.5× as many, cost ~3 s of CPU more).
        const small = await allPages(client, { ...q, context_lines, max_results: 59 });
        expect(small.length).toBeGreaterThan(large.length);
        for (const p of small.slice(0, -1)) expect(p.truncated).toBe(true);
        expect(small.flatMap((p) => p.matches)).toEqual(large.flatMap((p) => p.matches));
        expect(sumSkips(small)).toEqual(sumSkips(large));
      }
    }
  });

  it('a glob narrows the same walk: the model restricted to its files', async () => {
    const expected = await model(tree.dir, QUERIES[0]);
    const pages = await allPages(client, { ...QUERIES[0], glob: '**/*.md', max_results: 31 });
    expect(pages.flatMap((p) => p.matches.map((m: Page) => `${m.path}:${m.line}:${m.column}`))).toEqual(
      expected.matches.filter((m) => m.split(':')[0].endsWith('.md')),
    );
  });
});
