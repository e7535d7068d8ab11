/**
 * SPEC §3.3, the order of checks, for the mutating file tools: each call fails two checks at once and the earlier one
 * must decide the code; the trees (root and outside) are snapshotted before and compared after, so every rejection is
 * also shown to have no side effect. Pins, against the real server of both eras unless noted:
 *  - 2 before 3: a readonly mutation with bad arguments is VALIDATION (a Codex patch: BEGIN_PATCH);
 *  - 3: READONLY before BUDGET_EXCEEDED (in-process: no real process can have both, since --readonly lets no mutation
 *    spend the budget); READONLY before NOT_ALLOWED / NOT_FOUND / HASH_REQUIRED; READONLY and BUDGET_EXCEEDED also
 *    for dry runs of a readonly process, but a dry run never hits the budget;
 *  - 3 before 4/5: BUDGET_EXCEEDED before ROOTS_EMPTY (2025 era: the client's roots change to none) and NOT_ALLOWED;
 *  - 5 before 6, 6 before 7: NOT_ALLOWED before SECRET_DENIED; SECRET_DENIED / FILE_POLICY_DENIED before NOT_FOUND;
 *  - 7 before 9: NOT_FOUND and wrong kind before HASH_REQUIRED (the move source missing, a directory or FIFO target);
 *  - 9 before 10: HASH_REQUIRED before PATCH_FAILED (a non-matching old_text on an unread file); OCC_MISMATCH before
 *    PATCH_FAILED and before REWRITE_BLOCKED; a dry run goes through the same checks.
 */
import { chmodSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { callTool } from '../../src/server/call-tool.js';
import { createProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { expectCode } from '../helpers/protocol-asserts.js';
import { CLI, connect, ERAS, type CallResult, type Era, type TestClient } from '../helpers/server.js';
import { contentHash, snapshotTree } from '../helpers/snapshot.js';
import { makeTree, symlink, type TreeSpec } from '../helpers/tree.js';

const TEN = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
const CODEX_PATCH = '*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+beta\n*** End Patch\n';

/** The fixture: R (the root) and O (outside it). */
function fixture(): { R: string; O: string; cleanup: () => void } {
  const O = makeTree({ 'o.txt': 'outside\n', '.env': 'OUTSIDE_TOKEN=1\n' }, 'fs-tools-order-out-');
  const spec: TreeSpec = {
    'a.txt': 'alpha\n',
    'ten.txt': TEN,
    '.env': 'TOKEN=inside\n',
    dir: { 'x.txt': 'x\n' },
    '.git': { hooks: { 'pre-commit': '#!/bin/sh\n' } },
    'out-link': symlink(path.join(O.dir, 'o.txt')),
  };
  const R = makeTree(spec, 'fs-tools-order-root-');
  execFileSync('mkfifo', [path.join(R.dir, 'pipe')]);
  chmodSync(path.join(R.dir, '.git/hooks/pre-commit'), 0o755);
  return {
    R: R.dir,
    O: O.dir,
    cleanup: () => {
      R.cleanup();
      O.cleanup();
    },
  };
}

/** Starts a server of `era` over a fresh fixture. */
function useServer(era: Era, flags: string[]) {
  let f: ReturnType<typeof fixture>;
  let state: ReturnType<typeof makeTree>;
  let client: TestClient;
  beforeAll(async () => {
    f = fixture();
    state = makeTree({}, 'fs-tools-state-');
    client = await connect(era, { args: ['--state-dir', state.dir, ...flags, f.R] });
  });
  afterAll(async () => {
    const stderr = client?.stderr() ?? '';
    await client?.close();
    f?.cleanup();
    state?.cleanup();
    expect(stderr).not.toMatch(/INTERNAL|incident/);
  });
  return {
    get R() {
      return f.R;
    },
    get O() {
      return f.O;
    },
    get client() {
      return client;
    },
    /** Calls and expects `code`, with R and O unchanged. */
    async refuses(code: string, tool: string, args: Record<string, unknown>) {
      const before = [snapshotTree(f.R, { withMtime: true }), snapshotTree(f.O, { withMtime: true })];
      const e = expectCode(await client.call(tool, args), code);
      expect([snapshotTree(f.R, { withMtime: true }), snapshotTree(f.O, { withMtime: true })]).toEqual(before);
      return e;
    },
  };
}

describe.each(ERAS)('mutating tools, order of checks (%s era)', (era) => {
  describe('default server (--auto-occ=block)', () => {
    const s = useServer(era, []);

    it('2 before 5: bad arguments on an outside path are VALIDATION', async () => {
      const e = await s.refuses('VALIDATION', 'write_file', {
        path: path.join(s.O, 'o.txt'),
        content: 'x',
        file_path: 'y',
      });
      expect(e.error.details.reason).toBe('unknown_parameter');
      await s.refuses('VALIDATION', 'edit_file', {
        path: path.join(s.O, 'o.txt'),
        edits: [{ old_text: '', new_text: 'x' }],
      });
      await s.refuses('VALIDATION', 'move_path', { source: path.join(s.O, 'o.txt') });
    });

    it('5 before 6: NOT_ALLOWED before SECRET_DENIED (an outside .env)', async () => {
      await s.refuses('NOT_ALLOWED', 'write_file', { path: path.join(s.O, '.env'), content: 'x' });
      await s.refuses('NOT_ALLOWED', 'delete_path', { path: path.join(s.O, '.env') });
    });

    it('5 before 7: NOT_ALLOWED before NOT_FOUND (a missing outside file)', async () => {
      await s.refuses('NOT_ALLOWED', 'edit_file', {
        path: path.join(s.O, 'missing.txt'),
        edits: [{ old_text: 'a', new_text: 'b' }],
      });
      await s.refuses('NOT_ALLOWED', 'move_path', {
        source: path.join(s.O, 'missing.txt'),
        destination: path.join(s.R, 'in.txt'),
      });
    });

    // The order holds across the whole call, not per argument: move_path's missing source (step 7) must not hide an
    // outside, secret or .git destination (steps 5–6).
    it('5, 6 before 7 across arguments: a missing move source does not hide a refused destination', async () => {
      await s.refuses('NOT_ALLOWED', 'move_path', {
        source: path.join(s.R, 'missing.txt'),
        destination: path.join(s.O, 'x.txt'),
      });
      await s.refuses('SECRET_DENIED', 'move_path', {
        source: path.join(s.R, 'missing.txt'),
        destination: path.join(s.R, '.env.local'),
      });
      await s.refuses('FILE_POLICY_DENIED', 'move_path', {
        source: path.join(s.R, 'missing.txt'),
        destination: path.join(s.R, '.git', 'hooks', 'post-merge'),
      });
    });

    it('6 before 7: SECRET_DENIED and FILE_POLICY_DENIED before NOT_FOUND', async () => {
      await s.refuses('SECRET_DENIED', 'edit_file', {
        path: path.join(s.R, 'missing', '.env'),
        edits: [{ old_text: 'a', new_text: 'b' }],
      });
      await s.refuses('FILE_POLICY_DENIED', 'delete_path', { path: path.join(s.R, '.git', 'hooks', 'missing') });
    });

    it('6 before 9: SECRET_DENIED and FILE_POLICY_DENIED before HASH_REQUIRED (existing, unread)', async () => {
      await s.refuses('SECRET_DENIED', 'write_file', { path: path.join(s.R, '.env'), content: 'TOKEN=x\n' });
      await s.refuses('FILE_POLICY_DENIED', 'write_file', {
        path: path.join(s.R, '.git', 'hooks', 'pre-commit'),
        content: 'x\n',
      });
    });

    it('7 before 9: NOT_FOUND and wrong kind before HASH_REQUIRED', async () => {
      // The destination exists and is unread (HASH_REQUIRED with overwrite), but the source is missing.
      await s.refuses('NOT_FOUND', 'move_path', {
        source: path.join(s.R, 'missing.txt'),
        destination: path.join(s.R, 'a.txt'),
        overwrite: true,
      });
      await s.refuses('NOT_FOUND', 'delete_path', { path: path.join(s.R, 'missing.txt') });
      await s.refuses('NOT_FOUND', 'edit_file', {
        path: path.join(s.R, 'missing.txt'),
        edits: [{ old_text: 'a', new_text: 'b' }],
      });
      // An existing, unread directory or FIFO: the kind decides.
      const dir = await s.refuses('VALIDATION', 'write_file', { path: path.join(s.R, 'dir'), content: 'x\n' });
      expect(dir.error.details.reason).toBe('is_directory');
      await s.refuses('VALIDATION', 'edit_file', {
        path: path.join(s.R, 'dir'),
        edits: [{ old_text: 'a', new_text: 'b' }],
      });
      await s.refuses('FILE_POLICY_DENIED', 'write_file', { path: path.join(s.R, 'pipe'), content: 'x\n' });
      await s.refuses('VALIDATION', 'create_directory', { path: path.join(s.R, 'a.txt') });
    });

    it('9 before 10: HASH_REQUIRED before PATCH_FAILED (non-matching old_text on an unread file)', async () => {
      const e = await s.refuses('HASH_REQUIRED', 'edit_file', {
        path: path.join(s.R, 'a.txt'),
        edits: [{ old_text: 'no such text', new_text: 'b' }],
      });
      expect(e.error.details.current_hash).toBe(contentHash('alpha\n'));
      // also for a would-be rewrite, and for a dry run
      await s.refuses('HASH_REQUIRED', 'edit_file', {
        path: path.join(s.R, 'ten.txt'),
        edits: [{ old_text: TEN, new_text: 'x\n' }],
      });
      await s.refuses('HASH_REQUIRED', 'edit_file', {
        path: path.join(s.R, 'a.txt'),
        edits: [{ old_text: 'no such text', new_text: 'b' }],
        dry_run: true,
      });
    });

    it('9 before 10: OCC_MISMATCH before PATCH_FAILED and before REWRITE_BLOCKED', async () => {
      const stale = contentHash('stale\n');
      await s.refuses('OCC_MISMATCH', 'edit_file', {
        path: path.join(s.R, 'a.txt'),
        edits: [{ old_text: 'no such text', new_text: 'b' }],
        expected_hash: stale,
      });
      const e = await s.refuses('OCC_MISMATCH', 'edit_file', {
        path: path.join(s.R, 'ten.txt'),
        edits: [{ old_text: TEN, new_text: 'rewritten\n' }],
        expected_hash: stale,
      });
      expect(e.error.current_hash).toBe(contentHash(TEN));
      await s.refuses('OCC_MISMATCH', 'edit_file', {
        path: path.join(s.R, 'ten.txt'),
        edits: [{ old_text: TEN, new_text: 'rewritten\n' }],
        expected_hash: stale,
        dry_run: true,
      });
      // With the right hash, the operation itself decides.
      await s.refuses('REWRITE_BLOCKED', 'edit_file', {
        path: path.join(s.R, 'ten.txt'),
        edits: [{ old_text: TEN, new_text: 'rewritten\n' }],
        expected_hash: contentHash(TEN),
      });
    });
  });

  describe('--readonly', () => {
    const s = useServer(era, ['--readonly']);

    it('2 before 3: bad arguments are VALIDATION, not READONLY', async () => {
      await s.refuses('VALIDATION', 'write_file', { path: path.join(s.R, 'a.txt'), content: 42 });
      await s.refuses('VALIDATION', 'write_file', { path: path.join(s.O, 'o.txt') });
      await s.refuses('VALIDATION', 'edit_file', {
        path: path.join(s.R, 'a.txt'),
        edits: [{ old_text: '', new_text: 'x' }],
      });
      await s.refuses('VALIDATION', 'move_path', {
        source: path.join(s.R, 'a.txt'),
        destination: path.join(s.R, 'b.txt'),
        overwrite: 'yes',
      });
      await s.refuses('VALIDATION', 'delete_path', { path: path.join(s.R, 'dir'), recursiv: true });
      await s.refuses('VALIDATION', 'create_directory', {});
      const e = await s.refuses('BEGIN_PATCH', 'apply_patch', { patch: CODEX_PATCH });
      expect(e.error.retryable).toBe(false);
    });

    it('3 before 5, 6, 7, 9: READONLY first', async () => {
      await s.refuses('READONLY', 'write_file', { path: path.join(s.O, 'o.txt'), content: 'x' });
      await s.refuses('READONLY', 'write_file', { path: path.join(s.R, '.env'), content: 'x' });
      await s.refuses('READONLY', 'delete_path', { path: path.join(s.R, 'missing.txt') });
      await s.refuses('READONLY', 'write_file', { path: path.join(s.R, 'a.txt'), content: 'x' });
      await s.refuses('READONLY', 'write_file', { path: path.join(s.R, 'a.txt'), content: 'x', dry_run: true });
    });
  });

  describe('--mutation-budget=1, spent', () => {
    const s = useServer(era, ['--mutation-budget=1']);
    beforeAll(async () => {
      await s.client.callOk('write_file', { path: path.join(s.R, 'spent.txt'), content: 'the one mutation\n' });
    });

    // Regression: write_file's "exactly one of content or content_base64" and its base64 check ran in the handler,
    // after the gates, so a call without content was BUDGET_EXCEEDED (or READONLY) instead of VALIDATION.
    it('2 before 3: bad arguments are VALIDATION, not BUDGET_EXCEEDED', async () => {
      await s.refuses('VALIDATION', 'write_file', { path: path.join(s.R, 'a.txt') });
      await s.refuses('VALIDATION', 'write_file', {
        path: path.join(s.R, 'a.txt'),
        content: 'x',
        content_base64: 'eA==',
      });
      await s.refuses('VALIDATION', 'write_file', { path: path.join(s.R, 'a.txt'), content_base64: 'not base64!' });
      await s.refuses('VALIDATION', 'edit_file', { path: path.join(s.R, 'a.txt'), edits: [] });
    });

    it('3 before 5, 6, 7, 9: BUDGET_EXCEEDED first', async () => {
      await s.refuses('BUDGET_EXCEEDED', 'write_file', { path: path.join(s.O, 'o.txt'), content: 'x' });
      await s.refuses('BUDGET_EXCEEDED', 'write_file', { path: path.join(s.O, 'missing', 'new.txt'), content: 'x' });
      await s.refuses('BUDGET_EXCEEDED', 'write_file', { path: path.join(s.R, '.env'), content: 'x' });
      await s.refuses('BUDGET_EXCEEDED', 'delete_path', { path: path.join(s.R, 'missing.txt') });
      await s.refuses('BUDGET_EXCEEDED', 'edit_file', {
        path: path.join(s.R, 'a.txt'),
        edits: [{ old_text: 'nope', new_text: 'x' }],
      });
    });

    it('a dry run is not stopped by the spent budget, and goes through the later checks', async () => {
      await s.refuses('NOT_ALLOWED', 'write_file', { path: path.join(s.O, 'o.txt'), content: 'x', dry_run: true });
      await s.refuses('HASH_REQUIRED', 'write_file', { path: path.join(s.R, 'a.txt'), content: 'x', dry_run: true });
    });
  });
});

describe('READONLY before BUDGET_EXCEEDED (in-process)', () => {
  // No real process can fail both gates: under --readonly no mutation can spend the budget. So the budget is spent by
  // a real write first, then the same process state is switched to read-only, and callTool (the path the stdio server
  // and `fs-tools call` share) must answer READONLY.
  it('READONLY wins', async () => {
    const f = fixture();
    const st = makeTree({}, 'fs-tools-state-');
    try {
      const config = parseConfig(['--state-dir', st.dir, '--mutation-budget=1', f.R], {
        cwd: f.R,
        home: '/nonexistent-home',
        toolNames: TOOL_NAMES,
      });
      const state = createProcessState(config, TOOLS, 'test');
      const signal = new AbortController().signal;
      const first = await callTool(state, 'write_file', { path: path.join(f.R, 'spent.txt'), content: 'x\n' }, signal);
      expect(first.ok).toBe(true);
      const spent = await callTool(state, 'write_file', { path: path.join(f.R, 'b.txt'), content: 'x\n' }, signal);
      expect(spent.ok ? 'ok' : spent.envelope.error.code).toBe('BUDGET_EXCEEDED');
      state.config = { ...state.config, readonly: true };
      const before = snapshotTree(f.R, { withMtime: true });
      for (const [tool, args] of [
        ['write_file', { path: path.join(f.R, 'b.txt'), content: 'x\n' }],
        ['create_directory', { path: path.join(f.R, 'newdir') }],
        ['delete_path', { path: path.join(f.R, 'a.txt') }],
      ] as const) {
        const outcome = await callTool(state, tool, args, signal);
        expect(outcome.ok ? 'ok' : outcome.envelope.error.code, tool).toBe('READONLY');
      }
      expect(snapshotTree(f.R, { withMtime: true })).toEqual(before);
    } finally {
      f.cleanup();
      st.cleanup();
    }
  });
});

describe('BUDGET_EXCEEDED before ROOTS_EMPTY (2025 era: the client narrows its roots to none)', () => {
  it('a spent budget is reported before the missing roots', async () => {
    const f = fixture();
    const st = makeTree({}, 'fs-tools-state-');
    let roots = [pathToFileURL(f.R).href];
    const transport = new LegacyTransport({
      command: process.execPath,
      args: [CLI, '--state-dir', st.dir, '--mutation-budget=1', f.R],
      stderr: 'pipe',
    });
    const client = new LegacyClient(
      { name: 'order-roots', version: '1.0.0' },
      { capabilities: { roots: { listChanged: true } } },
    );
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: roots.map((uri) => ({ uri })) }));
    const call = async (name: string, args: Record<string, unknown>) =>
      (await client.callTool({ name, arguments: args })) as CallResult;
    try {
      await client.connect(transport);
      expect((await call('write_file', { path: path.join(f.R, 'spent.txt'), content: 'x\n' })).isError).toBeFalsy();
      roots = [];
      await client.sendRootsListChanged();
      // The server re-reads roots asynchronously; a read call shows when the empty set is in force.
      let code = '';
      for (let i = 0; i < 50 && code !== 'ROOTS_EMPTY'; i++) {
        const r = await call('read_file', { path: path.join(f.R, 'a.txt') });
        code = r.isError ? JSON.parse(r.content[0].text!).error.code : 'ok';
        if (code !== 'ROOTS_EMPTY') await new Promise((res) => setTimeout(res, 50));
      }
      expect(code).toBe('ROOTS_EMPTY');
      const before = [snapshotTree(f.R, { withMtime: true }), snapshotTree(f.O, { withMtime: true })];
      expectCode(await call('write_file', { path: path.join(f.R, 'a.txt'), content: 'x\n' }), 'BUDGET_EXCEEDED');
      expectCode(await call('create_directory', { path: path.join(f.R, 'newdir') }), 'BUDGET_EXCEEDED');
      // Below the gates, ROOTS_EMPTY decides before any path check (a dry run skips the budget).
      expectCode(
        await call('write_file', { path: path.join(f.O, 'o.txt'), content: 'x\n', dry_run: true }),
        'ROOTS_EMPTY',
      );
      expectCode(await call('write_file', { path: 'a.txt', content: 42 }), 'VALIDATION');
      expect([snapshotTree(f.R, { withMtime: true }), snapshotTree(f.O, { withMtime: true })]).toEqual(before);
    } finally {
      await client.close();
      f.cleanup();
      st.cleanup();
    }
  });

  it('with the budget available, ROOTS_EMPTY comes before NOT_ALLOWED and SECRET_DENIED', async () => {
    const f = fixture();
    const st = makeTree({}, 'fs-tools-state-');
    const transport = new LegacyTransport({
      command: process.execPath,
      args: [CLI, '--state-dir', st.dir, f.R],
      stderr: 'pipe',
    });
    const client = new LegacyClient(
      { name: 'order-roots', version: '1.0.0' },
      { capabilities: { roots: { listChanged: true } } },
    );
    // A client root that does not overlap the CLI root narrows to nothing. (An initial empty list no longer does:
    // issue #15, SPEC §4.1 as updated — the client has no roots to offer and the CLI roots stay.)
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: pathToFileURL(f.O).href }] }));
    const call = async (name: string, args: Record<string, unknown>) =>
      (await client.callTool({ name, arguments: args })) as CallResult;
    try {
      await client.connect(transport);
      const before = [snapshotTree(f.R, { withMtime: true }), snapshotTree(f.O, { withMtime: true })];
      expectCode(await call('write_file', { path: path.join(f.O, 'o.txt'), content: 'x\n' }), 'ROOTS_EMPTY');
      expectCode(await call('write_file', { path: path.join(f.R, '.env'), content: 'x\n' }), 'ROOTS_EMPTY');
      expectCode(await call('delete_path', { path: path.join(f.R, 'missing') }), 'ROOTS_EMPTY');
      expect([snapshotTree(f.R, { withMtime: true }), snapshotTree(f.O, { withMtime: true })]).toEqual(before);
    } finally {
      await client.close();
      f.cleanup();
      st.cleanup();
    }
  });
});
