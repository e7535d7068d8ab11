/**
 * sealedMessageChunks (src/server/stdio-transport.ts): a result whose structured part is sealed
 * (src/tools/sealed-result.ts) is written as the skeleton around the sealed parts' bytes — byte for byte
 * `JSON.stringify(message)` and a newline, for any structured value and text, any extra keys in any order and any
 * id; anything else (not sealed, another text, a sealed object in another place) is left to serializeMessage.
 */
import fc from 'fast-check';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { sealedMessageChunks } from '../../src/server/stdio-transport.js';
import { sealResult, sealedPartsOf } from '../../src/tools/sealed-result.js';
import { jsonBytes, jsonBytesBound } from '../../src/tools/response-budget.js';

/** A list_directory-shaped answer: the page's text in the first block, the page as structuredContent. */
function answer(structured: unknown, text: string, extra: Record<string, unknown> = {}, id: unknown = 7): unknown {
  return { result: { content: [{ type: 'text', text }], structuredContent: structured, ...extra }, jsonrpc: '2.0', id };
}

const bytesOf = (chunks: (string | Buffer)[]): Buffer =>
  Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c, 'utf8') : c)));

/** Any JSON object (no undefined members), as a tool's structured result. */
const jsonObject = fc
  .dictionary(fc.string(), fc.jsonValue(), { maxKeys: 6 })
  .map((o) => JSON.parse(JSON.stringify(o)) as Record<string, unknown>);

describe('sealedMessageChunks', () => {
  it('writes a sealed result exactly as JSON.stringify does, for any page, text, extra keys and id', () => {
    fc.assert(
      fc.property(
        jsonObject,
        fc.string({ unit: 'binary' }),
        jsonObject,
        fc.oneof(fc.integer(), fc.string()),
        fc.boolean(),
        (structured, text, extra, id, extraFirst) => {
          sealResult(structured, text);
          const m = extraFirst
            ? { result: { ...extra, content: [{ type: 'text', text }], structuredContent: structured }, id }
            : answer(structured, text, extra, id);
          const chunks = sealedMessageChunks(m as JSONRPCMessage);
          // An extra key may itself be named content or structuredContent: then the sealed object is not in place.
          if ('content' in extra || 'structuredContent' in extra) return;
          expect(chunks).not.toBeNull();
          expect(bytesOf(chunks!).equals(Buffer.from(`${JSON.stringify(m)}\n`, 'utf8'))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a list page with quoted, non-ASCII and control-character names', () => {
    const entries = ['a', 'dir/', 'quote"d', 'back\\slash', 'new\nline', 'ümlaut', '😀', '\u0000', '\ud800'];
    const structured = {
      path: '/r/t',
      entries: [...entries, { path: 'l', type: 'symlink', link_target_type: null }],
      truncated: false,
      next_cursor: null,
      skipped: { unreadable: 0, name_too_long: 0 },
    };
    const text = entries.join('\n');
    sealResult(structured, text);
    for (const id of [1, 42, 'x"y', 9007199254740991]) {
      const m = answer(structured, text, {}, id);
      expect(bytesOf(sealedMessageChunks(m as JSONRPCMessage)!).toString('utf8')).toBe(`${JSON.stringify(m)}\n`);
    }
    // Frozen all the way down: the kept bytes can never go stale.
    expect(Object.isFrozen(structured) && Object.isFrozen(structured.entries)).toBe(true);
    expect(Object.isFrozen(structured.entries[entries.length]) && Object.isFrozen(structured.skipped)).toBe(true);
    // The response guard measures it exactly from its bytes.
    expect(jsonBytesBound(structured)).toBe(jsonBytes(structured));
  });

  it('leaves every other message alone', () => {
    const structured = { entries: ['a'] };
    const text = 'a';
    // Not sealed.
    expect(sealedMessageChunks(answer({ entries: ['a'] }, text) as JSONRPCMessage)).toBeNull();
    sealResult(structured, text);
    // Another text with the sealed object, the sealed object elsewhere, an error result, no content.
    expect(sealedMessageChunks(answer(structured, 'b') as JSONRPCMessage)).toBeNull();
    expect(sealedMessageChunks(answer({ other: structured }, text) as JSONRPCMessage)).toBeNull();
    expect(sealedMessageChunks({ jsonrpc: '2.0', id: 1, error: { code: 1, message: 'x' } })).toBeNull();
    expect(sealedMessageChunks({ jsonrpc: '2.0', id: 1, result: { structuredContent: structured } })).toBeNull();
    // The sealed object may not change.
    expect(() => {
      structured.entries.push('b');
    }).toThrow(TypeError);
    expect(sealedPartsOf(structured)?.structuredBytes.toString()).toBe('{"entries":["a"]}');
  });

  it('refuses to seal what JSON.stringify would not give back as it is', () => {
    expect(() => sealResult({ when: new Date(0) }, '')).toThrow(TypeError);
    expect(() => sealResult({ f: () => 1 }, '')).toThrow(TypeError);
    expect(() => sealResult({ u: undefined }, '')).toThrow(TypeError);
    expect(sealedPartsOf({})).toBeUndefined();
  });
});
