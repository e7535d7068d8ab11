/**
 * The stdin line guard (src/server/stdio-guard.ts): each valid JSON-RPC line becomes one parsed message, however the
 * bytes are split; malformed lines are answered with -32700 / -32600 and dropped; blank lines are dropped silently; a
 * line over the transport's limit is answered with -32600 (with its id when its first or last bytes name one) and
 * dropped without being buffered whole, and the lines after it are served.
 */
import { STDIO_DEFAULT_MAX_BUFFER_SIZE, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { createLineGuard } from '../../src/server/stdio-guard.js';
import { MAX_LINE_BYTES, MAX_MESSAGE_MEMBERS, moreMembersThan } from '../../src/server/message-bounds.js';

/** Feeds the chunks, then end of input; `out` is the messages handed on, one JSON line each. */
function feed(chunks: Array<string | Buffer>): { out: Buffer; messages: JSONRPCMessage[]; replies: JSONRPCMessage[] } {
  const replies: JSONRPCMessage[] = [];
  const messages: JSONRPCMessage[] = [];
  const guard = createLineGuard({ message: (m) => messages.push(m), reply: (m) => replies.push(m) });
  for (const c of chunks) guard.push(typeof c === 'string' ? Buffer.from(c) : c);
  guard.end();
  return { out: Buffer.from(messages.map((m) => `${JSON.stringify(m)}\n`).join('')), messages, replies };
}

const ping = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });
const codeOf = (m: JSONRPCMessage) => (m as { error: { code: number } }).error.code;
const idOf = (m: JSONRPCMessage) => (m as { id: unknown }).id;

describe('guardStdin', () => {
  it('hands valid lines on as messages, across chunk boundaries and with CRLF', () => {
    const text = `${ping(1)}\n${ping(2)}\r\n${ping(3)}\n`;
    const chunks = [...text].map((ch) => Buffer.from(ch)); // one byte… one character at a time
    const { out, replies } = feed(chunks);
    expect(replies).toEqual([]);
    expect(
      out
        .toString()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).id),
    ).toEqual([1, 2, 3]);
  });

  it('keeps multi-byte characters split across chunks intact', () => {
    const line = Buffer.from(
      `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/x', params: { s: 'é😀' } })}\n`,
    );
    const cut = line.indexOf(Buffer.from('😀')) + 2;
    const { out, replies } = feed([line.subarray(0, cut), line.subarray(cut)]);
    expect(replies).toEqual([]);
    expect(out.equals(line)).toBe(true);
  });

  it.each([
    ['not JSON', '{not json', -32700, null],
    ['invalid UTF-8', Buffer.from([0xff, 0xfe, 0x7b]), -32700, null],
    ['a JSON array', '[1,2]', -32600, null],
    ['a JSON scalar', '42', -32600, null],
    ['a request with a bad method', '{"jsonrpc":"2.0","id":7,"method":5}', -32600, 7],
    ['a request without jsonrpc', '{"id":"abc","method":"ping"}', -32600, 'abc'],
    ['an object id', '{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}', -32600, null],
  ] as Array<[string, string | Buffer, number, unknown]>)('answers %s and drops it', (_label, bad, code, id) => {
    const { out, replies } = feed([bad, '\n', `${ping(9)}\n`]);
    expect(replies).toHaveLength(1);
    expect(codeOf(replies[0])).toBe(code);
    expect(idOf(replies[0])).toBe(id);
    expect(out.toString()).toBe(`${ping(9)}\n`);
  });

  it('drops blank lines without an answer', () => {
    const { out, replies } = feed(['\n', '   \r\n', `${ping(1)}\n`]);
    expect(replies).toEqual([]);
    expect(out.toString()).toBe(`${ping(1)}\n`);
  });

  // Regression (issue 7): an over-long line used to be handed to the transport raw, and the SDK's ReadBuffer then
  // closed the whole session. Now the guard answers it and drops it, holding at most the limit in memory.
  it.each([
    [
      'the id written last (as the SDK clients do)',
      (pad: string) =>
        `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":{"a":"${pad}"}},"id":41}`,
      41,
    ],
    [
      'the id written first',
      (pad: string) =>
        `{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"arguments":{"id":7,"a":"${pad}"}}}`,
      'abc',
    ],
    ['no id at the top level', (pad: string) => `{"jsonrpc":"2.0","method":"x","params":{"id":7,"a":"${pad}"}}`, null],
    ['not JSON at all', (pad: string) => `garbage ${pad}`, null],
  ] as Array<[string, (pad: string) => string, unknown]>)(
    'answers an over-long line with %s by -32600 and keeps going',
    (_label, make, id) => {
      const huge = Buffer.from(make('a'.repeat(MAX_LINE_BYTES)));
      const chunks: Buffer[] = [];
      for (let i = 0; i < huge.length; i += 1 << 20) chunks.push(huge.subarray(i, i + (1 << 20)));
      const { out, replies } = feed([...chunks, `\n${ping(2)}\n`]);
      expect(replies).toHaveLength(1);
      expect(codeOf(replies[0])).toBe(-32600);
      expect(idOf(replies[0])).toBe(id);
      expect(out.toString()).toBe(`${ping(2)}\n`);
    },
  );

  it('answers an over-long line that ends in the same chunk as the next line, and one cut by end of input', () => {
    const huge = Buffer.alloc(MAX_LINE_BYTES + 1, 0x61);
    const { out, replies } = feed([
      huge.subarray(0, 1000),
      Buffer.concat([huge.subarray(1000), Buffer.from(`\n${ping(3)}\n`)]),
      huge,
    ]);
    expect(replies.map(codeOf)).toEqual([-32600, -32600]);
    expect(out.toString()).toBe(`${ping(3)}\n`);
  });

  it('passes a line of exactly the limit through', () => {
    const prefix = '{"jsonrpc":"2.0","method":"notifications/x","params":{"p":"';
    const suffix = '"}}';
    const line = `${prefix}${'b'.repeat(MAX_LINE_BYTES - prefix.length - suffix.length)}${suffix}`;
    expect(Buffer.byteLength(line)).toBe(MAX_LINE_BYTES);
    expect(MAX_LINE_BYTES + 1).toBe(STDIO_DEFAULT_MAX_BUFFER_SIZE);
    const { out, replies } = feed([line, '\n']);
    expect(replies).toEqual([]);
    expect(out.length).toBe(MAX_LINE_BYTES + 1);
  });

  it('drops an unterminated last line at end of input without an answer (a message ends with its newline)', () => {
    const { out, replies } = feed([`${ping(1)}\n`, ping(2)]);
    expect(out.toString()).toBe(`${ping(1)}\n`);
    expect(replies).toEqual([]);
  });

  it('hands on the message the SDK parsed: the same value, parsed once', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'x', arguments: {} } });
    const { messages } = feed([`${line}\n`]);
    expect(messages).toEqual([JSON.parse(line)]);
  });
});

