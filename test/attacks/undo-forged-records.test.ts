/**
 * Attacks on revert_changes through forged history records (security review of the undo paths, issue 18), in-process
 * through `callTool` (the path the stdio server uses). The state directory is hostile input: whatever a record says, a
 * revert never writes outside the roots and never creates a link that resolves outside them.
 *  - two recorded links, `dot -> .` and `up -> dot/..`: each target resolves inside the roots lexically, but the
 *    kernel follows `dot` before applying `..`, so `up` would point at the root's parent. Refused, nothing created;
 *    so is a target through an existing link to outside (`x -> ext/f`, `ext -> OUTSIDE`: walked as the kernel would);
 *  - a link recreated with an entry beneath it (`P -> .git/hooks`, then `P/pre-commit`): the file was refused by the
 *    verified write, but the link was left behind (mutation_applied). Now refused before anything is created;
 *  - a record larger than --history-max-bytes (never written by the server, which skips such a change) is invalid and
 *    never read: a forged huge record no longer costs its size in memory on every list_changes / revert_changes.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { contentHash } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

let R: string;
let S: string;
let state: ProcessState;
const cleanups: Array<() => void> = [];

beforeAll(() => {
  const r = makeTree({ 'x.txt': 'x\n' }, 'fs-tools-uf-root-');
  const s = makeTree({}, 'fs-tools-uf-state-');
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
const reasonOf = (o: CallOutcome): unknown => (o.ok ? undefined : o.envelope.error.details?.reason);

let n = 0;
/** Writes a forged record holding `files` (a valid shape) and returns its id. */
function forge(files: object[]): string {
  const dir = path.join(S, 'history');
  mkdirSync(dir, { recursive: true });
  const id = `${String(Date.now()).padStart(15, '0')}-${(0xabc000000000 + ++n).toString(16)}`;
  const record = { id, tool: 'delete_path', created_at: new Date().toISOString(), files };
  writeFileSync(path.join(dir, `${id}.json`), JSON.stringify(record));
  return id;
}

const link = (p: string, target: string) => ({
  path: p,
  old_base64: null,
  old_hash: null,
  old_mode: null,
  new_hash: null,
  old_kind: 'symlink',
  old_target: target,
});

describe('forged records naming links', () => {
  it('a link whose target climbs out through another link (dot -> ., up -> dot/..) is refused, nothing created', async () => {
    const d = path.join(R, 'links');
    mkdirSync(d);
    const id = forge([link(path.join(d, 'dot'), '.'), link(path.join(d, 'up'), 'dot/../..')]);
    const outcome = await call('revert_changes', { change_id: id });
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    expect(reasonOf(outcome)).toBe('link_target_outside');
    expect(readdirSync(d)).toEqual([]);
  });

  it('an absolute target climbing out through a link is refused as well', async () => {
    const d = path.join(R, 'links2');
    mkdirSync(d);
    const id = forge([link(path.join(d, 'dot'), '.'), link(path.join(d, 'up'), `${d}/dot/../..`)]);
    expect(codeOf(await call('revert_changes', { change_id: id }))).toBe('NOT_ALLOWED');
    expect(readdirSync(d)).toEqual([]);
  });

  it('a target through an existing link to outside (ext -> OUTSIDE, x -> ext/f) is refused, nothing created', async () => {
    const d = path.join(R, 'links4');
    mkdirSync(d);
    const outside = makeTree({ f: 'outside\n' }, 'fs-tools-uf-outside-');
    cleanups.push(outside.cleanup);
    symlinkSync(outside.dir, path.join(d, 'ext'));
    const id = forge([link(path.join(d, 'x'), 'ext/f')]);
    const outcome = await call('revert_changes', { change_id: id });
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    expect(reasonOf(outcome)).toBe('link_target_outside');
    expect(readdirSync(d)).toEqual(['ext']);
  });

  it('a link to a sibling (leading ..) is still recreated', async () => {
    const d = path.join(R, 'links3');
    mkdirSync(d);
    const id = forge([link(path.join(d, 'sib'), '../x.txt')]);
    expect(codeOf(await call('revert_changes', { change_id: id }))).toBe('ok');
    expect(lstatSync(path.join(d, 'sib')).isSymbolicLink()).toBe(true);
    expect(readFileSync(path.join(d, 'sib'), 'utf8')).toBe('x\n');
    expect(existsSync(path.join(d, 'dot'))).toBe(false);
  });
});

