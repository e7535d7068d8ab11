/**
 * The common JSON-RPC request recognized without zod (src/server/stdio-guard.ts). Nearly every line a server reads is
 * a request whose envelope is four members — `jsonrpc: "2.0"`, an id, a method, params that are a plain object — and
 * the SDK's `parseJSONRPCMessage` (a zod union of four strict object schemas) is about a tenth of a small read_file's
 * own CPU while V8 is still warming up (docs/benchmarks.md "Start-up, read_file and memory"). `plainRequest` accepts only
 * envelopes that schema passes and builds exactly the object it returns: the members in the schema's order
 * (`jsonrpc`, `id`, `method`, `params`), a fresh `params` object holding the same members in the same order, the
 * members' values as they are. Anything else — a notification, a response, params with `_meta`, an `__proto__` member,
 * an id that is not a string or safe integer, an extra member, a wrong type — is left to the SDK's parse, which then
 * decides as before. test/server/jsonrpc-request.test.ts checks both against each other on generated messages.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/server';

/**
 * The request `parseJSONRPCMessage(value)` would return, or undefined when `value` is not a request of the plain
 * shape (the caller then parses it the SDK's way). Never throws; reads `value` (a JSON.parse result) without changing
 * it.
 */
export function plainRequest(value: unknown): JSONRPCMessage | undefined {
  if (!plainRecord(value)) return undefined;
  let members = 0;
  for (const key in value) {
    if (key !== 'jsonrpc' && key !== 'id' && key !== 'method' && key !== 'params') return undefined;
    members++;
  }
  const { jsonrpc, id, method, params } = value;
  if (jsonrpc !== '2.0' || typeof method !== 'string') return undefined;
  // The schema's id: a string, or an integer within ±(2^53 − 1) (-0 is left to it, so no sign question arises).
  if (typeof id !== 'string' && !(Number.isSafeInteger(id) && !Object.is(id, -0))) return undefined;
  if (params === undefined) return members === 3 ? ({ jsonrpc, id, method } as JSONRPCMessage) : undefined;
  if (!plainRecord(params) || Object.hasOwn(params, '_meta') || Object.hasOwn(params, '__proto__')) return undefined;
  const copy: Record<string, unknown> = {};
  for (const key in params) copy[key] = params[key];
  return { jsonrpc, id, method, params: copy } as JSONRPCMessage;
}

/** A JSON object as JSON.parse builds it: not null, not an array, Object.prototype as its prototype. */
function plainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}
