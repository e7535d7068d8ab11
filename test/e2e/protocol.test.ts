/**
 * The protocol surface (SPEC §2, STYLE §4.3) against the real server process, under both eras: tools/list is
 * deterministic and honest, an unknown tool is a JSON-RPC error (-32602) while everything about a known tool is a
 * tool result, --tools filtering, VALIDATION envelopes instead of SDK text, and malformed JSON-RPC on the raw pipe.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOLS } from '../../src/tools/registry.js';
import { expectCode, protocolError } from '../helpers/protocol-asserts.js';
import {
  afterStartupLine,
  CLI,
  connect,
  coverageEnv,
  ERAS,
  type ListedTool,
  type TestClient,
} from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const REGISTRY_ORDER = TOOLS.map((t) => t.name);

/**
 * What each tool can do at its most dangerous, decided here from the SPEC, not read from the tool definitions
 * (issue #15): [readOnlyHint, destructiveHint, idempotentHint, openWorldHint]. Approval layers (a Codex guardian
 * review of an mcpToolCall, seeds/003) rely on these.
 *   - write_file replaces a file (destructive); writing the same bytes again changes nothing (idempotent).
 *   - edit_file / apply_patch replace text, apply_patch also deletes files; a second identical call fails or
 *     changes more (not idempotent).
 *   - replace_in_files rewrites many files; a second identical call replaces again (a pattern whose replacement
 *     matches it) or finds nothing: not idempotent.
 *   - move_path may overwrite its destination; delete_path deletes; neither is safe to repeat blindly.
 *   - create_directory only adds, and is idempotent by contract.
 *   - list_changes only reads the history; revert_changes overwrites and deletes files (a second call reverts the
 *     revert or fails: not idempotent).
 *   - github_issues / gitlab_issues: `edit` replaces a body and labels, `close` changes state (destructive); `create`
 *     and `comment` add each time (not idempotent); they talk to a forge (open world).
 */
const HONEST_ANNOTATIONS: Record<string, [boolean, boolean, boolean, boolean]> = {
  list_allowed_directories: [true, false, true, false],
  read_file: [true, false, true, false],
  read_files: [true, false, true, false],
  read_media: [true, false, true, false],
  list_directory: [true, false, true, false],
  search_files: [true, false, true, false],
  stat: [true, false, true, false],
  write_file: [false, true, true, false],
  edit_file: [false, true, false, false],
  apply_patch: [false, true, false, false],
  replace_in_files: [false, true, false, false],
  move_path: [false, true, false, false],
  copy_path: [false, true, false, false],
  delete_path: [false, true, false, false],
  create_directory: [false, false, true, false],
  list_changes: [true, false, true, false],
  revert_changes: [false, true, false, false],
  git_status: [true, false, true, false],
  git_diff: [true, false, true, false],
  github_issues: [false, true, false, true],
  gitlab_issues: [false, true, false, true],
};

