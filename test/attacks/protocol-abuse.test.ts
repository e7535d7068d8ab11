/**
 * Attack: protocol abuse against the real server process (dist/cli.js) over a raw stdio pipe and through real MCP
 * clients (SPEC §2: protocol errors stay protocol errors and the server keeps running; issue 7). Extends
 * test/e2e/protocol.test.ts (one of each malformed line) with volume and size. Pins:
 *  - a 50 MB JSON-RPC line (a tools/call whose argument is 50 MB) is answered with -32600 carrying the request's id
 *    (written last, as the SDK clients write it) and dropped, and the session goes on — regression: the SDK's
 *    StdioServerTransport closed the connection when one line overflowed its 10 MB buffer, because the stdin guard
 *    passed over-long lines through raw; a real client's 50 MB write_file gets the same protocol error, its file is
 *    not written, and its next call works; a 5 MB write (under the limit) still succeeds;
 *  - a flood of malformed lines (not JSON, invalid UTF-8 — also inside a JSON string —, JSON that is no message,
 *    unknown methods, an unknown tool) interleaved with valid requests in single writes: every well-formed request
 *    gets exactly one answer with its id, every bad line one error, and nothing else reaches stdout;
 *  - 500 concurrent calls from one client all come back, each with its own correct result;
 *  - notifications/cancelled in the middle of a large search (20,000 files, a regular expression) stops it: no
 *    response for the cancelled request, the audit log shows the search ended soon after the cancellation, and the
 *    next call is answered at once;
 *  - memory: the server's peak resident set (VmHWM from /proc/<pid>/status) stays under MEMORY_BOUND_MB (stated in
 *    the README, "Protocol limits") through all of it;
 *  - the server is still running and its stderr shows no INTERNAL incident.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, connect, coverageEnv, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

/** The stated bound on the server's peak RSS (VmHWM) under this abuse, MiB (README "Protocol limits"). */
const MEMORY_BOUND_MB = 300;
const FIFTY_MB = 50 * 1024 * 1024;
const SEARCH_FILES = 20_000;

/** Peak resident set of a process, MiB (Linux /proc; null elsewhere). */
function peakRssMb(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** A raw stdio session: bytes in, stdout parsed line by line (never holding more than the current line). */
class RawSession {
  readonly child: ChildProcessWithoutNullStreams;
  readonly messages: Array<Record<string, any>> = [];
  readonly badLines: string[] = [];
  private partial = '';
  stderr = '';
  constructor(args: string[]) {
    this.child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, ...coverageEnv() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout.on('data', (d: Buffer) => {
      const lines = (this.partial + d.toString('utf8')).split('\n');
      this.partial = lines.pop()!;
      for (const line of lines) {
        try {
          this.messages.push(JSON.parse(line) as Record<string, any>);
        } catch {
          this.badLines.push(line.slice(0, 200));
        }
      }
    });
    this.child.stderr.on('data', (d: Buffer) => {
      this.stderr += d.toString('utf8');
    });
  }
  /**
   * Writes bytes to the server's stdin, respecting backpressure. Writes that meet a full pipe share one wait for
   * 'drain' (one listener, however many are in flight: a listener each was a MaxListenersExceededWarning).
   */
  async write(data: string | Buffer): Promise<void> {
    if (this.child.stdin.write(data)) return;
    this.drainWait ??= new Promise<void>((resolve) =>
      this.child.stdin.once('drain', () => {
        this.drainWait = null;
        resolve();
      }),
    );
    await this.drainWait;
  }
  private drainWait: Promise<void> | null = null;
  send(message: object): Promise<void> {
    return this.write(`${JSON.stringify(message)}\n`);
  }
  responses(id: number | string | null): Array<Record<string, any>> {
    return this.messages.filter((m) => m.id === id && ('result' in m || 'error' in m));
  }
  async waitFor(id: number | string, ms = 30_000): Promise<Record<string, any>> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const [r] = this.responses(id);
      if (r) return r;
      if (!this.running()) break;
      await new Promise((res) => setTimeout(res, 10));
    }
    throw new Error(`no response to id ${id} (running: ${this.running()}); stderr:\n${this.stderr.slice(0, 2000)}`);
  }
  running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  async close(): Promise<void> {
    if (!this.running()) return;
    const exited = new Promise((res) => this.child.once('exit', res));
    this.child.stdin.end();
    await exited;
  }
}

