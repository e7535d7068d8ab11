/**
 * The stdin side of the stdio binding (docs/tools.md: malformed JSON-RPC gets a JSON-RPC error, and the server keeps
 * running): splits the byte stream into newline-terminated lines and turns each into one JSON-RPC message, parsed
 * and checked once (the SDK's transport used to parse and validate every line a second time). The SDK's
 * ReadBuffer silently skips a line that is not JSON and reports a line that is JSON but not a JSON-RPC message only
 * to `onerror`, so the client never hears back; this guard answers such lines itself — -32700 (parse error, id null)
 * for a line that is not JSON (invalid UTF-8 included), -32600 (invalid request, with the line's id when it has a
 * usable one) for JSON that is not a JSON-RPC message — and hands every valid message on as the SDK's own
 * `parseJSONRPCMessage` returns it. Blank lines are dropped without an answer.
 * A line longer than the SDK's transports accept (10 MB read buffer, line and newline; a longer line closes the
 * whole session there) is never parsed: once it outgrows the limit the guard stops buffering it, keeps only its
 * first and last 64 KiB to recover the request id, drops the rest up to its newline, answers -32600 (with that id,
 * else null) and goes on serving. Memory per line is bounded by the limit, whatever the line's length.
 * A line that answers one of the server's requests (an id, no method) but is no JSON-RPC response, or is dropped
 * unread, is never answered (JSON-RPC does not answer a response): the request it answers fails as malformed.
 * The transport around it (stdin/stdout, backpressure, close) is src/server/stdio-transport.ts.
 */
