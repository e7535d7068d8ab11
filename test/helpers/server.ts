/**
 * Real server processes for end-to-end tests: spawns the built dist/cli.js over stdio and talks to it with a real
 * MCP client of either era — `modern` is @modelcontextprotocol/client pinned to 2026-07-28 (server/discover, no
 * handshake; sent to the session's own server unless a test asks for the real client's disposable sibling:
 * `ConnectOptions.probe`); `legacy` is @modelcontextprotocol/sdk 1.x (initialize). Both expose the same small interface so one
 * scenario runs under both eras with `describe.each(ERAS)`.
 */
import { fileURLToPath } from 'node:url';
import { Client as ModernClient } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernTransport } from '@modelcontextprotocol/client/stdio';
import { AjvJsonSchemaValidator as ModernValidator } from '@modelcontextprotocol/client/validators/ajv';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AjvJsonSchemaValidator as LegacyValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where spawned servers write their V8 coverage (test/helpers/spawned-coverage.mjs); absent without coverage. */
    spawnedCoverageDir?: string;
  }
}

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
/** The program dist/cli.js starts (scripts/code-cache.mjs): the bundle of src/, whose text the distribution tests read. */
export const PROGRAM = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

/**
 * The test build with the seams (`node scripts/bundle.mjs --test-seams`, built by the global setup): the only build
 * that takes `--test-seams=…` as its first argument (src/cli/seam-flags.ts); dist/cli.js refuses the flag.
 */
export const SEAMS_CLI = fileURLToPath(new URL('../../dist-seams/cli.js', import.meta.url));
/** The program of the seams test build. */
export const SEAMS_PROGRAM = fileURLToPath(new URL('../../dist-seams/main.js', import.meta.url));

/** The build to run for `args`: the seams build when the first argument is a seam, else dist/cli.js. */
export function cliFor(args: readonly string[]): string {
  return args[0]?.startsWith('--test-seams=') ? SEAMS_CLI : CLI;
}

/**
 * `FS_TOOLS_NATIVE=0` in the test run's environment (issue #19): every server spawned here gets `--native=off`, so
 * the e2e suites run content search on the JavaScript path instead of the native addon (`FS_TOOLS_NATIVE=0 npx
 * vitest run test/e2e`). Test code reads it; the server itself reads no FS_TOOLS_* variable.
 */
export const NATIVE_ARGS: string[] = process.env.FS_TOOLS_NATIVE === '0' ? ['--native=off'] : [];

/**
 * A server's stderr less its one start-up line about the kernel wall (`fs-tools: kernel wall: …`, written by every
 * serving process), for tests that check nothing else was logged.
 */
export function afterStartupLine(stderr: string): string {
  return stderr.replace(/^fs-tools: kernel wall: [^\n]*\n/, '');
}

/**
 * Makes `transport`'s sends wait for one another. The SDK's stdio client transports (both eras) wait for stdin's
 * 'drain' with one listener per send that meets a full pipe, so a burst of concurrent calls (500 in
 * test/attacks/protocol-abuse.test.ts, 1,010 in test/attacks/heavy-queue.test.ts) stacked hundreds of listeners and
 * `npm test` printed MaxListenersExceededWarning. Chained, the sends meet the full pipe one at a time: one listener
 * at most, the same bytes in the same order, and still one burst (a send waits for the pipe, never for an answer).
 */
export function oneSendAtATime(transport: { send: (...args: never[]) => Promise<void> }): void {
  const send = transport.send.bind(transport);
  let last: Promise<void> = Promise.resolve();
  transport.send = (...args: never[]) => {
    const next = last.then(() => send(...args));
    last = next.catch(() => undefined);
    return next;
  };
}

/**
 * What a spawned server's environment adds for the suite's coverage of the spawned server: `NODE_V8_COVERAGE` naming
 * the directory the coverage provider made (test/helpers/spawned-coverage.mjs, which merges what the servers write
 * there into the coverage report), or nothing when coverage is not collected (`--coverage.enabled=false`) or outside
 * a vitest worker.
 */
export function coverageEnv(): Record<string, string> {
  let dir: string | undefined;
  try {
    dir = inject('spawnedCoverageDir');
  } catch {
    dir = undefined;
  }
  return dir ? { NODE_V8_COVERAGE: dir } : {};
}

/**
 * One era's JSON Schema validator provider (the SDK's own default for Node, `AjvJsonSchemaValidator`), shared by
 * every client of that era in this test file and compiling each distinct schema once. Each client would otherwise
 * build its own Ajv and compile every tool's outputSchema again: the modern client does so on its first tools/call
 * (~0.6 s of CPU per client here), the legacy client on listTools. The same schema text compiled by the same engine is
 * the same validator, and every result is still validated by the client as before.
 */
function sharedValidator<V extends { getValidator(schema: never): unknown }>(inner: V): V {
  const compiled = new Map<string, unknown>();
  const getValidator = (schema: never): unknown => {
    const key = JSON.stringify(schema);
    if (!compiled.has(key)) compiled.set(key, inner.getValidator(schema));
    return compiled.get(key);
  };
  return { getValidator } as unknown as V;
}
const modernValidator = sharedValidator(new ModernValidator());
const legacyValidator = sharedValidator(new LegacyValidator());

export type Era = 'modern' | 'legacy';
export const ERAS: Era[] = ['modern', 'legacy'];