const tree = makeTree({ 'a.txt': 'hello\n', dir: { 'b.txt': 'bee\n' } }, 'fs-tools-abuse-');
const aux = makeTree({}, 'fs-tools-abuse-aux-');
const auditLog = path.join(aux.dir, 'audit.jsonl');
let raw: RawSession;
let client: TestClient;
let nextId = 1000;

function toolCall(id: number, name: string, args: Record<string, unknown>): object {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

beforeAll(async () => {
  // The big tree for the cancelled search: 20,000 small files in 100 directories, each directory's 200 names hard
  // links of one file (the search opens and reads every name as its own file; 100 inodes cost ~2 s less system CPU
  // to make than 20,000).
  const big = path.join(tree.dir, 'big');
  for (let d = 0; d < 100; d++) {
    mkdirSync(path.join(big, `d${d}`), { recursive: true });
    const first = path.join(big, `d${d}`, 'f0.txt');
    writeFileSync(first, `line one ${d}\nneedle here\n`);
    for (let f = 1; f < SEARCH_FILES / 100; f++) linkSync(first, path.join(big, `d${d}`, `f${f}.txt`));
  }
  raw = new RawSession([
    '--state-dir',
    path.join(aux.dir, 'state'),
    `--audit-log=${auditLog}`,
    '--max-search-results=100000',
    tree.dir,
  ]);
  await raw.send({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'abuse', version: '1.0.0' } },
  });
  await raw.waitFor(1);
  await raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  client = await connect('modern', { args: ['--state-dir', path.join(aux.dir, 'state2'), tree.dir] });
}, 120_000);

afterAll(async () => {
  await client?.close();
  await raw?.close();
  tree.cleanup();
  aux.cleanup();
});

