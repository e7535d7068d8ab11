/**
 * Issue #14 acceptance, with the real SDK clients of both eras: results that used to exceed the clients' 10 MiB read
 * buffer (and so killed the session) now stay within the response budget, every response parses, the session stays
 * alive, and truncation says how to continue — and following the continuation yields everything exactly once:
 *  - read_files of 30 files × 200 KiB of text (quotes, backslashes, tabs: escapes double them) and of NUL-rich text
 *    (each NUL is six bytes escaped: the first file is cut to fit, with its own continuation);
 *  - the widest content search (context_lines 10, max_results far above the default, long lines of control
 *    characters);
 *  - git_diff of a huge change with --max-read-bytes far above the budget;
 *  - github_issues list of issues with huge bodies (the forge output cap: pages are split) and with huge titles
 *    (the response budget: a page continues with a cursor), and view of an issue with huge comments.
 * The server runs with --max-read-bytes=64 MiB and --max-search-results=100000, so the budget, not those caps, is
 * what cuts. "Size" below is the client's view of the result re-serialized, which is what the server sent.
 * Under both eras: the 30 files of escape-heavy text (8 responses at the budget's edge, each parsed by that
 * era's client with its own framing and result fields). Every other case runs once, the eras taking turns: what it
 * proves (how the server cuts and continues) is the server's, and both clients read the same 10 MiB buffer.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESPONSE_LIMIT_BYTES } from '../../src/tools/response-budget.js';
import { UNTRUSTED_BEGIN, UNTRUSTED_END } from '../../src/tools/issue-untrusted.js';
import { FakeGitHub } from '../helpers/fake-github.js';
import { connect, ERAS, inEra, type CallResult, type Era, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {}, text: {}, nul: {}, search: {}, repo: {} }, 'fs-tools-budget-');
const ROOT = scratch.dir;
const HOME = path.join(ROOT, 'home');
const KIB = 1024;

// 30 × 200 KiB of text full of characters JSON escapes: 8 budgeted calls of ~4 files (100 files made 13 calls under
// each era and proved no more).
const TEXT_FILES = 30;
const textLine = 'line with "quotes", back\\slashes\tand tabs — ünïcödé ' + 'x'.repeat(40) + '\n';
const textBody = textLine.repeat(Math.ceil((256 * KIB) / Buffer.byteLength(textLine))).slice(0, 200 * KIB);
const TEXT = Array.from({ length: TEXT_FILES }, (_, i) =>
  path.join(ROOT, 'text', `t${String(i).padStart(3, '0')}.txt`),
);
// 100 × 256 KiB of NUL-rich text (valid UTF-8: 63 NULs and a newline per line).
const nulBody = Buffer.from(('\u0000'.repeat(63) + '\n').repeat((256 * KIB) / 64));
const NUL = Array.from({ length: 100 }, (_, i) => path.join(ROOT, 'nul', `n${String(i).padStart(3, '0')}.txt`));
// One NUL-rich file of 1 MiB: twelve bytes a byte in the response, so it alone exceeds the budget.
const BIG_NUL = path.join(ROOT, 'nul', 'big.txt');
const bigNulBody = Buffer.from(('\u0000'.repeat(63) + '\n').repeat((1024 * KIB) / 64));
// Search: every line matches, 400 characters of control characters around the needle. 2 files × 100 lines: 6
// budgeted pages (150 lines a file made 9; the 300 of before, more, and proved no more).
const SEARCH_LINES = 100;
const searchBody =
  Array.from({ length: SEARCH_LINES }, (_, i) => `${'\u0001'.repeat(190)} needle ${i} ${'\u0002'.repeat(190)}`).join(
    '\n',
  ) + '\n';

const REPO = path.join(ROOT, 'repo');
const git = (...args: string[]) =>
  execFileSync('git', args, {
    cwd: REPO,
    encoding: 'utf8',
    maxBuffer: 512 * 1024 * 1024,
    env: {
      ...process.env,
      HOME,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@e',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@e',
    },
  });
/** Lines of the big file of the git_diff case. */
const BIG_LINES = 25_000;
let fullDiff = '';

