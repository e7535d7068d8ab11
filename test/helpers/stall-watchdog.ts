/**
 * An event-loop watchdog for attack tests (docs/security.md "Bounded work"): a real server over a raw stdio pipe,
 * requests written as JSON lines (so a test can send what no SDK client would serialize: a value nested 50,000
 * levels, 700,000 keys), and a ping loop — an MCP `ping` every PING_INTERVAL_MS, interleaved with the attack's calls —
 * that measures how long the server's event loop was held: a ping waits for its answer exactly as long as the loop is
 * busy with something else. `worstStallMs` is the longest round trip of any ping sent while the work ran (a ping still
 * unanswered when the work ended counts until it is answered).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { CLI } from './server.js';

/** How often the watchdog pings, ms. */
export const PING_INTERVAL_MS = 20;

/** One JSON-RPC response as parsed from the server's stdout. */
export type RpcResponse = Record<string, any> & { id: string | number | null };

/** What `watch` measured. */
export interface WatchReport<T> {
  value: T;
  /** The longest ping round trip while the work ran, ms. */
  worstStallMs: number;
  /** Pings answered. */
  pings: number;
  /** How long the work took, ms. */
  elapsedMs: number;
}

/** A server process spoken to over raw JSON lines. */
export class StallSession {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  private partial = '';
  private nextId = 1;
  private readonly waiting = new Map<string | number, (r: RpcResponse) => void>();
  private exited: Promise<void>;

  private constructor(args: string[], cwd?: string) {
    this.child = spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'], cwd });
    this.child.stdout.on('data', (d: Buffer) => {
      const lines = (this.partial + d.toString('utf8')).split('\n');
      this.partial = lines.pop()!;
      for (const line of lines) {
        if (line === '') continue;
        const message = JSON.parse(line) as RpcResponse;
        const resolve = message.id === null ? undefined : this.waiting.get(message.id);
        if (resolve) {
          this.waiting.delete(message.id!);
          resolve(message);
        }
      }
    });
    this.child.stderr.on('data', (d: Buffer) => {
      this.stderr += d.toString('utf8');
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  /** Spawns `node dist/cli.js ...args` and completes the MCP initialize handshake. */
  static async start(args: string[], cwd?: string): Promise<StallSession> {
    const session = new StallSession(args, cwd);
    await session.request('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'stall-watchdog', version: '1.0.0' },
    });
    await session.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    return session;
  }

  /** True while the server process runs. */
  running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Writes bytes to the server's stdin, respecting backpressure. Writes that meet a full pipe share one wait for
   * 'drain' (one listener, however many are in flight: a listener each was a MaxListenersExceededWarning).
   */
  async write(data: string): Promise<void> {
    if (this.child.stdin.write(data)) return;
    this.drainWait ??= new Promise<void>((resolve) =>
      this.child.stdin.once('drain', () => {
        this.drainWait = null;
        resolve();
      }),
    );
    await this.drainWait;
  }
  private drainWait: Promise<void> | null = null;

  /** Sends a request (`params` serialized with JSON.stringify) and waits for its response. */
  request(method: string, params?: unknown): Promise<RpcResponse> {
    const id = this.nextId++;
    return this.requestLine(
      id,
      `{"jsonrpc":"2.0","id":${id},"method":"${method}"${params === undefined ? '' : `,"params":${JSON.stringify(params)}`}}`,
    );
  }

  /**
   * Sends a tools/call whose `arguments` are the JSON text `argumentsJson` exactly as given (not re-serialized), and
   * waits for its response.
   */
  callRaw(name: string, argumentsJson: string): Promise<RpcResponse> {
    const id = this.nextId++;
    return this.requestLine(
      id,
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${argumentsJson}}}`,
    );
  }

  /** A tools/call; resolves to the JSON-RPC response. */
  call(name: string, args: Record<string, unknown>): Promise<RpcResponse> {
    return this.callRaw(name, JSON.stringify(args));
  }

  private requestLine(id: number | string, line: string): Promise<RpcResponse> {
    const answered = new Promise<RpcResponse>((resolve, reject) => {
      this.waiting.set(id, resolve);
      void this.exited.then(() =>
        reject(new Error(`server exited before answering ${id}; stderr:\n${this.stderr.slice(0, 2000)}`)),
      );
    });
    void this.write(`${line}\n`);
    return answered;
  }

  /**
   * Runs `work` while pinging every PING_INTERVAL_MS, and reports the worst ping round trip. The pings go on until
   * the work settles; then the last ones are awaited.
   */
  async watch<T>(work: () => Promise<T>): Promise<WatchReport<T>> {
    let worst = 0;
    let pings = 0;
    const inFlight: Array<Promise<void>> = [];
    const ping = (): void => {
      const sent = performance.now();
      const id = `ping-${this.nextId++}`;
      inFlight.push(
        this.requestLine(id, `{"jsonrpc":"2.0","id":"${id}","method":"ping"}`).then(() => {
          pings++;
          worst = Math.max(worst, performance.now() - sent);
        }),
      );
    };
    ping();
    const timer = setInterval(ping, PING_INTERVAL_MS);
    const started = performance.now();
    try {
      const value = await work();
      const elapsedMs = performance.now() - started;
      clearInterval(timer);
      await Promise.all(inFlight);
      return { value, worstStallMs: Math.round(worst), pings, elapsedMs: Math.round(elapsedMs) };
    } finally {
      clearInterval(timer);
    }
  }

  /** Ends stdin and waits for the process to exit (killing it after 5 s). */
  async close(): Promise<void> {
    if (!this.running()) return;
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** The text of a tools/call response's first content block, parsed as an error envelope when the call failed. */
export function envelopeOf(response: RpcResponse): { code: string; details: Record<string, any> } | null {
  const result = response.result as { isError?: boolean; content: Array<{ text: string }> } | undefined;
  if (!result?.isError) return null;
  return (JSON.parse(result.content[0].text) as { error: { code: string; details: Record<string, any> } }).error;
}

/**
 * The longest synchronous run (ms) between two turns of this process's event loop while `work` runs: a setImmediate
 * chain records the gap between its turns (the in-process twin of the ping loop above, for tests that call a
 * primitive directly rather than through a server).
 */
export async function longestRun(work: () => Promise<void>): Promise<number> {
  let worst = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  await work();
  running = false;
  tick();
  return worst;
}