/**
 * `fn` (vitest's `it` or `describe`) when the suite's `era` is `only`, else a stand-in that registers nothing: for
 * cases whose outcome does not depend on the client's era (server-side work such as bulk data, git contents, forge
 * failures), so that a `describe.each(ERAS)` suite runs them once instead of once per era. Each file's header says
 * which of its cases run under both eras and why.
 */
export function inEra<T extends (...args: never[]) => unknown>(era: Era, only: Era, fn: T): T {
  return era === only ? fn : ((() => undefined) as unknown as T);
}

/** A tools/call result as the client sees it. */
export interface CallResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
}

export interface ListedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** A connected client. */
export interface TestClient {
  era: Era;
  listTools(): Promise<ListedTool[]>;
  call(name: string, args?: Record<string, unknown>): Promise<CallResult>;
  /** Calls and parses the envelope of an error result (throws if the call succeeded). */
  callError(name: string, args?: Record<string, unknown>): Promise<{ error: Record<string, any> }>;
  /** Calls and returns structuredContent (throws with the envelope if the call failed). */
  callOk(name: string, args?: Record<string, unknown>): Promise<Record<string, any>>;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** The server process's pid (null before spawn or after exit). */
  pid(): number | null;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** Server arguments (flags and roots). */
  args: string[];
  cwd?: string;
  env?: Record<string, string>;
  /**
   * Run this program instead of `node dist/cli.js` (dist-seams/cli.js when `args` starts with a seam); `args` is then its whole argument list (an installed `fs-tools`,
   * `npx fs-tools-mcp …`, an MCP Bundle's command line).
   */
  command?: string;
  /** Legacy era only: roots the client announces (file:// URIs). */
  clientRoots?: string[];
  /**
   * Modern era only: where the client sends its `server/discover` probe. `in-place` (the default) sends it to the
   * session's own server, the SDK's path for every transport but its own stdio one (`InPlaceProbeTransport` below):
   * one server start per connect. `sibling` is what the SDK does with its own stdio transport, as a real client does:
   * it spawns a second, disposable server from the same parameters for the probe, reaps it (SIGTERM), then starts the
   * session's server — two server starts per connect, ~0.2 s more CPU. The default is `in-place` because almost every
   * case is about the server's answers, not the client's start-up; pass `sibling` where the point is the start-up a
   * real client performs (test/e2e/smoke.test.ts, the tools/list suite of test/e2e/protocol.test.ts). Ignored under
   * the legacy era, whose client sends `initialize` on the session's server.
   */
  probe?: 'sibling' | 'in-place';
}

/**
 * The modern SDK's stdio transport under another class: the client probes with the disposable sibling only when the
 * transport's prototype is the SDK's own (`_dispose` an own property of it, @modelcontextprotocol/client 2.x), and
 * sends `server/discover` on the transport itself otherwise. Same process, pipes and framing; one server start.
 */
class InPlaceProbeTransport extends ModernTransport {}

/**
 * Spawns the server and connects a client of `era`: one server process, or two for a modern client with
 * `probe: 'sibling'` (the first reaped before this resolves). Rejects when the server cannot be started or the
 * client's handshake or discover probe fails.
 */
export async function connect(era: Era, options: ConnectOptions): Promise<TestClient> {
  const env = {
    ...(process.env as Record<string, string>),
    ...(options.command ? {} : coverageEnv()),
    ...options.env,
  };
  const params = {
    command: options.command ?? process.execPath,
    args: options.command ? options.args : [cliFor(options.args), ...options.args, ...NATIVE_ARGS],
    cwd: options.cwd,
    env,
    stderr: 'pipe' as const,
  };
  let stderr = '';
  let client: ModernClient | LegacyClient;
  let transport: { readonly pid: number | null };
  if (era === 'modern') {
    const modern = options.probe === 'sibling' ? new ModernTransport(params) : new InPlaceProbeTransport(params);
    oneSendAtATime(modern);
    transport = modern;
    modern.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    client = new ModernClient(
      { name: 'fs-tools-test', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, jsonSchemaValidator: modernValidator },
    );
    await client.connect(modern);
  } else {
    const legacyTransport = new LegacyTransport(params);
    oneSendAtATime(legacyTransport);
    transport = legacyTransport;
    legacyTransport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const legacy = new LegacyClient(
      { name: 'fs-tools-test', version: '1.0.0' },
      {
        capabilities: options.clientRoots ? { roots: { listChanged: true } } : {},
        jsonSchemaValidator: legacyValidator,
      },
    );
    if (options.clientRoots) {
      const roots = options.clientRoots;
      legacy.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: roots.map((uri) => ({ uri })) }));
    }
    await legacy.connect(legacyTransport);
    client = legacy;
  }
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<CallResult> =>
    (await (client as LegacyClient).callTool({ name, arguments: args })) as CallResult;
  return {
    era,
    listTools: async () => (await (client as LegacyClient).listTools()).tools,
    call,
    async callError(name, args) {
      const r = await call(name, args);
      if (!r.isError) throw new Error(`expected ${name} to fail, got ${JSON.stringify(r.structuredContent)}`);
      return JSON.parse(r.content[0].text!);
    },
    async callOk(name, args) {
      const r = await call(name, args);
      if (r.isError) throw new Error(`expected ${name} to succeed, got ${r.content[0]?.text}`);
      return r.structuredContent!;
    },
    stderr: () => stderr,
    pid: () => transport.pid,
    close: () => client.close(),
  };
}
