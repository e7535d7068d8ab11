/**
 * The stdio transport handed to the SDK's `serveStdio` (docs/tools.md; the MCP stdio binding: one JSON-RPC message per
 * line, stdout carries only protocol messages). It does what the SDK's `StdioServerTransport` does — framing, stdout
 * backpressure, closing when stdin ends — with the stdin guard (src/server/stdio-guard.ts) as its framing, so every
 * line is decoded, parsed and checked exactly once (the guard and the SDK's ReadBuffer each parsed and
 * validated every line). Responses written in the same turn of the event loop (several calls in flight) leave in one
 * write: stdout is corked while the turn's messages are queued and uncorked once they are all there. The answer to the
 * only request in flight (a client calling one at a time) is written at once: nothing could join it.
 * It knows nothing about tools or protocol eras; `serveStdio` owns those.
 */
import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { createLineGuard, type LineGuard } from './stdio-guard.js';
import { sealedPartsOf } from '../tools/sealed-result.js';

/** Most requests of this server awaiting answers that are remembered (a few roots/list at a time in practice). */
const MAX_AWAITED_ANSWERS = 1024;

/**
 * Most ids of the client's unanswered requests noted (past it an answer may be written alone while others are in
 * flight: one write more, the same bytes).
 */
const MAX_UNANSWERED = 4096;

/**
 * A `Transport` over a byte stream pair (stdin, stdout). `onmessage` receives each valid message once; malformed
 * lines are answered on stdout by the guard and never reach `onmessage`. When stdin ends or closes, or stdout fails,
 * the transport closes (`onclose`); requests still in flight are not answered, as with the SDK's transport.
 */