import { parseJSONRPCMessage, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { plainRequest } from './jsonrpc-request.js';
import { MAX_LINE_BYTES, MAX_MESSAGE_MEMBERS, moreMembersThan, strictUtf8 } from './message-bounds.js';

/** JSON-RPC 2.0 error codes for messages that never reach the SDK. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

/** How much of an over-long line's start and end is kept to find its id. */
const ID_WINDOW_BYTES = 64 * 1024;

/** Where the guard's results go. */
export interface LineGuardSinks {
  /**
   * One valid JSON-RPC message (parsed and checked by the SDK's `parseJSONRPCMessage`), or the error response that
   * stands for a client's malformed answer to a server request (see malformedAnswer).
   */
  message: (message: JSONRPCMessage) => void;
  /** One JSON-RPC error response to send for a line that was not a message (through the transport, in order). */
  reply: (message: JSONRPCMessage) => void;
  /**
   * Whether `id` is that of a request the server sent and still waits on: only then is a malformed line with that id
   * an answer (see malformedAnswer); otherwise it is an invalid request and gets -32600. Absent: every id is.
   */
  awaitsAnswer?: (id: string | number) => boolean;
}

/** The line splitter and judge: feed it stdin's chunks in order, then `end()` once at end of input. */
export interface LineGuard {
  /** Consumes one chunk; calls the sinks synchronously for every line it completes. */
  push(chunk: Buffer): void;
  /**
   * End of input: an over-long line being dropped is answered; an unterminated last line is dropped without an
   * answer (a message is a newline-terminated line, as for the SDK's ReadBuffer, which waited for the newline).
   */
  end(): void;
}

/**
 * Makes a line guard that calls `sinks.message` for each valid line and `sinks.reply` for each malformed one.
 * Never throws for anything on the wire; an exception thrown by a sink propagates to the `push` caller.
 */
export function createLineGuard(sinks: LineGuardSinks): LineGuard {
  const awaits = (id: string | number): boolean => sinks.awaitsAnswer?.(id) ?? true;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /** The over-long line being dropped: its head and a rolling tail (for the id), and how long it got. */
  let dropping: { head: Buffer; tail: Buffer[]; tailBytes: number; bytes: number } | null = null;

  const keepTail = (d: NonNullable<typeof dropping>, part: Buffer): void => {
    d.bytes += part.length;
    d.tail.push(part.length > ID_WINDOW_BYTES ? Buffer.from(part.subarray(part.length - ID_WINDOW_BYTES)) : part);
    d.tailBytes += d.tail[d.tail.length - 1].length;
    while (d.tail.length > 1 && d.tailBytes - d.tail[0].length >= ID_WINDOW_BYTES)
      d.tailBytes -= d.tail.shift()!.length;
  };
  const startDropping = (parts: Buffer[]): void => {
    const all = Buffer.concat(parts);
    dropping = { head: Buffer.from(all.subarray(0, ID_WINDOW_BYTES)), tail: [], tailBytes: 0, bytes: 0 };
    keepTail(dropping, all);
  };
  const finishDropping = (): void => {
    const d = dropping!;
    dropping = null;
    const id = idOfLongLine(d.head, Buffer.concat(d.tail));
    const why = `the line is ${d.bytes} bytes long, over the ${MAX_LINE_BYTES}-byte limit of one message; it was dropped`;
    if (id !== null && awaits(id) && responseHead(d.head.toString('utf8')))
      sinks.message(malformedAnswer(id, `an answer: ${why}`));
    else sinks.reply(errorResponse(id, INVALID_REQUEST, `Invalid Request: ${why}`));
  };

  const judge = (line: Buffer): void => {
    // Decode strictly: invalid UTF-8 is not JSON text (RFC 8259 §8.1), not U+FFFD soup.
    let text = strictUtf8(line);
    if (text === null) {
      sinks.reply(errorResponse(null, PARSE_ERROR, 'Parse error: the line is not valid UTF-8'));
      return;
    }
    if (text.endsWith('\r')) text = text.slice(0, -1);
    // Parsing cost grows with the number of object members (a 700,000-key object took seconds in JSON.parse alone):
    // a line past MAX_MESSAGE_MEMBERS is never parsed, like an over-long one (docs/security.md "Bounded work").
    if (moreMembersThan(text, MAX_MESSAGE_MEMBERS)) {
      const head = line.subarray(0, ID_WINDOW_BYTES);
      const id = idOfLongLine(head, line.subarray(Math.max(0, line.length - ID_WINDOW_BYTES)));
      const why = `the message holds more than ${MAX_MESSAGE_MEMBERS} object members; it was dropped`;
      if (id !== null && awaits(id) && responseHead(head.toString('utf8')))
        sinks.message(malformedAnswer(id, `an answer: ${why}`));
      else sinks.reply(errorResponse(id, INVALID_REQUEST, `Invalid Request: ${why}`));
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      if (text.trim() === '') return;
      sinks.reply(errorResponse(null, PARSE_ERROR, 'Parse error: the line is not valid JSON'));
      return;
    }
    let message: JSONRPCMessage;
    try {
      // The common request shape is recognized without zod, as the SDK's parse would return it; the rest is parsed.
      message = plainRequest(value) ?? parseJSONRPCMessage(value);
    } catch {
      const id = (value as { id?: unknown } | null)?.id;
      const usable = typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
      if (
        usable !== null &&
        awaits(usable) &&
        typeof value === 'object' &&
        !Array.isArray(value) &&
        !('method' in value!)
      ) {
        // An answer to one of the server's requests, in a shape JSON-RPC does not allow (a `result` that is not an
        // object, neither result nor error): that request fails now, as malformed, not at the SDK's timeout.
        const result = (value as { result?: unknown }).result;
        sinks.message(malformedAnswer(usable, JSON.stringify(result)?.slice(0, 800) ?? 'neither result nor error'));
        return;
      }
      sinks.reply(errorResponse(usable, INVALID_REQUEST, 'Invalid Request: not a JSON-RPC 2.0 message'));
      return;
    }
    sinks.message(message);
  };

  return {
    push(chunk: Buffer): void {
      let rest = chunk;
      while (rest.length > 0) {
        const newline = rest.indexOf(0x0a);
        if (dropping) {
          keepTail(dropping, newline === -1 ? rest : rest.subarray(0, newline));
          if (newline === -1) break;
          finishDropping();
          rest = rest.subarray(newline + 1);
          continue;
        }
        if (newline === -1) {
          pending.push(rest);
          pendingBytes += rest.length;
          if (pendingBytes > MAX_LINE_BYTES) {
            startDropping(pending);
            pending = [];
            pendingBytes = 0;
          }
          break;
        }
        const line =
          pending.length === 0 ? rest.subarray(0, newline) : Buffer.concat([...pending, rest.subarray(0, newline)]);
        pending = [];
        pendingBytes = 0;
        rest = rest.subarray(newline + 1);
        if (line.length > MAX_LINE_BYTES) {
          startDropping([line]);
          finishDropping();
        } else {
          judge(line);
        }
      }
    },
    end(): void {
      pending = [];
      pendingBytes = 0;
      if (dropping) finishDropping();
    },
  };
}

/** Where a malformed answer's error response carries the answer's text (see malformedAnswerText). */
const MALFORMED_ANSWER = 'fs_tools_malformed_answer';

/**
 * A client's line that answers one of the server's requests (an id and no method) but is not a JSON-RPC response —
 * its `result` is not an object, it has neither result nor error, or it is too long or too large to parse — handed to
 * the SDK as an error response for that id, so the request fails at once as malformed instead of waiting for the
 * SDK's timeout with the state it would have changed (the roots: docs/security.md "Roots"). JSON-RPC never answers a
 * response, so the client gets nothing back. `text` says what the answer was (its result's JSON, cut, or why it was
 * dropped unread).
 */
function malformedAnswer(id: string | number, text: string): JSONRPCMessage {
  return {
    jsonrpc: '2.0',
    id,
    error: { code: INVALID_REQUEST, message: 'Invalid response', data: { [MALFORMED_ANSWER]: text } },
  } as unknown as JSONRPCMessage;
}

/**
 * The text of a malformed answer when `error` is the failure of a request whose answer was one (see malformedAnswer),
 * else null. A client that sends such an error itself only makes its own answer count as malformed.
 */
export function malformedAnswerText(error: unknown): string | null {
  const data = (error as { data?: unknown } | null)?.data;
  const text = typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[MALFORMED_ANSWER] : null;
  return typeof text === 'string' ? text : null;
}

function errorResponse(id: string | number | null, code: number, message: string): JSONRPCMessage {
  // id null is what JSON-RPC 2.0 prescribes when the request's id cannot be determined.
  return { jsonrpc: '2.0', id, error: { code, message } } as unknown as JSONRPCMessage;
}

/**
 * The id of an over-long request, from the little of it that was kept: a top-level "id" member in its first bytes
 * (ids written before params), else one that ends the line (`…,"id":7}`: the TypeScript SDK's clients write the id
 * last). null when neither holds a usable id (JSON-RPC 2.0 answers such a request with id null).
 */
export function idOfLongLine(head: Buffer, tail: Buffer): string | number | null {
  return idNearStart(head.toString('utf8')) ?? idAtEnd(tail.toString('utf8'));
}

function usableId(token: string): string | number | null {
  try {
    const value: unknown = JSON.parse(token);
    return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) ? value : null;
  } catch {
    return null;
  }
}

