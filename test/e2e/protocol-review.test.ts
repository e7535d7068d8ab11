/**
 * Review of issue #19's protocol round (our own stdio transport, the Server's tools/call wrapper dropped): what a
 * client sees must not change where it was right before. On a raw stdio pipe, under both eras (2025 `initialize`,
 * 2026-07-28 `server/discover` with the per-request envelope). Pins:
 *  - an invalid tools/call request (name not a string, arguments a string or an array, no params) is JSON-RPC -32602
 *    "Invalid tools/call request: …" — regression: with the wrapper dropped, the SDK's remaining validation threw a
 *    plain Error, answered -32603 (internal error) with a raw zod dump;
 *  - a tools/call whose params hold more than a string name and plain-object arguments (an extra member, a _meta) is
 *    judged by the SDK's schema as before (the plain shape skips that second parse);
 *  - a requestState that is not a string is -32602 invalid_request_state, as the SDK answers it; a string one is
 *    ignored (fs-tools mints none) and the call is served;
 *  - a burst of pipelined calls whose answers far exceed stdout's buffer (40 × 30 KB in one write) is answered
 *    exactly once each, with the right content, and the server writes nothing to stderr — regression: every send that
 *    met a full buffer added its own 'drain' and 'error' listener to stdout (MaxListenersExceededWarning on stderr);
 *    the transport now waits for one drain per full buffer;
 *  - a line starting with a UTF-8 byte order mark is answered (the guard decodes it away; before issue #19 the SDK's
 *    reader re-parsed the raw line, failed on the mark and dropped the request without an answer).
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
const BIG = `${'0123456789abcdef'.repeat(1875)}\n`; // 30,001 bytes
const BURST = 40;

/** A raw stdio session: lines in, every complete stdout line parsed. */
class Raw {
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
  write(data: string): void {
    this.child.stdin.write(data);
  }
  messages(): Array<Record<string, any>> {
    return this.out
      .split('\n')
      .slice(0, -1)
      .map((l) => JSON.parse(l) as Record<string, any>);
  }
  answers(id: number | string): Array<Record<string, any>> {
    return this.messages().filter((m) => m.id === id && ('result' in m || 'error' in m));
  }
  async waitFor(id: number | string, ms = 20_000): Promise<Record<string, any>> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const [r] = this.answers(id);
      if (r) return r;
      await new Promise((res) => setTimeout(res, 20));
    }
    throw new Error(`no response to id ${id}; stderr:\n${this.stderr}`);
  }
  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((res) => this.child.once('exit', res));
    this.child.stdin.end();
    await exited;
  }
}

