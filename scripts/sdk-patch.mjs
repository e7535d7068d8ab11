/**
 * The changes fs-tools makes to the MCP TypeScript SDK (@modelcontextprotocol/server), applied while esbuild bundles
 * the program, written as they would be proposed upstream: nothing in src/ reaches into the SDK's private members.
 * The first four each replace a zod parse per message that only classifies it (docs/benchmarks.md "Start-up,
 * read_file and memory"); the fifth makes a request's AbortSignal on first use. None changes what is dispatched or
 * sent.
 *
 * 1. The message hook `Protocol.connect` installs on the transport classifies every inbound message with zod,
 *    asking "result response? error response? request? notification?" in that order. For a request — nearly every
 *    message a server receives — the first two parses fail and each builds a ZodError with its issue messages (about
 *    6–10 µs of CPU per request). The patch asks "request?" first. The four schemas are strict objects
 *    (JSONRPCRequestSchema requires `method` and admits neither `result` nor `error`; both response schemas require
 *    their member and admit no `method`), so no message passes two of them and every message is dispatched exactly
 *    as before; a request costs one parse instead of three, a response one more failed parse (responses are rare on
 *    a server: roots/list answers). No supported extension point exists for this in 2.4.0: the request dispatch
 *    (`_onrequest`) is private and the hook is built inside `connect`.
 * 2. The stdio connection channel (`StdioConnectionChannel.send`) parses every outbound message against both
 *    response schemas — the whole answer, a read_file's text twice included, about 9 µs per answer — only to note
 *    that the request with that id was answered (`_settle(id)`: the id leaves the set of requests in flight that
 *    `whenRequestsAnswered` waits for). The patch notes it for every outbound message that has an id, no `method`
 *    and a `result` or `error` member: every message the response schemas pass (both require `id` and their member
 *    and admit no `method`), and besides them only a malformed answer the server itself built, which answers the
 *    request all the same. `_settle` of an id not in flight does nothing; what is sent is unchanged.
 *
 * 3. The same hook, for a request: before the zod parse of (1), a plain test of the envelope answers "request" for the
 *    common shape — a plain object whose members are only `jsonrpc` ("2.0"), a string or safe-integer `id`, a string
 *    `method` and `params` that are absent or a plain object without `_meta` — every one of which JSONRPCRequestSchema
 *    passes (its params are a loose object whose only known member is `_meta`). Anything else still takes the zod parse,
 *    so a message is dispatched exactly as before; the common request skips a parse that cost about 11 µs over a
 *    fresh server's first 1,500 requests (`FS_TOOLS_PLAIN_REQUEST`, appended to the module that holds the hook).
 * 4. The stdio connection channel (`StdioConnectionChannel.deliver`) parses every inbound message with zod again, only
 *    to note a request's id among those in flight (`_pendingRequests`, which `whenRequestsAnswered` waits for). The
 *    same plain test as in 3. answers "request" first (`FS_TOOLS_PLAIN_CHANNEL_REQUEST`, the same function under its
 *    own name, appended to the channel's module): the same ids are noted, and a request the test does not know
 *    takes the parse as before (about 14 µs per request over a fresh server's first 1,500 in a profile).
 * 5. `Protocol._onrequest` made an AbortController per request (Node's AbortSignal costs about 10 µs of a warm
 *    server's CPU: an EventTarget whose prototype is set afterwards, then symbol-keyed stores on it) that a request
 *    needs only if its handler reads `ctx.mcpReq.signal` or it is cancelled. The controller becomes a lazy one
 *    (`FS_TOOLS_LAZY_ABORT_CONTROLLER`, appended to the module): `abort(reason)` before the signal exists records the
 *    reason, the signal made later is aborted with it (no listener can have been added to a signal that did not exist),
 *    after that both go to a real AbortController; `aborted` says whether it was aborted without making the signal.
 *    `ctx.mcpReq.signal` becomes an own getter returning that signal (the same object on every read), the two checks
 *    of the answer read `aborted`, and `Server.buildContext` adds its three members to the request's `mcpReq` instead
 *    of spreading it into a copy (a spread would read the getter; the object is made for this request alone and
 *    nothing else holds it). The cancellation (`notifications/cancelled`) and the close still call `abort` on what
 *    `_requestHandlerAbortControllers` holds, and an answer to an aborted request is still not sent.
 *
 * Kept honest by: the build fails when the SDK no longer has exactly the texts below, once each (an SDK upgrade that
 * changes them must revisit this file), and test/distribution/sdk-patch.test.ts checks that the installed SDK still
 * holds each text once, that dist/main.js carries each patched text and no original, that no message passes two of
 * the classifying schemas, and that every response the schemas pass is settled by the shape test.
 */
