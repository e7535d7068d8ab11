/**
 * Bad roots end to end (docs/security.md "Roots"): a command-line root that does not exist, is not a directory or
 * cannot be read does not stop `serve` — the server starts, says why on stderr (one line per root), leaves the root
 * out, and list_allowed_directories and path envelopes name it (ROOTS_EMPTY when none is left, with the flag to fix);
 * `call` and `tools` still exit 2. A leading `~/` of a command-line root is the home directory, as a client
 * configuration passes it (no shell). A client's roots/list answer is taken entry by entry: a valid `file://` entry
 * applies, plain paths are listed as rejected, and an answer with no valid entry gives no roots, never the
 * working-directory default. Modern-era clients probe in place (one server start per connect, test/helpers/server.ts).
 */
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { envelopeOf, expectCode } from '../helpers/protocol-asserts.js';
import { CLI, connect, ERAS, NATIVE_ARGS, type CallResult } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

/** HOME: a home directory holding `proj` (the `~/proj` of a client configuration) and a file `notes.txt`. */
const H = makeTree(
  { proj: { 'a.txt': 'in proj\n' }, 'notes.txt': 'a file\n', other: { 'b.txt': 'other\n' } },
  'fs-tools-home-',
);
const proj = path.join(H.dir, 'proj');
const missing = path.join(H.dir, 'no-such-dir');
const notDir = path.join(H.dir, 'notes.txt');
const stateDir = path.join(H.dir, 'state');
afterAll(() => H.cleanup());

const env = { HOME: H.dir };
let version: string | undefined;
/** `fs-tools --version` (it names the kernel wall this machine gives), run once for the file. */
const versionLines = (): string =>
  (version ??= spawnSync(process.execPath, [CLI, '--version'], { encoding: 'utf8' }).stdout);
const stderrLinesAbout = (stderr: string, what: string) => stderr.split('\n').filter((l) => l.includes(what));

describe.each(ERAS)('serve with bad command-line roots, as a client configuration starts it (%s era)', (era) => {
  it('starts, says why per root on stderr, serves `~/proj`, and names the rejected roots', async () => {
    // Claude Code, Codex, Gemini CLI and VS Code spawn the command with these arguments and no shell.
    const client = await connect(era, {
      args: ['--state-dir', stateDir, '~/proj', missing, '~/notes.txt'],
      env,
      cwd: H.dir,
    });
    try {
      expect((await client.callOk('read_file', { path: 'a.txt' })).content).toBe('in proj\n');
      const list = await client.callOk('list_allowed_directories', {});
      expect(list.roots).toEqual([{ path: proj, given: proj, source: 'cli' }]);
      expect(list.rejected_roots).toEqual([
        { root: missing, source: 'cli', reason: 'missing' },
        { root: notDir, source: 'cli', reason: 'not_a_directory' },
      ]);
      const text = (await client.call('list_allowed_directories', {})).content[0].text!;
      expect(text).toContain(`Command-line root left out: ${missing} does not exist`);
      expect(text).toContain(`Command-line root left out: ${notDir} is not a directory`);
      // A path outside the roots: the envelope names the roots left out and why.
      const outside = expectCode(
        await client.call('read_file', { path: path.join(H.dir, 'other', 'b.txt') }),
        'NOT_ALLOWED',
      ).error;
      expect(outside.details).toMatchObject({
        roots: [proj],
        rejected_roots: [
          { root: missing, source: 'cli', reason: 'missing' },
          { root: notDir, source: 'cli', reason: 'not_a_directory' },
        ],
      });
      expect(outside.suggestion).toMatch(/rejected_roots/);
      const lines = stderrLinesAbout(client.stderr(), 'root left out');
      expect(lines).toEqual([
        `fs-tools: root left out: ${missing} does not exist (fix the ROOT arguments in the MCP configuration)`,
        `fs-tools: root left out: ${notDir} is not a directory (fix the ROOT arguments in the MCP configuration)`,
      ]);
    } finally {
      await client.close();
    }
  });

  it('every root rejected: ROOTS_EMPTY names them and the fix, never the working-directory default; the wall stays up', async () => {
    // The working directory would be a default root (it is neither / nor HOME): it must not become one.
    const client = await connect(era, {
      args: ['--state-dir', stateDir, '~/typo', missing],
      env,
      cwd: proj,
    });
    try {
      const empty = expectCode(await client.call('read_file', { path: 'a.txt' }), 'ROOTS_EMPTY').error;
      expect(empty.message).toContain(path.join(H.dir, 'typo'));
      expect(empty.message).toContain(missing);
      expect(empty.suggestion).toMatch(/ROOT arguments .* MCP configuration/);
      expect(empty.details.rejected_roots).toEqual([
        { root: path.join(H.dir, 'typo'), source: 'cli', reason: 'missing' },
        { root: missing, source: 'cli', reason: 'missing' },
      ]);
      expectCode(await client.call('read_file', { path: path.join(proj, 'a.txt') }), 'ROOTS_EMPTY');
      const list = await client.callOk('list_allowed_directories', {});
      expect(list.roots).toEqual([]);
      expect(list.command_line_roots).toEqual([]);
      expect(list.rule).toBe('command_line');
      // Fail closed in the kernel too: where the kernel has Landlock, the wall is raised with no root in it.
      if (/kernel wall: landlock/.test(versionLines())) expect(list.kernel_wall).toMatchObject({ enforced: true });
      else expect(list.kernel_wall.reason).not.toMatch(/no command-line roots/);
      expect(stderrLinesAbout(client.stderr(), 'no command-line root is left')).toHaveLength(1);
      expect(client.stderr()).not.toContain('waiting for client roots');
    } finally {
      await client.close();
    }
  });
});