describe('protocol abuse on one long-lived session', () => {
  it('a 50 MB line is answered with -32600 and its id, dropped, and the session goes on', async () => {
    const padding = 'x'.repeat(FIFTY_MB);
    // As the SDK clients serialize a request: params first, the id last.
    const line = `{"method":"tools/call","params":{"name":"write_file","arguments":{"path":"huge.txt","content":"${padding}"}},"jsonrpc":"2.0","id":7}\n`;
    const buf = Buffer.from(line);
    expect(buf.length).toBeGreaterThan(FIFTY_MB);
    for (let i = 0; i < buf.length; i += 1 << 20) await raw.write(buf.subarray(i, i + (1 << 20)));
    const answer = await raw.waitFor(7);
    expect(answer.error.code).toBe(-32600);
    expect(answer.error.message).toMatch(/over the \d+-byte limit/);
    expect(existsSync(path.join(tree.dir, 'huge.txt'))).toBe(false);
    // A 50 MB line with the id first, and one with no id at all (answered with id null).
    const first = Buffer.from(
      `{"jsonrpc":"2.0","id":"big-first","method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt","p":"${padding}"}}}\n`,
    );
    for (let i = 0; i < first.length; i += 1 << 20) await raw.write(first.subarray(i, i + (1 << 20)));
    expect((await raw.waitFor('big-first')).error.code).toBe(-32600);
    const nullsBefore = raw.responses(null).length;
    const anonymous = Buffer.from(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":"${padding}"}}\n`);
    for (let i = 0; i < anonymous.length; i += 1 << 20) await raw.write(anonymous.subarray(i, i + (1 << 20)));
    await raw.send(toolCall(8, 'read_file', { path: 'a.txt' }));
    const after = await raw.waitFor(8);
    expect(after.result.content[0].text).toBe('hello\n');
    expect(raw.responses(null).length).toBe(nullsBefore + 1);
    expect(raw.running()).toBe(true);
  }, 120_000);

  it('a real client: a 50 MB write_file is a protocol error and writes nothing; 5 MB still works; the next call works', async () => {
    let caught: { code?: unknown } | undefined;
    try {
      await client.call('write_file', { path: 'huge-client.txt', content: 'y'.repeat(FIFTY_MB) });
    } catch (error) {
      caught = error as { code?: unknown };
    }
    expect(caught?.code).toBe(-32600);
    expect(existsSync(path.join(tree.dir, 'huge-client.txt'))).toBe(false);
    const five = await client.callOk('write_file', { path: 'five.txt', content: 'z'.repeat(5 * 1024 * 1024) });
    expect(five.bytes).toBe(5 * 1024 * 1024);
    expect((await client.callOk('read_file', { path: 'a.txt' })).content).toBe('hello\n');
  }, 120_000);

  it('a flood of malformed lines between valid requests: every request answered once, every bad line once', async () => {
    const ids: number[] = [];
    let bad = 0;
    const chunks: Buffer[] = [];
    for (let i = 0; i < 200; i++) {
      const id = nextId++;
      ids.push(id);
      chunks.push(
        Buffer.from(
          `${JSON.stringify(toolCall(id, i % 2 ? 'stat' : 'read_file', { path: i % 3 ? 'a.txt' : 'dir/b.txt' }))}\n`,
        ),
      );
      switch (i % 6) {
        case 0:
          chunks.push(Buffer.from('{"jsonrpc":"2.0","id":\n'));
          bad++;
          break;
        case 1:
          chunks.push(Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d, 0x0a]));
          bad++;
          break; // {"\xc3(":1} invalid UTF-8 in a string
        case 2:
          chunks.push(Buffer.from('[]\n'));
          bad++;
          break;
        case 3: {
          const unknown = nextId++;
          ids.push(unknown);
          chunks.push(
            Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id: unknown, method: `no/such/${i}`, params: {} })}\n`),
          );
          break;
        }
        case 4: {
          const unknownTool = nextId++;
          ids.push(unknownTool);
          chunks.push(Buffer.from(`${JSON.stringify(toolCall(unknownTool, 'rm_rf', { path: '/' }))}\n`));
          break;
        }
        default:
          chunks.push(Buffer.from('\u0000\u0001\u0002\n'));
          bad++;
      }
    }
    const nullsBefore = raw.responses(null).length;
    await raw.write(Buffer.concat(chunks)); // one write: the server must split it correctly
    for (const id of ids) await raw.waitFor(id);
    await new Promise((r) => setTimeout(r, 200));
    for (const id of ids) expect(raw.responses(id), `id ${id}`).toHaveLength(1);
    expect(raw.responses(null).length - nullsBefore).toBe(bad);
    const byId = new Map(raw.messages.filter((m) => typeof m.id === 'number').map((m) => [m.id as number, m]));
    const unknownMethods = ids.filter((id) => byId.get(id)?.error?.code === -32601).length;
    const unknownTools = ids.filter((id) => byId.get(id)?.error?.code === -32602).length;
    expect(unknownMethods).toBe(33);
    expect(unknownTools).toBe(33);
    expect(raw.badLines).toEqual([]); // stdout carries only JSON-RPC messages
  });

  it('500 concurrent calls from one client all come back with their own results', async () => {
    const calls = Array.from({ length: 500 }, (_, i) => {
      switch (i % 5) {
        case 0:
          return client.callOk('read_file', { path: 'a.txt' }).then((r) => r.content === 'hello\n');
        case 1:
          return client.callOk('stat', { path: 'dir/b.txt' }).then((r) => r.size === 4);
        case 2:
          return client.callOk('list_directory', { path: 'dir' }).then((r) => r.entries.length === 1);
        case 3:
          return client
            .callError('read_file', { path: `missing-${i}.txt` })
            .then((e) => e.error.code === 'NOT_FOUND' && e.error.path.endsWith(`missing-${i}.txt`));
        default:
          return client.callOk('search_files', { path: 'dir', query: 'bee' }).then((r) => r.matches.length === 1);
      }
    });
    const results = await Promise.all(calls);
    expect(results.filter((ok) => !ok)).toEqual([]);
    expect(results).toHaveLength(500);
  }, 120_000);

  it('notifications/cancelled in the middle of a large search stops it and the server answers the next call', async () => {
    const id = nextId++;
    const linesBefore = readFileSync(auditLog, 'utf8').split('\n').filter(Boolean).length;
    const started = Date.now();
    await raw.send(
      toolCall(id, 'search_files', { path: 'big', query: 'needle (here|there)+', regex: true, max_results: 100_000 }),
    );
    // 100 ms in: well inside the search (a warm full search of these 20,000 files now takes about 300 ms, the first,
    // cold one more), so the cancelled one must stop clearly before a full one ends (at 300 ms in, the cold search
    // could be all but done, and it then took longer than the warm full one it is compared with).
    await new Promise((r) => setTimeout(r, 100));
    await raw.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: id, reason: 'user pressed stop' },
    });
    const cancelledAt = Date.now();
    const next = nextId++;
    await raw.send(toolCall(next, 'read_file', { path: 'a.txt' }));
    const answer = await raw.waitFor(next);
    expect(answer.result.content[0].text).toBe('hello\n');
    // The audit line of the search shows when it stopped.
    let searchLine: { tool: string; duration_ms: number } | undefined;
    const end = Date.now() + 20_000;
    while (!searchLine && Date.now() < end) {
      searchLine = readFileSync(auditLog, 'utf8')
        .split('\n')
        .filter(Boolean)
        .slice(linesBefore)
        .map((l) => JSON.parse(l) as { tool: string; duration_ms: number })
        .find((l) => l.tool === 'search_files');
      if (!searchLine) await new Promise((r) => setTimeout(r, 20));
    }
    expect(searchLine).toBeDefined();
    const stoppedAfterCancelMs = started + searchLine!.duration_ms - cancelledAt;
    // A cancelled search stops within a second of the notification.
    expect(stoppedAfterCancelMs).toBeLessThan(1500);
    await new Promise((r) => setTimeout(r, 300));
    expect(raw.responses(id)).toEqual([]); // no response to a cancelled request
    // The same search, not cancelled, for comparison: it completes with every file.
    const full = nextId++;
    const fullStarted = Date.now();
    await raw.send(
      toolCall(full, 'search_files', { path: 'big', query: 'needle (here|there)+', regex: true, max_results: 100_000 }),
    );
    const whole = await raw.waitFor(full, 120_000);
    const fullMs = Date.now() - fullStarted;
    expect(whole.result.structuredContent.files_matched).toBe(SEARCH_FILES);
    console.log(
      `protocol-abuse: cancelled search stopped ${stoppedAfterCancelMs} ms after the notification; the full search took ${fullMs} ms`,
    );
    // The cancellation really cut the search short.
    expect(searchLine!.duration_ms).toBeLessThan(fullMs);
  }, 180_000);

  it(`the server stays under ${MEMORY_BOUND_MB} MiB peak RSS, keeps running, and logged no incident`, () => {
    const rawPeak = peakRssMb(raw.child.pid!);
    const clientPeak = peakRssMb(client.pid()!);
    console.log(
      `protocol-abuse: peak RSS raw session ${rawPeak?.toFixed(1)} MiB, client session ${clientPeak?.toFixed(1)} MiB`,
    );
    if (rawPeak !== null) expect(rawPeak).toBeLessThan(MEMORY_BOUND_MB);
    if (clientPeak !== null) expect(clientPeak).toBeLessThan(MEMORY_BOUND_MB);
    expect(raw.running()).toBe(true);
    expect(raw.stderr).not.toMatch(/INTERNAL|incident/);
    expect(client.stderr()).not.toMatch(/INTERNAL|incident/);
  });
});
