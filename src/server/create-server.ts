/**
 * The factory handed to `serveStdio` (docs/tools.md): one low-level SDK `Server` that owns `tools/list` and `tools/call`
 * itself, so the documented surface (docs/tools.md) holds instead of McpServer's defaults:
 *   - a disabled tool is a TOOL_UNAVAILABLE envelope, a readonly-hidden tool is READONLY, bad arguments are
 *     VALIDATION envelopes; only an unknown tool name is a protocol error (-32602);
 *   - on a 2025-era connection, the client's roots are read after initialization and on roots/list_changed.
 * The factory may run twice (serveStdio's probe); it only builds and registers, all state is in ProcessState.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type CallToolRequest,
  type CallToolResult,
  type JSONRPCRequest,
  type Result,
  type ServerContext,
  SdkError,
  SdkErrorCode,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { callTool, listedTools, UnknownToolError } from './call-tool.js';
import { callToolResultOf } from './call-result.js';
import { argumentShapeError, RefusedArguments } from './validate-arguments.js';
import { malformedAnswerText } from './stdio-guard.js';
import type { ProcessState } from './process-state.js';
import { guardResponse } from '../tools/response-budget.js';
import { toolDefinition } from '../tools/tool-index.js';
import { advertise, advertiseEntry } from './tool-schemas.js';

/** Server instructions: what a client's model reads first. */
const INSTRUCTIONS =
  'fs-tools: safe file, git and issue tools. Paths are absolute or relative to the first root ' +
  '(see list_allowed_directories); booleans default to false; result fields at their default are left out. Failures are JSON envelopes {"error":{code,message,path,details,suggestion,' +
  'retryable,recovery}}: follow `recovery`; retryable never means resend the same mutation unchanged. Mutations ' +
  'of existing files need the content_hash from a read (expected_hash), or a prior read in this session.';

/**
 * tools/call requests whose arguments were refused before the SDK's validation, by their handler context. Not process
 * state (test/architecture.test.ts allow list): a side table of each request, gone with it.
 */
const refusedArguments = new WeakMap<object, RefusedArguments>();

/**
 * The SDK's low-level `Server`, minus its second pass over `tools/call`. `Server._wrapHandler` (the SDK's
 * documented hook for role-specific wrapping) validates every `tools/call` request again — `setRequestHandler` has
 * already validated it against the protocol schema — and validates every result against the protocol's
 * CallToolResult schema before it is sent. Our results are built by `createServer` below from the tool's own zod
 * output (call-tool.ts) and checked by tests instead: test/e2e/schemas.test.ts validates every tool's results
 * against its advertised outputSchema and the SDK's CallToolResult schema, under both eras. Every other method keeps
 * the SDK's wrapping. What the dropped wrapper also did and fs-tools does not use: the 2026-07-28 multi-round-trip
 * seam (`input_required` results, `requestState`), which no fs-tools tool returns or reads. What clients saw of it is
 * kept: an invalid tools/call request is -32602 "Invalid tools/call request: …" and a non-string requestState -32602
 * invalid_request_state (test/e2e/protocol-review.test.ts).
 *
 * The SDK's message hook classifies a request with one zod parse instead of three, and its stdio channel notes an
 * answer by its shape instead of parsing it, in dist/ (scripts/sdk-patch.mjs, applied at bundling; nothing here
 * reaches into the SDK's private members).
 *
 * A tools/call request whose params are only a string `name` and a plain-object `arguments` (or none) — what every
 * 2025-era client sends unless it adds `_meta` — goes to the handler as it is (`onToolsCall`), without the SDK's
 * second parse of it against CallToolRequestSchema (`setRequestHandler`'s stored handler, after the stdin guard's
 * parse): that schema passes such params unchanged and the handler reads only `name` and `arguments`. Any other
 * shape (a `_meta`, a `task`, the 2026-07-28 envelope, a wrong type) takes the SDK's validation and its errors.
 */
class FsToolsServer extends Server {
  /** The tools/call handler as registered (`setToolsCallHandler`), for requests that need no second parse. */
  private onToolsCall?: (request: CallToolRequest, ctx: ServerContext) => Promise<CallToolResult>;

