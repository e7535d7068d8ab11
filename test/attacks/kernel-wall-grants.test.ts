/**
 * The kernel wall's grants, attacked (docs/security.md "The kernel wall"): the wall says "enforced" only when every
 * thread that does file I/O is confined, and no grant for "what the process needs to run" reaches what it must not.
 *  - UV_THREADPOOL_SIZE as libuv reads it: `-1` makes libuv start 1024 pool threads (atoi into an unsigned count);
 *    the wall must confine all of them (or say it is off), never some — a read on any pool thread is refused.
 *  - Broad PATH entries: a PATH entry that holds a root (its parent), the run directory (/tmp) or gh's configuration
 *    must not become a read-execute grant: git (probing from inside, as in kernel-wall.test.ts) then reads outside
 *    the roots, gh's token and the server's run directory.
 *  - the server's /proc entry: git read the server's environment (GH_TOKEN, when the operator passes it so) and its
 *    descriptors (the MCP protocol's pipes) through /proc/PPID; git's layer has no /proc entry of the server.
 *  - git signalling the server: SIGUSR1 makes Node open its inspector on 127.0.0.1:9229, and a Runtime.evaluate there
 *    runs in the server's wider domain — git (a program a repository may drive) read gh's token that way. git's
 *    layer is scoped (no signals, no abstract sockets, no TCP out of it) and the server ignores SIGUSR1 under the wall.
 * Everything runs for real: the built server over stdio, real git, the real kernel; the pool check confines a child
 * Node process with the built addon and the real src/fs/kernel-wall.ts (bundled for it).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../helpers/server.js';
import { fileSha256 } from '../helpers/worker-code.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const ADDON = path.join(REPO, `dist/native/${process.platform}-${process.arch}/fs_tools_landlock.node`);
const MARKER = `OUTSIDE-${Math.random().toString(36).slice(2)}-MARKER`;

let base: string;
let root: string;
let outside: string;
let bin: string;
let ghConfig: string;

beforeAll(() => {
  base = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-wall-grants-'));
  root = path.join(base, 'root');
  outside = path.join(base, 'outside');
  bin = path.join(base, 'bin');
  ghConfig = path.join(base, 'gh-config');
  for (const d of [root, outside, bin, ghConfig]) mkdirSync(d, { recursive: true });
  writeFileSync(path.join(ghConfig, 'hosts.yml'), `github.com:\n    oauth_token: gho_${MARKER}\n`);
  writeFileSync(path.join(outside, 'secret.txt'), `${MARKER}\n`);
  writeFileSync(path.join(root, 'inside.txt'), 'inside\n');
  const git = (args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
      cwd: root,
      stdio: 'ignore',
    });
  git(['init', '-q']);
  git(['add', 'inside.txt']);
  git(['commit', '-qm', 'one']);
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  writeFileSync(
    path.join(bin, 'git'),
    `#!/bin/sh
if cat ${JSON.stringify(path.join(outside, 'secret.txt'))} >/dev/null 2>&1; then r=read-ok; else r=read-denied; fi
if cat "$GH_CONFIG_DIR/hosts.yml" >/dev/null 2>&1; then g=gh-config-ok; else g=gh-config-denied; fi
if ls "$HOME/../.." >/dev/null 2>&1; then t=run-dir-ok; else t=run-dir-denied; fi
if cat "/proc/$PPID/environ" >/dev/null 2>&1 || ls "/proc/$PPID/fd" >/dev/null 2>&1; then p=server-proc-ok; else p=server-proc-denied; fi
echo "$r $g $t $p" >> ${JSON.stringify(path.join(root, 'probe.log'))}
exec ${realGit} "$@"
`,
  );
  chmodSync(path.join(bin, 'git'), 0o755);
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('broad PATH entries do not widen the wall', () => {
  async function probe(extraPath: string[]): Promise<string> {
    rmSync(path.join(root, 'probe.log'), { force: true });
    const client = await connect('modern', {
      args: [root],
      cwd: root,
      env: {
        PATH: [bin, ...extraPath, process.env.PATH ?? ''].join(path.delimiter),
        GH_CONFIG_DIR: ghConfig,
      },
    });
    try {
      expect((await client.callOk('list_allowed_directories')).kernel_wall).toMatchObject({ enforced: true });
      expect((await client.callOk('git_status', { path: root })).repo_root).toBe(root);
    } finally {
      await client.close();
    }
    return readFileSync(path.join(root, 'probe.log'), 'utf8');
  }

  it("no PATH change: git reads neither the server's environment (GH_TOKEN) nor its descriptors (the MCP pipes)", async () => {
    for (const line of (await probe([])).trim().split('\n')) {
      expect(line).toBe('read-denied gh-config-denied run-dir-denied server-proc-denied');
    }
  });

  it.each([
    ["a root's parent (which also holds the outside tree and gh's configuration)", () => [base]],
    ['the temporary directory that holds the run directory', () => [os.tmpdir()]],
  ])('PATH holding %s: git still reads nothing outside, nor the token, nor the run directory', async (_, extra) => {
    const log = await probe(extra());
    expect(log.trim().split('\n').length).toBeGreaterThanOrEqual(1);
    for (const line of log.trim().split('\n')) {
      expect(line).toBe('read-denied gh-config-denied run-dir-denied server-proc-denied');
    }
  });
});

describe("git cannot borrow the server's domain", () => {
  /** A raw WebSocket client for the inspector: SIGUSR1 to the server, then Runtime.evaluate of a read of `file`. */
  const INSPECTOR_PROBE = `import net from 'node:net';
import http from 'node:http';
const [ppid, file] = [Number(process.argv[2]), process.argv[3]];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const get = (u) => new Promise((res, rej) => http.get(u, (r) => { let d = ''; r.on('data', (c) => (d += c)); r.on('end', () => res(d)); }).on('error', rej));
try { process.kill(ppid, 'SIGUSR1'); } catch { console.log('signal-denied'); process.exit(0); }
let list;
for (let i = 0; i < 20 && !list; i++) { await sleep(100); list = await get('http://127.0.0.1:9229/json/list').then(JSON.parse, () => undefined); }
if (!list) { console.log('no-inspector'); process.exit(0); }
const sock = net.connect(9229, '127.0.0.1');
sock.on('error', () => { console.log('no-inspector'); process.exit(0); });
sock.write('GET ' + new URL(list[0].webSocketDebuggerUrl).pathname + ' HTTP/1.1\\r\\nHost: 127.0.0.1:9229\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n');
const expression = "(() => { try { return process.getBuiltinModule('fs').readFileSync(" + JSON.stringify(file) + ", 'utf8'); } catch (e) { return 'ERR ' + e.code; } })()";
const msg = Buffer.from(JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression } }));
let buf = '';
let sent = false;
sock.on('data', (d) => {
  buf += d.toString('latin1');
  if (!sent && buf.includes('\\r\\n\\r\\n')) {
    sent = true;
    sock.write(Buffer.concat([Buffer.from([0x81, 0xfe, msg.length >> 8, msg.length & 255, 0, 0, 0, 0]), msg]));
  }
  if (buf.includes('"id":1')) { console.log(buf.includes('oauth_token') ? 'inspector-token-ok' : 'inspector-token-denied'); process.exit(0); }
});
setTimeout(() => { console.log('inspector-timeout'); process.exit(0); }, 5000);
`;

  it("SIGUSR1 to the server and its inspector: git does not read gh's token through the server", async () => {
    const probeDir = path.join(base, 'probe-bin');
    mkdirSync(probeDir, { recursive: true });
    writeFileSync(path.join(probeDir, 'inspector-probe.mjs'), INSPECTOR_PROBE);
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    const log = path.join(root, 'inspector.log');
    writeFileSync(
      path.join(probeDir, 'git'),
      `#!/bin/sh
env -u NODE_V8_COVERAGE ${JSON.stringify(process.execPath)} ${JSON.stringify(path.join(probeDir, 'inspector-probe.mjs'))} "$PPID" "$GH_CONFIG_DIR/hosts.yml" >> ${JSON.stringify(log)} 2>&1
exec ${realGit} "$@"
`,
    );
    chmodSync(path.join(probeDir, 'git'), 0o755);
    rmSync(log, { force: true });
    let stderr: string;
    const client = await connect('modern', {
      args: [root],
      cwd: root,
      env: { PATH: [probeDir, process.env.PATH ?? ''].join(path.delimiter), GH_CONFIG_DIR: ghConfig },
    });
    try {
      expect((await client.callOk('list_allowed_directories')).kernel_wall).toMatchObject({ enforced: true });
      expect((await client.callOk('git_status', { path: root })).repo_root).toBe(root);
      stderr = client.stderr();
    } finally {
      await client.close();
    }
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const line of lines) expect(line).toBe('signal-denied');
    expect(stderr).not.toContain('Debugger listening');
  });
});