const ID_VALUE = /^\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*")/;

/**
 * Calls `visit(key, end)` for each top-level member key of the object that starts `text` (which may be cut anywhere),
 * in order, where `end` is the index of the key's closing quote; stops when `visit` returns true or the text ends.
 */
function visitTopLevelKeys(text: string, visit: (key: string | number | null, end: number) => boolean): void {
  let i = text.search(/\S/);
  if (i === -1 || text[i] !== '{') return;
  let depth = 0;
  let expectKey = false;
  for (; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (end >= text.length) return;
      if (depth === 1 && expectKey && visit(usableId(text.slice(i, end + 1)), end)) return;
      expectKey = false;
      i = end;
    } else if (ch === '{' || ch === '[') {
      depth++;
      expectKey = depth === 1 && ch === '{';
    } else if (ch === '}' || ch === ']') {
      depth--;
    } else if (ch === ',' && depth === 1) {
      expectKey = true;
    }
  }
}

/** A top-level "id" member of the object that starts `text` (which may be cut anywhere). */
function idNearStart(text: string): string | number | null {
  let id: string | number | null = null;
  visitTopLevelKeys(text, (key, end) => {
    if (key !== 'id') return false;
    const value = ID_VALUE.exec(text.slice(end + 1, end + 1 + 1024));
    id = value ? usableId(value[1]) : null;
    return true;
  });
  return id;
}

/**
 * True when the first bytes of a line too long or too large to parse show a response: a top-level `result` or
 * `error` member and no `method` among the members they hold.
 */
function responseHead(text: string): boolean {
  let answer = false;
  let method = false;
  visitTopLevelKeys(text, (key) => {
    if (key === 'method') method = true;
    if (key === 'result' || key === 'error') answer = true;
    return method;
  });
  return answer && !method;
}

/** An "id" member that is the last member of the line's top-level object. */
function idAtEnd(text: string): string | number | null {
  const m = /"id"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*")\s*\}\s*$/.exec(text);
  return m ? usableId(m[1]) : null;
}