describe.each(ERAS)('tools/list (%s era)', (era) => {
  const tree = makeTree({ 'a.txt': 'hello\n' });
  let client: TestClient;
  let tools: ListedTool[];
  beforeAll(async () => {
    // tools/list as a real client of the SDK gets it: the discover probe on a disposable sibling server (the SDK's
    // stdio path), then the session on a second process.
    client = await connect(era, { args: [tree.dir], probe: 'sibling' });
    tools = await client.listTools();
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it('is deterministic and in registry order', async () => {
    const again = await client.listTools();
    expect(again).toEqual(tools);
    expect(JSON.stringify(again)).toBe(JSON.stringify(tools));
    expect(tools.map((t) => t.name)).toEqual(REGISTRY_ORDER);
  });

  it('describes every tool with a description, object schemas and all four hints', () => {
    for (const tool of tools) {
      expect(tool.description?.length ?? 0, tool.name).toBeGreaterThanOrEqual(100);
      // "says … how it fails": names a failure code or says when it fails.
      expect(tool.description, tool.name).toMatch(/\bfail|\b[A-Z]{3,}(?:_[A-Z]+)+\b|\bVALIDATION\b/);
      expect(tool.inputSchema.type, tool.name).toBe('object');
      expect(tool.outputSchema?.type, tool.name).toBe('object');
      expect(tool.outputSchema?.properties, tool.name).toBeTypeOf('object');
      // The output schema also admits the error envelope (a text-only client validates a parsed envelope against it).
      expect((tool.outputSchema?.properties as Record<string, unknown>).error, tool.name).toBeTypeOf('object');
      for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
        expect(typeof tool.annotations?.[hint], `${tool.name}.${hint}`).toBe('boolean');
      }
    }
  });

  it('has honest annotations: the advertised hints equal an independent table (not the definitions)', () => {
    for (const tool of tools) {
      const expected = HONEST_ANNOTATIONS[tool.name];
      expect(expected, `${tool.name} has no row in HONEST_ANNOTATIONS`).toBeDefined();
      const a = tool.annotations!;
      expect([a.readOnlyHint, a.destructiveHint, a.idempotentHint, a.openWorldHint], tool.name).toEqual(expected);
    }
    expect(tools.map((t) => t.name).sort()).toEqual(Object.keys(HONEST_ANNOTATIONS).sort());
  });

  it('answers an unknown tool with JSON-RPC -32602 and keeps answering', async () => {
    const e = await protocolError(client.call('no_such_tool', { path: 'a.txt' }));
    expect(e.code).toBe(-32602);
    expect(e.message).toContain('no_such_tool');
    const again = await protocolError(client.call('Read_File', {}));
    expect(again.code).toBe(-32602);
    expect((await client.callOk('read_file', { path: 'a.txt' })).content).toBe('hello\n');
  });

  describe('argument problems are VALIDATION envelopes, never SDK text', () => {
    it('unknown parameter file_path names the closest valid one', async () => {
      const e = expectCode(await client.call('read_file', { file_path: 'a.txt' }), 'VALIDATION');
      expect(e.error.details.reason).toBe('unknown_parameter');
      expect(e.error.details.field).toBe('file_path');
      expect(e.error.details.closest).toBe('path');
      expect(e.error.message).toContain("'file_path'");
      expect(e.error.message).toContain("'path'");
      expect(e.error.suggestion).toContain('path');
      expect(e.error.retryable).toBe(false);
      expect(e.error.recovery).toBe('fix_arguments');
    });

    it('client-injected control parameters (Gemini CLI wait_for_previous) are accepted and ignored', async () => {
      for (const value of [true, false]) {
        const r = await client.callOk('read_file', { path: 'a.txt', wait_for_previous: value });
        expect(r.content).toBe('hello\n');
      }
      // Also on a tool without parameters, and on a mutating tool (nothing else changes).
      expect((await client.callOk('list_allowed_directories', { wait_for_previous: true })).roots).toHaveLength(1);
      const made = await client.callOk('create_directory', { path: 'wfp-dir', wait_for_previous: true });
      expect(made.created).toBe(true);
      // Only the listed names: a near miss stays VALIDATION with the closest name, and a nested one is not dropped.
      const near = expectCode(await client.call('read_file', { path: 'a.txt', wait_for_previos: true }), 'VALIDATION');
      expect(near.error.details).toMatchObject({ reason: 'unknown_parameter', field: 'wait_for_previos' });
      const nested = expectCode(
        await client.call('edit_file', {
          path: 'a.txt',
          edits: [{ old_text: 'hello', new_text: 'bye', wait_for_previous: true }],
        }),
        'VALIDATION',
      );
      expect(nested.error.details).toMatchObject({ reason: 'unknown_parameter', field: 'edits.0.wait_for_previous' });
      expect((await client.callOk('read_file', { path: 'a.txt' })).content).toBe('hello\n');
    });

    it('wrong type', async () => {
      const e = expectCode(await client.call('read_file', { path: 5 }), 'VALIDATION');
      expect(e.error.details).toMatchObject({
        reason: 'wrong_type',
        field: 'path',
        expected: 'string',
        received: 'integer',
      });
      expect(e.error.message).toContain("'path'");
    });

    it('wrong type nested in an array', async () => {
      const e = expectCode(await client.call('read_files', { paths: ['a.txt', 7] }), 'VALIDATION');
      expect(e.error.details).toMatchObject({ reason: 'wrong_type', field: 'paths.1' });
    });

    it('missing field', async () => {
      const e = expectCode(await client.call('read_file', {}), 'VALIDATION');
      expect(e.error.details).toMatchObject({ reason: 'missing_field', field: 'path' });
      expect(e.error.message).toContain("'path'");
    });

    it('extra unknown field alongside valid ones', async () => {
      const e = expectCode(await client.call('read_file', { path: 'a.txt', head: 1, colour: 'red' }), 'VALIDATION');
      expect(e.error.details).toMatchObject({ reason: 'unknown_parameter', field: 'colour' });
      expect(e.error.details.valid).toContain('path');
    });

    it('out-of-range value', async () => {
      const e = expectCode(await client.call('read_file', { path: 'a.txt', head: 0 }), 'VALIDATION');
      expect(e.error.details).toMatchObject({ reason: 'invalid_value', field: 'head' });
    });

    it('argument values are never echoed', async () => {
      const marker = 'ECHO-MARKER-7f3a';
      const r = await client.call('read_file', { path: 'a.txt', [marker]: marker });
      const e = expectCode(r, 'VALIDATION');
      expect(e.error.details.field).toBe(marker); // the key is named …
      expect(JSON.stringify(e).split(marker).length - 1).toBeLessThanOrEqual(3); // … the value is not added
      const wrong = expectCode(await client.call('read_file', { path: { secret: marker } }), 'VALIDATION');
      expect(JSON.stringify(wrong)).not.toContain(marker);
    });
  });

  it('wrote nothing to stderr', () => {
    expect(afterStartupLine(client.stderr())).toBe('');
  });
});

describe('tools/list across eras', () => {
  const tree = makeTree({});
  afterAll(() => tree.cleanup());

  it('is identical under both eras', async () => {
    const lists: ListedTool[][] = [];
    for (const era of ERAS) {
      const client = await connect(era, { args: [tree.dir] });
      try {
        lists.push(await client.listTools());
      } finally {
        await client.close();
      }
    }
    expect(lists[0]).toEqual(lists[1]);
  });
});

describe.each(ERAS)('--tools filtering (%s era)', (era) => {
  const tree = makeTree({ 'a.txt': 'hello\n' });
  let one: TestClient;
  let group: TestClient;
  beforeAll(async () => {
    [one, group] = await Promise.all([
      connect(era, { args: ['--tools=read_file', tree.dir] }),
      connect(era, { args: ['--tools=fs-read', tree.dir] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([one.close(), group.close()]);
    tree.cleanup();
  });

  it('--tools=read_file lists only read_file', async () => {
    expect((await one.listTools()).map((t) => t.name)).toEqual(['read_file']);
    expect((await one.callOk('read_file', { path: 'a.txt' })).content).toBe('hello\n');
  });

  it('--tools=fs-read lists exactly the fs-read group, in registry order', async () => {
    const expected = TOOLS.filter((t) => t.group === 'fs-read').map((t) => t.name);
    expect((await group.listTools()).map((t) => t.name)).toEqual(expected);
  });

  it('a listed-out tool is TOOL_UNAVAILABLE, not unknown', async () => {
    const e = expectCode(await one.call('stat', { path: 'a.txt' }), 'TOOL_UNAVAILABLE');
    expect(e.error.details).toEqual({ tool: 'stat' });
    expect(e.error.retryable).toBe(false);
    expect(e.error.recovery).toBe('fix_arguments');
    expect(e.error.path).toBeNull();
    expectCode(await one.call('list_allowed_directories', {}), 'TOOL_UNAVAILABLE');
    // A name that no tool has is still a protocol error in a filtered process.
    expect((await protocolError(one.call('no_such_tool', {}))).code).toBe(-32602);
  });
});

/** A raw stdio session: lines in, every stdout line parsed. */
class RawSession {
  readonly child: ChildProcessWithoutNullStreams;
  private out = '';
  stderr = '';
  constructor(args: string[]) {
    this.child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, ...coverageEnv() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout.on('data', (d: Buffer) => {
      this.out += d.toString('utf8');
    });
    this.child.stderr.on('data', (d: Buffer) => {
      this.stderr += d.toString('utf8');
    });
  }
  write(data: string | Buffer): void {
    this.child.stdin.write(data);
  }
  send(message: object): void {
    this.write(`${JSON.stringify(message)}\n`);
  }
  /** Complete stdout lines so far. */
  lines(): string[] {
    return this.out.split('\n').slice(0, -1);
  }
  messages(): Array<Record<string, any>> {
    return this.lines().map((l) => JSON.parse(l) as Record<string, any>);
  }
  response(id: number | string | null): Record<string, any> | undefined {
    return this.messages().find((m) => m.id === id && ('result' in m || 'error' in m));
  }
  async waitFor(id: number | string, ms = 20_000): Promise<Record<string, any>> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const r = this.response(id);
      if (r) return r;
      await new Promise((res) => setTimeout(res, 20));
    }
    throw new Error(
      `no response to id ${id}; stdout:\n${this.lines()
        .map((l) => l.slice(0, 160))
        .join('\n')}\nstderr:\n${this.stderr}`,
    );
  }
  running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  async close(): Promise<number | null> {
    if (!this.running()) return this.child.exitCode;
    const exited = new Promise<number | null>((res) => this.child.once('exit', (code) => res(code)));
    this.child.stdin.end();
    return exited;
  }
}

describe('malformed JSON-RPC on the raw stdio pipe (2025-era handshake)', () => {
  const tree = makeTree({ 'a.txt': 'hello\n' });
  let raw: RawSession;
  beforeAll(() => {
    raw = new RawSession([tree.dir]);
  });
  afterAll(async () => {
    await raw.close();
    tree.cleanup();
  });

  it('answers protocol errors, then serves a valid session, and stdout carries only JSON', async () => {
    raw.write('{not json\n');
    raw.write('[1, 2, "junk"]\n');
    raw.write(Buffer.from([0xff, 0xfe, 0x7b, 0x0a])); // invalid UTF-8, then a newline
    raw.write('{"jsonrpc":"2.0","id":90,"method":42}\n'); // JSON, but not a JSON-RPC message
    raw.send({ jsonrpc: '2.0', id: 1, method: 'no/such_method', params: {} });
    raw.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-test', version: '1.0.0' } },
    });
    const init = await raw.waitFor(2);
    expect(init.result?.serverInfo?.name).toBe('fs-tools');
    raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    raw.write('{"jsonrpc":"2.0","id":3,"method":"tools/list"'); // split across writes: still one message
    raw.write('}\n');
    raw.send({ jsonrpc: '2.0', id: 4, method: 'resources/no_such_thing' });
    raw.write('\n   \n{still not json}\n');
    raw.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'nope', arguments: {} } });
    raw.send({
      jsonrpc: '2.0',
      id: 6,
      method: 'tools/call',
      params: { name: 'read_file', arguments: { path: 'a.txt' } },
    });
    // A large valid message (2 MB, written in pieces) passes the line filter intact.
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'read_file', arguments: { path: 'a.txt', padding: 'x'.repeat(2_000_000) } },
    });
    for (let i = 0; i < big.length; i += 65_536) raw.write(big.slice(i, i + 65_536));
    raw.write('\n');

    const list = await raw.waitFor(3);
    expect(list.result.tools.map((t: { name: string }) => t.name)).toEqual(REGISTRY_ORDER);
    expect((await raw.waitFor(1)).error.code).toBe(-32601);
    expect((await raw.waitFor(4)).error.code).toBe(-32601);
    expect((await raw.waitFor(5)).error.code).toBe(-32602);
    const read = await raw.waitFor(6);
    expect(read.result.isError).toBeFalsy();
    expect(read.result.content[0].text).toBe('hello\n');
    expect((await raw.waitFor(90)).error.code).toBe(-32600);
    const bigResult = (await raw.waitFor(7)).result;
    expect(bigResult.isError).toBe(true);
    const bigEnvelope = JSON.parse(bigResult.content[0].text);
    expect(bigEnvelope.error.details).toMatchObject({ reason: 'unknown_parameter', field: 'padding' });
    expect(bigResult.content[0].text.length).toBeLessThan(2000); // the value is not echoed

    // Garbage without a readable id is answered with id null: parse errors for the three non-JSON lines (the
    // invalid UTF-8 line included), invalid request for the array.
    const anonymous = raw
      .messages()
      .filter((m) => m.id === null)
      .map((m) => m.error?.code);
    expect(anonymous.filter((c) => c === -32700)).toHaveLength(3);
    expect(anonymous.filter((c) => c === -32600)).toHaveLength(1);

    // stdout carries only protocol: every line is one JSON-RPC 2.0 message.
    for (const line of raw.lines()) {
      const m = JSON.parse(line) as Record<string, unknown>;
      expect(m.jsonrpc, line).toBe('2.0');
    }
    expect(raw.running()).toBe(true);
    // Blank lines are not messages and get no answer.
    expect(raw.lines()).toHaveLength(12);
    // Every bad message was answered on the wire; nothing needed logging (the one start-up line says the kernel wall).
    expect(afterStartupLine(raw.stderr)).toBe('');
  });

  it('exits cleanly when stdin closes', async () => {
    expect(await raw.close()).toBe(0);
  });
});
