/**
 * The race between a directory move's authorization walk and its rename (docs/security.md, "Whole-tree operations"),
 * injected deterministically in-process through `callTool`: an entry added to the tree after the walk has listed its
 * directory was never judged at the new place (here `moved/late.txt` is read_only), so the move must not carry it —
 * move_path proves after the rename that the moved directory holds only what was walked, and otherwise renames it
 * back: NOT_ALLOWED changed_during_call, the tree at its old place with the late entry, nothing at the destination.
 * The injection point is the walk's cancellation check (read once per entry): on the walk's last entry it creates a
 * file in a directory the walk has already listed.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

/** The real `aborted` getter of AbortSignal.prototype, restored after each test (see injectingSignal). */
const REAL_ABORTED = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!;

let R: string;
let state: ProcessState;
const cleanups: Array<() => void> = [];

beforeAll(() => {
  const r = makeTree({}, 'fs-tools-move-race-');
  const s = makeTree({}, 'fs-tools-move-race-state-');
  cleanups.push(r.cleanup, s.cleanup);
  R = r.dir;
  const policy = path.join(s.dir, 'policy.json');
  writeFileSync(policy, JSON.stringify({ rules: [{ pattern: 'moved*/late.txt', access: 'read_only' }] }));
  const config = parseConfig(['--state-dir', path.join(s.dir, 'state'), '--policy', policy, R], {
    cwd: R,
    home: '/nonexistent-home',
    toolNames: TOOL_NAMES,
  });
  state = createProcessState(config, TOOLS, 'test');
});
afterEach(() => {
  Object.defineProperty(AbortSignal.prototype, 'aborted', REAL_ABORTED);
});
afterAll(() => {
  for (const c of cleanups) c();
});

/** A fresh tree `NAME/{a.txt, d/x.txt}`. */
function fixture(name: string): string {
  const t = path.join(R, name);
  mkdirSync(path.join(t, 'd'), { recursive: true });
  writeFileSync(path.join(t, 'a.txt'), 'a\n');
  writeFileSync(path.join(t, 'd', 'x.txt'), 'x\n');
  return t;
}

/**
 * A signal for the call, and a hook on every signal's `aborted`: the tree walk (src/fs/tree-ops.ts inspectTree) reads
 * its call's signal once per entry, and on the `atEntry`-th such read `meanwhile` runs. The hook is on
 * AbortSignal.prototype because callTool hands the walk a signal of its own (one AbortController per call, tied to
 * the caller's), not the caller's; reads from anywhere else are not counted. afterEach restores the getter.
 */
function injectingSignal(atEntry: number, meanwhile: () => void): AbortSignal {
  let reads = 0;
  Object.defineProperty(AbortSignal.prototype, 'aborted', {
    configurable: true,
    get(this: AbortSignal) {
      const real = REAL_ABORTED.get!.call(this) as boolean;
      if (new Error().stack?.includes('inspectTree') && ++reads === atEntry) meanwhile();
      return real;
    },
  });
  return new AbortController().signal;
}

const codeOf = (o: CallOutcome): string => (o.ok ? 'ok' : o.envelope.error.code);

describe('move_path: an entry added between the walk and the rename is not carried', () => {
  it('the move is undone (renamed back): NOT_ALLOWED changed_during_call, nothing at the destination', async () => {
    const t = fixture('t1');
    // Walk order: a.txt, d, d/x.txt — at the third entry, t1/ was listed long ago.
    const outcome = await callTool(
      state,
      'move_path',
      { source: 't1', destination: 'moved1' },
      injectingSignal(3, () => writeFileSync(path.join(t, 'late.txt'), 'late\n')),
    );
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    if (outcome.ok) return;
    expect(outcome.envelope.error.details).toMatchObject({ reason: 'changed_during_call' });
    expect(outcome.envelope.error.details.mutation_applied).toBeUndefined();
    expect(existsSync(path.join(R, 'moved1'))).toBe(false);
    expect(readdirSync(t).sort()).toEqual(['a.txt', 'd', 'late.txt']);
  });

  it('without the race the same move goes through (the check does not refuse what was walked)', async () => {
    fixture('t2');
    const before = snapshotTree(path.join(R, 't2'));
    const outcome = await callTool(
      state,
      'move_path',
      { source: 't2', destination: 'moved2' },
      injectingSignal(3, () => undefined),
    );
    expect(codeOf(outcome)).toBe('ok');
    expect(existsSync(path.join(R, 't2'))).toBe(false);
    expect(snapshotTree(path.join(R, 'moved2'))).toEqual(before);
  });
});
