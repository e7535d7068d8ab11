/**
 * Attacks on copy_path (issue #18), injected deterministically in-process through `callTool` (the path the stdio
 * server uses): decisions are taken inside the path lock on the current state (a secret planted in the source tree,
 * a destination created after authorization), and a source swapped part-way through a tree copy (a directory replaced
 * by a link out of the roots, a file replaced by another) stops the copy with nothing at the destination, no
 * temporary directory left and nothing read from outside. Mid-copy swaps use the seam `setCopyFault`
 * (src/mutation/copy-write.ts), called before each planned entry is copied.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { withPathLock } from '../../src/fs/path-lock.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { setCopyFault } from '../../src/mutation/copy-write.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { makeTree } from '../helpers/tree.js';

let R: string;
let O: string;
let S: string;
let state: ProcessState;
const cleanups: Array<() => void> = [];

beforeAll(() => {
  const r = makeTree({}, 'fs-tools-cp-root-');
  const o = makeTree({ 'outside.txt': 'OUTSIDE SECRET\n' }, 'fs-tools-cp-outside-');
  const s = makeTree({}, 'fs-tools-cp-state-');
  cleanups.push(r.cleanup, o.cleanup, s.cleanup);
  R = r.dir;
  O = o.dir;
  S = s.dir;
  const config = parseConfig(['--state-dir', S, R], { cwd: R, home: '/nonexistent-home', toolNames: TOOL_NAMES });
  state = createProcessState(config, TOOLS, 'test');
});
afterAll(() => {
  for (const c of cleanups) c();
});
afterEach(() => setCopyFault(null));

const call = (tool: string, args: Record<string, unknown>): Promise<CallOutcome> =>
  callTool(state, tool, args, new AbortController().signal);
const codeOf = (o: CallOutcome): string => (o.ok ? 'ok' : o.envelope.error.code);

let n = 0;
/** A fresh area with a source tree `tree/{one.txt, b/{c.txt, d.txt}}` and an empty `out`. */
function area(): string {
  const d = path.join(R, `a${++n}`);
  mkdirSync(path.join(d, 'tree', 'b'), { recursive: true });
  mkdirSync(path.join(d, 'out'));
  writeFileSync(path.join(d, 'tree', 'one.txt'), 'one\n');
  writeFileSync(path.join(d, 'tree', 'b', 'c.txt'), 'c\n');
  writeFileSync(path.join(d, 'tree', 'b', 'd.txt'), 'd\n');
  return d;
}

/** Starts `make()` while the lock of `paths` is held, runs `meanwhile` after it authorized, then releases. */
async function whileLocked(
  paths: string[],
  make: () => Promise<CallOutcome>,
  meanwhile: () => void,
): Promise<CallOutcome> {
  let pending!: Promise<CallOutcome>;
  await withPathLock(paths, S, async () => {
    pending = make();
    await new Promise((r) => setTimeout(r, 300));
    meanwhile();
  });
  return await pending;
}

describe('copy_path decides inside the path lock', () => {
  it('a secret planted in the source tree after authorization refuses the whole copy', async () => {
    const d = area();
    const outcome = await whileLocked(
      [path.join(d, 'tree')],
      () =>
        call('copy_path', { source: path.join(d, 'tree'), destination: path.join(d, 'out', 'copy'), recursive: true }),
      () => writeFileSync(path.join(d, 'tree', 'b', '.env'), 'TOKEN=1\n'),
    );
    expect(codeOf(outcome)).toBe('SECRET_DENIED');
    expect(readdirSync(path.join(d, 'out'))).toEqual([]);
  });

  it('a destination file created after authorization is not replaced (overwrite needs its hash)', async () => {
    const d = area();
    const dst = path.join(d, 'out', 'one.txt');
    const outcome = await whileLocked(
      [dst],
      () => call('copy_path', { source: path.join(d, 'tree', 'one.txt'), destination: dst, overwrite: true }),
      () => writeFileSync(dst, 'THEIRS\n'),
    );
    expect(codeOf(outcome)).toBe('HASH_REQUIRED');
    expect(readFileSync(dst, 'utf8')).toBe('THEIRS\n');
  });

  it('a destination directory created after authorization is never merged into or replaced', async () => {
    const d = area();
    const dst = path.join(d, 'out', 'copy');
    const outcome = await whileLocked(
      [dst],
      () => call('copy_path', { source: path.join(d, 'tree'), destination: dst, recursive: true }),
      () => mkdirSync(dst),
    );
    expect(codeOf(outcome)).toBe('VALIDATION');
    expect(readdirSync(dst)).toEqual([]);
    expect(readdirSync(path.join(d, 'out'))).toEqual(['copy']);
  });
});

describe('a source swapped part-way through a tree copy', () => {
  it('a directory replaced by a link out of the roots: NOT_ALLOWED, nothing copied, nothing read outside', async () => {
    const d = area();
    setCopyFault((relative) => {
      if (relative !== 'b') return;
      renameSync(path.join(d, 'tree', 'b'), path.join(d, 'b-away'));
      symlinkSync(O, path.join(d, 'tree', 'b'));
    });
    const outcome = await call('copy_path', {
      source: path.join(d, 'tree'),
      destination: path.join(d, 'out', 'copy'),
      recursive: true,
    });
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    expect(readdirSync(path.join(d, 'out'))).toEqual([]);
  });

  it('a file replaced by another after inspection: NOT_ALLOWED, no partial destination, no temporary tree', async () => {
    const d = area();
    setCopyFault((relative) => {
      if (relative !== 'b/d.txt') return;
      rmSync(path.join(d, 'tree', 'b', 'd.txt'));
      writeFileSync(path.join(d, 'tree', 'b', 'd.txt'), 'swapped\n');
    });
    const outcome = await call('copy_path', {
      source: path.join(d, 'tree'),
      destination: path.join(d, 'out', 'copy'),
      recursive: true,
    });
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    expect(readdirSync(path.join(d, 'out'))).toEqual([]);
    expect(existsSync(path.join(d, 'out', 'copy'))).toBe(false);
  });

  it('without a swap the same copy succeeds', async () => {
    const d = area();
    const outcome = await call('copy_path', {
      source: path.join(d, 'tree'),
      destination: path.join(d, 'out', 'copy'),
      recursive: true,
    });
    expect(codeOf(outcome)).toBe('ok');
    expect(readFileSync(path.join(d, 'out', 'copy', 'b', 'd.txt'), 'utf8')).toBe('d\n');
  });
});
