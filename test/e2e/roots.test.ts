/**
 * Roots end to end (SPEC §1 roots default, §2 client roots, §4.1): a 2025-era client's roots narrow the command-line
 * roots (default), replace them (`replace`, or when there are no command-line roots), or are ignored (`ignore`); a
 * 2026-07-28 client is not asked, so the command-line roots apply; with no roots at all every path tool is
 * ROOTS_EMPTY while list_allowed_directories still answers. Modern-era clients probe in place (one server start per
 * connect, test/helpers/server.ts); the two cases whose client announces only an outside directory share a server.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { CLI, connect, ERAS, type CallResult, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const uri = (p: string): string => pathToFileURL(p).href;

/** R: the command-line root; O: a directory outside it. */
const R = makeTree(
  { 'top.txt': 'top\n', sub: { 'in.txt': 'in sub\n' }, other: { 'y.txt': 'other\n' } },
  'fs-tools-roots-',
);
const O = makeTree({ 'x.txt': 'outside\n' }, 'fs-tools-client-');
const sub = path.join(R.dir, 'sub');
afterAll(() => {
  R.cleanup();
  O.cleanup();
});

async function rootsOf(client: TestClient): Promise<Array<{ path: string; source: string }>> {
  const r = await client.callOk('list_allowed_directories', {});
  return r.roots.map((x: { path: string; source: string }) => ({ path: x.path, source: x.source }));
}

