/**
 * Continuation cursors cannot be minted (docs/security.md "Finding the repository and continuation cursors"), for
 * every tool that issues them: list_directory, search_files, git_diff, github_issues (list, view; the real gh
 * against the local fake GitHub) and gitlab_issues (list; HTTPS against the fake GitLab). Real servers over stdio.
 *
 * - reproduced attack: a cursor minted in the old format (base64 JSON with the sha256 fingerprint of the caller's own
 *   arguments, which anyone can compute) with git_diff `index: -1` gave INTERNAL (`TypeError … reading 'path'`);
 * - from a genuine cursor: a field altered (negative, huge, wrong type, a path with `..`) under the old mac, the
 *   cursor truncated, its mac or process id replaced, a cursor far over the size cap, and a genuine cursor of
 *   another server process: every one is VALIDATION (field cursor, fix_arguments, not retryable) with its reason
 *   (invalid_cursor; stale_cursor for the other process) and a suggestion to start again without cursor — never
 *   INTERNAL — and nothing reaches the forges. The genuine cursor still works afterwards.
 * - defence in depth, in process (callTool, the same cursor key as the test): a cursor with a valid mac whose fields
 *   are out of range (index -1, offset huge, skip -1, a `..` path) is still invalid_cursor, never INTERNAL.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { callTool } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { encodeCursor } from '../../src/tools/cursor.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { FakeGitHub } from '../helpers/fake-github.js';
import { FAKE_GITLAB_TOKEN, FakeGitLab } from '../helpers/fake-gitlab.js';
import { connect, type CallResult, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ root: {}, home: {}, bin: {}, state: {} }, 'fs-tools-cursors-');
const ROOT = path.join(scratch.dir, 'root');
const HOME = path.join(scratch.dir, 'home');
const BIN = path.join(scratch.dir, 'bin');
symlinkSync(execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim(), path.join(BIN, 'git'));

// A tree to list and search, and a work tree with three changed files to diff.
const LIST = path.join(ROOT, 'list');
mkdirSync(LIST);
for (const n of ['a', 'b', 'c', 'd']) writeFileSync(path.join(LIST, `${n}.txt`), 'needle\nneedle\n');
const REPO = path.join(ROOT, 'repo');
mkdirSync(REPO);
const gitEnv = { ...process.env, HOME, GIT_CONFIG_NOSYSTEM: '1' };
const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO, env: gitEnv, encoding: 'utf8' });
git('init', '-q');
for (const n of ['one', 'two', 'three']) writeFileSync(path.join(REPO, `${n}.txt`), `${n}\n`.repeat(50));
git('add', '-A');
git('-c', 'user.name=t', '-c', 'user.email=t@example.org', 'commit', '-qm', 'init');
for (const n of ['one', 'two', 'three']) writeFileSync(path.join(REPO, `${n}.txt`), `${n} changed\n`.repeat(50));

let gh: FakeGitHub;
let gl: FakeGitLab;
let main: TestClient;
let other: TestClient;
let glMain: TestClient;
let glOther: TestClient;

beforeAll(async () => {
  gh = await FakeGitHub.start();
  gl = await FakeGitLab.start();
  const ghEnv = { HOME, XDG_CONFIG_HOME: HOME, ...gh.env() };
  const glEnv = {
    HOME,
    XDG_CONFIG_HOME: HOME,
    PATH: BIN,
    GITLAB_TOKEN: FAKE_GITLAB_TOKEN,
    GITLAB_HOST: gl.url,
    GITLAB_PRIVATE_TOKEN: '',
    CI_JOB_TOKEN: '',
  };
  [main, other, glMain, glOther] = await Promise.all([
    connect('modern', { args: [ROOT], env: ghEnv }),
    connect('modern', { args: [ROOT], env: ghEnv }),
    connect('modern', { args: [ROOT], env: glEnv }),
    connect('modern', { args: [ROOT], env: glEnv }),
  ]);
});
afterAll(async () => {
  await Promise.all([main, other, glMain, glOther].map((c) => c?.close()));
  await gh?.close();
  await gl?.close();
  scratch.cleanup();
});
beforeEach(() => {
  gh.reset();
  gl.reset();
});

/** A paged call: the tool, its first-page arguments, and how to alter one field of its position. */
interface Paged {
  tool: string;
  args: Record<string, unknown>;
  /** The server that serves it, and another process serving the same. */
  servers: () => [TestClient, TestClient];
  /** Altered positions (each must be refused). */
  altered: Array<Record<string, unknown>>;
}

