/**
 * A line filter in front of the SDK's stdio transport (SPEC §2: malformed JSON-RPC gets a JSON-RPC error, and the
 * server keeps running). The SDK's ReadBuffer silently skips a line that is not JSON and reports a line that is JSON
 * but not a JSON-RPC message only to `onerror`, so the client never hears back. This filter answers such lines
 * itself — -32700 (parse error, id null) for a line that is not JSON (invalid UTF-8 included), -32600 (invalid
 * request, with the line's id when it has a usable one) for JSON that is not a JSON-RPC message — and passes every
 * valid line through unchanged. Blank lines are dropped without an answer.
 */
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { parseJSONRPCMessage, STDIO_DEFAULT_MAX_BUFFER_SIZE, type JSONRPCMessage } from '@modelcontextprotocol/server';

/** JSON-RPC 2.0 error codes for messages that never reach the SDK. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

/**
 * Pipes `input` (stdin) through the filter and returns the stream to hand to the transport.
 * @param reply sends one JSON-RPC error response (through the transport, so it shares stdout's ordering)
 */
export function guardStdin(input: Readable, reply: (message: JSONRPCMessage) => void): Readable {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // A line longer than the SDK's buffer cap is passed through raw, so the SDK's own limit still decides it.
  let passThrough = false;

  const judge = (line: Buffer): void => {
    // Decode strictly: invalid UTF-8 is not JSON text (RFC 8259 §8.1), not U+FFFD soup.
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(line).replace(/\r$/, '');
    } catch {
      reply(errorResponse(null, PARSE_ERROR, 'Parse error: the line is not valid UTF-8'));
      return;
    }
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      reply(errorResponse(null, PARSE_ERROR, 'Parse error: the line is not valid JSON'));
      return;
    }
    try {
      parseJSONRPCMessage(value);
    } catch {
      const id = (value as { id?: unknown } | null)?.id;
      const usable = typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
      reply(errorResponse(usable, INVALID_REQUEST, 'Invalid Request: not a JSON-RPC 2.0 message'));
      return;
    }
    guard.push(Buffer.concat([line, Buffer.from('\n')]));
  };

  const guard = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      let rest = chunk;
      while (rest.length > 0) {
        const newline = rest.indexOf(0x0a);
        if (passThrough) {
          this.push(newline === -1 ? rest : rest.subarray(0, newline + 1));
          if (newline === -1) break;
          passThrough = false;
          rest = rest.subarray(newline + 1);
          continue;
        }
        if (newline === -1) {
          pending.push(rest);
          pendingBytes += rest.length;
          if (pendingBytes > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
            this.push(Buffer.concat(pending));
            pending = [];
            pendingBytes = 0;
            passThrough = true;
          }
          break;
        }
        const line = Buffer.concat([...pending, rest.subarray(0, newline)]);
        pending = [];
        pendingBytes = 0;
        rest = rest.subarray(newline + 1);
        judge(line);
      }
      done();
    },
    flush(done: TransformCallback) {
      // An unterminated last line is handed on as the SDK would see it (it waits for a newline that never comes).
      if (pendingBytes > 0) this.push(Buffer.concat(pending));
      done();
    },
  });
  input.on('error', (error) => guard.destroy(error));
  return input.pipe(guard);
}

function errorResponse(id: string | number | null, code: number, message: string): JSONRPCMessage {
  // id null is what JSON-RPC 2.0 prescribes when the request's id cannot be determined.
  return { jsonrpc: '2.0', id, error: { code, message } } as unknown as JSONRPCMessage;
}