import { readFileSync } from 'node:fs';

/** The hook's classification as the SDK ships it (the lines of `Protocol.connect`, tabs and all). */
export const SDK_CLASSIFICATION = [
  '\t\t\tif (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) this._onresponse(message);',
  '\t\t\telse if (isJSONRPCRequest(message)) this._onrequest(message, extra);',
].join('\n');

/** The same two branches, the request first (3. above: its plain shape before the zod parse). */
export const PATCHED_CLASSIFICATION = [
  '\t\t\tif (fsToolsPlainRequest(message) || isJSONRPCRequest(message)) this._onrequest(message, extra);',
  '\t\t\telse if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) this._onresponse(message);',
].join('\n');

/** The outbound classification of the stdio connection channel as the SDK ships it (`StdioConnectionChannel.send`). */
export const SDK_SETTLE = [
  '\t\tif (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {',
  '\t\t\tconst { id } = message;',
  '\t\t\tif (id !== void 0) this._settle(id);',
  '\t\t}',
].join('\n');

/** The same note, by shape: an id, no method, a result or an error member (see 2. above). */
export const PATCHED_SETTLE = [
  '\t\tif (typeof message === "object" && message !== null && message.method === void 0 && ("result" in message || "error" in message)) {',
  '\t\t\tconst { id } = message;',
  '\t\t\tif (id !== void 0) this._settle(id);',
  '\t\t}',
].join('\n');

/**
 * The plain request test of 3. above, appended to the SDK module the classification patch changed. True only for
 * messages JSONRPCRequestSchema passes (test/distribution/sdk-patch.test.ts compiles this text and checks that).
 */
export const FS_TOOLS_PLAIN_REQUEST = plainRequestFunction('fsToolsPlainRequest');

/** The same test for the channel's module (4. above), under a name of its own (the bundle keeps both names). */
export const FS_TOOLS_PLAIN_CHANNEL_REQUEST = plainRequestFunction('fsToolsPlainChannelRequest');

/** The text of the plain request test as a function named `name`. */
function plainRequestFunction(name) {
  return [
    '',
    `function ${name}(message) {`,
    '\tif (typeof message !== "object" || message === null || Object.getPrototypeOf(message) !== Object.prototype) return false;',
    '\tfor (const key in message) if (key !== "jsonrpc" && key !== "id" && key !== "method" && key !== "params") return false;',
    '\tif (message.jsonrpc !== "2.0" || typeof message.method !== "string") return false;',
    '\tif (typeof message.id !== "string" && !Number.isSafeInteger(message.id)) return false;',
    '\tconst params = message.params;',
    '\tif (params === void 0) return true;',
    '\treturn typeof params === "object" && params !== null && Object.getPrototypeOf(params) === Object.prototype && !Object.hasOwn(params, "_meta");',
    '}',
    '',
  ].join('\n');
}

/** The inbound note of the stdio connection channel as the SDK ships it (`StdioConnectionChannel.deliver`). */
export const SDK_DELIVER = '\t\tif (isJSONRPCRequest(message)) this._pendingRequests.add(message.id);';

