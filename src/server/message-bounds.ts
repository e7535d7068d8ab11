/**
 * The bounds of one message read from stdin, shared by the MCP stdin guard (src/server/stdio-guard.ts) and the
 * one-shot commands (`fs-tools call -`, `batch`: src/cli/call.ts): strict UTF-8, the longest line, the most object
 * members. Free of the MCP SDK, so the one-shot commands start without evaluating it.
 */
/**
 * One strict decoder for every line (one was built per message). `decode` without `stream` decodes a
 * whole input and resets the decoder, also after it threw on invalid UTF-8, so sharing it carries no state between
 * lines.
 */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * `bytes` as text when they are valid UTF-8, else null: never U+FFFD in place of bytes the sender wrote (RFC 8259
 * §8.1: JSON text is UTF-8). The one decoder of every line read from stdin (this guard, `fs-tools batch`, `call -`).
 */
export function strictUtf8(bytes: Uint8Array): string | null {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * The longest line accepted as a message: the SDK transports' read buffer (`STDIO_DEFAULT_MAX_BUFFER_SIZE`, 10 MiB)
 * must hold the line and its newline. Written out rather than imported, so that `fs-tools call` and `batch` do not
 * evaluate the SDK at start-up; test/server/stdio-guard.test.ts pins it to the SDK's constant.
 */
export const MAX_LINE_BYTES = 10 * 1024 * 1024 - 1;

/**
 * Most object members (`"key": value` pairs, at every depth together) one message may hold; a line with more is
 * answered -32600 unparsed. Ten times the arguments' own bound (src/server/validate-arguments.ts MAX_ARGUMENT_KEYS),
 * so a call between the two still gets its VALIDATION envelope (docs/security.md "Bounded work").
 */
export const MAX_MESSAGE_MEMBERS = 100_000;

/**
 * True when the JSON text `text` holds more than `limit` object members (colons outside strings), counted without
 * parsing and stopping at the first one past the limit. String bodies are skipped with native `indexOf` hops (an
 * escaped quote is one preceded by an odd run of backslashes), so the cost is one pass over the structure outside
 * strings plus one hop per quote — never more than the line's length. Text that is not JSON is counted the same way
 * (JSON.parse then refuses it).
 */
export function moreMembersThan(text: string, limit: number): boolean {
  // Every member has its colon: a text of at most `limit` characters holds at most `limit` members (every request line
  // of an ordinary call is one, and is not scanned).
  if (text.length <= limit) return false;
  let members = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const quote = text.indexOf('"', i);
    const end = quote === -1 ? n : quote;
    for (let k = i; k < end; k++) if (text.charCodeAt(k) === 0x3a && ++members > limit) return true;
    if (quote === -1) return false;
    // Skip the string that starts at `quote`.
    let from = quote + 1;
    for (;;) {
      const close = text.indexOf('"', from);
      if (close === -1) return false; // unterminated: not JSON
      let backslashes = 0;
      while (close - 1 - backslashes > quote && text.charCodeAt(close - 1 - backslashes) === 0x5c) backslashes++;
      if (backslashes % 2 === 0) {
        i = close + 1;
        break;
      }
      from = close + 1;
    }
  }
  return false;
}
