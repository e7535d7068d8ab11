/**
 * serializeMessage (src/server/stdio-transport.ts): the line written for a message is JSON.stringify's, byte for byte,
 * whether or not the result's repeated text was escaped once (issue #19) — for read_file-shaped results with any text
 * (quotes, newlines, control characters, non-ASCII, lone surrogates, the NUL that starts the internal marker), any
 * extra keys in any order, and for every message the shortcut must leave alone (short text, two different texts,
 * class instances, objects with toJSON, arrays as results).
 */
import fc from 'fast-check';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it, vi } from 'vitest';
import { serializeMessage } from '../../src/server/stdio-transport.js';

/** A read_file-shaped response: the text in the first content block and in structuredContent.content. */
function readResult(text: string, extra: Record<string, unknown> = {}, structuredText = text): JSONRPCMessage {
  return {
    result: {
      content: [
        { type: 'text', text },
        { type: 'text', text: '[fs-tools: content_hash sha256:00; lines 1-2 of 2]' },
      ],
      structuredContent: { content: structuredText, content_hash: 'sha256:00', size: text.length, total_lines: 2 },
      ...extra,
    },
    jsonrpc: '2.0',
    id: 7,
  } as unknown as JSONRPCMessage;
}

const same = (m: unknown) => expect(serializeMessage(m as JSONRPCMessage)).toBe(JSON.stringify(m));

describe('serializeMessage', () => {
  it('writes a read result exactly as JSON.stringify does', () => {
    const text = `${'line "one"\n\ttab \\ back\u0001 é ✓ 😀\r\n'.repeat(60)}\u0000fs-tools-text:x`;
    same(readResult(text));
    same(readResult(text, { isError: false, _meta: { a: [1, null, 'x'] } }));
    // The text was escaped once, on its own (the shortcut ran), not inside the whole message twice; a text read
    // again (equal, whether or not the same string) is not escaped again.
    const fresh = `${text}!`;
    const spy = vi.spyOn(JSON, 'stringify');
    try {
      serializeMessage(readResult(fresh));
      expect(spy.mock.calls.filter(([v]) => v === fresh)).toHaveLength(1);
      serializeMessage(readResult(`${text}!`));
      expect(spy.mock.calls.filter(([v]) => v === fresh)).toHaveLength(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('recalls an escaped text only for an equal text', () => {
    // Same length, one character apart, alternating (ABA): each message is JSON.stringify's.
    const a = `${'x"\n'.repeat(400)}a`;
    const b = `${'x"\n'.repeat(400)}b`;
    for (const text of [a, a, b, a, `${a.slice(0, -1)}a`, b, b.slice(0, -1) + '\u0001', a]) {
      const m = readResult(text);
      expect(serializeMessage(m)).toBe(JSON.stringify(m));
    }
  });

  it('agrees with JSON.stringify for any text and any extra keys', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 0, maxLength: 3000 }),
        fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
        (text, extra) => {
          const long = text.padEnd(1100, 'a\n"');
          same(readResult(long, extra));
          same(readResult(text, extra));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('leaves every other message to JSON.stringify, with the same output', () => {
    const text = 'x\n'.repeat(1000);
    same(readResult(text, {}, `${text}y`)); // two different texts
    same(readResult('short\n')); // below the threshold
    same({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_file', arguments: { path: '/a' } } });
    same({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Invalid' } });
    same({ jsonrpc: '2.0', id: 1, result: [text] });
    class Block {
      type = 'text';
      constructor(public text: string) {}
    }
    const m = readResult(text) as unknown as { result: { content: unknown[] } };
    m.result.content[0] = new Block(text);
    same(m);
    const withToJson = readResult(text) as unknown as { result: Record<string, unknown> };
    withToJson.result.structuredContent = { content: text, toJSON: () => ({ replaced: true }) };
    same(withToJson);
  });

  it('throws what JSON.stringify throws', () => {
    const text = 'x'.repeat(2000);
    const m = readResult(text, { big: 1n });
    expect(() => serializeMessage(m)).toThrow(TypeError);
  });
});
