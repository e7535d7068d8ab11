/**
 * The stdin guard's zod-free request recognition (src/server/jsonrpc-request.ts) against the SDK's
 * `parseJSONRPCMessage`: whatever `plainRequest` accepts, the SDK's parse accepts too and returns the same message —
 * same members in the same order, same values (the arguments object itself), a fresh params object; whatever the
 * SDK's parse refuses, `plainRequest` refuses. Requests with `_meta`, notifications and responses are left to the SDK.
 */
import { parseJSONRPCMessage } from '@modelcontextprotocol/server';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plainRequest } from '../../src/server/jsonrpc-request.js';

/** The SDK's answer: the parsed message, or null when it throws. */
function sdk(value: unknown): unknown {
  try {
    return parseJSONRPCMessage(value);
  } catch {
    return null;
  }
}

/** Asserts that `plainRequest` agrees with the SDK on `value` wherever it answers; returns whether it answered. */
function agrees(value: unknown): boolean {
  const fast = plainRequest(value);
  if (fast === undefined) return false;
  const expected = sdk(value);
  expect(expected).not.toBeNull();
  // Same members in the same order, same values, compared as the wire would carry them and structurally.
  expect(JSON.stringify(fast)).toBe(JSON.stringify(expected));
  expect(fast).toStrictEqual(expected);
  expect(Object.keys(fast)).toEqual(Object.keys(expected as object));
  const params = (value as { params?: Record<string, unknown> }).params;
  const out = (fast as { params?: Record<string, unknown> }).params;
  if (params !== undefined) {
    expect(out).not.toBe(params);
    expect(Object.keys(out!)).toEqual(Object.keys((expected as { params: object }).params));
    for (const key of Object.keys(params)) expect(out![key]).toBe(params[key]);
  }
  return true;
}