describe('bad roots in the one-shot modes', () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, [CLI, '--state-dir', stateDir, ...args, ...NATIVE_ARGS], {
      encoding: 'utf8',
      cwd: H.dir,
      env: { ...process.env, ...env },
      timeout: 20_000,
    });

  it('`call` exits 2 with the reason, and runs nothing', () => {
    const r = run(['--root', missing, 'call', 'write_file', JSON.stringify({ path: 'x.txt', content: 'x' })]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toBe(`fs-tools: root does not exist: ${missing}`);
  });

  it('`call` with `~/proj` reads inside the home directory', () => {
    const r = run(['--root', '~/proj', 'call', 'read_file', '{"path":"a.txt"}']);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).content).toBe('in proj\n');
  });

  it('`batch` exits 2 before reading a request', () => {
    const r = spawnSync(process.execPath, [CLI, '--state-dir', stateDir, missing, 'batch', ...NATIVE_ARGS], {
      encoding: 'utf8',
      cwd: H.dir,
      env: { ...process.env, ...env },
      input: '{"tool":"write_file","arguments":{"path":"x.txt","content":"x"}}\n',
      timeout: 20_000,
    });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toBe(`fs-tools: root does not exist: ${missing}`);
  });

  it('`tools` with a file as root exits 2', () => {
    const r = run(['--root', notDir, 'tools']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`root is not a directory: ${notDir}`);
  });
});

describe('an unreadable root', () => {
  const NOBODY = 65534;
  const asRoot = process.getuid?.() === 0;
  const T = makeTree({ open: { 'a.txt': 'open\n' }, locked: { 's.txt': 'locked\n' } }, 'fs-tools-unreadable-');
  chmodSync(T.dir, 0o755);
  chmodSync(path.join(T.dir, 'open'), 0o755);
  chmodSync(path.join(T.dir, 'open', 'a.txt'), 0o644);
  // Root-owned 0700 is unreadable to nobody; running as another user, mode 000 is unreadable to it.
  chmodSync(path.join(T.dir, 'locked'), asRoot ? 0o700 : 0o000);
  const state = path.join(T.dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  if (asRoot) chownSync(state, NOBODY, NOBODY);
  afterAll(() => {
    chmodSync(path.join(T.dir, 'locked'), 0o700);
    T.cleanup();
  });

  it('is left out with reason unreadable (the server runs as a user who may not list it)', async () => {
    const locked = path.join(T.dir, 'locked');
    const client = await connect('modern', {
      ...(asRoot ? { command: 'setpriv' } : {}),
      args: [
        ...(asRoot ? ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI, ...NATIVE_ARGS] : []),
        '--state-dir',
        state,
        path.join(T.dir, 'open'),
        locked,
      ],
    });
    try {
      expect((await client.callOk('read_file', { path: 'a.txt' })).content).toBe('open\n');
      const list = await client.callOk('list_allowed_directories', {});
      expect(list.rejected_roots).toEqual([{ root: locked, source: 'cli', reason: 'unreadable' }]);
      expect(client.stderr()).toContain(`root left out: ${locked} cannot be read (permission denied)`);
    } finally {
      await client.close();
    }
  });
});

/**
 * A 2025-era client whose roots/list handler answers `answer` as is (no schema on our side of the test either); a
 * function is called for the answer (it may throw, or never settle).
 */
async function looseClient(answer: unknown, args: string[], cwd: string) {
  const transport = new LegacyTransport({
    command: process.execPath,
    args: [CLI, '--state-dir', stateDir, ...args, ...NATIVE_ARGS],
    cwd,
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const client = new LegacyClient({ name: 'loose-roots', version: '1.0.0' }, { capabilities: { roots: {} } });
  client.setRequestHandler(
    ListRootsRequestSchema,
    async () => (typeof answer === 'function' ? answer() : answer) as { roots: Array<{ uri: string }> },
  );
  await client.connect(transport);
  const call = async (name: string, a: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: a })) as CallResult;
  return { call, stderr: () => stderr, close: () => client.close(), pid: () => transport.pid };
}