const GH_REPO = { repo: 'octo/hello', hostname: 'github.localhost' };
const PAGED: Paged[] = [
  {
    tool: 'list_directory',
    args: { path: LIST, max_entries: 1 },
    servers: () => [main, other],
    altered: [{ after: '../../etc/passwd' }, { after: '' }, { after: 7 }, { after: 'a.txt', extra: 1 }, {}],
  },
  {
    tool: 'search_files',
    args: { path: LIST, query: 'needle', max_results: 1 },
    servers: () => [main, other],
    altered: [
      { file: 'a.txt', skip: -1 },
      { file: 'a.txt', skip: 1e300 },
      { file: 'a.txt', skip: '1' },
      { file: '/etc/passwd', skip: 0 },
      { after: 'a/../../b' },
    ],
  },
  {
    tool: 'git_diff',
    args: { path: REPO, max_bytes: 200 },
    servers: () => [main, other],
    altered: [
      { index: -1, offset: 0 },
      { index: 2 ** 53, offset: 0 },
      { index: 0, offset: -5 },
      { index: '0', offset: 0 },
      { index: 0.5, offset: 0 },
      { index: 0, offset: 0, status_hash: 'sha256:zz' },
    ],
  },
  {
    tool: 'github_issues',
    args: { action: 'list', ...GH_REPO, limit: 1 },
    servers: () => [main, other],
    altered: [{ page: 0 }, { page: -1 }, { per_page: 1000 }, { skip: 101 }, { page: 'x' }, { page: 1e300 }],
  },
  {
    tool: 'github_issues',
    args: { action: 'view', ...GH_REPO, number: 3, limit: 2 },
    servers: () => [main, other],
    altered: [{ page: 0 }, { per_page: 0 }, { skip: -1 }],
  },
  {
    tool: 'gitlab_issues',
    args: { action: 'list', repo: 'a/b/c', limit: 1 },
    servers: () => [glMain, glOther],
    altered: [{ page: 0 }, { per_page: 101 }, { skip: 1.5 }],
  },
];