describe('client roots, 2025 era, --client-roots=narrow (default)', () => {
  it('a client root inside the CLI root narrows to it', async () => {
    const client = await connect('legacy', { args: [R.dir], clientRoots: [uri(sub)] });
    try {
      expect((await client.callOk('read_file', { path: path.join(sub, 'in.txt') })).content).toBe('in sub\n');
      // Relative paths now resolve against the first effective root.
      expect((await client.callOk('read_file', { path: 'in.txt' })).content).toBe('in sub\n');
      expectCode(await client.call('read_file', { path: path.join(R.dir, 'other', 'y.txt') }), 'NOT_ALLOWED');
      expectCode(await client.call('read_file', { path: path.join(R.dir, 'top.txt') }), 'NOT_ALLOWED');
      expectCode(await client.call('list_directory', { path: R.dir }), 'NOT_ALLOWED');
      expect(await rootsOf(client)).toEqual([{ path: sub, source: 'client' }]);
    } finally {
      await client.close();
    }
  });

  it('a client root containing the CLI root keeps the CLI root', async () => {
    const client = await connect('legacy', { args: [sub], clientRoots: [uri(R.dir)] });
    try {
      expect((await client.callOk('read_file', { path: 'in.txt' })).content).toBe('in sub\n');
      expectCode(await client.call('read_file', { path: path.join(R.dir, 'top.txt') }), 'NOT_ALLOWED');
      expect(await rootsOf(client)).toEqual([{ path: sub, source: 'cli' }]);
    } finally {
      await client.close();
    }
  });

  // One server for the two cases whose client announces only O (outside the CLI root), started by the first to run;
  // neither changes the session's roots.
  let outsideOnly: Promise<TestClient> | undefined;
  const narrowedToNothing = () => (outsideOnly ??= connect('legacy', { args: [R.dir], clientRoots: [uri(O.dir)] }));
  afterAll(async () => {
    await (await outsideOnly)?.close();
  });

  it('a client root outside the CLI roots narrows to nothing: ROOTS_EMPTY', async () => {
    const client = await narrowedToNothing();
    expectCode(await client.call('read_file', { path: path.join(R.dir, 'top.txt') }), 'ROOTS_EMPTY');
    expectCode(await client.call('read_file', { path: path.join(O.dir, 'x.txt') }), 'ROOTS_EMPTY');
    expectCode(await client.call('stat', { path: 'top.txt' }), 'ROOTS_EMPTY');
    expect(await rootsOf(client)).toEqual([]);
  });

  it('an INITIAL empty client list leaves the CLI roots in force and says so (MCP Inspector answers [])', async () => {
    // Behaviour changed by issue #15 (SPEC §4.1 as updated): this used to narrow to nothing.
    const client = await connect('legacy', { args: [R.dir], clientRoots: [] });
    try {
      expect((await client.callOk('read_file', { path: 'top.txt' })).content).toBe('top\n');
      const r = await client.call('list_allowed_directories', {});
      const s = r.structuredContent as Record<string, any>;
      expect(s.roots.map((x: { path: string; source: string }) => [x.path, x.source])).toEqual([[R.dir, 'cli']]);
      expect(s.rule).toBe('client_offered_none');
      expect(s.client_roots).toEqual([]);
      expect(s.command_line_roots.map((x: { path: string }) => x.path)).toEqual([R.dir]);
      expect(r.content[0].text).toContain('announced no roots');
      expect(r.content[0].text).toContain('command-line roots stay in force');
    } finally {
      await client.close();
    }
  });

  it('the same under --client-roots=replace: an empty list replaces nothing', async () => {
    const client = await connect('legacy', { args: ['--client-roots=replace', R.dir], clientRoots: [] });
    try {
      expect((await client.callOk('read_file', { path: 'top.txt' })).content).toBe('top\n');
      expect((await client.callOk('list_allowed_directories', {})).rule).toBe('client_offered_none');
    } finally {
      await client.close();
    }
  });

  it('a narrowing to nothing names its cause and the fix', async () => {
    const client = await narrowedToNothing();
    const e = expectCode(await client.call('read_file', { path: 'top.txt' }), 'ROOTS_EMPTY');
    expect(e.error.message).toContain('do not overlap the command-line roots');
    expect(e.error.suggestion).toContain('--client-roots=ignore');
    expect(e.error.suggestion).not.toContain('Start fs-tools with a ROOT');
    expect(e.error.details.rule).toBe('narrowed_by_client');
    // No path of the client's or the CLI's roots is echoed in the envelope.
    expect(JSON.stringify(e)).not.toContain(O.dir);
    const l = await client.callOk('list_allowed_directories', {});
    expect(l.rule).toBe('narrowed_by_client');
    expect(l.client_roots).toEqual([{ path: O.dir, usable: true }]);
  });

  it('with no CLI roots, the client roots replace the working-directory default', async () => {
    const cwd = makeTree({ 'cwd.txt': 'cwd\n' }, 'fs-tools-cwd-');
    const client = await connect('legacy', { args: [], cwd: cwd.dir, clientRoots: [uri(O.dir)] });
    try {
      expect((await client.callOk('read_file', { path: path.join(O.dir, 'x.txt') })).content).toBe('outside\n');
      expect((await client.callOk('read_file', { path: 'x.txt' })).content).toBe('outside\n');
      expectCode(await client.call('read_file', { path: path.join(cwd.dir, 'cwd.txt') }), 'NOT_ALLOWED');
      expect(await rootsOf(client)).toEqual([{ path: O.dir, source: 'client' }]);
    } finally {
      await client.close();
      cwd.cleanup();
    }
  });

  it('with no roots at all (cwd /), the client roots are the roots', async () => {
    const client = await connect('legacy', { args: [], cwd: '/', clientRoots: [uri(O.dir)] });
    try {
      expect((await client.callOk('read_file', { path: 'x.txt' })).content).toBe('outside\n');
      expect(await rootsOf(client)).toEqual([{ path: O.dir, source: 'client' }]);
    } finally {
      await client.close();
    }
  });

  it('drops client roots that do not exist', async () => {
    const client = await connect('legacy', {
      args: [R.dir],
      clientRoots: [uri(path.join(R.dir, 'no-such-dir')), uri(sub)],
    });
    try {
      expect(await rootsOf(client)).toEqual([{ path: sub, source: 'client' }]);
    } finally {
      await client.close();
    }
  });

  it('a roots/list answer with a non-file URI: the file:// entry narrows, the other is listed as rejected', async () => {
    // Before: the SDK's schema rejected the whole answer and the CLI roots stayed. Now each entry is judged alone.
    const client = await connect('legacy', { args: [R.dir], clientRoots: ['https://example.invalid/repo', uri(sub)] });
    try {
      expect(await rootsOf(client)).toEqual([{ path: sub, source: 'client' }]);
      const list = await client.callOk('list_allowed_directories', {});
      expect(list.rejected_roots).toEqual([
        { root: 'https://example.invalid/repo', source: 'client', reason: 'not_a_file_uri' },
      ]);
      expect(client.stderr()).not.toContain('roots/list failed');
    } finally {
      await client.close();
    }
  });
});

describe('client roots, 2025 era, other modes', () => {
  it('--client-roots=replace: the client roots replace the CLI roots', async () => {
    const client = await connect('legacy', { args: ['--client-roots=replace', R.dir], clientRoots: [uri(O.dir)] });
    try {
      expect((await client.callOk('read_file', { path: path.join(O.dir, 'x.txt') })).content).toBe('outside\n');
      expectCode(await client.call('read_file', { path: path.join(R.dir, 'top.txt') }), 'NOT_ALLOWED');
      const r = await client.callOk('list_allowed_directories', {});
      expect(r.roots.map((x: { path: string; source: string }) => [x.path, x.source])).toEqual([[O.dir, 'client']]);
      expect(r.flags.client_roots).toBe('replace');
    } finally {
      await client.close();
    }
  });

  it('--client-roots=ignore: the CLI roots stay', async () => {
    const client = await connect('legacy', { args: ['--client-roots=ignore', R.dir], clientRoots: [uri(O.dir)] });
    try {
      expect((await client.callOk('read_file', { path: path.join(R.dir, 'top.txt') })).content).toBe('top\n');
      expectCode(await client.call('read_file', { path: path.join(O.dir, 'x.txt') }), 'NOT_ALLOWED');
      const r = await client.callOk('list_allowed_directories', {});
      expect(r.roots.map((x: { path: string; source: string }) => [x.path, x.source])).toEqual([[R.dir, 'cli']]);
      expect(r.flags.client_roots).toBe('ignore');
    } finally {
      await client.close();
    }
  });
});

