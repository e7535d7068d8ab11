/**
 * Issue #19 review: attacks on the per-entry shortcuts of listings and search, against a real server over stdio
 * (src/policy/authorize.ts walkEntryClassifier: guarded paths by equality, policy rules on the entry's own path, the
 * secret screen on a name's ends; GitignoreRules.testEntry; list_directory's 10,000-entry pages through the walk's
 * sink). One tree holds, several directories deep:
 *  - secret names in every spelling the screen could skip (case variants, the Kelvin sign folding to `k`, non-ASCII
 *    names, a secret-named directory, `.aws/credentials`), and look-alikes that are no secret (`.env.example`);
 *  - file-policy rules that match a directory and not its entries (`**\/secret*\/**`, `p/**\/q`, a basename rule
 *    `hid`), the state directory and audit log placed inside the root, and a lock-file name;
 *  - .gitignore rules: negation, directory-only, anchored, `**\/`, nested files, `*.log` vs `a.log.txt`.
 * Pins, paging with one entry a page (every cursor resumes inside the deep tree) and in one page:
 *  - list_directory shows every secret marked and nothing hidden, denied, guarded or ignored, identical to one page;
 *  - content search finds the needle in exactly the files it may read, and skips every secret (counted), on every page;
 *  - replace_in_files (dry run) proposes exactly the same files.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ root: {}, conf: {} }, 'fs-tools-walk-attack-');
const ROOT = path.join(scratch.dir, 'root');
const STATE = path.join(ROOT, 'deep', 'st');
const AUDIT = path.join(ROOT, 'deep', 'logs', 'audit.jsonl');
const LOCK = `.fs-tools-lock-${'a'.repeat(32)}`;

/** Files holding the needle that every search must find (paths relative to ROOT). */
const READABLE = [
  'a/b/c/d/plain.txt',
  'a/b/c/d/.env.example',
  'a/b/c/d/a.log.txt',
  'a/b/c/d/credentials', // only `.aws/credentials` is a secret
  'p/q.txt', // `p/**/q` matches the directory p/q, not the file p/q.txt
  'x/secretary.txt', // `**/secret*/**` matches below a secret* directory only
  'keep/dir/keep.log',
  'deep/logs/other.txt',
  'deep/stx/file.txt', // beside the state directory, not in it
  'g/sub/visible.txt',
  'a/b/c/d/\u00e9.netrc', // `.netrc` is a whole name, not a suffix
];
/** Secret names holding the needle: listed with the secret mark, never searched. */
const SECRETS = [
  'a/b/c/d/.env',
  'a/b/c/d/.ENV.local',
  'a/b/c/d/ID_RSA',
  'a/b/c/d/x.PEM',
  'a/b/c/d/x.\u212Aey', // the Kelvin sign lower-cases to `k`: `x.key`
  'a/b/c/d/\u00e9t\u00e9.pem',
  'a/b/c/d/\u00e9/.netrc',
  'a/b/c/d/.aws/credentials',
  'a/b/c/d/e/f/g/h/deep.p12',
];
/** Files holding the needle that no listing or search may show. */
const INVISIBLE = [
  'x/secretdir/y/z.txt', // policy hidden (**/secret*/**)
  'p/m/q/f.txt', // policy deny (p/**/q)
  'p/q/f.txt', // policy deny (p/**/q, ** as no directory)
  'a/hid/inner/f.txt', // policy hidden by name at any depth
  'deep/st/journal/f.txt', // the state directory
  `a/b/${LOCK}`, // a lock file
  'g/ignored.log', // .gitignore *.log
  'g/build/out.txt', // .gitignore build/
  'g/sub/build/out.txt',
  'g/top.txt', // .gitignore /top.txt
  'g/sub/deeper/x.tmp', // .gitignore **/deeper/*.tmp
  'g/sub/nested.txt', // g/sub/.gitignore nested.txt
];

let client: TestClient;

beforeAll(async () => {
  for (const rel of [...READABLE, ...SECRETS, ...INVISIBLE]) {
    mkdirSync(path.dirname(path.join(ROOT, rel)), { recursive: true });
    writeFileSync(path.join(ROOT, rel), 'one line\nthe needle is here\r\nlast\n');
  }
  mkdirSync(path.dirname(AUDIT), { recursive: true });
  writeFileSync(AUDIT, '');
  mkdirSync(path.join(ROOT, 'a/b/c/d/.env.d'), { recursive: true }); // a secret-named directory
  writeFileSync(path.join(ROOT, 'g/.gitignore'), '*.log\n!keep.log\nbuild/\n/top.txt\n**/deeper/*.tmp\n');
  writeFileSync(path.join(ROOT, 'g/sub/.gitignore'), 'nested.txt\n');
  mkdirSync(path.join(ROOT, 'keep/dir'), { recursive: true });
  const policy = path.join(scratch.dir, 'conf', 'policy.json');
  writeFileSync(
    policy,
    JSON.stringify({
      rules: [
        { pattern: '**/secret*/**', access: 'hidden' },
        { pattern: 'p/**/q', access: 'deny' },
        { pattern: 'hid', access: 'hidden' },
      ],
    }),
  );
  client = await connect('modern', {
    args: ['--state-dir', STATE, '--audit-log', AUDIT, '--policy', policy, ROOT],
  });
}, 30_000);

afterAll(async () => {
  await client?.close();
  scratch.cleanup();
});

