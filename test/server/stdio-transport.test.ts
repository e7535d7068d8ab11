/**
 * The stdio transport (src/server/stdio-transport.ts): each valid line reaches `onmessage` once, parsed; a malformed
 * line is answered on stdout and never reaches `onmessage`; the messages sent in one turn of the event loop leave in
 * one write, and the answer to the only request in flight at once; a full stdout holds `send` until it drains (one shared wait, whatever the number of sends); a message that
 * cannot be serialized rejects its send; end of stdin closes the transport, after which nothing is
 * written. The e2e protocol tests (test/e2e/protocol.test.ts, test/attacks/protocol-abuse.test.ts) run it in the
 * real server under both eras.
 */
import { PassThrough, Writable } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { GuardedStdioTransport } from '../../src/server/stdio-transport.js';

/** A stdout that records each write(v) call as the list of lines it carried. */
function recordingOutput(options: { highWaterMark?: number; delayMs?: number } = {}) {
  const writes: string[][] = [];
  const later = (done: () => void) => (options.delayMs ? setTimeout(done, options.delayMs) : done());
  const output = new Writable({
    highWaterMark: options.highWaterMark,
    write(chunk: Buffer, _encoding, done) {
      writes.push(chunk.toString().split('\n').filter(Boolean));
      later(done);
    },
    writev(chunks, done) {
      writes.push(chunks.flatMap((c) => (c.chunk as Buffer).toString().split('\n').filter(Boolean)));
      later(done);
    },
  });
  return { output, writes };
}

const tick = () => new Promise((r) => setImmediate(r));
const ping = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'ping' });

