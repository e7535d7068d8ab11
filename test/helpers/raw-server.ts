/**
 * A server process driven by raw JSON-RPC lines (no SDK client): for tests that kill the server, close its stdin at a
 * chosen moment, or start many servers (the kill suites). The 2025 era's handshake (`initialize`, then
 * `notifications/initialized`), then `tools/call` requests; answers are matched by id.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { CLI, NATIVE_ARGS, SEAMS_CLI, coverageEnv } from './server.js';

/** A tools/call answer: the result's structuredContent, or the parsed envelope. */
export interface RawAnswer {
  isError: boolean;
  structured?: Record<string, unknown>;
  envelope?: { error: Record<string, any> };
}

/** A running server. */
export interface RawServer {
  child: ChildProcessWithoutNullStreams;
  /** Resolves once the handshake was answered (the start-up sweep and journal recovery are done by then). */
  ready: Promise<void>;
  /** Sends one tools/call; resolves with its answer, or null when the process exits first. */
  call(name: string, args: Record<string, unknown>): Promise<RawAnswer | null>;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  /** Every line the server wrote to stdout so far, as written (UTF-8 decoded). */
  lines(): string[];
}

/**
 * Spawns `node dist/cli.js ...args` (dist-seams/cli.js with `options.seam`; as `options.uid`/`gid` when given) and
 * starts the handshake.
 */
export function startRaw(
  args: string[],
  options: { cwd?: string; seam?: string; uid?: number; gid?: number } = {},
): RawServer {
  const program = options.seam ? [SEAMS_CLI, options.seam] : [CLI];
  const child = spawn(process.execPath, [...program, ...args, ...NATIVE_ARGS], {
    cwd: options.cwd,
    uid: options.uid,
    gid: options.gid,
    env: { ...process.env, ...coverageEnv() },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const waiting = new Map<number, (m: Record<string, any> | null) => void>();
  let buffered = '';
  const lines: string[] = [];
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    buffered += d;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      lines.push(line);
      try {
        const m = JSON.parse(line) as Record<string, any>;
        if (typeof m.id === 'number') waiting.get(m.id)?.(m);
      } catch {
        /* not ours */
      }
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      for (const w of waiting.values()) w(null);
      resolve({ code, signal });
    });
  });
  child.stdin.on('error', () => undefined); // EPIPE once the server is gone
  let nextId = 1;
  const request = (method: string, params: unknown): Promise<Record<string, any> | null> => {
    const id = nextId++;
    const answer = new Promise<Record<string, any> | null>((resolve) => waiting.set(id, resolve));
    if (child.stdin.writable) child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return answer;
  };
  const ready = request('initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  }).then(() => {
    if (child.stdin.writable)
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  });
  return {
    child,
    ready,
    exited,
    stderr: () => stderr,
    lines: () => lines,
    async call(name, args) {
      const m = await request('tools/call', { name, arguments: args });
      if (!m?.result) return null;
      const r = m.result as { isError?: boolean; structuredContent?: Record<string, unknown>; content: any[] };
      if (r.isError) return { isError: true, envelope: JSON.parse(r.content[0].text as string) };
      return { isError: false, structured: r.structuredContent };
    },
  };
}
