/**
 * The response budget: every tools/call result, as serialized on the wire (structuredContent and text
 * content together, JSON escapes included), stays under RESPONSE_LIMIT_BYTES — well inside the 10 MiB read buffer of
 * both SDK clients (`STDIO_DEFAULT_MAX_BUFFER_SIZE` in @modelcontextprotocol/sdk 1.x and @modelcontextprotocol/client
 * 2.x; a line longer than that makes the client drop the transport, killing the session).
 *
 * Tools budget as they build: a handler takes a `ResponseBudget` (TOOL_BUDGET_BYTES) and charges each entry's
 * serialized cost before adding it; what does not fit is left for the next page (truncated + a continuation). The
 * difference between the two limits is headroom for what the server adds around a handler's result (JSON-RPC framing,
 * facts blocks). `guardResponse` is the last line: a result that still exceeds RESPONSE_LIMIT_BYTES (a bug in a
 * tool's budgeting) becomes a VALIDATION envelope (reason response_too_large), never an oversized message.
 */
import { sealedPartsOf } from './sealed-result.js';
import { toEnvelope } from '../errors/to-envelope.js';
import { ToolError } from '../errors/tool-error.js';

/** Hard limit on one serialized tools/call result, bytes (4 MiB: 40 % of the clients' 10 MiB buffer). */
export const RESPONSE_LIMIT_BYTES = 4 * 1024 * 1024;
/** What a tool plans its result for, bytes (structured + text, serialized). */
export const TOOL_BUDGET_BYTES = 3 * 1024 * 1024;

/**
 * Bytes of `JSON.stringify(s)` in UTF-8 without its two quotes, computed without building it: `"` `\` and the
 * short escapes (\b \t \n \f \r) cost 2, other control characters and lone surrogates 6 (\u00XX), a surrogate pair 4,
 * everything else its UTF-8 length.
 */
export function jsonStringBytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length;) {
    const c = s.charCodeAt(i);
    // Printable ASCII other than `"` and `\` (nearly every character of a path): one byte, no call.
    if (c >= 0x20 && c < 0x7f && c !== 0x22 && c !== 0x5c) {
      n++;
      i++;
    } else {
      n += charCost(s, i);
      i += isPair(s, i) ? 2 : 1;
    }
  }
  return n;
}

function isPair(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  if (c < 0xd800 || c > 0xdbff || i + 1 >= s.length) return false;
  const d = s.charCodeAt(i + 1);
  return d >= 0xdc00 && d <= 0xdfff;
}

/** Serialized cost of the character (or surrogate pair) starting at index i. */
function charCost(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c < 0x20) return c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
  if (c === 0x22 || c === 0x5c) return 2;
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdfff) return isPair(s, i) ? 4 : 6;
  return 3;
}

/** Bytes of `JSON.stringify(value)` in UTF-8. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** Nesting past which `jsonBytesBound` stops estimating and serializes (a cycle then throws as JSON.stringify does). */
const BOUND_MAX_DEPTH = 64;

/**
 * An upper bound of `jsonBytes(value)` computed without serializing (the guard below ran on every result,
 * and serializing it cost as much as the SDK's own serialization of the message). A string costs at most 6 bytes
 * per UTF-16 code unit (`\u00XX`; a surrogate pair is 4 bytes for 2 units, any other character at most 3) plus its
 * quotes, a number at most 25 (the longest `Number.prototype.toString`: a sign, `0.00000` and 17 significant digits, e.g.
 * `-0.0000010813526559002152`, just above 1e-6 where the exponent form begins; `-1.2345678901234567e-308` is 24), `true`,
 * `false`, `null` at most 5; an object or array its brackets, keys, colons and commas. Anything else (a `toJSON`
 * method such as a Date's, a bigint, a function, nesting deeper than BOUND_MAX_DEPTH) is measured exactly with
 * `jsonBytes`, so the bound never undercounts. Units: bytes of UTF-8.
 * @throws TypeError where JSON.stringify throws (a cycle, a bigint)
 */