describe('GuardedStdioTransport', () => {
  it('hands each valid line to onmessage once and answers a malformed one itself', async () => {
    const input = new PassThrough();
    const { output, writes } = recordingOutput();
    const transport = new GuardedStdioTransport(input, output);
    const got: JSONRPCMessage[] = [];
    transport.onmessage = (m) => got.push(m);
    await transport.start();
    input.write(`${JSON.stringify(ping(1))}\n{oops\n${JSON.stringify(ping(2)).slice(0, 10)}`);
    input.write(`${JSON.stringify(ping(2)).slice(10)}\n`);
    await tick();
    expect(got).toEqual([ping(1), ping(2)]);
    expect(writes.flat().map((l) => JSON.parse(l))).toEqual([
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the line is not valid JSON' } },
    ]);
    await transport.close();
  });

  it('writes the messages of one turn in one write, one line each', async () => {
    const input = new PassThrough();
    const { output, writes } = recordingOutput();
    const transport = new GuardedStdioTransport(input, output);
    await transport.start();
    await Promise.all([transport.send(ping(1)), transport.send(ping(2)), transport.send(ping(3))]);
    await tick();
    await transport.send(ping(4));
    await tick();
    expect(writes.map((w) => w.map((l) => (JSON.parse(l) as { id: number }).id))).toEqual([[1, 2, 3], [4]]);
    await transport.close();
  });

  it('writes the answer to the only request in flight at once; answers with others in flight still leave together', async () => {
    const input = new PassThrough();
    const { output, writes } = recordingOutput();
    const transport = new GuardedStdioTransport(input, output);
    const got: JSONRPCMessage[] = [];
    transport.onmessage = (m) => got.push(m);
    await transport.start();
    const answer = (id: number | string): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: {} });
    const ids = () => writes.map((w) => w.map((l) => (JSON.parse(l) as { id: number | string }).id));

    // One request in flight: its answer is written within send, before the turn ends.
    input.write(`${JSON.stringify(ping(1))}\n`);
    await tick();
    void transport.send(answer(1));
    expect(ids()).toEqual([[1]]);

    // Three in flight, answered in one turn: one write of three lines (the last answer joins the corked turn).
    input.write(`${JSON.stringify(ping(2))}\n${JSON.stringify(ping(3))}\n${JSON.stringify(ping(4))}\n`);
    await tick();
    void transport.send(answer(2));
    void transport.send(answer(3));
    void transport.send(answer(4));
    expect(ids()).toEqual([[1]]);
    await tick();
    expect(ids()).toEqual([[1], [2, 3, 4]]);

    // A request the client cancelled is never answered: the next one is alone again.
    input.write(`${JSON.stringify(ping(5))}\n${JSON.stringify(ping(6))}\n`);
    input.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 } })}\n`);
    await tick();
    void transport.send(answer(6));
    expect(ids()).toEqual([[1], [2, 3, 4], [6]]);

    // An id the client used twice is in flight until both are answered.
    input.write(`${JSON.stringify(ping(7))}\n${JSON.stringify(ping(7))}\n`);
    await tick();
    void transport.send(answer(7));
    expect(ids()).toEqual([[1], [2, 3, 4], [6]]);
    await tick();
    void transport.send(answer(7));
    expect(ids()).toEqual([[1], [2, 3, 4], [6], [7], [7]]);
    expect(got.map((m) => (m as { id?: number }).id)).toEqual([1, 2, 3, 4, 5, 6, undefined, 7, 7]);
    await transport.close();
  });

  it('holds send until a full stdout drains', async () => {
    const input = new PassThrough();
    const { output, writes } = recordingOutput({ highWaterMark: 16, delayMs: 20 });
    const transport = new GuardedStdioTransport(input, output);
    await transport.start();
    let settled = false;
    const sent = transport.send(ping(1)).then(() => (settled = true));
    await tick();
    expect(settled).toBe(false); // the line is longer than the 16-byte buffer: wait for 'drain'
    await sent;
    expect(writes.flat()).toHaveLength(1);
    await transport.close();
  });

  it('closes at end of stdin: onclose once, later sends rejected and nothing more written', async () => {
    const input = new PassThrough();
    const { output, writes } = recordingOutput();
    const transport = new GuardedStdioTransport(input, output);
    let closes = 0;
    transport.onclose = () => closes++;
    await transport.start();
    await expect(transport.start()).rejects.toThrow(/already started/);
    input.end(`${JSON.stringify(ping(1))}`); // unterminated: not a message
    await tick();
    await tick();
    expect(closes).toBe(1);
    await expect(transport.send(ping(2))).rejects.toThrow(/closed/);
    await tick();
    expect(writes).toEqual([]);
  });

  it('reports a stdout failure and closes', async () => {
    const input = new PassThrough();
    const output = new Writable({ write: (_c, _e, done) => done(new Error('EPIPE')) });
    const transport = new GuardedStdioTransport(input, output);
    const errors: string[] = [];
    transport.onerror = (e) => errors.push(e.message);
    let closed = false;
    transport.onclose = () => (closed = true);
    await transport.start();
    await transport.send(ping(1)).catch(() => undefined);
    await tick();
    await tick();
    expect(errors).toContain('EPIPE');
    expect(closed).toBe(true);
  });
  it('shares one drain wait among the sends that met a full stdout (two listeners, not two per send)', async () => {
    const input = new PassThrough();
    const { output, writes } = recordingOutput({ highWaterMark: 16, delayMs: 5 });
    const transport = new GuardedStdioTransport(input, output);
    await transport.start();
    const baseDrain = output.listenerCount('drain');
    const baseError = output.listenerCount('error');
    const sends = Array.from({ length: 30 }, (_, i) => transport.send(ping(i)));
    expect(output.listenerCount('drain')).toBe(baseDrain + 1);
    expect(output.listenerCount('error')).toBe(baseError + 1);
    await Promise.all(sends);
    expect(writes.flat()).toHaveLength(30);
    expect(output.listenerCount('drain')).toBe(baseDrain);
    expect(output.listenerCount('error')).toBe(baseError);
  });

  it('rejects, never throws, when a message cannot be serialized', async () => {
    const input = new PassThrough();
    const { output, writes } = recordingOutput();
    const transport = new GuardedStdioTransport(input, output);
    await transport.start();
    const bad = { jsonrpc: '2.0', id: 1, result: { n: 1n } } as unknown as JSONRPCMessage;
    let sent: Promise<void> | undefined;
    expect(() => (sent = transport.send(bad))).not.toThrow();
    await expect(sent).rejects.toThrow(/BigInt/);
    await transport.send(ping(2));
    await tick();
    expect(writes.flat()).toEqual([JSON.stringify(ping(2))]);
  });
});
