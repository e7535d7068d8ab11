/**
 * Check-to-use swaps on this round's mutation paths (security review, issue 18), injected deterministically
 * in-process: at the atomic writer's "write" or "rename" step (its temporary file open in the verified parent), the
 * parent directory of the file being changed is renamed away and replaced by a symbolic link to a directory outside
 * the roots holding a file of the same name. replace_in_files applying a preview and revert_changes restoring a file
 * must leave the outside directory exactly as it was (no new bytes, no temporary file); the descriptor they hold is the
 * real directory (moved, still inside the root), so the write may land there.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { setWriteFaultInjector } from '../../src/fs/atomic-write.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { contentHash } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

let R: string;
let O: string;
let state: ProcessState;
const cleanups: Array<() => void> = [];

beforeAll(() => {
  const r = makeTree({}, 'fs-tools-urs-root-');
  const o = makeTree({}, 'fs-tools-urs-outside-');
  const s = makeTree({}, 'fs-tools-urs-state-');
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

const codeOf = (o: CallOutcome): string => (o.ok ? 'ok' : o.envelope.error.code);

let n = 0;
/** A directory `d` in the root holding f.txt, and an outside twin holding f.txt with other bytes. */
function setup(): { d: string; away: string; twin: string } {
  const d = path.join(R, `d${++n}`);
  mkdirSync(d);
  writeFileSync(path.join(d, 'f.txt'), 'foo\n');
  const twin = path.join(O, `twin${n}`);
  mkdirSync(twin);
  writeFileSync(path.join(twin, 'f.txt'), 'OUTSIDE foo\n');
  return { d, away: path.join(R, `d${n}.real`), twin };
}

function swapAt(step: 'write' | 'rename', d: string, away: string, twin: string): () => boolean {
  let fired = false;
  setWriteFaultInjector((s) => {
    if (s !== step || fired) return;
    fired = true;
    renameSync(d, away);
    symlinkSync(twin, d);
  });
  return () => fired;
}

describe.each(['write', 'rename'] as const)('parent swapped for a link to outside at the %s step', (step) => {
  it('replace_in_files applying a preview writes nothing outside', async () => {
    const { d, away, twin } = setup();
    const q = { path: d, query: 'foo', replacement: 'PWNED' };
    const preview = await call('replace_in_files', { ...q, dry_run: true });
    if (!preview.ok) throw new Error(preview.envelope.error.code);
    const fired = swapAt(step, d, away, twin);
    const applied = await call('replace_in_files', { ...q, expected_hashes: { 'f.txt': contentHash('foo\n') } });
    expect(fired()).toBe(true);
    // The descriptor held is the real directory, now d.real inside the root: the write may land there, never outside.
    expect(codeOf(applied)).toMatch(/^(ok|NOT_ALLOWED|ROLLBACK_\w+)$/);
    expect(readdirSync(twin)).toEqual(['f.txt']);
    expect(readFileSync(path.join(twin, 'f.txt'), 'utf8')).toBe('OUTSIDE foo\n');
  });

  it('revert_changes restoring a file writes nothing outside', async () => {
    const { d, away, twin } = setup();
    const f = path.join(d, 'f.txt');
    const wrote = await call('write_file', { path: f, content: 'two\n', expected_hash: contentHash('foo\n') });
    expect(wrote.ok).toBe(true);
    writeFileSync(path.join(twin, 'f.txt'), 'two\n'); // the twin even holds what the change left
    const listed = await call('list_changes', { limit: 1 });
    if (!listed.ok) throw new Error(listed.envelope.error.code);
    const [change] = listed.structured.changes as Array<{ id: string }>;
    const fired = swapAt(step, d, away, twin);
    const reverted = await call('revert_changes', { change_id: change.id });
    expect(fired()).toBe(true);
    expect(codeOf(reverted)).toMatch(/^(ok|NOT_ALLOWED|ROLLBACK_\w+)$/);
    expect(readdirSync(twin)).toEqual(['f.txt']);
    expect(readFileSync(path.join(twin, 'f.txt'), 'utf8')).toBe('two\n');
  });
});

describe('the parent moved out of the roots at the write step', () => {
  function moveOut(d: string): { gone: string; fired: () => boolean } {
    const gone = path.join(O, `gone${++n}`);
    let fired = false;
    setWriteFaultInjector((s) => {
      if (s !== 'write' || fired) return;
      fired = true;
      renameSync(d, gone);
    });
    return { gone, fired: () => fired };
  }

  it('replace_in_files: NOT_ALLOWED, the moved directory holds its file unchanged and no temporary file', async () => {
    const { d } = setup();
    const q = { path: d, query: 'foo', replacement: 'PWNED' };
    const m = moveOut(d);
    const applied = await call('replace_in_files', { ...q, expected_hashes: { 'f.txt': contentHash('foo\n') } });
    expect(m.fired()).toBe(true);
    expect(codeOf(applied)).toBe('NOT_ALLOWED');
    expect(readdirSync(m.gone)).toEqual(['f.txt']);
    expect(readFileSync(path.join(m.gone, 'f.txt'), 'utf8')).toBe('foo\n');
  });

  it('revert_changes: the same', async () => {
    const { d } = setup();
    const f = path.join(d, 'f.txt');
    expect((await call('write_file', { path: f, content: 'two\n', expected_hash: contentHash('foo\n') })).ok).toBe(
      true,
    );
    const listed = await call('list_changes', { limit: 1 });
    if (!listed.ok) throw new Error(listed.envelope.error.code);
    const [change] = listed.structured.changes as Array<{ id: string }>;
    const m = moveOut(d);
    const reverted = await call('revert_changes', { change_id: change.id });
    expect(m.fired()).toBe(true);
    expect(codeOf(reverted)).toBe('NOT_ALLOWED');
    expect(readdirSync(m.gone)).toEqual(['f.txt']);
    expect(readFileSync(path.join(m.gone, 'f.txt'), 'utf8')).toBe('two\n');
  });
});
