/**
 * Review of issue #19's serializeMessage (src/server/stdio-transport.ts): attacks on its claim "byte-identical to
 * JSON.stringify" beyond the author's property test. Pins, for a read_file-shaped result whose text is long enough to
 * take the shortcut: U+2028/U+2029, lone surrogates and control characters in the text; an own `__proto__` key (as
 * JSON.parse makes one) in the result, a block or structuredContent; members that are undefined; NaN and ±Infinity;
 * a `toJSON` below the four objects the shortcut spreads; and — a successful attack, now fixed — a content ARRAY with
 * its own `toJSON` (the shortcut rebuilt the array, so JSON.stringify's call of that toJSON was lost).
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { serializeMessage } from '../../src/server/stdio-transport.js';

function readResult(text: string): { result: Record<string, any>; jsonrpc: '2.0'; id: number } {
  return {
    result: {
      content: [
        { type: 'text', text },
        { type: 'text', text: 'note' },
      ],
      structuredContent: { content: text, size: text.length },
    },
    jsonrpc: '2.0',
    id: 1,
  };
}

const same = (m: unknown) => expect(serializeMessage(m as JSONRPCMessage)).toBe(JSON.stringify(m));
const LONG = `a\u2028b\u2029c\ud800d\udfffe\u0000\u001f\u007f"\\/`.repeat(150);

describe('serializeMessage against JSON.stringify (review attacks)', () => {
  it('separators, lone surrogates and control characters', () => {
    same(readResult(LONG));
  });

  it('own __proto__ keys (as JSON.parse builds them)', () => {
    const m = JSON.parse(
      JSON.stringify(readResult(LONG)).replace('"structuredContent":{', '"structuredContent":{"__proto__":{"x":1},'),
    ) as ReturnType<typeof readResult>;
    const block = JSON.parse('{"__proto__":[1],"type":"text"}') as Record<string, unknown>;
    block.text = LONG;
    m.result.content[0] = block;
    Object.assign(m.result, JSON.parse('{"__proto__":{"y":2}}'));
    same(m);
  });

  it('undefined members, non-finite numbers, nested toJSON', () => {
    const m = readResult(LONG);
    m.result.isError = undefined;
    m.result.content[0].annotations = undefined;
    m.result.structuredContent.nan = NaN;
    m.result.structuredContent.inf = [Infinity, -Infinity, -0];
    m.result.structuredContent.when = new Date(0);
    m.result.content[1] = { toJSON: () => 'replaced' };
    same(m);
  });

  it('a content array with its own toJSON (attack: the rebuilt array lost it)', () => {
    const m = readResult(LONG);
    (m.result.content as unknown as { toJSON: () => unknown }).toJSON = () => ['replaced'];
    same(m);
    class Blocks extends Array<unknown> {
      toJSON(): unknown {
        return 'subclass';
      }
    }
    const sub = readResult(LONG);
    sub.result.content = Blocks.from(sub.result.content as unknown[]);
    same(sub);
  });
});
