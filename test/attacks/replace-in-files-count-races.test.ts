/**
 * Review of replace_in_files' per-file count bound (9d6d457: a file of more matches than max_replacements is skipped
 * as too_many_matches), in-process through `callTool`. A file that gains matches between the walk and the lock is
 * replaced again on its new content inside the lock (the OCC check accepted it: a dry run, or --auto-occ off/warn):
 *  - the files the walk fitted under max_replacements could then add up to more than it: the preview listed, and an
 *    apply wrote, more replacements than the call allows (each file's count was bounded, their sum was not);
 *  - a file that gained more than max_replacements matches there (or became binary) was dropped without being
 *    counted in `skipped`.
 * A preview's file that the apply skips as too_many_matches while its content is unchanged (the apply's
 * max_replacements is lower than the preview's) was OCC_MISMATCH "no longer changed by this replacement": retrying
 * the preview and apply with the same arguments never gets further. It is VALIDATION naming max_replacements.
 * The race is made deterministic by a hook in the line matcher: the walk's replacement of one file rewrites another.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { makeTree } from '../helpers/tree.js';

/** Called with each text the walk replaces in, before it is replaced. */
let onReplace: ((text: string) => void) | null = null;

// The matcher as built, its replacement hooked; a regular expression is replaced in this thread (the worker is the
// code embedded in dist/cli.js, which src/ run alone does not carry) by the same replaceLines the worker runs.
vi.mock('../../src/fs/line-matcher.js', async (importOriginal) => {
  const mod = await importOriginal<typeof import('../../src/fs/line-matcher.js')>();
  const { replaceLines } = await import('../../src/fs/replace-lines.js');
  return {
    ...mod,
    createLineMatcher: (...a: Parameters<typeof mod.createLineMatcher>) => {
      const m = mod.createLineMatcher(...a);
      const [query, options] = a;
      const re = new RegExp(query, options.caseSensitive ? 'u' : 'iu');
      return {
        ...m,
        replace: (text: string, replacement: string, maxChars: number, maxCount: number) => {
          onReplace?.(text);
          if (options.regex) return Promise.resolve(replaceLines(re, text, replacement, false, maxChars, maxCount));
          return m.replace(text, replacement, maxChars, maxCount);
        },
      };
    },
  };
});

let R: string;
const cleanups: Array<() => void> = [];

beforeAll(() => {
  const r = makeTree({}, 'fs-tools-rif-count-');
  cleanups.push(r.cleanup);
  R = r.dir;
});
afterAll(() => {
  for (const c of cleanups) c();
});
afterEach(() => {
  onReplace = null;
});

function stateWith(flags: string[]): ProcessState {
  const s = makeTree({}, 'fs-tools-rif-count-state-');
  cleanups.push(s.cleanup);
  const config = parseConfig(['--state-dir', s.dir, ...flags, R], {
    cwd: R,
    home: '/nonexistent-home',
    toolNames: TOOL_NAMES,
  });
  return createProcessState(config, TOOLS, 'test');
}

const call = (state: ProcessState, args: Record<string, unknown>): Promise<CallOutcome> =>
  callTool(state, 'replace_in_files', args, new AbortController().signal);

function ok(outcome: CallOutcome): Record<string, any> {
  if (!outcome.ok) throw new Error(`expected ok, got ${JSON.stringify(outcome.envelope.error)}`);
  return outcome.structured as Record<string, any>;
}

/** Two files of 2 matches each in a fresh directory; the walk's replacement in b.txt rewrites a.txt to `grown`. */
function race(dir: string, grown: string): { a: string; b: string } {
  const d = path.join(R, dir);
  const a = path.join(d, 'a.txt');
  const b = path.join(d, 'b.txt');
  makeTreeIn(d, { 'a.txt': 'zz zz\n', 'b.txt': 'zz zz b\n' });
  onReplace = (text) => {
    if (text === 'zz zz b\n') writeFileSync(a, grown);
  };
  return { a, b };
}

function makeTreeIn(dir: string, files: Record<string, string>): void {
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
}

const args = (dir: string) => ({ path: dir, query: 'zz', replacement: 'y', max_replacements: 4 });

