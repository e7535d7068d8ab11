/**
 * `fs-tools call TOOL [JSON_ARGS|-] [--format json|text]` and `fs-tools batch` (docs/cli.md): tool calls run in this
 * process through the same `callTool` as the MCP server. `call` prints one outcome; `batch` reads JSON Lines
 * requests from stdin and writes one JSON line per request, all in one session (one hash memory, one start-up).
 * Input is bounded like one MCP message over stdio (MAX_LINE_BYTES, MAX_MESSAGE_MEMBERS); a bad batch line is an
 * error line, never the end of the batch.
 */
import type { Readable } from 'node:stream';
import { toEnvelope, type ErrorEnvelope } from '../errors/to-envelope.js';
import { ToolError } from '../errors/tool-error.js';
import { UsageError } from '../errors/usage-error.js';
import { didYouMean, suggest } from '../config.js';
import { callTool, type CallOutcome } from '../server/call-tool.js';
import { callToolResultOf } from '../server/call-result.js';
import type { ProcessState } from '../server/process-state.js';
import { MAX_LINE_BYTES, MAX_MESSAGE_MEMBERS, moreMembersThan, strictUtf8 } from '../server/message-bounds.js';

/**
 * Where `call` and `batch` write: stdout for results, stderr for notes. Each `out` resolves once the text is taken,
 * and rejects with OutputClosed when it cannot be (the reader closed stdout: EPIPE).
 */
export interface CallOutput {
  out: (text: string) => Promise<void>;
  err: (text: string) => void;
}

/** stdout's reader is gone (`fs-tools batch | head -1`): nothing more can be delivered. */
export class OutputClosed extends Error {
  override readonly name = 'OutputClosed';
}

/**
 * All of `input` as UTF-8 text, at most `limit` bytes (`call TOOL -`).
 * @throws UsageError when the input is longer or not valid UTF-8 (nothing is run)
 */