/** Polls an async check (every 50 ms, at most 3 s). */
async function waitForAsync(check: () => Promise<boolean>, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

/** A 2025-era client whose roots/list answers after `delayMs` and whose roots can change. */
async function slowRootsClient(args: string[], roots: () => string[], delayMs: () => number) {
  const transport = new LegacyTransport({ command: process.execPath, args: [CLI, ...args], stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const client = new LegacyClient(
    { name: 'slow-roots', version: '1.0.0' },
    { capabilities: { roots: { listChanged: true } } },
  );
  let asked = 0;
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    asked++;
    await new Promise((r) => setTimeout(r, delayMs()));
    return { roots: roots().map((u) => ({ uri: u })) };
  });
  await client.connect(transport);
  const call = async (name: string, a: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: a })) as CallResult;
  return { client, call, asked: () => asked, stderr: () => stderr };
}

describe('client roots timing, 2025 era', () => {
  it('a path call waits for a pending roots/list (under 2 s) and sees its answer', async () => {
    const s = await slowRootsClient(
      [R.dir],
      () => [uri(sub)],
      () => 600,
    );
    try {
      const r = await s.call('read_file', { path: path.join(R.dir, 'top.txt') });
      expectCode(r, 'NOT_ALLOWED'); // narrowed to sub before the call ran
      expect(s.asked()).toBe(1);
    } finally {
      await s.client.close();
    }
  });

  it('a roots/list slower than 2 s: the call proceeds with the CLI roots, the answer applies later', async () => {
    const s = await slowRootsClient(
      [R.dir],
      () => [uri(sub)],
      () => 3000,
    );
    try {
      const started = Date.now();
      const r = await s.call('read_file', { path: path.join(R.dir, 'top.txt') });
      const waited = Date.now() - started;
      expect(r.isError, r.content[0]?.text).toBeFalsy();
      expect(waited).toBeGreaterThanOrEqual(1500);
      expect(waited).toBeLessThan(2900);
      await new Promise((res) => setTimeout(res, 1500));
      expectCode(await s.call('read_file', { path: path.join(R.dir, 'top.txt') }), 'NOT_ALLOWED');
    } finally {
      await s.client.close();
    }
  });

  it('roots/list_changed re-reads the roots', async () => {
    let current = [uri(sub)];
    const s = await slowRootsClient(
      [R.dir],
      () => current,
      () => 0,
    );
    try {
      expectCode(await s.call('read_file', { path: path.join(R.dir, 'other', 'y.txt') }), 'NOT_ALLOWED');
      current = [uri(path.join(R.dir, 'other'))];
      await s.client.sendRootsListChanged();
      expect((await s.call('read_file', { path: path.join(R.dir, 'other', 'y.txt') })).isError).toBeFalsy();
      expectCode(await s.call('read_file', { path: path.join(sub, 'in.txt') }), 'NOT_ALLOWED');
      expect(s.asked()).toBe(2);
      // Narrowing never widens past the CLI roots: announcing O (outside R) empties the set.
      current = [uri(O.dir)];
      await s.client.sendRootsListChanged();
      expectCode(await s.call('read_file', { path: path.join(O.dir, 'x.txt') }), 'ROOTS_EMPTY');
    } finally {
      await s.client.close();
    }
  });
});

describe('2026-07-28 era: client roots are not requested', () => {
  it('the command-line roots apply', async () => {
    const client = await connect('modern', { args: [R.dir] });
    try {
      expect((await client.callOk('read_file', { path: 'top.txt' })).content).toBe('top\n');
      expect((await client.callOk('read_file', { path: 'sub/in.txt' })).content).toBe('in sub\n');
      expectCode(await client.call('read_file', { path: path.join(O.dir, 'x.txt') }), 'NOT_ALLOWED');
      expect(await rootsOf(client)).toEqual([{ path: R.dir, source: 'cli' }]);
      expect(client.stderr()).not.toContain('roots/list');
    } finally {
      await client.close();
    }
  });
});