/** Every page of a paged call, concatenated by `key`. */
async function allPages(tool: string, args: Record<string, unknown>, key: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | undefined;
  for (let n = 0; n < 500; n++) {
    const s = await client.callOk(tool, { ...args, ...(cursor ? { cursor } : {}) });
    out.push(...(s[key] ?? []));
    if (!s.next_cursor) return out;
    cursor = s.next_cursor;
  }
  throw new Error('no last page');
}

const pathOf = (e: any): string => (typeof e === 'string' ? e.replace(/\/$/, '') : e.path);
/** The file paths of a listing's entries (directories left out). */
const filesOf = (entries: any[]) =>
  entries
    .filter((e) => (typeof e === 'string' ? !e.endsWith('/') : e.type !== 'directory'))
    .map(pathOf)
    .sort();

describe('walk shortcuts under attack (issue #19)', () => {
  it('list_directory: secrets marked, nothing hidden/denied/guarded/ignored, one-entry pages equal one page', async () => {
    const whole = await client.callOk('list_directory', { path: ROOT, depth: 20 });
    expect(whole.truncated).toBe(false);
    const paged = await allPages('list_directory', { path: ROOT, depth: 20, max_entries: 1 }, 'entries');
    expect(paged).toEqual(whole.entries);
    expect(filesOf(whole.entries)).toEqual([...READABLE, ...SECRETS, 'g/.gitignore', 'g/sub/.gitignore'].sort());
    const secrets = whole.entries.filter((e: any) => typeof e !== 'string' && e.secret).map(pathOf);
    expect(secrets.sort()).toEqual([...SECRETS, 'a/b/c/d/.env.d'].sort());
    const all = whole.entries.map(pathOf);
    for (const gone of ['x/secretdir/y', 'p/m/q', 'p/q', 'a/hid', 'deep/st', 'deep/logs/audit.jsonl', 'g/build'])
      expect(all).not.toContain(gone);
  }, 30_000);

  it('content search and replace_in_files read exactly the files they may, secrets skipped on every page', async () => {
    for (const extra of [{}, { regex: true, query: 'needle is h[e]re$' }, { case_sensitive: false, query: 'NEEDLE' }]) {
      const args = { path: ROOT, query: 'needle', output_mode: 'files_with_matches', ...extra };
      const whole = await client.callOk('search_files', args);
      expect([extra, [...whole.files].sort()]).toEqual([extra, [...READABLE].sort()]);
      expect(whole.skipped.secret).toBe(SECRETS.length);
      const paged = await allPages('search_files', { ...args, max_results: 1 }, 'files');
      expect(paged).toEqual(whole.files);
    }
    const lines = await allPages('search_files', { path: ROOT, query: 'needle', max_results: 1 }, 'matches');
    expect(lines.map((m) => [m.path, m.line, m.text])).toEqual(
      (await client.callOk('search_files', { path: ROOT, query: 'needle' })).matches.map((m: any) => [
        m.path,
        m.line,
        m.text,
      ]),
    );
    expect(lines.every((m) => m.text === 'the needle is here')).toBe(true);
    const globbed = await client.callOk('search_files', { path: ROOT, glob: '**/*' });
    for (const rel of INVISIBLE) expect(globbed.files).not.toContain(rel);
    const replaced = await client.callOk('replace_in_files', {
      path: ROOT,
      query: 'needle',
      replacement: 'pin',
      dry_run: true,
    });
    expect(replaced.files.map((f: any) => f.path).sort()).toEqual([...READABLE].sort());
  }, 30_000);
});

/**
 * A page of long paths stays within the response budget (TOOL_BUDGET_BYTES, 3 MiB) with its cursor (issue #19
 * review: the cursor of a deep path is tens of kilobytes and appears twice, in next_cursor and the text's last line,
 * while list_directory charged 2 KiB for everything but its entries; a page came out ~64 KiB over 3 MiB). Paths near
 * PATH_MAX of control characters (6 bytes of JSON each) make a page full after ~75 entries.
 */
describe('list_directory: a truncated page of long paths stays within the budget, cursor included', () => {
  const tree = makeTree({ root: {} }, 'fs-tools-long-page-');
  const component = '\x01'.repeat(250);
  const deep = path.join(tree.dir, 'root', ...Array.from({ length: 14 }, () => component));
  const FILES = 150;
  let c: TestClient;
  beforeAll(async () => {
    mkdirSync(deep, { recursive: true });
    for (let i = 0; i < FILES; i++) writeFileSync(path.join(deep, `${String(i).padStart(3, '0')}${component}`), '');
    c = await connect('modern', { args: ['--state-dir', path.join(tree.dir, 'st'), path.join(tree.dir, 'root')] });
  }, 30_000);
  afterAll(async () => {
    await c?.close();
    tree.cleanup();
  });

  it('every page at most 3 MiB serialized, truncated with a cursor, and the pages hold every entry once', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (; pages < 20; pages++) {
      const r = await c.call('list_directory', {
        path: path.join(tree.dir, 'root'),
        depth: 20,
        ...(cursor ? { cursor } : {}),
      });
      expect(Buffer.byteLength(JSON.stringify(r), 'utf8')).toBeLessThanOrEqual(3 * 1024 * 1024);
      const s = r.structuredContent as Record<string, any>;
      seen.push(...s.entries.map((e: any) => (typeof e === 'string' ? e : e.path)));
      if (!s.next_cursor) break;
      expect(s.truncated).toBe(true);
      cursor = s.next_cursor;
    }
    expect(pages).toBeGreaterThan(0); // at least two pages: the budget, not the entry count, cut them
    expect(seen.length).toBe(14 + FILES);
    expect(new Set(seen).size).toBe(seen.length);
  }, 60_000);
});