describe('the libuv pool as libuv sizes it', () => {
  let bundle: string;
  beforeAll(async () => {
    bundle = path.join(base, 'kernel-wall.mjs');
    await build({
      entryPoints: [path.join(REPO, 'src/fs/kernel-wall.ts')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      outfile: bundle,
      logLevel: 'silent',
    });
  });

  /** Starts the pool (UV_THREADPOOL_SIZE=raw), confines the process as the server does, then reads outside on it. */
  function confinedReads(raw: string): { state: { enforced: boolean }; threads: number; read: number } {
    const script = `
import { promises as fs, readdirSync } from 'node:fs';
import { confineProcess, loadKernelWallAddon } from ${JSON.stringify(pathToFileURL(bundle).href)};
const many = (f) => Promise.allSettled(Array.from({ length: 3000 }, f));
await many(() => fs.stat('/'));
const threads = readdirSync('/proc/self/task').length;
const state = await confineProcess(loadKernelWallAddon(new URL(${JSON.stringify(pathToFileURL(ADDON).href)}), ${JSON.stringify(fileSha256(pathToFileURL(ADDON)))}), [], null);
const results = await many(() => fs.readFile(${JSON.stringify(path.join(outside, 'secret.txt'))}, 'utf8'));
process.stdout.write(JSON.stringify({ state, threads, read: results.filter((r) => r.status === 'fulfilled').length }));
`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, UV_THREADPOOL_SIZE: raw },
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as { state: { enforced: boolean }; threads: number; read: number };
  }

  it.each(['-1', '2'])('UV_THREADPOOL_SIZE=%j: enforced, and no pool thread reads outside', (raw) => {
    const { state, threads, read } = confinedReads(raw);
    expect(threads).toBeGreaterThan(raw === '-1' ? 1024 : 2);
    expect(state.enforced).toBe(true);
    expect(read).toBe(0);
  });

  it('the control: the same reads succeed unconfined', () => {
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        `require('fs').promises.readFile(${JSON.stringify(path.join(outside, 'secret.txt'))}, 'utf8').then((t) => process.stdout.write(t))`,
      ],
      { encoding: 'utf8' },
    );
    expect(r.stdout).toBe(`${MARKER}\n`);
    expect(existsSync(ADDON)).toBe(true);
  });
});