describe.each(ERAS)('no roots at all: cwd is / and no ROOT (%s era)', (era) => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connect(era, { args: [], cwd: '/' });
  });
  afterAll(async () => {
    await client.close();
  });

  it.each([
    ['read_file', { path: 'etc/hostname' }],
    ['read_file', { path: '/etc/hostname' }],
    ['list_directory', {}],
    ['list_directory', { path: '/' }],
    ['search_files', { query: 'root' }],
    ['stat', { path: '/etc' }],
  ] as Array<[string, Record<string, unknown>]>)('%s %j is ROOTS_EMPTY', async (tool, args) => {
    const e = expectCode(await client.call(tool, args), 'ROOTS_EMPTY');
    expect(e.error.retryable).toBe(false);
    expect(e.error.recovery).toBe('fix_arguments');
    expect(e.error.path).toBeNull();
  });

  it('read_files reports ROOTS_EMPTY per entry', async () => {
    const r = await client.callOk('read_files', { paths: ['/etc/hostname', 'x'] });
    expect(r.results.map((e: { error?: { code: string } }) => e.error?.code)).toEqual(['ROOTS_EMPTY', 'ROOTS_EMPTY']);
  });

  it('list_allowed_directories still answers, with no roots', async () => {
    const r = await client.callOk('list_allowed_directories', {});
    expect(r.roots).toEqual([]);
  });
});

describe('home directory is not a default root', () => {
  it('cwd = HOME and no ROOT: ROOTS_EMPTY', async () => {
    const home = makeTree({ 'notes.txt': 'private\n' }, 'fs-tools-home-');
    mkdirSync(path.join(home.dir, '.ssh'));
    const client = await connect('modern', { args: [], cwd: home.dir, env: { HOME: home.dir } });
    try {
      const e = expectCode(await client.call('read_file', { path: 'notes.txt' }), 'ROOTS_EMPTY');
      // The cause (no ROOT, and home is never a default) and the fix (a ROOT in the client's configuration).
      expect(e.error.message).toContain('without a ROOT');
      expect(e.error.suggestion).toContain('ROOT argument');
      expect(e.error.details.rule).toBe('no_default_root');
      expect(await rootsOf(client)).toEqual([]);
    } finally {
      await client.close();
      home.cleanup();
    }
  });
});

describe('client roots updates, 2025 era (SPEC §4.1 as updated by issue #15)', () => {
  it('an empty list AFTER a non-empty one narrows to nothing, never back; ROOTS_EMPTY names that cause', async () => {
    let roots = [uri(sub)];
    const s = await slowRootsClient(
      [R.dir],
      () => roots,
      () => 0,
    );
    try {
      const first = await s.call('read_file', { path: 'in.txt' });
      expect(first.isError, first.content[0]?.text).toBeFalsy();
      roots = [];
      await s.client.sendRootsListChanged();
      expect(
        await waitForAsync(
          async () => (await s.call('read_file', { path: path.join(sub, 'in.txt') })).isError === true,
        ),
      ).toBe(true);
      const e = expectCode(await s.call('read_file', { path: path.join(sub, 'in.txt') }), 'ROOTS_EMPTY');
      expect(e.error.message).toContain('empty list');
      expect(e.error.details.rule).toBe('client_emptied');
      expect(e.error.suggestion).toMatch(/announce a workspace root again|--client-roots=ignore/);
      const l = await s.call('list_allowed_directories', {});
      expect((l.structuredContent as Record<string, unknown>).rule).toBe('client_emptied');
      expect((l.structuredContent as Record<string, unknown>).roots).toEqual([]);
      // The CLI root did not come back.
      expectCode(await s.call('read_file', { path: path.join(R.dir, 'top.txt') }), 'ROOTS_EMPTY');
    } finally {
      await s.client.close();
    }
  });

  it('an empty first answer then a non-empty one: the later one narrows', async () => {
    let roots: string[] = [];
    const s = await slowRootsClient(
      [R.dir],
      () => roots,
      () => 0,
    );
    try {
      const first = await s.call('read_file', { path: 'top.txt' });
      expect(first.isError, first.content[0]?.text).toBeFalsy();
      roots = [uri(sub)];
      await s.client.sendRootsListChanged();
      expect(
        await waitForAsync(
          async () => (await s.call('read_file', { path: path.join(R.dir, 'top.txt') })).isError === true,
        ),
      ).toBe(true);
      expectCode(await s.call('read_file', { path: path.join(R.dir, 'top.txt') }), 'NOT_ALLOWED');
      const ok = await s.call('read_file', { path: path.join(sub, 'in.txt') });
      expect(ok.isError, ok.content[0]?.text).toBeFalsy();
    } finally {
      await s.client.close();
    }
  });
});