  /** Registers the tools/call handler (through the SDK's `setRequestHandler`, which wraps it below). */
  setToolsCallHandler(handler: (request: CallToolRequest, ctx: ServerContext) => Promise<CallToolResult>): void {
    this.onToolsCall = handler;
    this.setRequestHandler('tools/call', handler);
  }

  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    if (method !== 'tools/call') return super._wrapHandler(method, handler);
    return (request, ctx) => {
      // Arguments past the bounds of src/server/validate-arguments.ts are refused before the SDK's validation walks
      // them (its zod record parse cost seconds for 700,000 keys): the call goes on with empty arguments and the
      // handler answers the refusal as the VALIDATION envelope validateArguments would give (docs/security.md
      // "Bounded work").
      const params = (request as { params?: { name?: unknown; arguments?: unknown } }).params;
      const refused = argumentShapeError(
        typeof params?.name === 'string' ? params.name : 'the tool',
        params?.arguments,
      );
      if (refused) {
        refusedArguments.set(ctx, new RefusedArguments(refused));
        request = { ...request, params: { ...params, arguments: {} } };
      }
      // What the dropped wrapper checked that clients see: a requestState that is not a string is refused as the SDK
      // refuses it (fs-tools mints none, so a string one is ignored, as the SDK ignores one it cannot verify).
      const requestState: unknown = ctx.mcpReq.requestState();
      if (requestState !== undefined && typeof requestState !== 'string') {
        return Promise.reject(
          new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid or expired requestState', {
            reason: 'invalid_request_state',
          }),
        );
      }
      try {
        const direct = this.onToolsCall;
        if (direct && plainCallParams(request.params)) return direct(request as unknown as CallToolRequest, ctx);
        return handler(request, ctx);
      } catch (error) {
        // `setRequestHandler`'s stored handler validates the request synchronously and throws a plain Error (which
        // the protocol layer would answer -32603) before our async handler runs; an invalid tools/call request is
        // -32602 with the SDK's wording, as before.
        if (error instanceof ProtocolError) return Promise.reject(error);
        return Promise.reject(
          new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid tools/call request: ${(error as Error).message}`),
        );
      }
    };
  }
}

/** Builds one MCP server instance over the shared process state. */
export function createServer(state: ProcessState): Server {
  const server = new FsToolsServer(
    { name: 'fs-tools', version: state.version },
    {
      capabilities: { tools: {} },
      instructions: INSTRUCTIONS,
    },
  );

  server.setRequestHandler('tools/list', async () => ({
    tools: await Promise.all(listedTools(state).map(advertiseEntry)),
  }));

  server.setToolsCallHandler(async (request, ctx) => {
    const { name, arguments: args } = request.params;
    // The tool's definition, its module evaluated at its first call (src/cli.ts), taken before the call: nothing is
    // awaited between the call's end and the answer, which the shutdown's drain relies on (src/server/shutdown.ts).
    const entry = state.tools.find((t) => t.name === name);
    const tool = entry && (await toolDefinition(entry));
    let outcome;
    try {
      // The request's signal is read only if the call needs one (the SDK makes it on first read: scripts/sdk-patch.mjs).
      outcome = await callTool(state, name, refusedArguments.get(ctx) ?? args, () => ctx.mcpReq.signal);
    } catch (error) {
      if (error instanceof UnknownToolError) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
      }
      throw error;
    }
    const result = callToolResultOf(outcome);
    const projected = server.projectCallToolResult(
      result,
      tool && outcome.ok ? advertise(tool).outputSchema : undefined,
    );
    // The response budget (docs/tools.md): never an oversized message (the client would drop the transport).
    let mutated: boolean;
    try {
      mutated =
        outcome.ok && tool !== undefined && (typeof tool.mutating === 'function' ? tool.mutating(args) : tool.mutating);
    } catch {
      mutated = true; // unknown: say the change may have been applied
    }
    return guardResponse(projected, name, mutated) as CallToolResult;
  });

  // 2025-era only: the 2026-07-28 era has no server-to-client requests, so roots come from the command line.
  // The answer is taken entry by entry (RootSet.applyClientAnswer), not by the SDK's ListRootsResult schema, which
  // rejects a whole answer for one plain path in it and would leave the server on its wider default.
  const readRoots = () => {
    if (!server.getClientCapabilities()?.roots) return;
    // An answer that is not a JSON-RPC response (src/server/stdio-guard.ts) is one malformed entry: no roots from it,
    // never the roots it would have narrowed.
    const answer = server.request({ method: 'roots/list' }, ANY_ROOTS_RESULT).catch((error: unknown) => {
      const malformed = malformedAnswerText(error);
      if (malformed === null) throw error;
      process.stderr.write(`fs-tools: roots/list answer is not a JSON-RPC response: ${oneLine(malformed)}\n`);
      return malformed;
    });
    state.roots.track(answer, (error) => {
      // A client that leaves while its answer is pending (MCP Inspector does) is not a failure: nothing to say.
      if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) return;
      process.stderr.write(`fs-tools: roots/list failed: ${oneLine((error as Error).message)}\n`);
    });
  };
  server.oninitialized = readRoots;
  server.setNotificationHandler('notifications/roots/list_changed', () => readRoots());
  return server;
}

/**
 * True when `params` are a tools/call request's params that the SDK's CallToolRequestSchema would pass as they are: a
 * plain object with a string `name`, an optional plain-object `arguments` (a record of any values; an own
 * `__proto__` key is left to the schema), and no other member. Anything else is for the SDK to judge.
 */
function plainCallParams(params: unknown): boolean {
  if (!plainRecord(params)) return false;
  for (const key in params) if (key !== 'name' && key !== 'arguments') return false;
  if (typeof params.name !== 'string') return false;
  const args = params.arguments;
  return args === undefined || (plainRecord(args) && !Object.hasOwn(args, '__proto__'));
}

/** A JSON object as JSON.parse builds it: not null, not an array, Object.prototype as its prototype. */
function plainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** roots/list's result as sent: any JSON value (RootSet.applyClientAnswer judges each entry). */
const ANY_ROOTS_RESULT = z.unknown();

/** A log line stays one line (SDK errors can carry a pretty-printed JSON dump). */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').slice(0, 500);
}
