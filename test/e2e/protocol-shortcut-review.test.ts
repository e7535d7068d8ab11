/**
 * Review of issue #19's request shortcut (first a `Server` subclass that sent a request the stdin guard checked
 * straight to the SDK's private request dispatch; now scripts/sdk-patch.mjs, the SDK's own message hook asking
 * "request?" first, applied when dist/cli.js is bundled). What a client sees must be what it saw before (checked line by line against main's build during the review). On a raw
 * stdio pipe, both eras, pins the answers to lines that pass or just miss the guard: a message with an id but no
 * method, a non-string method, params that are a string, an array or null, another jsonrpc version, an extra
 * top-level key, both method and result (each -32600 with its id); a response and an error response from the client
 * and a cancellation of an unknown request (no answer); ping (its exact line), an unknown method (-32601), ids "",
 * 0, "__proto__", an unsafe integer (-32600), a duplicated id key (the last one wins); and the server answers after
 * all of it, with nothing on stderr but the 2026-07-28 entry's note on the two early client responses.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { afterStartupLine, CLI, coverageEnv, ERAS } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'review', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

describe.each(ERAS)('requests past the stdin guard answer as before issue #19 (%s era, raw pipe)', (era) => {
  const tree = makeTree({ 'a.txt': 'hello\n' }, 'fs-tools-protocol-shortcut-');
  let child: ChildProcessWithoutNullStreams;
  let out = '';
  let err = '';
  const params = (p: Record<string, unknown> = {}) => (era === 'modern' ? { ...p, _meta: ENVELOPE } : p);
  const req = (id: unknown, method: string, p?: Record<string, unknown>) =>
    JSON.stringify({ jsonrpc: '2.0', id, method, params: params(p) });
  const lines = (): string[] => out.split('\n').slice(0, -1);
  const answerTo = (id: unknown) => lines().filter((l) => (JSON.parse(l) as { id?: unknown }).id === id);
  async function until(check: () => boolean): Promise<void> {
    const end = Date.now() + 15_000;
    while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(check(), `stdout:\n${out}\nstderr:\n${err}`).toBe(true);
  }

  beforeAll(async () => {
    child = spawn(process.execPath, [CLI, tree.dir], {
      env: { ...process.env, ...coverageEnv() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const open =
      era === 'legacy'
        ? req('open', 'initialize', {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'review', version: '1.0.0' },
          })
        : req('open', 'server/discover');
    child.stdin.write(`${open}\n`);
    await until(() => answerTo('open').length === 1);
    if (era === 'legacy')
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  });
  afterAll(async () => {
    const exited = new Promise((r) => child.once('exit', r));
    child.stdin.end();
    await exited;
    tree.cleanup();
  });

  it('answers each line as main does, and nothing else', async () => {
    const sent = [
      '{"jsonrpc":"2.0","id":7}',
      '{"jsonrpc":"2.0","id":8,"method":5}',
      JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: 'x' }),
      JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/list', params: [1] }),
      JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'tools/list', params: null }),
      JSON.stringify({ jsonrpc: '1.0', id: 12, method: 'tools/list' }),
      JSON.stringify({ jsonrpc: '2.0', id: 13, method: 'tools/list', params: params(), extra: 1 }),
      JSON.stringify({ jsonrpc: '2.0', id: 14, result: {} }),
      JSON.stringify({ jsonrpc: '2.0', id: 15, error: { code: 1, message: 'x' } }),
      JSON.stringify({ jsonrpc: '2.0', id: 16, method: 'ping', result: {} }),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: params({ requestId: 999 }) }),
      req(17, 'ping'),
      req(19, 'no/such'),
      req('', 'ping'),
      req(0, 'ping'),
      req('__proto__', 'ping'),
      req(2 ** 53 + 2, 'ping'),
      req(26, 'ping').replace('"id":26', '"id":26,"id":27'),
    ];
    child.stdin.write(`${sent.join('\n')}\n`);
    await until(() => answerTo(27).length === 1);
    const code = (id: unknown) => (JSON.parse(answerTo(id)[0]) as { error?: { code: number } }).error?.code;
    for (const id of [7, 8, 9, 10, 11, 12, 13, 16, 2 ** 53 + 2]) expect([id, code(id)]).toEqual([id, -32600]);
    expect(code(19)).toBe(-32601);
    // ping: served in the 2025 era; the 2026-07-28 revision has no ping (the SDK answers -32601, as on main).
    for (const id of [17, '', 0, '__proto__', 27]) {
      const expected =
        era === 'legacy'
          ? { result: {}, jsonrpc: '2.0', id }
          : { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } };
      expect(answerTo(id)).toEqual([JSON.stringify(expected)]);
    }
    expect(answerTo(14)).toEqual([]);
    expect(answerTo(15)).toEqual([]);
    expect(answerTo(26)).toEqual([]);
    expect(answerTo(999)).toEqual([]);
    expect(lines()).toHaveLength(1 + 9 + 1 + 5); // the opening answer, nine -32600, one -32601, five pings
    child.stdin.write(`${req(30, 'tools/call', { name: 'read_file', arguments: { path: 'a.txt' } })}\n`);
    await until(() => answerTo(30).length === 1);
    expect(
      (JSON.parse(answerTo(30)[0]) as { result: { content: Array<{ text: string }> } }).result.content[0].text,
    ).toBe('hello\n');
    // The 2026-07-28 entry reports the two client responses that came before the connection was pinned (as on main).
    const discarded = 'fs-tools: Discarded a JSON-RPC response received before the connection negotiated an era\n';
    expect(afterStartupLine(err)).toBe(era === 'modern' ? discarded.repeat(2) : '');
  });
});