let fake: FakeGitHub;

beforeAll(async () => {
  for (const f of TEXT) writeFileSync(f, textBody);
  for (const f of NUL) writeFileSync(f, nulBody);
  writeFileSync(BIG_NUL, bigNulBody);
  for (let i = 0; i < 2; i++) writeFileSync(path.join(ROOT, 'search', `s${i}.txt`), searchBody);
  // git: a 2.2 MB file whose every line changes (with escapable characters), and 200 small changed files (pages cut
  // inside a file and between files; 2,000 before cost ~2 s of CPU more and proved no more). 25,000 lines make a
  // 4.5 MB diff, 4 budgeted pages (60,000 lines before: more pages, no more proof).
  git('init', '-q');
  const big = (tag: string) =>
    Array.from({ length: BIG_LINES }, (_, i) => `${tag} ${i} "q" \\ \u0001\t${'y'.repeat(70)}`).join('\n') + '\n';
  writeFileSync(path.join(REPO, 'big.txt'), big('old'));
  mkdirSync(path.join(REPO, 'many'));
  for (let i = 0; i < 200; i++) writeFileSync(path.join(REPO, 'many', `f${i}.txt`), `old ${i}\n`);
  git('add', '-A');
  git('commit', '-qm', 'base');
  writeFileSync(path.join(REPO, 'big.txt'), big('new'));
  for (let i = 0; i < 200; i++) writeFileSync(path.join(REPO, 'many', `f${i}.txt`), `new ${i}\n`);
  fullDiff = git(
    'diff-files',
    '-p',
    '--no-ext-diff',
    '--no-textconv',
    '--no-color',
    '-M',
    '--src-prefix=a/',
    '--dst-prefix=b/',
    '-U3',
  );
  fake = await FakeGitHub.start();
}, 120_000);
afterAll(async () => {
  await fake?.close();
  scratch.cleanup();
});

/** The size of a result as the server sent it (the client's parse, re-serialized). */
const sizeOf = (r: CallResult) => Buffer.byteLength(JSON.stringify(r), 'utf8');

