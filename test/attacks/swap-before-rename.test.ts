/**
 * Attack: the target of a write is swapped between the policy check and the rename (SPEC §4.1 "robust against a
 * symlink swapped in between the check and the write", §5 no lost update), injected deterministically through the
 * atomic writer's fault seam (`setWriteFaultInjector`, step "write": the temporary file is open, nothing is renamed
 * yet), as node-tar's symlink-race-extract wraps one call. In-process through `callTool`, the same path the stdio
 * server and `fs-tools call` use. Pins:
 *  - a symlink to an outside file swapped in → NOT_ALLOWED, the outside file byte-identical, the link left alone;
 *  - the parent directory swapped for a link to an outside directory → refused, nothing created outside;
 *  - different bytes written by someone else → OCC_MISMATCH with their hash, their bytes kept;
 *  - the file deleted → OCC_MISMATCH reason deleted, nothing recreated; a file created where none was → reason created;
 *  - identical bytes under a new inode (an editor's identical save) → the write proceeds; never INTERNAL
 *    (regression: it used to be INTERNAL "file changed during the call but its hash did not");
 *  - no temporary file is left behind in any case.
 */
import {
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  readFileSync,
  readdirSync,
  lstatSync,
  mkdirSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { setWriteFaultInjector } from '../../src/fs/atomic-write.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { contentHash, snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

let R: string;
let O: string;
let state: ProcessState;
const cleanups: Array<() => void> = [];

beforeAll(() => {
  const r = makeTree();
  const o = makeTree({ 'secret.txt': 'OUTSIDE SECRET\n', dir: {} }, 'fs-tools-outside-');
  const s = makeTree({}, 'fs-tools-state-');
  cleanups.push(r.cleanup, o.cleanup, s.cleanup);
  R = r.dir;
  O = o.dir;
  const config = parseConfig(['--state-dir', s.dir, R], { cwd: R, home: '/nonexistent-home', toolNames: TOOL_NAMES });
  state = createProcessState(config, TOOLS, 'test');
});
afterAll(() => {
  for (const c of cleanups) c();
});
afterEach(() => setWriteFaultInjector(null));

const call = (tool: string, args: Record<string, unknown>): Promise<CallOutcome> =>
  callTool(state, tool, args, new AbortController().signal);

/** Arms the seam to run `swap` once, at the "write" step of the next atomic write. */
function onceBeforeWrite(swap: (target: string) => void): void {
  let fired = false;
  setWriteFaultInjector((step, target) => {
    if (step !== 'write' || fired) return;
    fired = true;
    swap(target);
  });
}

function codeOf(outcome: CallOutcome): string {
  return outcome.ok ? 'ok' : outcome.envelope.error.code;
}

/** No fs-tools temporary file anywhere under `dir`. */
function expectNoTemp(dir: string): void {
  const walk = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [e.name]));
  expect(walk(dir).filter((n) => n.includes('.fs-tools-'))).toEqual([]);
}

let n = 0;
function area(files: Record<string, string>): string {
  const d = path.join(R, `a${++n}`);
  mkdirSync(d);
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(d, name), content);
  return d;
}