describe('a client roots/list answer taken entry by entry (2025 era)', () => {
  const W = makeTree({ 'top.txt': 'top\n', sub: { 'in.txt': 'in sub\n' }, other: { 'o.txt': 'o\n' } }, 'fs-tools-ws-');
  const sub = path.join(W.dir, 'sub');
  afterAll(() => W.cleanup());

  it('one file:// URI and two plain paths, no command-line root: only the valid entry applies', async () => {
    const answer = {
      roots: [{ uri: pathToFileURL(sub).href }, { uri: path.join(W.dir, 'other') }, { uri: 'top.txt' }],
    };
    const c = await looseClient(answer, [], W.dir);
    try {
      const inside = await c.call('read_file', { path: path.join(sub, 'in.txt') });
      expect(inside.isError).toBeFalsy();
      expect(inside.structuredContent?.content).toBe('in sub\n');
      // Outside the valid entry, inside the working directory (the wider default it must not fall back to).
      expectCode(await c.call('read_file', { path: path.join(W.dir, 'top.txt') }), 'NOT_ALLOWED');
      expectCode(await c.call('read_file', { path: path.join(W.dir, 'other', 'o.txt') }), 'NOT_ALLOWED');
      const list = (await c.call('list_allowed_directories', {})).structuredContent as Record<string, any>;
      expect(list.rule).toBe('client_replaces_default');
      expect(list.roots).toEqual([{ path: sub, given: sub, source: 'client' }]);
      expect(list.client_roots).toEqual([
        { path: sub, usable: true },
        { path: path.join(W.dir, 'other'), usable: false, reason: 'not_a_file_uri' },
        { path: 'top.txt', usable: false, reason: 'not_a_file_uri' },
      ]);
      expect(list.rejected_roots).toEqual([
        { root: path.join(W.dir, 'other'), source: 'client', reason: 'not_a_file_uri' },
        { root: 'top.txt', source: 'client', reason: 'not_a_file_uri' },
      ]);
      expect(c.stderr()).not.toContain('roots/list failed');
    } finally {
      await c.close();
    }
  });

  it('a non-empty answer with no valid entry gives no roots (ROOTS_EMPTY naming them), never the default', async () => {
    const answer = { roots: [{ uri: W.dir }, { uri: 'https://example.invalid/repo' }, 'not-an-object'] };
    const c = await looseClient(answer, [], W.dir);
    try {
      const empty = expectCode(await c.call('read_file', { path: 'top.txt' }), 'ROOTS_EMPTY').error;
      expect(empty.message).toContain(W.dir);
      expect(empty.details.rejected_roots).toEqual([
        { root: W.dir, source: 'client', reason: 'not_a_file_uri' },
        { root: 'https://example.invalid/repo', source: 'client', reason: 'not_a_file_uri' },
        { root: 'not-an-object', source: 'client', reason: 'malformed' },
      ]);
      expect(empty.suggestion).toMatch(/file:\/\/ URIs/);
    } finally {
      await c.close();
    }
  });

  it('an answer that is not a roots list at all is one malformed entry: no roots', async () => {
    const c = await looseClient({ roots: 'oops' }, [W.dir], W.dir);
    try {
      const empty = envelopeOf(await c.call('stat', { path: 'top.txt' })).error;
      expect(empty.code).toBe('ROOTS_EMPTY');
      expect(empty.details.rejected_roots).toEqual([
        { root: '{"roots":"oops"}', source: 'client', reason: 'malformed' },
      ]);
    } finally {
      await c.close();
    }
  });

  it('narrowing with a command-line root: the valid entry narrows, a file:// entry naming a file is rejected', async () => {
    writeFileSync(path.join(W.dir, 'file-root'), 'x');
    const answer = {
      roots: [{ uri: pathToFileURL(sub).href }, { uri: pathToFileURL(path.join(W.dir, 'file-root')).href }],
    };
    const c = await looseClient(answer, [W.dir], W.dir);
    try {
      expect((await c.call('read_file', { path: 'in.txt' })).structuredContent?.content).toBe('in sub\n');
      expectCode(await c.call('read_file', { path: path.join(W.dir, 'top.txt') }), 'NOT_ALLOWED');
      const list = (await c.call('list_allowed_directories', {})).structuredContent as Record<string, any>;
      expect(list.rule).toBe('narrowed_by_client');
      expect(list.rejected_roots).toEqual([
        { root: path.join(W.dir, 'file-root'), source: 'client', reason: 'not_a_directory' },
      ]);
    } finally {
      await c.close();
    }
  });
});

describe('roots/list and a client that leaves', () => {
  /** Waits (at most 5 s) until the process `pid` is gone. */
  async function exited(pid: number | null): Promise<void> {
    for (let i = 0; pid !== null && i < 100; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('a client that disconnects before answering roots/list: nothing on stderr reads like a failure', async () => {
    const c = await looseClient(() => new Promise(() => undefined), [H.dir], H.dir);
    await new Promise((r) => setTimeout(r, 300)); // the server has asked by now
    const pid = c.pid();
    await c.close();
    await exited(pid);
    expect(c.stderr()).not.toMatch(/roots\/list failed|Connection closed/);
  });

  it('a client that answers roots/list with an error is still reported, and the roots stay', async () => {
    const c = await looseClient(
      () => {
        throw new Error('no roots here');
      },
      [H.dir],
      H.dir,
    );
    try {
      expect((await c.call('read_file', { path: 'notes.txt' })).structuredContent?.content).toBe('a file\n');
      expect(c.stderr()).toMatch(/fs-tools: roots\/list failed: .*no roots here/);
    } finally {
      await c.close();
    }
  });
});