describe.each(ERAS)('the response budget (%s era)', (era: Era) => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connect(era, {
      args: [ROOT, '--max-read-bytes=67108864', '--max-search-results=100000'],
      env: { HOME, XDG_CONFIG_HOME: HOME, ...fake.env() },
    });
  });
  afterAll(async () => {
    await client.close();
  });

  /** Calls, checks the result is within the limit and succeeded, returns it. */
  async function ok(name: string, args: Record<string, unknown>): Promise<{ s: Record<string, any>; text: string }> {
    const r = await client.call(name, args);
    expect(sizeOf(r)).toBeLessThanOrEqual(RESPONSE_LIMIT_BYTES);
    expect(r.isError, r.content[0]?.text?.slice(0, 500)).toBeFalsy();
    return { s: r.structuredContent!, text: r.content.map((c) => c.text ?? '').join('\n') };
  }

  it('read_files: 100 × 256 KiB of escape-heavy text comes back in budgeted calls, each file whole and once', async () => {
    let paths = TEXT;
    const seen: string[] = [];
    let calls = 0;
    while (paths.length > 0) {
      const { s, text } = await ok('read_files', { paths });
      calls++;
      expect(s.results.length).toBeGreaterThan(0);
      for (const r of s.results) {
        expect(r.ok).toBe(true);
        expect(r.result).not.toHaveProperty('truncated'); // issue #15: absent means false
        expect(r.result.content).toBe(textBody);
        seen.push(r.path);
      }
      expect(s.remaining_paths).toEqual(paths.slice(s.results.length));
      expect(s.truncated).toBe(s.remaining_paths.length > 0);
      if (s.truncated) expect(text).toContain('paths = remaining_paths');
      paths = s.remaining_paths;
    }
    expect(seen).toEqual(TEXT);
    expect(calls).toBeGreaterThan(4);
  }, 120_000);

  inEra(era, 'modern', it)(
    'read_files: 100 NUL-rich files of 256 KiB — one per call (each is ~3 MiB escaped), in order, none lost',
    async () => {
      let paths = NUL;
      for (let call = 0; call < 4; call++) {
        const { s, text } = await ok('read_files', { paths });
        expect(s.results).toHaveLength(1);
        expect(s.results[0]).toMatchObject({ path: paths[0], ok: true });
        expect(Buffer.from(s.results[0].result.content)).toEqual(nulBody);
        expect(s.remaining_paths).toEqual(paths.slice(1));
        expect(text).toContain('paths = remaining_paths (');
        paths = s.remaining_paths;
      }
    },
    120_000,
  );

  inEra(era, 'legacy', it)(
    'read_files: a first file too large for the budget is cut with its own continuation; following it loses nothing',
    async () => {
      const { s } = await ok('read_files', { paths: [BIG_NUL, NUL[0]] });
      expect(s.results).toHaveLength(1);
      const first = s.results[0].result;
      expect(first.truncated).toBe(true);
      expect(s.remaining_paths).toEqual([NUL[0]]);
      let content = Buffer.from(first.content);
      let continuation = first.continuation;
      while (continuation) {
        const { s: next } = await ok('read_file', { path: BIG_NUL, start_line: continuation.start_line });
        content = Buffer.concat([content, Buffer.from(next.content)]);
        continuation = next.continuation;
      }
      expect(content).toEqual(bigNulBody);
    },
    120_000,
  );

  inEra(era, 'modern', it)(
    'the widest search with context: every match exactly once across budgeted pages',
    async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const { s, text } = await ok('search_files', {
          path: path.join(ROOT, 'search'),
          query: 'needle',
          context_lines: 10,
          max_results: 100000,
          ...(cursor ? { cursor } : {}),
        });
        pages++;
        for (const m of s.matches) {
          seen.push(`${m.path}:${m.line}`);
          expect(m.text).toContain(`needle ${m.line - 1} `);
        }
        if (s.truncated) expect(text).toContain(`continue with cursor: ${s.next_cursor}`);
        // The text shows the control characters escaped, never raw.
        // eslint-disable-next-line no-control-regex -- the control bytes are what must not leak
        expect(text).not.toMatch(/[\u0001\u0002]/);
        cursor = s.next_cursor ?? undefined;
      } while (cursor);
      const expected = ['s0.txt', 's1.txt'].flatMap((f) =>
        Array.from({ length: SEARCH_LINES }, (_, i) => `${f}:${i + 1}`),
      );
      expect(seen).toEqual(expected);
      expect(pages).toBeGreaterThan(2);
    },
    120_000,
  );

  inEra(era, 'legacy', it)(
    'git_diff of a huge change: budgeted pages that concatenate to the whole diff',
    async () => {
      let diff = '';
      let cursor: string | undefined;
      let pages = 0;
      do {
        const { s, text } = await ok('git_diff', { path: REPO, ...(cursor ? { cursor } : {}) });
        pages++;
        diff += s.diff;
        if (s.truncated) expect(text).toContain(`continue with cursor: ${s.next_cursor}`);
        cursor = s.next_cursor ?? undefined;
      } while (cursor);
      expect(diff).toBe(fullDiff);
      expect(pages).toBeGreaterThan(2);
    },
    180_000,
  );

  inEra(era, 'modern', it)(
    'github_issues list of huge bodies: pages split under the forge output cap, every issue once',
    async () => {
      fake.reset();
      const repo = fake.addRepo('big', 'bodies');
      for (let i = 0; i < 30; i++) fake.addIssue(repo, { title: `huge ${i}`, body: `"\\${'b'.repeat(64 * KIB - 3)}` });
      const numbers: number[] = [];
      let cursor: string | undefined;
      do {
        const { s, text } = await ok('github_issues', {
          action: 'list',
          repo: 'big/bodies',
          hostname: 'github.localhost',
          ...(cursor ? { cursor } : {}),
        });
        numbers.push(...s.issues.map((i: { number: number }) => i.number));
        if (s.next_cursor) expect(text).toContain(`call again with cursor: ${s.next_cursor}`);
        cursor = s.next_cursor ?? undefined;
      } while (cursor);
      expect(numbers.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    },
    120_000,
  );
});

