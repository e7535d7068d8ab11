/**
 * Review of the one reader-thread pool (search_files' reading and matching, every user regular expression, and
 * replace_in_files' regular-expression replacement), against a real server over stdio:
 * - a regular expression that throws while it runs (V8's backtracking stack overflows on a long line: RangeError, well
 *   inside the time limit) on a file in the tree must cost that call at most, never the session: afterwards, regex
 *   search and regex replace_in_files still work, and the files are untouched;
 * - a catastrophic regular expression stopped by the watchdog (regex_timeout) costs its own call only: a benign regex
 *   replace_in_files running at the same time, whose job waits on the same reader thread, still succeeds (the old
 *   regex pool ran it on a fresh thread), and after a run of timeouts regex search and replace still work.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

/** One 8,000,000-byte line: `^((a)|(b))*c` overflows V8's regexp backtracking stack on it (~0.1 s, a RangeError). */
const LONG_LINE = `${'ab'.repeat(4_000_000)}\n`;
const OVERFLOW = '^((a)|(b))*c';

const t = makeTree({ 'long.txt': LONG_LINE, 'ok.txt': 'v1 v2\n' }, 'fs-tools-search-pool-');
/** Exponential backtracking on EVIL's line: stopped after the 1 s limit. */
const CATASTROPHIC = '(a+)+$';
const evil = makeTree({ 'evil.txt': `${'a'.repeat(40)}!\n`, 'ok.txt': 'v1 v2\n' }, 'fs-tools-search-pool-evil-');
let client: TestClient;
/** A server of its own (the first suite's must not decide this one's). */
let evilClient: TestClient;

beforeAll(async () => {
  client = await connect('modern', { args: [t.dir] });
  evilClient = await connect('modern', { args: [evil.dir] });
});
afterAll(async () => {
  await client?.close();
  await evilClient?.close();
  t.cleanup();
  evil.cleanup();
});

describe('a regular expression that throws in a reader thread', () => {
  it('fails at most its own call; regex search and replace keep working for the session', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await client.call('search_files', { path: t.dir, query: OVERFLOW, regex: true });
      // Whatever the call answers, it answers with no content of the file.
      expect(JSON.stringify(r)).not.toContain('abababab');
      const text = await client.call('replace_in_files', {
        path: t.dir,
        query: OVERFLOW,
        regex: true,
        replacement: 'x',
        dry_run: true,
      });
      expect(JSON.stringify(text)).not.toContain('abababab');
    }
    const found = await client.callOk('search_files', { path: t.dir, query: 'v(\\d)', regex: true });
    expect(JSON.stringify(found)).toContain('ok.txt');
    const replaced = await client.callOk('replace_in_files', {
      path: t.dir,
      query: 'v(\\d)',
      regex: true,
      replacement: '[$1]',
      dry_run: true,
    });
    expect(replaced).toMatchObject({ files: [{ path: 'ok.txt', replacements: 2 }] });
    expect(readFileSync(path.join(t.dir, 'long.txt'), 'utf8')).toBe(LONG_LINE);
    expect(readFileSync(path.join(t.dir, 'ok.txt'), 'utf8')).toBe('v1 v2\n');
  }, 60_000);
});

describe('a catastrophic regular expression stopped by the watchdog', () => {
  const replace = (query: string) =>
    evilClient.call('replace_in_files', { path: evil.dir, query, regex: true, replacement: 'x', dry_run: true });

  it('fails its own call only: a concurrent benign regex replace succeeds, and later calls work', async () => {
    // Two catastrophic calls (one per reader thread on a 2-core machine, more threads take more), then benign ones
    // whose jobs queue behind them.
    const bad = [replace(CATASTROPHIC), replace(CATASTROPHIC), replace(CATASTROPHIC), replace(CATASTROPHIC)];
    const good = [replace('v(\\d)'), replace('v(\\d)')];
    for (const r of await Promise.all(bad)) {
      expect(r.isError).toBe(true);
      expect(r.content[0].text).toContain('regex_timeout');
    }
    for (const r of await Promise.all(good)) {
      expect(r.isError, JSON.stringify(r)).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ files: [{ path: 'ok.txt', replacements: 2 }] });
    }
    const found = await evilClient.callOk('search_files', { path: evil.dir, query: 'v(\\d)', regex: true });
    expect(JSON.stringify(found)).toContain('ok.txt');
    expect(readFileSync(path.join(evil.dir, 'ok.txt'), 'utf8')).toBe('v1 v2\n');
  }, 60_000);
});