describe('members counted before parsing (docs/security.md "Bounded work")', () => {
  const members = (n: number, id: unknown) =>
    `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read_file","arguments":{${Array.from(
      { length: n },
      (_, i) => `"k${i}":1`,
    ).join(',')}}},"id":${JSON.stringify(id)}}`;

  it('a line past MAX_MESSAGE_MEMBERS is answered -32600 with its id, unparsed; one at the bound is handed on', () => {
    const over = feed([`${members(MAX_MESSAGE_MEMBERS, 'many')}\n`]);
    expect(over.messages).toHaveLength(0);
    expect(over.replies.map((r) => [codeOf(r), idOf(r)])).toEqual([[-32600, 'many']]);
    const at = feed([`${members(MAX_MESSAGE_MEMBERS - 6, 7)}\n`]); // 6 members besides the arguments'
    expect(at.replies).toHaveLength(0);
    expect(at.messages).toHaveLength(1);
  });

  it('colons inside strings (escaped quotes and backslashes included) are content, not members', () => {
    const text = JSON.stringify({ a: ':'.repeat(1000) + '\\":\\\\":' + '"'.repeat(50), b: { c: '\\' } });
    expect(moreMembersThan(text, 3)).toBe(false); // a, b, c
    expect(moreMembersThan(text, 2)).toBe(true);
    expect(moreMembersThan('{"a":"unterminated', 0)).toBe(true);
    expect(moreMembersThan('"a:b:c"', 0)).toBe(false);
  });
});

describe('a client answer that is not a JSON-RPC response (review of the roots work)', () => {
  const failure = (m: JSONRPCMessage) => m as { id: unknown; error: { code: number; data: Record<string, string> } };

  it.each([
    ['a result that is an array', '{"jsonrpc":"2.0","id":0,"result":[{"uri":"file:///p"}]}', '[{"uri":"file:///p"}]'],
    ['a string result', '{"jsonrpc":"2.0","id":"r1","result":"file:///p"}', '"file:///p"'],
    ['neither result nor error', '{"jsonrpc":"2.0","id":3}', 'neither result nor error'],
  ])('%s is handed on as a malformed answer for its id, and never answered', (_label, line, text) => {
    const { messages, replies } = feed([`${line}\n`]);
    expect(replies).toEqual([]);
    expect(messages).toHaveLength(1);
    const m = failure(messages[0]);
    expect(m.id).toBe(JSON.parse(line).id);
    expect(m.error.code).toBe(-32600);
    expect(m.error.data.fs_tools_malformed_answer).toBe(text);
  });

  it('an over-long answer (result first, id last, as SDK clients write it) fails its request; an over-long request is answered', () => {
    const answer = Buffer.from(
      `{"result":{"roots":[{"uri":"file:///${'a'.repeat(MAX_LINE_BYTES)}"}]},"jsonrpc":"2.0","id":4}`,
    );
    const request = Buffer.from(
      `{"jsonrpc":"2.0","id":5,"method":"x","params":{"result":"${'a'.repeat(MAX_LINE_BYTES)}"}}`,
    );
    const { messages, replies } = feed([answer, '\n', request, '\n']);
    expect(messages.map((m) => [failure(m).id, failure(m).error.code])).toEqual([[4, -32600]]);
    expect(failure(messages[0]).error.data.fs_tools_malformed_answer).toMatch(/^an answer: the line is \d+ bytes long/);
    expect(replies.map((r) => [idOf(r), codeOf(r)])).toEqual([[5, -32600]]);
  });
});
