/**
 * OCC and patch refusals are decided under the path lock, on the state the lock holder leaves (src/mutation/pipeline.ts
 * `runMutation`). Session 15 tried deciding a call its expected hash marks as likely refused once before the lock
 * (r15-soak, 4355fa3, to save the lock file's create and unlinks in directories other servers share); a fresh review
 * (r15-review-misc) showed a call refused against a state the holder was about to replace with exactly the bytes the
 * call expected, a call that succeeds when it waits (25a8f52 and now). The early decision was taken out again
 * (docs/benchmarks.md, "Mixed load, 2026-12-04 evening"). Pins, in-process against a path lock another holder keeps:
 *  - write_file with a stale expected_hash (OCC_MISMATCH), without one on a file this session never read
 *    (HASH_REQUIRED), and edit_file whose text is not there (PATCH_FAILED) wait for the holder and are answered with the
 *    same envelope as without a holder, changing nothing (file, directory, history);
 *  - a call whose expected hash the holder's change makes true waits and succeeds (the review's attack);
 *  - a call whose expected hash was true before the holder's change is OCC_MISMATCH after it, nothing written;
 *  - a call with the hash this session holds waits for the lock, then succeeds.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { withPathLock } from '../../src/fs/path-lock.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { makeTree } from '../helpers/tree.js';

const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

let R: string;
let S: string;
let state: ProcessState;
const cleanups: Array<() => void> = [];
beforeAll(() => {
  const r = makeTree({}, 'fs-tools-occ-early-root-');
  const s = makeTree({}, 'fs-tools-occ-early-state-');
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
const codeOf = (o: CallOutcome): string => (o.ok ? 'ok' : o.envelope.error.code);

let n = 0;
/** A fresh directory holding f.txt ("ours\n"). */
function area(): { dir: string; file: string } {
  const dir = path.join(R, `a${++n}`);
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'f.txt'), 'ours\n');
  return { dir, file: path.join(dir, 'f.txt') };
}
const historyNames = () => (existsSync(path.join(S, 'history')) ? readdirSync(path.join(S, 'history')) : []);

/**
 * Starts `make()` while the lock of `file` is held; after `waitMs` notes whether the call has answered yet, runs
 * `meanwhile`, then releases. @returns the outcome and whether it came while the lock was held
 */
async function underHeldLock(
  file: string,
  make: () => Promise<CallOutcome>,
  meanwhile: () => void = () => undefined,
  waitMs = 300,
): Promise<{ outcome: CallOutcome; answeredWhileHeld: boolean }> {
  let answered = false;
  let pending!: Promise<CallOutcome>;
  let answeredWhileHeld = false;
  await withPathLock([file], S, async () => {
    pending = make().finally(() => {
      answered = true;
    });
    await new Promise((r) => setTimeout(r, waitMs));
    answeredWhileHeld = answered;
    meanwhile();
  });
  return { outcome: await pending, answeredWhileHeld };
}

describe('refusals wait for the lock holder', () => {
  it.each([
    [
      'write_file, stale expected_hash',
      'OCC_MISMATCH',
      (f: string) => call('write_file', { path: f, content: 'x', expected_hash: sha('stale') }),
    ],
    [
      'write_file, no hash on a file never read',
      'HASH_REQUIRED',
      (f: string) => call('write_file', { path: f, content: 'x' }),
    ],
    [
      'edit_file, text not there',
      'PATCH_FAILED',
      (f: string) =>
        call('edit_file', {
          path: f,
          edits: [{ old_text: 'no such text', new_text: 'x' }],
          expected_hash: sha('ours\n'),
        }),
    ],
  ])('%s: %s after the holder releases the lock; nothing changed', async (_name, code, make) => {
    const { dir, file } = area();
    const records = historyNames();
    const { outcome, answeredWhileHeld } = await underHeldLock(file, () => make(file));
    expect(codeOf(outcome)).toBe(code);
    expect(answeredWhileHeld).toBe(false);
    expect(readFileSync(file, 'utf8')).toBe('ours\n');
    expect(readdirSync(dir)).toEqual(['f.txt']);
    expect(historyNames()).toEqual(records);
    // The same refusal, envelope and all, once nobody holds the lock.
    const again = await make(file);
    expect(again.ok ? null : again.envelope).toEqual(outcome.ok ? null : outcome.envelope);
  });

  it('a call whose expected hash the holder makes stale is OCC_MISMATCH after the lock, nothing written', async () => {
    const { dir, file } = area();
    // The right hash when the call comes, but one this session does not hold.
    const { outcome, answeredWhileHeld } = await underHeldLock(
      file,
      () => call('write_file', { path: file, content: 'MINE\n', expected_hash: sha('ours\n') }),
      () => writeFileSync(file, 'THEIRS\n'),
    );
    expect(answeredWhileHeld).toBe(false);
    expect(codeOf(outcome)).toBe('OCC_MISMATCH');
    expect(readFileSync(file, 'utf8')).toBe('THEIRS\n');
    expect(readdirSync(dir)).toEqual(['f.txt']);
  });

  it('control: with the hash this session holds, the call waits for the lock, then succeeds', async () => {
    const { file } = area();
    const read = await call('read_file', { path: file });
    expect(codeOf(read)).toBe('ok');
    const { outcome, answeredWhileHeld } = await underHeldLock(file, () =>
      call('write_file', { path: file, content: 'MINE\n', expected_hash: sha('ours\n') }),
    );
    expect(answeredWhileHeld).toBe(false);
    expect(codeOf(outcome)).toBe('ok');
    expect(readFileSync(file, 'utf8')).toBe('MINE\n');
  });
});

/**
 * Review (session 15, r15-review-misc): the holder of the lock (an fs-tools writer of another session or server)
 * changes the file to exactly the bytes this call expects. The call waits, then finds its expected hash and writes.
 * Decided before the lock (4355fa3, taken out) it was OCC_MISMATCH against a state the holder was about to replace.
 */
describe("review: a call the holder's change makes right", () => {
  it('the holder writes exactly the expected bytes: the call waits and succeeds', async () => {
    const { dir, file } = area();
    const records = historyNames();
    const { outcome, answeredWhileHeld } = await underHeldLock(
      file,
      () => call('write_file', { path: file, content: 'MINE\n', expected_hash: sha('theirs\n') }),
      () => writeFileSync(file, 'theirs\n'),
    );
    expect(answeredWhileHeld).toBe(false);
    expect(codeOf(outcome)).toBe('ok');
    expect(readFileSync(file, 'utf8')).toBe('MINE\n');
    expect(readdirSync(dir)).toEqual(['f.txt']);
    expect(historyNames().length).toBe(records.length + 1);
  });
});