export async function readBounded(input: Readable, limit = MAX_LINE_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of input as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > limit) {
      input.destroy();
      throw new UsageError(`the arguments on stdin are over ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  const text = strictUtf8(Buffer.concat(chunks));
  if (text === null) throw new UsageError('the JSON on stdin is not valid UTF-8');
  return text;
}

/**
 * Parses JSON_ARGS (or stdin's text) into the call's arguments. What the JSON holds is the tool's to check
 * (VALIDATION, exit 1); text that is not JSON is a usage error, named by the position where parsing stopped — never
 * quoted (stdin may be a secret file piped by mistake; JSON.parse's own message carries the text's start).
 * @throws UsageError for text that is not JSON, or over MAX_MESSAGE_MEMBERS members
 */
export function parseArguments(text: string, from: string): unknown {
  if (moreMembersThan(text, MAX_MESSAGE_MEMBERS)) {
    throw new UsageError(`${from} holds more than ${MAX_MESSAGE_MEMBERS} object members`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const at = /at position (\d+)/.exec((error as Error).message);
    throw new UsageError(`${from} is not valid JSON${at ? ` (at character ${at[1]})` : ''}`);
  }
}

/**
 * The text `--format text` prints: each text block of the MCP result of `outcome` (the same result a client
 * receives), each ending in a newline. A media block (read_media's image or audio) is no text: its kind and MIME type
 * are named on stderr. Neither format prints its data (`--format json` is the structured result, which has none).
 */
export function renderText(outcome: CallOutcome, err: (text: string) => void): string {
  let text = '';
  for (const block of callToolResultOf(outcome).content) {
    if (block.type === 'text') text += block.text.endsWith('\n') ? block.text : `${block.text}\n`;
    else {
      const mime = 'mimeType' in block && typeof block.mimeType === 'string' ? ` (${block.mimeType})` : '';
      const article = /^[aeiou]/.test(block.type) ? 'an' : 'a';
      err(
        `fs-tools: the result also holds ${article} ${block.type} content block${mime} that the command line does not print\n`,
      );
    }
  }
  return text;
}

/**
 * Runs one call and prints its outcome; returns the exit status (0 result, 1 envelope). A reader that closed stdout
 * changes nothing: the call ran, its status is its outcome's (as `rg … | head -1` keeps rg's status).
 */
export async function runCall(
  state: ProcessState,
  tool: string,
  args: unknown,
  format: 'json' | 'text',
  output: CallOutput,
): Promise<number> {
  const outcome = await callTool(state, tool, args, new AbortController().signal);
  try {
    if (format === 'text') await output.out(renderText(outcome, output.err));
    else await output.out(`${JSON.stringify(outcome.ok ? outcome.structured : outcome.envelope, null, 2)}\n`);
  } catch (error) {
    if (!(error instanceof OutputClosed)) throw error;
  }
  return outcome.ok ? 0 : 1;
}

/** One output line of `batch`. */
type BatchLine =
  | { tool: string; ok: true; result: Record<string, unknown> }
  | { tool: string | null; ok: false; error: ErrorEnvelope['error'] };

/** The VALIDATION envelope of a batch line that is not a request. */
function badLine(line: number, message: string, details: Record<string, unknown>, suggestion: string): BatchLine {
  const envelope = toEnvelope(
    new ToolError('VALIDATION', `Line ${line}: ${message}`, { details: { line, ...details }, suggestion }),
  );
  return { tool: typeof details.tool === 'string' ? details.tool : null, ok: false, error: envelope.error };
}

const REQUEST_SHAPE = 'Send one JSON object per line: {"tool": NAME, "arguments": {...}}.';

/** One request line (its text, or null when its bytes are not UTF-8) → its output line (the call runs here). */
async function handleLine(state: ProcessState, line: number, text: string | null): Promise<BatchLine> {
  if (text === null) return badLine(line, 'not valid UTF-8.', { reason: 'malformed_json' }, REQUEST_SHAPE);
  if (moreMembersThan(text, MAX_MESSAGE_MEMBERS)) {
    return badLine(line, `more than ${MAX_MESSAGE_MEMBERS} object members`, { reason: 'too_large' }, REQUEST_SHAPE);
  }
  let request: unknown;
  try {
    request = JSON.parse(text);
  } catch {
    return badLine(line, 'not valid JSON.', { reason: 'malformed_json' }, REQUEST_SHAPE);
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    return badLine(line, 'not a JSON object.', { reason: 'not_a_request' }, REQUEST_SHAPE);
  }
  const { tool, arguments: args, ...rest } = request as Record<string, unknown>;
  const unknownKey = Object.keys(rest)[0];
  if (typeof tool !== 'string') return badLine(line, 'no "tool" name.', { reason: 'not_a_request' }, REQUEST_SHAPE);
  if (unknownKey !== undefined) {
    return badLine(line, `unknown member "${unknownKey}".`, { reason: 'not_a_request', tool }, REQUEST_SHAPE);
  }
  const names = state.tools.map((t) => t.name);
  if (!names.includes(tool)) {
    const closest = suggest(tool, names);
    return badLine(
      line,
      `unknown tool '${tool}'${didYouMean(tool, names)}`,
      { reason: 'unknown_tool', tool, ...(closest === null ? {} : { closest }) },
      closest === null ? 'List the tools with `fs-tools tools`.' : `Use "tool": "${closest}".`,
    );
  }
  const outcome = await callTool(state, tool, args ?? {}, new AbortController().signal);
  return outcome.ok
    ? { tool, ok: true, result: outcome.structured }
    : { tool, ok: false, error: outcome.envelope.error };
}

/**
 * `fs-tools batch`: reads request lines from `input` until its end, runs each in order (the next line is read once
 * the previous call finished), writes one JSON line per request. A line over MAX_LINE_BYTES is not kept: its bytes
 * are dropped up to its newline and it gets an error line. A line that is not valid UTF-8 gets an error line (never
 * U+FFFD in a path or content). Blank lines are skipped. When an output line cannot be written (stdout's reader is
 * gone) the batch stops there: no later request runs, whose result nobody would read. Once the process is shutting
 * down (`state.calls.closing`: SIGTERM or SIGINT, src/cli.ts) the batch stops after the line in flight.
 * @returns the exit status: 0 when every request succeeded, 1 when any did not or the batch stopped early
 */
export async function runBatch(state: ProcessState, input: Readable, output: CallOutput): Promise<number> {
  let failed = false;
  let lineNumber = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let overlong = false;
  const finish = async (): Promise<void> => {
    lineNumber++;
    const text = strictUtf8(Buffer.concat(pending))?.trim() ?? null;
    const wasOverlong = overlong;
    pending = [];
    pendingBytes = 0;
    overlong = false;
    if (!wasOverlong && text === '') return;
    const result = wasOverlong
      ? badLine(lineNumber, `over ${MAX_LINE_BYTES} bytes; it was dropped.`, { reason: 'too_large' }, REQUEST_SHAPE)
      : await handleLine(state, lineNumber, text);
    if (!result.ok) failed = true;
    await output.out(`${JSON.stringify(result)}\n`);
  };
  const stopped = (why: string): number => {
    input.destroy();
    output.err(`fs-tools: ${why}; the batch stopped after line ${lineNumber} (no later line was run)\n`);
    return 1;
  };
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
        take(chunk.subarray(start, nl));
        start = nl + 1;
        await finish();
        if (state.calls.closing) return stopped('shutting down');
      }
      take(chunk.subarray(start));
    }
    if (pendingBytes > 0 || overlong) await finish();
  } catch (error) {
    if (error instanceof OutputClosed) return stopped('stdout was closed');
    if (state.calls.closing) return stopped('shutting down'); // stdin ended by the shutdown while waiting for a line
    throw error;
  }
  return state.calls.closing ? stopped('shutting down') : failed ? 1 : 0;

  function take(part: Buffer): void {
    if (overlong || part.length === 0) return;
    pendingBytes += part.length;
    if (pendingBytes > MAX_LINE_BYTES) {
      overlong = true;
      pending = [];
    } else pending.push(part);
  }
}