/** The same note, the plain shape first (4. above). */
export const PATCHED_DELIVER =
  '\t\tif (fsToolsPlainChannelRequest(message) || isJSONRPCRequest(message)) this._pendingRequests.add(message.id);';

/**
 * The lazy controller of 5. above, appended to the module of `Protocol._onrequest`: what the SDK's request context
 * needs of an AbortController (`signal`, `abort(reason)`), with the AbortController made at the first read of
 * `signal` (test/distribution/sdk-patch.test.ts compiles this text and checks it against AbortController).
 */
export const FS_TOOLS_LAZY_ABORT_CONTROLLER = [
  '',
  'class FsToolsLazyAbortController {',
  '\t_controller = void 0;',
  '\t_aborted = false;',
  '\t_reason = void 0;',
  '\tget signal() {',
  '\t\tif (this._controller === void 0) {',
  '\t\t\tthis._controller = new AbortController();',
  '\t\t\tif (this._aborted) this._controller.abort(this._reason);',
  '\t\t}',
  '\t\treturn this._controller.signal;',
  '\t}',
  '\tget aborted() {',
  '\t\treturn this._controller === void 0 ? this._aborted : this._controller.signal.aborted;',
  '\t}',
  '\tabort(reason) {',
  '\t\tif (this._controller !== void 0) this._controller.abort(reason);',
  '\t\telse if (!this._aborted) {',
  '\t\t\tthis._aborted = true;',
  '\t\t\tthis._reason = reason;',
  '\t\t}',
  '\t}',
  '}',
  '',
].join('\n');

/**
 * 5. above, in `Protocol._onrequest`: the controller made (the SDK's text, then the patched one). The texts name no
 * identifier esbuild renames in the bundle (`request` becomes `request2` there), so dist/main.js can be checked for them.
 */
const SDK_REQUEST_CONTROLLER = '\t\tconst abortController = new AbortController();';
const PATCHED_REQUEST_CONTROLLER = '\t\tconst abortController = new FsToolsLazyAbortController();';

/** 5. above: the request context's signal, read on use. */
const SDK_REQUEST_SIGNAL = '\t\t\t\tsignal: abortController.signal,\n';
const PATCHED_REQUEST_SIGNAL = [
  '\t\t\t\tget signal() {',
  '\t\t\t\t\treturn abortController.signal;',
  '\t\t\t\t},',
  '',
].join('\n');

/** 5. above: the answer's two checks that the request was not aborted (result, then error). */
const SDK_RESULT_CHECK = ['.then(async (result) => {', '\t\t\tif (abortController.signal.aborted) return;'].join('\n');
const PATCHED_RESULT_CHECK = ['.then(async (result) => {', '\t\t\tif (abortController.aborted) return;'].join('\n');
const SDK_ERROR_CHECK = ['\t\t\tif (abortController.signal.aborted) return;', '\t\t\tconst thrownCode'].join('\n');
const PATCHED_ERROR_CHECK = ['\t\t\tif (abortController.aborted) return;', '\t\t\tconst thrownCode'].join('\n');

/** 5. above, in `Server.buildContext`: the request's `mcpReq` completed in place, not spread into a copy. */
const SDK_CONTEXT_OPEN = [
  '\t\treturn {',
  '\t\t\t...ctx,',
  '\t\t\tmcpReq: {',
  '\t\t\t\t...ctx.mcpReq,',
  '\t\t\t\tlog: (level, data, logger) => {',
].join('\n');
const PATCHED_CONTEXT_OPEN = [
  '\t\treturn {',
  '\t\t\t...ctx,',
  '\t\t\tmcpReq: Object.assign(ctx.mcpReq, {',
  '\t\t\t\tlog: (level, data, logger) => {',
].join('\n');
const SDK_CONTEXT_CLOSE = [
  '\t\t\t\trequestSampling: (params, options) => this.createMessage(params, options)',
  '\t\t\t},',
  '\t\t\thttp: hasHttpInfo ? {',
].join('\n');
const PATCHED_CONTEXT_CLOSE = [
  '\t\t\t\trequestSampling: (params, options) => this.createMessage(params, options)',
  '\t\t\t}),',
  '\t\t\thttp: hasHttpInfo ? {',
].join('\n');

