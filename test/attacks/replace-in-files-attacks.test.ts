/**
 * Attacks on replace_in_files (security review of this round's mutation paths, issue 18), in-process through
 * `callTool` (the path the stdio server uses).
 *  - a replacement bomb: a short query over a file of matches with a long replacement (literal, or `$&` repeated in a
 *    regex) asks for a result far beyond any file this tool reads; it used to build it (up to V8's string limit: an
 *    INTERNAL envelope, or gigabytes across many lines). Now the file is skipped as too_large, nothing built or written
 *    (literal in-process; the regex case over stdio, where the bundled regex worker runs); a file of more matches
 *    than max_replacements is skipped as too_many_matches after counting max + 1 of them;
 *  - expected_hashes naming a path outside `path` (absolute, or `../../etc/passwd`): was OCC_MISMATCH echoing the
 *    outside path it built (retryable); now VALIDATION naming no path, nothing written;
 *  - many files each just under the 1 s regex bound held the call (and the regex worker search_files shares) for
 *    files × 1 s: the call now stops at a 20 s budget, as search_files does (`truncated`; the clock is mocked here).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { connect } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

let R: string;
let S: string;
let state: ProcessState;
const cleanups: Array<() => void> = [];
const BIG = 'a'.repeat(3_000_000);

beforeAll(() => {
  const r = makeTree({ 'big.txt': BIG }, 'fs-tools-rif-root-');
  const s = makeTree({}, 'fs-tools-rif-state-');
  cleanups.push(r.cleanup, s.cleanup);
  R = r.dir;
  S = s.dir;
  const config = parseConfig(['--state-dir', S, R], { cwd: R, home: '/nonexistent-home', toolNames: TOOL_NAMES });
  state = createProcessState(config, TOOLS, 'test');
});
afterAll(() => {
  for (const c of cleanups) c();
});

const call = (tool: string, args: Record<string, unknown>): Promise<CallOutcome> =>
  callTool(state, tool, args, new AbortController().signal);

describe('replacement bombs', () => {
  it('a literal replacement growing a file far past --max-search-file-bytes skips it as too_large, nothing written', async () => {
    // 2,000 characters per match: the size bound (about 5,000 matches) is crossed before the count (10,000).
    const q = { query: 'a', replacement: 'x'.repeat(2000), max_replacements: 10_000 };
    const outcome = await call('replace_in_files', { path: R, ...q, dry_run: true });
    if (!outcome.ok) throw new Error(`expected ok, got ${outcome.envelope.error.code}`);
    expect(outcome.structured).toMatchObject({ files: [], replacements: 0, skipped: { too_large: 1 } });
    const applied = await call('replace_in_files', { path: R, ...q });
    expect(applied.ok).toBe(true);
    expect(readFileSync(path.join(R, 'big.txt'), 'utf8')).toBe(BIG);
  });

  it('a replacement that keeps the file within the bound is still applied', async () => {
    writeFileSync(path.join(R, 'small.txt'), 'aaa\n');
    const q = { path: path.join(R, 'small.txt'), query: 'a', replacement: 'bb' };
    const preview = await call('replace_in_files', { ...q, dry_run: true });
    if (!preview.ok) throw new Error(`expected ok, got ${preview.envelope.error.code}`);
    const [file] = preview.structured.files as Array<{ path: string; previous_hash: string }>;
    const applied = await call('replace_in_files', { ...q, expected_hashes: { [file.path]: file.previous_hash } });
    expect(applied.ok).toBe(true);
    expect(readFileSync(path.join(R, 'small.txt'), 'utf8')).toBe('bbbbbb\n');
  });

  // The regex worker is the one embedded in dist/cli.js: a real server process.
  it('a regex replacement repeating $& (in the worker): the same, over stdio', async () => {
    const r = makeTree({ 'big.txt': BIG, 'ok.txt': 'v1 v2\n' }, 'fs-tools-rif-e2e-');
    const s = makeTree({}, 'fs-tools-rif-e2e-state-');
    const client = await connect('modern', { args: ['--state-dir', s.dir, r.dir] });
    try {
      const bomb = await client.callOk('replace_in_files', {
        path: r.dir,
        query: 'a',
        regex: true,
        replacement: '$&'.repeat(1000),
        max_replacements: 10_000,
        dry_run: true,
      });
      expect(bomb).toMatchObject({ files: [], replacements: 0, skipped: { too_large: 1 } });
      // Its 3,000,000 matches are more than any call may replace in one file: skipped at the 10,001st, not counted to
      // the end (a 10,000,000-match file used to hit the 1 s regex bound, VALIDATION regex_timeout, instead).
      const many = await client.callOk('replace_in_files', {
        path: r.dir,
        query: 'a',
        regex: true,
        replacement: 'b',
        max_replacements: 10_000,
        dry_run: true,
      });
      expect(many).toMatchObject({ files: [], truncated: false, skipped: { too_many_matches: 1, too_large: 0 } });
      const fine = await client.callOk('replace_in_files', {
        path: r.dir,
        query: 'v(\\d)',
        regex: true,
        replacement: '[$1$&]',
        dry_run: true,
      });
      expect(fine).toMatchObject({ files: [{ path: 'ok.txt', replacements: 2 }] });
      expect(fine.files[0].diff).toContain('+[1v1] [2v2]');
      expect(readFileSync(path.join(r.dir, 'big.txt'), 'utf8')).toBe(BIG);
    } finally {
      await client.close();
      r.cleanup();
      s.cleanup();
    }
  });
});

describe('expected_hashes outside the preview', () => {
  it.each([
    ['an absolute path outside the roots', '/etc/passwd'],
    ['a relative path climbing out', '../../etc/passwd'],
  ])('%s is VALIDATION naming no path, nothing written', async (_, key) => {
    writeFileSync(path.join(R, 'c.txt'), 'foo\n');
    const outcome = await call('replace_in_files', {
      path: R,
      query: 'foo',
      replacement: 'bar',
      expected_hashes: { 'c.txt': 'sha256:' + '0'.repeat(64), [key]: 'absent' },
    });
    if (outcome.ok) throw new Error('expected an error');
    expect(outcome.envelope.error).toMatchObject({ code: 'VALIDATION', details: { reason: 'outside_preview' } });
    expect(JSON.stringify(outcome.envelope)).not.toContain('/etc');
    expect(readFileSync(path.join(R, 'c.txt'), 'utf8')).toBe('foo\n');
  });
});

describe('a call over many slow files', () => {
  it('stops at the whole-call time budget with truncated: true', async () => {
    const d = path.join(R, 'many');
    mkdirSync(d);
    for (let i = 0; i < 40; i++) writeFileSync(path.join(d, `f${String(i).padStart(2, '0')}.txt`), 'foo\n');
    // Each reading of the clock is one second later: the 20 s budget runs out part-way through the 40 files.
    const real = Date.now.bind(Date);
    let ticks = 0;
    const spy = vi.spyOn(Date, 'now').mockImplementation(() => real() + 1000 * ++ticks);
    let outcome: CallOutcome;
    try {
      outcome = await call('replace_in_files', { path: d, query: 'foo', replacement: 'bar', dry_run: true });
    } finally {
      spy.mockRestore();
    }
    if (!outcome.ok) throw new Error(outcome.envelope.error.code);
    expect(outcome.structured.truncated).toBe(true);
    expect((outcome.structured.files as unknown[]).length).toBeLessThan(40);
  });
});