export function jsonBytesBound(value: unknown, depth = 0): number {
  switch (typeof value) {
    case 'string':
      return 2 + 6 * value.length;
    case 'number':
      return 25;
    case 'boolean':
      return 5;
    case 'undefined':
      return 4; // "null" inside an array; an object member that is undefined is left out (counted as at most this)
    case 'object': {
      if (value === null) return 4;
      if (depth >= BOUND_MAX_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function')
        return jsonBytes(value);
      // A sealed result (src/tools/sealed-result.ts) is measured: its bytes were serialized when it was sealed.
      const sealed = depth <= 2 ? sealedPartsOf(value) : undefined;
      if (sealed !== undefined) return sealed.structuredBytes.length;
      let n = 2;
      if (Array.isArray(value)) {
        for (const item of value as unknown[]) n += jsonBytesBound(item, depth + 1) + 1;
        return n;
      }
      for (const key in value) {
        if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
        n += 2 + 6 * key.length + 1 + jsonBytesBound((value as Record<string, unknown>)[key], depth + 1) + 1;
      }
      return n;
    }
    default:
      return jsonBytes(value);
  }
}

/**
 * The longest prefix of `s` (whole characters, never half a surrogate pair) whose serialized cost
 * (`jsonStringBytes`) is at most `maxBytes`.
 */
export function prefixWithinJsonBytes(s: string, maxBytes: number): string {
  let n = 0;
  let i = 0;
  while (i < s.length) {
    const cost = charCost(s, i);
    if (n + cost > maxBytes) break;
    n += cost;
    i += isPair(s, i) ? 2 : 1;
  }
  return s.slice(0, i);
}

/** A per-call byte budget a tool charges as it builds its result. */
export class ResponseBudget {
  private used = 0;
  constructor(readonly limit: number = TOOL_BUDGET_BYTES) {}

  /** Bytes still available (never negative). */
  get remaining(): number {
    return Math.max(0, this.limit - this.used);
  }

  /** Charges `bytes` when they fit and returns true; returns false (charging nothing) when they do not. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }

  /** Charges `bytes` unconditionally (the fixed part of a result, or the first entry that must make progress). */
  charge(bytes: number): void {
    this.used += bytes;
  }
}

/** A tools/call result as the server sends it (only the parts the guard reads). */
interface WireResult {
  content: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  [key: string]: unknown;
}

/**
 * The final guard (create-server.ts): returns `result` when its serialization is within RESPONSE_LIMIT_BYTES, else
 * a VALIDATION envelope (details.reason response_too_large, bytes, limit) that tells the caller to narrow the call.
 * For a mutating call that succeeded, the envelope says the change was applied (recovery check_already_applied).
 */
export function guardResponse<T extends WireResult>(result: T, tool: string, mutated: boolean): T | WireResult {
  // The cheap bound settles almost every result; only one near the limit is serialized to be measured exactly.
  if (jsonBytesBound(result) <= RESPONSE_LIMIT_BYTES) return result;
  const bytes = jsonBytes(result);
  if (bytes <= RESPONSE_LIMIT_BYTES) return result;
  const envelope = toEnvelope(
    new ToolError(
      'VALIDATION',
      `The result of ${tool} (${bytes} bytes serialized) exceeds the response limit of ${RESPONSE_LIMIT_BYTES} bytes` +
        `${mutated ? '; the change itself was applied' : ''}.`,
      {
        details: { reason: 'response_too_large', bytes, limit: RESPONSE_LIMIT_BYTES },
        suggestion: mutated
          ? 'Do not repeat the call: check the changed files with read_file or git_diff (in pages).'
          : 'Narrow the call: fewer paths, a smaller max_bytes/max_results/max_entries, or a range.',
        ...(mutated ? { recovery: 'check_already_applied' as const } : {}),
      },
    ),
  );
  return { content: [{ type: 'text', text: JSON.stringify(envelope) }], isError: true };
}