describe.each(ERAS)('tools/call requests as before issue #19 (%s era, raw pipe)', (era) => {
  const tree = makeTree({ 'a.txt': 'hello\n', 'big.txt': BIG }, 'fs-tools-protocol-review-');
  let raw: Raw;
  /** A request line of this era (the 2026-07-28 era carries the envelope in every request's params). */
  const line = (id: number | string, method: string, params?: Record<string, unknown>): string =>
    `${JSON.stringify({
      jsonrpc: '2.0',
      id,
      method,
      ...(era === 'modern' ? { params: { ...params, _meta: ENVELOPE } } : params === undefined ? {} : { params }),
    })}\n`;

  beforeAll(async () => {
    raw = new Raw([tree.dir]);
    if (era === 'legacy') {
      raw.write(
        line('init', 'initialize', {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'review', version: '1.0.0' },
        }),
      );
      await raw.waitFor('init');
      raw.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    } else {
      raw.write(line('discover', 'server/discover', {}));
      await raw.waitFor('discover');
    }
  });
  afterAll(async () => {
    await raw.close();
    tree.cleanup();
  });

  it('answers an invalid tools/call request with -32602, never -32603', async () => {
    raw.write(line(1, 'tools/call', { name: 5, arguments: {} }));
    raw.write(line(2, 'tools/call', { name: 'read_file', arguments: 'a.txt' }));
    raw.write(line(3, 'tools/call', { name: 'read_file', arguments: ['a.txt'] }));
    if (era === 'legacy') raw.write(line(4, 'tools/call'));
    for (const id of era === 'legacy' ? [1, 2, 3, 4] : [1, 2, 3]) {
      const answer = await raw.waitFor(id);
      expect(answer.error?.code, JSON.stringify(answer)).toBe(-32602);
      expect(answer.error.message).toMatch(/^Invalid tools\/call request: /);
    }
    // The server is unharmed: a valid call is served.
    raw.write(line(5, 'tools/call', { name: 'read_file', arguments: { path: 'a.txt' } }));
    expect((await raw.waitFor(5)).result.content[0].text).toBe('hello\n');
  });

  it('judges a tools/call whose params carry more than name and arguments as the SDK does', async () => {
    // Only params that are exactly a string name and plain-object arguments skip the SDK's second parse
    // (src/server/create-server.ts); these shapes still take it: a member the schema strips, a _meta, a `task` it checks.
    raw.write(line(30, 'tools/call', { name: 'read_file', arguments: { path: 'a.txt' }, extra: 1 }));
    raw.write(
      line(31, 'tools/call', { name: 'read_file', arguments: { path: 'a.txt' }, _meta: { progressToken: 'p' } }),
    );
    expect((await raw.waitFor(30)).result.content[0].text).toBe('hello\n');
    expect((await raw.waitFor(31)).result.content[0].text).toBe('hello\n');
    if (era === 'legacy') {
      raw.write(line(32, 'tools/call', { name: 'read_file', arguments: { path: 'a.txt' }, task: 5 }));
      const refused = await raw.waitFor(32);
      expect(refused.error?.code, JSON.stringify(refused)).toBe(-32602);
      expect(refused.error.message).toMatch(/^Invalid tools\/call request: /);
    }
    // An own __proto__ member of the arguments (JSON.parse makes one) is left to the SDK's schema, which drops it.
    raw.write(
      line(33, 'tools/call', { name: 'read_file', arguments: { path: 'a.txt', zz: 1 } }).replace('"zz"', '"__proto__"'),
    );
    expect((await raw.waitFor(33)).result.content[0].text).toBe('hello\n');
  });

  it('refuses a requestState that is not a string (-32602) and ignores a string one', async () => {
    raw.write(line(10, 'tools/call', { name: 'read_file', arguments: { path: 'a.txt' }, requestState: 5 }));
    raw.write(line(11, 'tools/call', { name: 'read_file', arguments: { path: 'a.txt' }, requestState: 'opaque' }));
    const refused = await raw.waitFor(10);
    expect(refused.error).toMatchObject({ code: -32602, data: { reason: 'invalid_request_state' } });
    expect((await raw.waitFor(11)).result.content[0].text).toBe('hello\n');
  });

  it('answers each of a burst of large pipelined calls exactly once, with nothing on stderr', async () => {
    let burst = '';
    for (let i = 0; i < BURST; i++)
      burst += line(100 + i, 'tools/call', { name: 'read_file', arguments: { path: 'big.txt' } });
    raw.write(burst);
    for (let i = 0; i < BURST; i++) {
      const answer = await raw.waitFor(100 + i);
      expect(answer.result?.structuredContent?.content, `id ${100 + i}`).toBe(BIG);
    }
    for (let i = 0; i < BURST; i++) expect(raw.answers(100 + i)).toHaveLength(1);
    expect(afterStartupLine(raw.stderr)).toBe('');
  });

  it('answers a line that starts with a byte order mark', async () => {
    raw.write(`\ufeff${line(20, 'tools/call', { name: 'read_file', arguments: { path: 'a.txt' } })}`);
    expect((await raw.waitFor(20)).result.content[0].text).toBe('hello\n');
    expect(afterStartupLine(raw.stderr)).toBe('');
  });
});