describe('forged records writing beneath a recreated link', () => {
  it('P -> .git/hooks then P/pre-commit: NOT_ALLOWED, no link, no hook', async () => {
    const d = path.join(R, 'hooks-attack');
    mkdirSync(path.join(d, '.git', 'hooks'), { recursive: true });
    const evil = '#!/bin/sh\necho pwned\n';
    const id = forge([
      link(path.join(d, 'P'), '.git/hooks'),
      {
        path: path.join(d, 'P', 'pre-commit'),
        old_base64: Buffer.from(evil).toString('base64'),
        old_hash: contentHash(evil),
        old_mode: 0o755,
        new_hash: null,
      },
    ]);
    const outcome = await call('revert_changes', { change_id: id });
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    expect(reasonOf(outcome)).toBe('beneath_recreated_link');
    expect(readdirSync(d)).toEqual(['.git']);
    expect(readdirSync(path.join(d, '.git', 'hooks'))).toEqual([]);
  });
});

describe('a recorded path that resolves elsewhere now', () => {
  it('a link on the way to it (sub -> other, both inside): NOT_ALLOWED symlink_in_path, nothing written', async () => {
    const d = path.join(R, 'moved-away');
    mkdirSync(path.join(d, 'other'), { recursive: true });
    symlinkSync('other', path.join(d, 'sub'));
    const old = 'before\n';
    const id = forge([
      {
        path: path.join(d, 'sub', 'f'),
        old_base64: Buffer.from(old).toString('base64'),
        old_hash: contentHash(old),
        old_mode: 0o644,
        new_hash: null,
      },
    ]);
    const outcome = await call('revert_changes', { change_id: id });
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    expect(reasonOf(outcome)).toBe('symlink_in_path');
    expect(readdirSync(path.join(d, 'other'))).toEqual([]);
  });
});

describe('a real record of a link to outside', () => {
  it('delete_path of it is recorded and listed; its revert is NOT_ALLOWED link_target_outside, no link made', async () => {
    const outside = makeTree({ f: 'outside\n' }, 'fs-tools-uf-outside-');
    cleanups.push(outside.cleanup);
    const d = path.join(R, 'real-link');
    mkdirSync(d);
    symlinkSync(path.join(outside.dir, 'f'), path.join(d, 'out'));
    expect(codeOf(await call('delete_path', { path: path.join(d, 'out') }))).toBe('ok');
    const listed = await call('list_changes', { limit: 1 });
    if (!listed.ok) throw new Error('list_changes failed');
    const newest = (listed.structured as { changes: Array<{ id: string; tool: string }> }).changes[0];
    expect(newest.tool).toBe('delete_path');
    const outcome = await call('revert_changes', { change_id: newest.id });
    expect(codeOf(outcome)).toBe('NOT_ALLOWED');
    expect(reasonOf(outcome)).toBe('link_target_outside');
    expect(readdirSync(d)).toEqual([]);
    expect(readFileSync(path.join(outside.dir, 'f'), 'utf8')).toBe('outside\n');
  });
});

describe('forged records larger than the history bound', () => {
  it('are invalid under --history-max-bytes and never applied; under a larger bound the same record is valid', async () => {
    const old = 'A'.repeat(3000);
    const id = forge([
      {
        path: path.join(R, 'x.txt'),
        old_base64: Buffer.from(old).toString('base64'),
        old_hash: contentHash(old),
        old_mode: 0o644,
        new_hash: contentHash('x\n'),
      },
    ]);
    const small = createProcessState(
      parseConfig(['--state-dir', S, '--history-max-bytes', '2048', R], {
        cwd: R,
        home: '/nonexistent-home',
        toolNames: TOOL_NAMES,
      }),
      TOOLS,
      'test',
    );
    const signal = new AbortController().signal;
    const listed = await callTool(small, 'list_changes', {}, signal);
    if (!listed.ok) throw new Error(listed.envelope.error.code);
    expect(listed.structured.invalid).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(listed.structured.changes)).not.toContain(id);
    expect(codeOf(await callTool(small, 'revert_changes', { change_id: id }, signal))).toBe('NOT_FOUND');
    expect(readFileSync(path.join(R, 'x.txt'), 'utf8')).toBe('x\n');
    // The default bound (64 MiB): the same record is a valid change (dry run: nothing written).
    expect(codeOf(await call('revert_changes', { change_id: id, dry_run: true }))).toBe('ok');
    expect(readFileSync(path.join(R, 'x.txt'), 'utf8')).toBe('x\n');
  });
});