describe('a file gaining matches between the walk and the lock', () => {
  it('a preview never lists more than max_replacements in all (the file that no longer fits is left out: truncated)', async () => {
    const state = stateWith([]);
    race('grow-preview', 'zz zz zz zz\n');
    const dry = ok(await call(state, { ...args('grow-preview'), dry_run: true }));
    expect(dry.replacements).toBeLessThanOrEqual(4);
    expect(dry).toMatchObject({ files: [{ path: 'a.txt', replacements: 4 }], replacements: 4, truncated: true });
  });

  it('an apply under --auto-occ off writes at most max_replacements, the rest left for the next call', async () => {
    const state = stateWith(['--auto-occ', 'off']);
    const { a, b } = race('grow-apply', 'zz zz zz zz\n');
    const done = ok(await call(state, args('grow-apply')));
    expect(done).toMatchObject({ replacements: 4, truncated: true });
    expect(readFileSync(a, 'utf8')).toBe('y y y y\n');
    expect(readFileSync(b, 'utf8')).toBe('zz zz b\n');
  });

  it('a file that gained more than max_replacements matches is counted as too_many_matches, not dropped unsaid', async () => {
    const state = stateWith(['--auto-occ', 'off']);
    const { a, b } = race('grow-many', 'zz zz zz zz zz\n');
    const done = ok(await call(state, args('grow-many')));
    expect(done).toMatchObject({ files: [{ path: 'b.txt', replacements: 2 }], skipped: { too_many_matches: 1 } });
    expect(readFileSync(a, 'utf8')).toBe('zz zz zz zz zz\n');
    expect(readFileSync(b, 'utf8')).toBe('y y b\n');
  });

  it('a file that became binary is counted as binary, not dropped unsaid', async () => {
    const state = stateWith([]);
    const d = path.join(R, 'grow-binary');
    makeTreeIn(d, { 'a.txt': 'zz zz\n', 'b.txt': 'zz zz b\n' });
    onReplace = (text) => {
      if (text === 'zz zz b\n') writeFileSync(path.join(d, 'a.txt'), Buffer.from([0x7a, 0x7a, 0xff, 0x0a]));
    };
    const dry = ok(await call(state, { ...args('grow-binary'), dry_run: true }));
    expect(dry).toMatchObject({ files: [{ path: 'b.txt', replacements: 2 }], skipped: { binary: 1 } });
  });
});

describe('files without the query', () => {
  it('are not passed over line by line: the required bytes (as search_files) rule them out', async () => {
    const state = stateWith([]);
    makeTreeIn(path.join(R, 'needle'), { 'hit.txt': 'one zzz\n', 'miss.txt': 'zz z zz\n'.repeat(1000) });
    const seen: string[] = [];
    onReplace = (text) => seen.push(text.slice(0, 8));
    for (const q of [
      { query: 'zzz', replacement: 'y' },
      { query: 'on?e z(z)z', regex: true, replacement: 'y' },
    ]) {
      seen.length = 0;
      const dry = ok(await call(state, { path: 'needle', ...q, dry_run: true }));
      expect(dry).toMatchObject({ files: [{ path: 'hit.txt', replacements: 1 }], files_scanned: 2 });
      expect(seen).toEqual(['one zzz\n']);
    }
    // Case-insensitive: no needle, every file is passed over (and the answer is the same).
    seen.length = 0;
    const dry = ok(
      await call(state, { path: 'needle', query: 'ZZZ', case_sensitive: false, replacement: 'y', dry_run: true }),
    );
    expect(dry).toMatchObject({ files: [{ path: 'hit.txt', replacements: 1 }], files_scanned: 2 });
    expect(seen).toHaveLength(2);
  });
});

describe('a preview applied with a lower max_replacements', () => {
  it('is VALIDATION naming max_replacements (the file did not change), nothing written', async () => {
    const state = stateWith([]);
    makeTreeIn(path.join(R, 'lower'), { 'many.txt': 'zz '.repeat(30) + '\n', 'few.txt': 'zz\n' });
    const q = { path: 'lower', query: 'zz', replacement: 'y' };
    const dry = ok(await call(state, { ...q, max_replacements: 100, dry_run: true }));
    expect(dry.files).toHaveLength(2);
    const expected = Object.fromEntries(dry.files.map((f: any) => [f.path, f.previous_hash]));
    const outcome = await call(state, { ...q, max_replacements: 20, expected_hashes: expected });
    if (outcome.ok) throw new Error('expected an error');
    expect(outcome.envelope.error).toMatchObject({
      code: 'VALIDATION',
      details: { reason: 'too_many_matches', field: 'max_replacements' },
    });
    expect(readFileSync(path.join(R, 'lower', 'many.txt'), 'utf8')).toBe('zz '.repeat(30) + '\n');
    expect(readFileSync(path.join(R, 'lower', 'few.txt'), 'utf8')).toBe('zz\n');
    // With the preview's max_replacements, it applies.
    const done = ok(await call(state, { ...q, max_replacements: 100, expected_hashes: expected }));
    expect(done).toMatchObject({ replacements: 31, truncated: false });
  });

  it('a previewed file that gained matches since is still OCC_MISMATCH (it changed), nothing written', async () => {
    const state = stateWith([]);
    makeTreeIn(path.join(R, 'gained'), { 'g.txt': 'zz zz\n' });
    const q = { path: 'gained', query: 'zz', replacement: 'y', max_replacements: 3 };
    const dry = ok(await call(state, { ...q, dry_run: true }));
    writeFileSync(path.join(R, 'gained', 'g.txt'), 'zz zz zz zz\n');
    const outcome = await call(state, { ...q, expected_hashes: { 'g.txt': dry.files[0].previous_hash } });
    if (outcome.ok) throw new Error('expected an error');
    expect(outcome.envelope.error.code).toBe('OCC_MISMATCH');
    expect(readFileSync(path.join(R, 'gained', 'g.txt'), 'utf8')).toBe('zz zz zz zz\n');
  });
});