export class GuardedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly guard: LineGuard;
  private started = false;
  private closed = false;
  /** True while stdout is corked for this turn (an uncork is scheduled). */
  private corked = false;
  /** Ids of the requests this server sent (roots/list) whose answers have not arrived: a malformed line naming one is
   * that request's malformed answer, any other is an invalid request (src/server/stdio-guard.ts). */
  private readonly awaitingAnswer = new Set<string | number>();
  /**
   * The client's requests received and not yet answered, by id (a count per id: a client may reuse one). Only decides
   * whether an answer may leave at once (see `send`); at most MAX_UNANSWERED ids are noted.
   */
  private readonly unanswered = new Map<string | number, number>();
  /** The pending wait for stdout's 'drain', shared by the sends that met a full buffer (null: none pending). */
  private drainWait: Promise<void> | null = null;

  /**
   * @param input stdin (or any readable byte stream)
   * @param output stdout (or any writable byte stream); the transport writes only JSON-RPC messages to it
   */
  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    /**
     * Called when stdin ends; the transport stays open (answers still go out on stdout) until the promise settles,
     * then closes. Without it the transport closes at once (graceful shutdown: src/server/shutdown.ts).
     */
    private readonly onInputEnded?: () => Promise<void>,
  ) {
    this.guard = createLineGuard({
      message: (message) => {
        const m = message as { id?: string | number; method?: unknown; params?: { requestId?: unknown } };
        if (m.id !== undefined) {
          if (m.method === undefined) this.awaitingAnswer.delete(m.id);
          else this.noteRequest(m.id);
        } else if (m.method === 'notifications/cancelled') {
          // A cancelled request is not answered (the SDK sends nothing for it).
          const id = m.params?.requestId;
          if (typeof id === 'string' || typeof id === 'number') this.noteAnswered(id);
        }
        this.onmessage?.(message);
      },
      reply: (message) => {
        this.send(message).catch(() => {});
      },
      awaitsAnswer: (id) => this.awaitingAnswer.has(id),
    });
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.closed) return;
    try {
      this.guard.push(chunk);
    } catch (error) {
      // A handler that threw synchronously: report it, keep serving (the SDK's transport reported it the same way).
      this.onerror?.(error as Error);
    }
  };

  private readonly onInputError = (error: Error): void => {
    this.onerror?.(error);
  };

  private inputEnded = false;

  private readonly onInputEnd = (): void => {
    if (this.inputEnded) return;
    this.inputEnded = true;
    this.guard.end();
    if (!this.onInputEnded || this.closed) {
      void this.close();
      return;
    }
    this.input.off('data', this.onData);
    void this.onInputEnded().finally(() => void this.close());
  };

  private readonly onOutputError = (error: Error): void => {
    // After close the listener stays attached only to swallow late write failures (EPIPE once the client left).
    if (this.closed) return;
    this.onerror?.(error);
    void this.close();
  };

  private readonly uncork = (): void => {
    this.corked = false;
    this.output.uncork();
  };

  /** Starts reading stdin. @throws Error when called twice (the SDK's contract) */
  start(): Promise<void> {
    if (this.started) return Promise.reject(new Error('GuardedStdioTransport already started'));
    this.started = true;
    if (this.input.readableEnded || this.input.destroyed) setImmediate(this.onInputEnd);
    this.input.on('data', this.onData);
    this.input.on('error', this.onInputError);
    this.input.on('end', this.onInputEnd);
    this.input.on('close', this.onInputEnd);
    this.output.on('error', this.onOutputError);
    return Promise.resolve();
  }

  /**
   * Writes one message as one line. Resolves once stdout took it (at once, or after `drain` when stdout's buffer is
   * full). @throws (rejects) when the transport is closed, the message cannot be serialized, or stdout fails
   */
  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return Promise.reject(new Error('GuardedStdioTransport is closed'));
    const m = message as { id?: string | number; method?: unknown };
    if (m.id !== undefined && typeof m.method === 'string') {
      // Past the bound the oldest is forgotten (a Set keeps insertion order), never the ones just sent.
      if (this.awaitingAnswer.size >= MAX_AWAITED_ANSWERS) {
        this.awaitingAnswer.delete(this.awaitingAnswer.values().next().value as string | number);
      }
      this.awaitingAnswer.add(m.id);
    }
    let line: string | (string | Buffer)[];
    try {
      line = sealedMessageChunks(message) ?? `${serializeMessage(message)}\n`;
    } catch (error) {
      // As the SDK's transport: a send fails by rejecting (callers `.catch` it), never by throwing.
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    // The answer to the one request in flight, with nothing corked this turn, has no other message to leave with: it
    // is written at once. Otherwise coalesce this turn's messages: the uncork runs once the current callbacks and their
    // promise jobs are done.
    const alone = m.id !== undefined && m.method === undefined && this.noteAnswered(m.id);
    if (!this.corked && !alone) {
      this.corked = true;
      this.output.cork();
      process.nextTick(this.uncork);
    }
    if (typeof line === 'string' ? this.output.write(line) : this.writeChunks(line)) return Promise.resolve();
    return this.drained();
  }

  /**
   * Writes one message's chunks (sealedMessageChunks) corked, so they leave together in one gathered write.
   * @returns what the last write returned (false: wait for 'drain')
   */
  private writeChunks(chunks: (string | Buffer)[]): boolean {
    this.output.cork();
    let ok = true;
    for (const chunk of chunks) ok = this.output.write(chunk);
    this.output.uncork();
    return ok;
  }

  /** Notes a request of the client as received and not answered (past MAX_UNANSWERED ids, not noted). */
  private noteRequest(id: string | number): void {
    const count = this.unanswered.get(id);
    if (count !== undefined) this.unanswered.set(id, count + 1);
    else if (this.unanswered.size < MAX_UNANSWERED) this.unanswered.set(id, 1);
  }

  /** Notes the request `id` as answered. @returns true when no other request of the client is waiting for its answer */
  private noteAnswered(id: string | number): boolean {
    const count = this.unanswered.get(id);
    if (count === 1) this.unanswered.delete(id);
    else if (count !== undefined) this.unanswered.set(id, count - 1);
    return this.unanswered.size === 0;
  }

  /**
   * One wait for stdout's next 'drain' (or 'error'), shared by every send that met the full buffer meanwhile: a burst
   * of answers adds two listeners to stdout, not two per answer (11 or more pending sends
   * printed MaxListenersExceededWarning on stderr).
   */
  private drained(): Promise<void> {
    this.drainWait ??= new Promise<void>((resolve, reject) => {
      const settle = (error?: Error): void => {
        this.drainWait = null;
        this.output.off('drain', onDrain);
        this.output.off('error', onError);
        if (error) reject(error);
        else resolve();
      };
      const onDrain = (): void => settle();
      const onError = (error: Error): void => settle(error);
      this.output.once('drain', onDrain);
      this.output.once('error', onError);
    });
    return this.drainWait;
  }

  /** Stops reading stdin and fires `onclose` (idempotent). Messages already written are flushed by stdout itself. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.input.off('data', this.onData);
    this.input.off('error', this.onInputError);
    this.input.off('end', this.onInputEnd);
    this.input.off('close', this.onInputEnd);
    if (this.input.listenerCount('data') === 0) this.input.pause();
    this.onclose?.();
    return Promise.resolve();
  }
}

/**
 * A string no message contains: it stands in for the text that a result carries twice while the rest is serialized.
 * Random per process, with a NUL (which no path or name holds); its JSON spelling, quotes included, is what is looked for.
 */
