/**
 * The one change fs-tools makes to the MCP TypeScript SDK (@modelcontextprotocol/server), applied while esbuild
 * bundles dist/cli.js, written as it would be proposed upstream: nothing in src/ reaches into the SDK's private
 * members.
 *
 * What it changes: the message hook `Protocol.connect` installs on the transport classifies every inbound message
 * with zod, asking "result response? error response? request? notification?" in that order. For a request — nearly
 * every message a server receives — the first two parses fail and each builds a ZodError with its issue messages
 * (about 6–10 µs of CPU per request, a few per cent of a small read_file call; docs/benchmarks.md). The patch asks
 * "request?" first. The four schemas are strict objects (JSONRPCRequestSchema requires `method` and admits neither
 * `result` nor `error`; both response schemas require their member and admit no `method`), so no message passes
 * two of them and every message is dispatched exactly as before; a request costs one parse instead of three, a
 * response one more failed parse (responses are rare on a server: roots/list answers). No supported extension point
 * exists for this in 2.4.0: the request dispatch (`_onrequest`) is private and the hook is built inside `connect`.
 *
 * Kept honest by: the build fails when the SDK's hook no longer has exactly the text below (an SDK upgrade that
 * changes it must revisit this file), and test/distribution/sdk-patch.test.ts checks that the installed SDK still
 * holds the text once, that dist/cli.js carries the patched order, and that no message passes two of the schemas.
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

/** The SDK's ES module files the hook may be in (the chunk names carry a content hash). */
const SDK_FILES = /[\\/]node_modules[\\/]@modelcontextprotocol[\\/]server[\\/]dist[\\/][^\\/]+\.mjs$/;

/**
 * The esbuild plugin that applies the patch. Fails the build unless the SDK text occurs exactly once across the SDK
 * files the bundle loads.
 * @returns {import('esbuild').Plugin}
 */
export function sdkPatchPlugin() {
  return {
    name: 'fs-tools-sdk-patch',
    setup(build) {
      let applied = 0;
      build.onStart(() => {
        applied = 0;
      });
      build.onLoad({ filter: SDK_FILES }, (args) => {
        const text = readFileSync(args.path, 'utf8');
        const parts = text.split(SDK_CLASSIFICATION);
        if (parts.length === 1) return undefined;
        applied += parts.length - 1;
        return { contents: parts.join(PATCHED_CLASSIFICATION), loader: 'js' };
      });
      build.onEnd((result) => {
        if (result.errors.length > 0 || applied === 1) return undefined;
        return {
          errors: [
            {
              text:
            `scripts/sdk-patch.mjs: the SDK's message classification in Protocol.connect was found ${applied} times ` +
                '(expected once): the SDK changed; revisit the patch (drop it if the SDK now classifies requests first).',
            },
          ],
        };
      });
    },
  };
}