describe('the response budget on forge results over a raised output cap (legacy era)', () => {
  const era: Era = 'legacy';
  let client: TestClient;
  beforeAll(async () => {
    client = await connect(era, {
      args: [ROOT, '--forge-output-bytes=104857600'],
      env: { HOME, XDG_CONFIG_HOME: HOME, ...fake.env() },
    });
  });
  afterAll(async () => {
    await client.close();
  });

  it('list of huge titles continues on the same page with a cursor; view of huge comments pages them', async () => {
    fake.reset();
    const repo = fake.addRepo('big', 'titles');
    // Quotes: two bytes each in JSON (gh itself rewrites control characters in its output as ^A, so those would
    // not reach the server).
    const title = (i: number) => `t${i} ${'"'.repeat(64 * KIB)}`;
    for (let i = 0; i < 24; i++) fake.addIssue(repo, { title: title(i) });
    const numbers: number[] = [];
    let cursor: string | undefined;
    let calls = 0;
    do {
      const r = await client.call('github_issues', {
        action: 'list',
        repo: 'big/titles',
        hostname: 'github.localhost',
        ...(cursor ? { cursor } : {}),
      });
      calls++;
      expect(sizeOf(r)).toBeLessThanOrEqual(RESPONSE_LIMIT_BYTES);
      expect(r.isError, r.content[0]?.text?.slice(0, 500)).toBeFalsy();
      const s = r.structuredContent as Record<string, any>;
      for (const i of s.issues) {
        numbers.push(i.number);
        expect(
          i.title === title(i.number - 1),
          `#${i.number}: ${i.title.length} vs ${title(i.number - 1).length} ${JSON.stringify(i.title.slice(0, 8))}`,
        ).toBe(true); // structured stays exact
      }
      cursor = s.next_cursor ?? undefined;
    } while (cursor);
    expect(numbers.sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    expect(calls).toBeGreaterThan(1);

    const n = fake.addIssue(repo, {
      title: 'comments',
      body: 'short',
      comments: Array.from({ length: 8 }, (_, i) => `c${i} ${'"'.repeat(200 * KIB)}`),
    });
    const bodies: string[] = [];
    let views = 0;
    cursor = undefined;
    do {
      views++;
      const r = await client.call('github_issues', {
        action: 'view',
        repo: 'big/titles',
        hostname: 'github.localhost',
        number: n,
        ...(cursor ? { cursor } : {}),
      });
      expect(sizeOf(r)).toBeLessThanOrEqual(RESPONSE_LIMIT_BYTES);
      expect(r.isError).toBeFalsy();
      const s = r.structuredContent as Record<string, any>;
      bodies.push(...s.comments.map((c: { body: string }) => c.body.slice(0, 4)));
      const text = r.content.map((c) => c.text ?? '').join('\n');
      expect(text.startsWith(UNTRUSTED_BEGIN) || text.includes(`\n${UNTRUSTED_BEGIN}\n`)).toBe(true);
      expect(text.endsWith(UNTRUSTED_END)).toBe(true);
      cursor = s.next_cursor ?? undefined;
    } while (cursor);
    expect(bodies).toEqual(Array.from({ length: 8 }, (_, i) => `c${i} "`.slice(0, 4)));
    expect(views).toBeGreaterThan(1);
  }, 180_000);
});