const MARKER = `\u0000fs-tools-text:${randomUUID()}`;
const MARKER_JSON = JSON.stringify(MARKER);
/** The marker of a sealed structured result's place (src/tools/sealed-result.ts), and its JSON spelling. */
const SEALED_MARKER = `${MARKER}:structured`;
const SEALED_MARKER_JSON = JSON.stringify(SEALED_MARKER);

/** Text shorter than this is serialized twice as usual (the saving would not pay for the marker's bookkeeping). */
const SHARED_TEXT_MIN = 1024;

/** A plain object (not an array, not a class instance, no toJSON): spreading it keeps what JSON.stringify would see. */
function plainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && !('toJSON' in value);
}

/**
 * An array JSON.stringify serializes element by element (no subclass, no toJSON): copying its elements into a new
 * array keeps its output (a content array with its own toJSON lost it in the rebuilt array).
 */
function plainArray(value: unknown): value is unknown[] {
  return Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype && !('toJSON' in value);
}

/**
 * The last text `escapedText` escaped and its JSON spelling. A side table of one pure function's last answer (a memo:
 * test/architecture.test.ts allow list), not state: the text is compared in full before its spelling is reused.
 */
const lastEscaped = { text: '', json: '""' }; // memo of a pure function (compared in full before reuse)

/**
 * `JSON.stringify(text)`, recalled when `text` equals the last text escaped: an agent reading the same file again
 * gets the same text, and escaping 4 KB of text with its newlines costs about 7 µs where comparing it costs under
 * one (V8 compares the characters, or only the pointers when it is the same string). Equal strings have one JSON
 * spelling, so the answer is always the one JSON.stringify gives.
 */
function escapedText(text: string): string {
  if (text !== lastEscaped.text) {
    lastEscaped.json = JSON.stringify(text);
    lastEscaped.text = text;
  }
  return lastEscaped.json;
}

/**
 * `JSON.stringify(message)`, byte for byte, with the JSON escaping of a result's repeated text done once.
 * read_file's result carries the file's text twice — the first content block's `text` and `structuredContent.content`
 * (structured-first and text-only clients each see it) — and escaping a 4 KB text is about half of
 * serializing the whole answer. When both hold the same string, the message is serialized with a marker in both places
 * (spreads keep every key's position) and the escaped text is put in for the two markers, once escaped; any other message, or one
 * where the marker does not appear exactly twice, is serialized as it is. test/server/stdio-transport.test.ts checks the
 * output against JSON.stringify.
 * @throws what JSON.stringify throws (a cycle, a BigInt)
 */