describe('a swap between check and rename', () => {
  it('a symlink to an outside file swapped in is NOT_ALLOWED and the outside file is untouched', async () => {
    const d = area({ f: 'inside\n' });
    const f = path.join(d, 'f');
    const outsideBefore = snapshotTree(O, { withMtime: true });
    onceBeforeWrite(() => {
      rmSync(f);
      symlinkSync(path.join(O, 'secret.txt'), f);
    });
    const outcome = await call('write_file', { path: f, content: 'PWNED\n', expected_hash: contentHash('inside\n') });
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    expect(snapshotTree(O, { withMtime: true })).toEqual(outsideBefore);
    expect(lstatSync(f).isSymbolicLink()).toBe(true);
    expectNoTemp(d);
  });

  it('edit_file: the same swap is NOT_ALLOWED too', async () => {
    const d = area({ f: 'inside\n' });
    const f = path.join(d, 'f');
    const outsideBefore = snapshotTree(O, { withMtime: true });
    onceBeforeWrite(() => {
      rmSync(f);
      symlinkSync(path.join(O, 'secret.txt'), f);
    });
    const outcome = await call('edit_file', {
      path: f,
      edits: [{ old_text: 'inside', new_text: 'PWNED' }],
      expected_hash: contentHash('inside\n'),
    });
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    expect(snapshotTree(O, { withMtime: true })).toEqual(outsideBefore);
    expectNoTemp(d);
  });

  it('the parent directory swapped for a link to an outside directory writes nothing outside (the real one gets it)', async () => {
    const d = area({});
    mkdirSync(path.join(d, 'sub'));
    writeFileSync(path.join(d, 'sub', 'f'), 'inside\n');
    const outsideBefore = snapshotTree(O, { withMtime: true });
    onceBeforeWrite(() => {
      renameSync(path.join(d, 'sub'), path.join(d, 'sub-old'));
      symlinkSync(path.join(O, 'dir'), path.join(d, 'sub'));
    });
    const outcome = await call('write_file', {
      path: path.join(d, 'sub', 'f'),
      content: 'PWNED\n',
      expected_hash: contentHash('inside\n'),
    });
    // Issue 11: the write acts through the verified descriptor of the real directory, which is still inside the roots
    // under its new name: it lands there (the authorized, hashed file), never in the directory swapped in.
    expect(codeOf(outcome)).toBe('ok');
    expect(snapshotTree(O, { withMtime: true })).toEqual(outsideBefore);
    expect(readFileSync(path.join(d, 'sub-old', 'f'), 'utf8')).toBe('PWNED\n');
    expectNoTemp(d);
  });

  it('different bytes written meanwhile are OCC_MISMATCH and stay', async () => {
    const d = area({ f: 'l1\nl2\n' });
    const f = path.join(d, 'f');
    onceBeforeWrite(() => writeFileSync(f, 'l1\nTHEIRS\n'));
    const outcome = await call('write_file', { path: f, content: 'MINE\n', expected_hash: contentHash('l1\nl2\n') });
    expect(codeOf(outcome)).toBe('OCC_MISMATCH');
    if (!outcome.ok) {
      expect(outcome.envelope.error).toMatchObject({
        current_hash: contentHash('l1\nTHEIRS\n'),
        expected_hash: contentHash('l1\nl2\n'),
      });
      expect((outcome.envelope.error as unknown as { conflict: { reason: string } }).conflict.reason).toBe('modified');
    }
    expect(readFileSync(f, 'utf8')).toBe('l1\nTHEIRS\n');
    expectNoTemp(d);
  });

  it('the file deleted meanwhile is OCC_MISMATCH reason deleted and is not recreated', async () => {
    const d = area({ f: 'here\n' });
    const f = path.join(d, 'f');
    onceBeforeWrite(() => rmSync(f));
    const outcome = await call('write_file', { path: f, content: 'MINE\n', expected_hash: contentHash('here\n') });
    expect(codeOf(outcome)).toBe('OCC_MISMATCH');
    if (!outcome.ok)
      expect((outcome.envelope.error as unknown as { conflict: { reason: string } }).conflict.reason).toBe('deleted');
    expect(readdirSync(d)).toEqual([]);
  });

  it('a file created meanwhile where none was is OCC_MISMATCH reason created, and theirs stays', async () => {
    const d = area({});
    const f = path.join(d, 'new');
    onceBeforeWrite(() => writeFileSync(f, 'THEIRS\n'));
    const outcome = await call('write_file', { path: f, content: 'MINE\n' });
    expect(codeOf(outcome)).toBe('OCC_MISMATCH');
    if (!outcome.ok)
      expect((outcome.envelope.error as unknown as { conflict: { reason: string } }).conflict.reason).toBe('created');
    expect(readFileSync(f, 'utf8')).toBe('THEIRS\n');
    expectNoTemp(d);
  });

  // Regression: identical bytes under a new inode made onChanged return a plain Error → INTERNAL with an incident id.
  it('identical bytes under a new inode: the write proceeds (never INTERNAL)', async () => {
    const d = area({ f: 'same\n' });
    const f = path.join(d, 'f');
    onceBeforeWrite(() => {
      writeFileSync(`${f}.new`, 'same\n');
      renameSync(`${f}.new`, f);
    });
    const outcome = await call('edit_file', {
      path: f,
      edits: [{ old_text: 'same', new_text: 'edited' }],
      expected_hash: contentHash('same\n'),
    });
    expect(codeOf(outcome)).toBe('ok');
    expect(readFileSync(f, 'utf8')).toBe('edited\n');
    expectNoTemp(d);
  });

  it('a touch (same bytes, new mtime) does not fail the write', async () => {
    const d = area({ f: 'same\n' });
    const f = path.join(d, 'f');
    const { utimesSync } = await import('node:fs');
    onceBeforeWrite(() => utimesSync(f, new Date(2001, 1, 1), new Date(2001, 1, 1)));
    const outcome = await call('write_file', { path: f, content: 'new\n', expected_hash: contentHash('same\n') });
    expect(codeOf(outcome)).toBe('ok');
    expect(readFileSync(f, 'utf8')).toBe('new\n');
  });
});
