/**
 * Benchmark plumbing: real stdio MCP servers driven by one MCP client implementation (@modelcontextprotocol/sdk
 * 1.x `Client`, which speaks the 2025 protocol that both fs-tools and the official filesystem server accept), the
 * server process's peak RSS, and timing statistics.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

/** Per-request timeout of the benchmark client, ms (a full-tree call of a slow server must not abort the run). */
const REQUEST_TIMEOUT_MS = 180_000;

/**
 * A connected server.
 * @typedef {object} BenchServer
 * @property {string} name
 * @property {number} pid the server process (node itself: no shell in between)
 * @property {(tool: string, args: Record<string, unknown>) => Promise<any>} call tools/call; throws on an error result
 * @property {() => Promise<any[]>} listTools tools/list
 * @property {() => void} resetPeakRss clears VmHWM (Linux `clear_refs` 5), so the next reading covers one case
 * @property {() => number | null} peakRssMb VmHWM in MiB, null when /proc is not readable
 * @property {() => string} stderr what the server wrote to stderr
 * @property {() => Promise<void>} close closes stdin and waits for the process to exit
 */

/**
 * Spawns `node ...args` as a stdio MCP server and connects the client.
 * @param {string} name label in the table
 * @param {string[]} nodeArgs arguments after `node` (script first; node flags such as --cpu-prof before it)
 * @param {{ cwd?: string, env?: Record<string, string> }} [options]
 * @returns {Promise<BenchServer>}
 */
export async function startServer(name, nodeArgs, options = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: nodeArgs,
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d.toString(); });
  const client = new Client({ name: 'fs-tools-bench', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  const pid = transport.pid;
  const status = () => {
    try {
      return readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      return null;
    }
  };
  return {
    name,
    pid,
    async call(tool, args) {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS });
      if (result.isError) throw new Error(`${name} ${tool} failed: ${result.content?.[0]?.text?.slice(0, 500)}`);
      return result;
    },
    listTools: async () => (await client.listTools()).tools,
    resetPeakRss() {
      try {
        writeFileSync(`/proc/${pid}/clear_refs`, '5');
      } catch { /* not Linux, or not permitted: VmHWM then covers the whole process life */ }
    },
    peakRssMb() {
      const m = /VmHWM:\s+(\d+) kB/.exec(status() ?? '');
      return m ? Number(m[1]) / 1024 : null;
    },
    stderr: () => stderr,
    async close() {
      await client.close();
    },
  };
}

/**
 * Times `fn` once, ms.
 * @param {() => Promise<unknown>} fn
 * @returns {Promise<number>}
 */
export async function timeOnce(fn) {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/**
 * Median of a non-empty list of numbers.
 * @param {number[]} xs
 */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * Runs `count` calls of `fn` with at most `concurrency` in flight; returns calls per second.
 * @param {(i: number) => Promise<unknown>} fn
 * @param {number} count
 * @param {number} concurrency
 */
export async function throughput(fn, count, concurrency) {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++;
      await fn(i);
    }
  }));
  return count / ((performance.now() - t0) / 1000);
}