export function serializeMessage(message: JSONRPCMessage): string {
  const result = (message as { result?: unknown }).result;
  if (plainObject(message) && plainObject(result)) {
    const { content, structuredContent: structured } = result;
    if (plainArray(content) && content.length > 0 && plainObject(structured)) {
      const blocks = content;
      const block = blocks[0];
      if (plainObject(block)) {
        const text = block.text;
        if (typeof text === 'string' && text.length >= SHARED_TEXT_MIN && structured.content === text) {
          const skeleton = JSON.stringify({
            ...message,
            result: {
              ...result,
              content: [{ ...block, text: MARKER }, ...blocks.slice(1)],
              structuredContent: { ...structured, content: MARKER },
            },
          });
          const first = skeleton.indexOf(MARKER_JSON);
          const second = first === -1 ? -1 : skeleton.indexOf(MARKER_JSON, first + MARKER_JSON.length);
          if (second !== -1 && skeleton.indexOf(MARKER_JSON, second + MARKER_JSON.length) === -1) {
            // Concatenated, not joined: V8 keeps the pieces as a rope that the write to stdout flattens once (a
            // joined string was one more 9 KB copy per read, flattened again with the line's newline).
            const escaped = escapedText(text);
            return (
              skeleton.slice(0, first) +
              escaped +
              skeleton.slice(first + MARKER_JSON.length, second) +
              escaped +
              skeleton.slice(second + MARKER_JSON.length)
            );
          }
        }
      }
    }
  }
  return JSON.stringify(message);
}

/**
 * The bytes of `JSON.stringify(message)` and a newline, as chunks, when the message is a result whose structured part
 * is sealed (src/tools/sealed-result.ts: deep-frozen, so its JSON never changes) and whose first content block's text
 * is the one sealed with it: the rest of the message is serialized with markers in those two places, and the sealed
 * parts' bytes, encoded once when the result was sealed, stand in for them. A page list_directory hands out again
 * (src/tools/list-memo.ts) is then neither serialized nor encoded again, and no string of its size is made (each had
 * gone to V8's old space and brought a full collection every few calls). Null for any other message, or when a
 * marker is not found exactly once (the caller serializes it as usual).
 * @throws what JSON.stringify throws (a cycle, a BigInt)
 */
export function sealedMessageChunks(message: JSONRPCMessage): (string | Buffer)[] | null {
  const result = (message as { result?: unknown }).result;
  if (!plainObject(message) || !plainObject(result)) return null;
  const { content, structuredContent: structured } = result;
  if (!plainArray(content) || content.length === 0 || !plainObject(structured)) return null;
  const sealed = sealedPartsOf(structured);
  const block = content[0];
  if (sealed === undefined || !plainObject(block) || block.text !== sealed.text) return null;
  const skeleton = JSON.stringify({
    ...message,
    result: { ...result, content: [{ ...block, text: MARKER }, ...content.slice(1)], structuredContent: SEALED_MARKER },
  });
  const t = skeleton.indexOf(MARKER_JSON);
  const s = skeleton.indexOf(SEALED_MARKER_JSON);
  if (t === -1 || s === -1) return null;
  if (skeleton.indexOf(MARKER_JSON, t + 1) !== -1 || skeleton.indexOf(SEALED_MARKER_JSON, s + 1) !== -1) return null;
  const [first, firstLength, firstBytes, second, secondLength, secondBytes] =
    t < s
      ? [t, MARKER_JSON.length, sealed.textBytes, s, SEALED_MARKER_JSON.length, sealed.structuredBytes]
      : [s, SEALED_MARKER_JSON.length, sealed.structuredBytes, t, MARKER_JSON.length, sealed.textBytes];
  return [
    skeleton.slice(0, first),
    firstBytes,
    skeleton.slice(first + firstLength, second),
    secondBytes,
    `${skeleton.slice(second + secondLength)}\n`,
  ];
}