/**
 * Each patch: the SDK's text, its replacement and what is appended to the module that holds it; each text must occur
 * exactly once across the SDK files bundled.
 */
export const SDK_PATCHES = [
  {
    name: 'the message classification in Protocol.connect',
    original: SDK_CLASSIFICATION,
    patched: PATCHED_CLASSIFICATION,
    appended: FS_TOOLS_PLAIN_REQUEST,
  },
  { name: 'the outbound classification in StdioConnectionChannel.send', original: SDK_SETTLE, patched: PATCHED_SETTLE },
  {
    name: 'the inbound note in StdioConnectionChannel.deliver',
    original: SDK_DELIVER,
    patched: PATCHED_DELIVER,
    appended: FS_TOOLS_PLAIN_CHANNEL_REQUEST,
  },
  {
    name: 'the lazy request controller in Protocol._onrequest',
    original: SDK_REQUEST_CONTROLLER,
    patched: PATCHED_REQUEST_CONTROLLER,
    appended: FS_TOOLS_LAZY_ABORT_CONTROLLER,
  },
  {
    name: 'the request signal read on use in Protocol._onrequest',
    original: SDK_REQUEST_SIGNAL,
    patched: PATCHED_REQUEST_SIGNAL,
  },
  {
    name: "the result's abort check in Protocol._onrequest",
    original: SDK_RESULT_CHECK,
    patched: PATCHED_RESULT_CHECK,
  },
  { name: "the error's abort check in Protocol._onrequest", original: SDK_ERROR_CHECK, patched: PATCHED_ERROR_CHECK },
  {
    name: "the request context's mcpReq in Server.buildContext",
    original: SDK_CONTEXT_OPEN,
    patched: PATCHED_CONTEXT_OPEN,
  },
  {
    name: "the request context's mcpReq end in Server.buildContext",
    original: SDK_CONTEXT_CLOSE,
    patched: PATCHED_CONTEXT_CLOSE,
  },
];

/** The SDK's ES module files the texts may be in (the chunk names carry a content hash). */
const SDK_FILES = /[\\/]node_modules[\\/]@modelcontextprotocol[\\/]server[\\/]dist[\\/][^\\/]+\.mjs$/;

/**
 * The esbuild plugin that applies the patches. Fails the build unless each SDK text occurs exactly once across the
 * SDK files the bundle loads.
 * @returns {import('esbuild').Plugin}
 */
export function sdkPatchPlugin() {
  return {
    name: 'fs-tools-sdk-patch',
    setup(build) {
      const applied = new Map();
      build.onStart(() => {
        applied.clear();
      });
      build.onLoad({ filter: SDK_FILES }, (args) => {
        let text = readFileSync(args.path, 'utf8');
        let changed = false;
        for (const patch of SDK_PATCHES) {
          const parts = text.split(patch.original);
          if (parts.length === 1) continue;
          applied.set(patch.name, (applied.get(patch.name) ?? 0) + parts.length - 1);
          text = parts.join(patch.patched);
          if (patch.appended !== undefined) text += patch.appended;
          changed = true;
        }
        return changed ? { contents: text, loader: 'js' } : undefined;
      });
      build.onEnd((result) => {
        if (result.errors.length > 0) return undefined;
        const errors = SDK_PATCHES.filter((patch) => applied.get(patch.name) !== 1).map((patch) => ({
          text:
            `scripts/sdk-patch.mjs: ${patch.name} was found ${applied.get(patch.name) ?? 0} times (expected once): ` +
            'the SDK changed; revisit the patch (drop it if the SDK no longer needs it).',
        }));
        return errors.length > 0 ? { errors } : undefined;
      });
    },
  };
}
