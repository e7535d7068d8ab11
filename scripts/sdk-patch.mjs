/**
 * The two changes fs-tools makes to the MCP TypeScript SDK (@modelcontextprotocol/server), applied while esbuild
 * bundles the program, written as they would be proposed upstream: nothing in src/ reaches into the SDK's private
 * members. Both replace a zod parse per message that only classifies it (docs/benchmarks.md "Start-up, read_file
 * and memory"); neither changes what is dispatched or sent.
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

/** The same two branches, the request first. */
export const PATCHED_CLASSIFICATION = [
  '\t\t\tif (isJSONRPCRequest(message)) this._onrequest(message, extra);',
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

/** Each patch: the SDK's text and its replacement; each must occur exactly once across the SDK files bundled. */
export const SDK_PATCHES = [
  {
    name: 'the message classification in Protocol.connect',
    original: SDK_CLASSIFICATION,
    patched: PATCHED_CLASSIFICATION,
  },
  { name: 'the outbound classification in StdioConnectionChannel.send', original: SDK_SETTLE, patched: PATCHED_SETTLE },
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