/** Decodes a cursor `<id>.<payload>.<mac>` into its parts and payload object. */
function split(cursor: string): { id: string; payload: Record<string, any>; mac: string } {
  const [id, payload, mac] = cursor.split('.');
  return { id, payload: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')), mac };
}
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** The envelope of a refused call: VALIDATION on the cursor, never INTERNAL. */
function expectRefused(r: CallResult, reason?: string): Record<string, any> {
  expect(r.isError, JSON.stringify(r.content)).toBe(true);
  const e = (JSON.parse(r.content[0].text!) as { error: Record<string, any> }).error;
  expect(e.code).toBe('VALIDATION');
  expect(e.retryable).toBe(false);
  expect(e.recovery).toBe('fix_arguments');
  if (reason !== undefined) {
    expect(e.details).toMatchObject({ reason, field: 'cursor' });
    expect(e.suggestion).toMatch(/without cursor/);
  }
  return e;
}

describe.each(
  PAGED.map((p) => [`${p.tool}${typeof p.args.action === 'string' ? ` ${p.args.action}` : ''}`, p] as const),
)('forged cursors: %s', (_name, paged) => {
  /** A genuine first-page cursor from `server`. */
  async function genuine(server: TestClient): Promise<string> {
    const s = await server.callOk(paged.tool, paged.args);
    expect(s.next_cursor, JSON.stringify(s)).toEqual(expect.any(String));
    return s.next_cursor as string;
  }

  it('altered, truncated, re-signed, oversized, minted in the old format, or from another process: VALIDATION, nothing sent', async () => {
    const [server, otherProcess] = paged.servers();
    const cursor = await genuine(server);
    const { id, payload, mac } = split(cursor);
    expect(payload).toMatchObject({ v: 2, q: expect.any(String), p: expect.any(Object) });
    gh.reset();
    gl.reset();
    const refusals: Array<[string, string]> = [];
    // Each field altered (or added, or dropped) under the genuine mac.
    for (const change of paged.altered) {
      const p = Object.keys(change).length === 0 ? {} : { ...payload.p, ...change };
      refusals.push([`${id}.${b64({ ...payload, p })}.${mac}`, 'invalid_cursor']);
    }
    refusals.push(
      [`${id}.${b64({ ...payload, q: 'AAAAAAAAAAAAAAAA' })}.${mac}`, 'invalid_cursor'],
      [`${id}.${b64({ ...payload, v: 1 })}.${mac}`, 'invalid_cursor'],
      [cursor.slice(0, -1), 'invalid_cursor'],
      [cursor.slice(0, Math.floor(cursor.length / 2)), 'invalid_cursor'],
      [`${id}.${split(cursor).mac}`, 'invalid_cursor'],
      [`${id}.${cursor.split('.')[1]}.${'A'.repeat(43)}`, 'invalid_cursor'],
      [`${id}.${cursor.split('.')[1]}.${mac}.${mac}`, 'invalid_cursor'],
      [`${'B'.repeat(id.length)}.${cursor.split('.')[1]}.${mac}`, 'stale_cursor'],
      [`${cursor}==`, 'invalid_cursor'],
      // The old format: base64url JSON {v:1, q, …position}, q = the fingerprint anyone computes from the arguments.
      [b64({ v: 1, q: payload.q, ...payload.p, index: -1, page: -1, after: '../x' }), 'invalid_cursor'],
    );
    for (const [forged, reason] of refusals) {
      const r = await server.call(paged.tool, { ...paged.args, cursor: forged });
      expectRefused(r, reason);
    }
    // A genuine cursor of another server process.
    expectRefused(
      await server.call(paged.tool, { ...paged.args, cursor: await genuine(otherProcess) }),
      'stale_cursor',
    );
    gh.reset();
    gl.reset();
    // Far over any cursor issued (the issue tools' schema caps it at 2000 characters: argument validation, still
    // VALIDATION); and not a string at all.
    expectRefused(await server.call(paged.tool, { ...paged.args, cursor: `${cursor}${'A'.repeat(300 * 1024)}` }));
    expectRefused(await server.call(paged.tool, { ...paged.args, cursor: 12 }));
    expectRefused(await server.call(paged.tool, { ...paged.args, cursor: { index: -1 } }));
    // Nothing reached either forge for any refused cursor.
    expect(gh.requests).toEqual([]);
    expect(gl.requests).toEqual([]);
    // The genuine cursor still works.
    const next = await server.call(paged.tool, { ...paged.args, cursor });
    expect(next.isError, JSON.stringify(next.content)).toBeFalsy();
    expect(server.stderr()).not.toMatch(/INTERNAL|TypeError/);
  }, 60_000);
});

it('reproduced: the minted git_diff cursor with index -1 of the report is VALIDATION, not INTERNAL', async () => {
  // The old fingerprint: sha256 over the caller's own arguments, which the caller can always compute.
  const q = createHash('sha256')
    .update(JSON.stringify(['git_diff', REPO, false, undefined, 3]))
    .digest('base64url')
    .slice(0, 16);
  const status = await main.callOk('git_status', { path: REPO });
  const minted = b64({ v: 1, q, index: -1, offset: 0, status_hash: status.status_hash });
  const r = await main.call('git_diff', { path: REPO, max_bytes: 200, cursor: minted });
  const e = expectRefused(r, 'invalid_cursor');
  expect(e.message).not.toMatch(/TypeError|INTERNAL|incident/);
});

describe('defence in depth: a cursor with a valid mac but fields out of range (in process, same key)', () => {
  let state: ProcessState;
  beforeAll(() => {
    const config = parseConfig(['--state-dir', path.join(scratch.dir, 'state'), ROOT], {
      cwd: ROOT,
      home: HOME,
      toolNames: TOOL_NAMES,
    });
    state = createProcessState(config, TOOLS, 'test');
  });
  const call = (tool: string, args: Record<string, unknown>) =>
    callTool(state, tool, args, new AbortController().signal);

  it.each([
    ['git_diff', { path: REPO, max_bytes: 200 }, [{ index: -1 }, { offset: 2 ** 40 }, { index: 1e9 * 1e9 }]],
    ['list_directory', { path: LIST, max_entries: 1 }, [{ after: '../x' }, { after: 'a//b' }, { after: 'a\0b' }]],
    [
      'search_files',
      { path: LIST, query: 'needle', max_results: 1 },
      [{ skip: -1 }, { file: '' }, { file: 'x/./y' }, { skip: 2 ** 31 }],
    ],
  ] as const)('%s', async (tool, args, changes) => {
    const first = await call(tool, args);
    if (!first.ok) throw new Error(JSON.stringify(first.envelope));
    const cursor = first.structured.next_cursor as string;
    const { payload } = split(cursor);
    for (const change of changes) {
      const signed = encodeCursor(payload.q as string, { ...payload.p, ...change });
      const r = await call(tool, { ...args, cursor: signed });
      if (r.ok) throw new Error(`accepted: ${JSON.stringify(change)}`);
      expect(r.envelope.error).toMatchObject({
        code: 'VALIDATION',
        details: { reason: 'invalid_cursor', field: 'cursor' },
      });
    }
    // Signed in range: accepted (the check is the range, not the signature).
    const ok = await call(tool, {
      ...args,
      cursor: encodeCursor(payload.q as string, payload.p as Record<string, unknown>),
    });
    expect(ok.ok).toBe(true);
  });
});