const ids = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.integer(),
  fc.constantFrom(2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, 1.5, -0, 0, null, true),
);
const keys = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('name', 'arguments', '_meta', '__proto__', '0', 'id'),
);
const params = fc.oneof(
  fc.constant(undefined),
  fc.dictionary(keys, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  fc.jsonValue({ maxDepth: 1 }),
);
const envelopes = fc.record(
  {
    jsonrpc: fc.constantFrom('2.0', '2.0', '1.0', 2),
    id: ids,
    method: fc.oneof(fc.constantFrom('tools/call', 'ping'), fc.string({ maxLength: 4 }), fc.integer()),
    params,
    result: fc.jsonValue({ maxDepth: 1 }),
    error: fc.jsonValue({ maxDepth: 1 }),
    extra: fc.jsonValue({ maxDepth: 1 }),
  },
  { requiredKeys: [] },
);

/** Requests of the plain shape, members in any order (the common case, so that many are answered). */
const requests = fc
  .record({ id: ids, method: fc.string({ maxLength: 6 }), params: params })
  .chain((r) =>
    fc
      .shuffledSubarray(Object.entries({ jsonrpc: '2.0', ...r }), { minLength: 4, maxLength: 4 })
      .map((entries) => Object.fromEntries(entries)),
  );

describe('plainRequest', () => {
  it('answers as parseJSONRPCMessage for a tools/call request, whatever the member order', () => {
    const line =
      '{"params":{"arguments":{"path":"/x"},"name":"read_file"},"method":"tools/call","id":7,"jsonrpc":"2.0"}';
    expect(agrees(JSON.parse(line))).toBe(true);
    expect(JSON.stringify(plainRequest(JSON.parse(line)))).toBe(
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"path":"/x"},"name":"read_file"}}',
    );
    expect(agrees({ jsonrpc: '2.0', id: 'a', method: 'ping' })).toBe(true);
  });

  it('leaves _meta, __proto__, odd ids, notifications, responses and extra members to the SDK', () => {
    const refused = [
      { jsonrpc: '2.0', id: 1, method: 'x', params: { _meta: { progressToken: 1 } } },
      JSON.parse('{"jsonrpc":"2.0","id":1,"method":"x","params":{"__proto__":{"a":1}}}'),
      { jsonrpc: '2.0', id: 1.5, method: 'x' },
      { jsonrpc: '2.0', id: -0, method: 'x' },
      { jsonrpc: '2.0', id: 2 ** 53, method: 'x' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: 1, method: 'x', extra: 1 },
      { jsonrpc: '2.0', id: 1, method: 'x', params: [] },
      { jsonrpc: '2.0', id: 1, method: 'x', params: null },
      Object.assign(Object.create(null) as object, { jsonrpc: '2.0', id: 1, method: 'x' }),
      [],
      null,
      'x',
    ];
    for (const value of refused) expect(plainRequest(value)).toBeUndefined();
  });

  it('agrees with parseJSONRPCMessage on generated envelopes (as JSON.parse builds them)', () => {
    // Arbitrary envelopes are nearly all refused: about one in 2,000 is a plain request, so 3,000 of them answered none
    // for 9 of seeds 1–40 (the review's count) and the test failed at random. Half the draws are plain requests, so the
    // count below proves both kinds were checked, whatever the seed.
    let answered = 0;
    fc.assert(
      fc.property(fc.oneof(envelopes, requests), (envelope) => {
        const value: unknown = JSON.parse(JSON.stringify(envelope));
        if (agrees(value)) answered++;
      }),
      { numRuns: 3000 },
    );
    expect(answered).toBeGreaterThan(0);
  });

  it('answers most plain requests, always as parseJSONRPCMessage does', () => {
    let answered = 0;
    fc.assert(
      fc.property(requests, (request) => {
        if (agrees(JSON.parse(JSON.stringify(request)))) answered++;
      }),
      { numRuns: 2000 },
    );
    expect(answered).toBeGreaterThan(500);
  });

  // Review (session 15, r15-review-misc): JSON texts whose parse the generators above do not produce — members named
  // through escapes, duplicate members (the last wins), `__proto__` as JSON.parse makes it (an own member), ids at
  // the edges of the safe range. The same lines sent to dist/cli.js of 25a8f52 and of 97844c8 got byte-identical
  // answers in the same order (53 lines, /tmp probe); here each must agree with the SDK's parse where it answers.
  it('agrees with parseJSONRPCMessage on hand-made JSON texts', () => {
    const texts = [
      '{"jsonrpc":"2.0","id":-0,"method":"ping"}',
      '{"jsonrpc":"2.0","id":1e21,"method":"ping"}',
      '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}',
      '{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping"}',
      '{"jsonrpc":"2.0","id":3e0,"method":"ping"}',
      '{"jsonrpc":"2.0","id":13,"id":14,"method":"ping"}',
      '{"jsonrpc":"2.0","id":15,"method":5,"method":"ping"}',
      '{"jsonrpc":"2.0","id":9,"method":"ping","__proto__":{}}',
      '{"jsonrpc":"2.0","id":10,"method":"m","params":{"__proto__":{"name":"read_file"},"name":"x"}}',
      '{"jsonrpc":"2.0","id":36,"method":"ping","params":{"__proto__":[]}}',
      '{"jsonrpc":"2.0","id":11,"method":"m","params":{"constructor":1,"toString":2,"hasOwnProperty":3}}',
      '{"jsonrpc":"2.0","id":28,"method":"ping","\\u005f_proto__":1}',
      '{"jsonrpc":"2.0","id":29,"method":"m","params":{"\\u005fmeta":{"progressToken":"t"},"name":"x"}}',
      '{"jsonrpc":"2.0","id":22,"method":"ping","params":{"_meta":null}}',
      '{"jsonrpc":"2.0","id":27,"method":"m","params":{"2":1,"1":2,"name":"x"}}',
      '{"params":{"name":"x","arguments":{"path":"a"}},"method":"tools/call","id":26,"jsonrpc":"2.0"}',
      '{"jsonrpc":"2.0","id":33,"method":"m","params":{},"result":{}}',
      '{"jsonrpc":"2.0 ","id":16,"method":"ping"}',
      '[{"jsonrpc":"2.0","id":21,"method":"ping"}]',
    ];
    const answered = texts.filter((t) => agrees(JSON.parse(t)));
    for (const t of texts) if (!answered.includes(t)) expect(plainRequest(JSON.parse(t))).toBeUndefined();
    expect(answered).toEqual([
      '{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping"}',
      '{"jsonrpc":"2.0","id":3e0,"method":"ping"}',
      '{"jsonrpc":"2.0","id":13,"id":14,"method":"ping"}',
      '{"jsonrpc":"2.0","id":15,"method":5,"method":"ping"}',
      '{"jsonrpc":"2.0","id":11,"method":"m","params":{"constructor":1,"toString":2,"hasOwnProperty":3}}',
      '{"jsonrpc":"2.0","id":27,"method":"m","params":{"2":1,"1":2,"name":"x"}}',
      '{"params":{"name":"x","arguments":{"path":"a"}},"method":"tools/call","id":26,"jsonrpc":"2.0"}',
    ]);
  });
});
