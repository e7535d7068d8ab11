/**
 * Attack: the disk fails under a write (SPEC §3.1 IO_ERROR, §6.2 atomic writes, §6.4 rollback; issue 7). Pins:
 *  - ENOSPC, for real: the root is a small tmpfs (`mount -t tmpfs -o size=256k`, unmounted afterwards) filled up to
 *    a few pages, served by the real server process (dist/cli.js, a real client). A write_file and an edit_file that
 *    need more room fail with IO_ERROR (details.errno ENOSPC), the original file keeps its bytes and mode, and no
 *    temporary file is left; a two-file apply_patch whose first file fits and whose second does not fails with
 *    ROLLBACK_COMPLETE (details.cause IO_ERROR ENOSPC, both files restored, no journal left); afterwards a write that
 *    fits succeeds. Where tmpfs cannot be mounted (not root, no CAP_SYS_ADMIN), the same cases run in-process with
 *    ENOSPC injected through the documented seam `setWriteFaultInjector` (src/fs/atomic-write.ts) — the test title
 *    says which ran. (/dev/full is a real ENOSPC source too, but the server never writes to a path it does not
 *    create itself, so it cannot be routed there.)
 *  - EIO, through the seam (no real device can be made to fail on demand here), in-process through `callTool`, the
 *    function the server's tools/call runs: at the write and at the rename of a single file (IO_ERROR EIO, original
 *    intact, no temporary), on the second file of a patch (ROLLBACK_COMPLETE), and on every write from the second
 *    file on, rollback included (ROLLBACK_FAILED: details.files says exactly which file holds what).
 *  - An unreadable directory and an unreadable file inside a search are skipped and counted (skipped.unreadable),
 *    not fatal, and reading the file is FILE_POLICY_DENIED with details.source "os". Root bypasses permission bits,
 *    so this runs the real server process as the user nobody (uid 65534), over a raw stdio pipe.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { setWriteFaultInjector } from '../../src/fs/atomic-write.js';
import { callTool } from '../../src/server/call-tool.js';
import { createProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { CLI, connect, type TestClient } from '../helpers/server.js';
import { contentHash } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups.reverse()) c();
});
afterEach(() => setWriteFaultInjector(null));

const A = 'original a\nline 2\n';
const B = 'original b\nline 2\n';
const GROW = 'x'.repeat(64 * 1024);

/** Every fs-tools temporary file under `dir`. */
function temporaries(dir: string): string[] {
  const out: string[] = [];
  const visit = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) visit(path.join(d, e.name));
      else if (e.name.includes('.fs-tools-')) out.push(path.join(d, e.name));
    }
  };
  visit(dir);
  return out;
}

/** Mounts a 256 KiB tmpfs at a fresh directory; null when this machine does not allow it. */
function mountSmallTmpfs(): string | null {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return null;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-fullfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k,mode=0755', 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  cleanups.push(() => {
    try {
      execFileSync('umount', [dir], { stdio: 'ignore' });
    } catch {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Fills `dir`'s filesystem until at most `leaveBytes` are free. */
function fillUp(dir: string, leaveBytes: number): void {
  const { bavail, bsize } = statfsOf(dir);
  const free = bavail * bsize;
  if (free > leaveBytes) writeFileSync(path.join(dir, 'filler.bin'), Buffer.alloc(free - leaveBytes));
}

function statfsOf(dir: string): { bavail: number; bsize: number } {
  const out = execFileSync('stat', ['-f', '-c', '%a %S', dir], { encoding: 'utf8' }).trim().split(' ').map(Number);
  return { bavail: out[0], bsize: out[1] };
}

/** FAULTS_NO_MOUNT=1 runs the seam variant on a machine that could mount (to check it). */
const SMALL_FS = process.env.FAULTS_NO_MOUNT ? null : mountSmallTmpfs();

describe(`ENOSPC (${SMALL_FS ? 'real: a full 256 KiB tmpfs, real server process' : 'injected through setWriteFaultInjector: tmpfs cannot be mounted here'})`, () => {
  const aux = makeTree({}, 'fs-tools-faults-aux-');
  cleanups.push(aux.cleanup);
  let root: string;
  let client: TestClient | null = null;
  /** One call, through the real server (tmpfs) or in-process (seam). */
  let call: (tool: string, args: Record<string, unknown>) => Promise<{ ok: boolean; structured?: any; error?: any }>;

  beforeAll(async () => {
    root = SMALL_FS ?? makeTree({}, 'fs-tools-faults-').dir;
    if (!SMALL_FS) cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    writeFileSync(path.join(root, 'a.txt'), A);
    chmodSync(path.join(root, 'a.txt'), 0o640);
    writeFileSync(path.join(root, 'b.txt'), B);
    if (SMALL_FS) {
      fillUp(root, 12 * 1024);
      client = await connect('modern', { args: ['--state-dir', path.join(aux.dir, 'state'), root] });
      call = async (tool, args) => {
        const r = await client!.call(tool, args);
        return r.isError
          ? { ok: false, error: JSON.parse(r.content[0].text!).error }
          : { ok: true, structured: r.structuredContent };
      };
    } else {
      const config = parseConfig(['--state-dir', path.join(aux.dir, 'state'), root], {
        cwd: root,
        home: '/nonexistent',
        toolNames: TOOL_NAMES,
      });
      const state = createProcessState(config, TOOLS, 'faults');
      call = async (tool, args) => {
        // Anything that would grow a file past the few pages "left" fails like a full disk.
        setWriteFaultInjector((step, target) => {
          if (step === 'write' && pendingGrowth.has(path.basename(target))) {
            throw Object.assign(new Error(`ENOSPC: no space left on device, write`), {
              code: 'ENOSPC',
              syscall: 'write',
              path: target,
            });
          }
        });
        const o = await callTool(state, tool, args, new AbortController().signal);
        setWriteFaultInjector(null);
        return o.ok ? { ok: true, structured: o.structured } : { ok: false, error: o.envelope.error };
      };
    }
  }, 60_000);
  afterAll(async () => {
    await client?.close();
  });

  /** Seam mode only: the files whose next write "does not fit". */
  const pendingGrowth = new Set<string>();

  /** The undo history's directory listing (records and any temporary), [] while there is none. */
  const historyNames = () => {
    const dir = path.join(aux.dir, 'state', 'history');
    return existsSync(dir) ? readdirSync(dir).sort() : [];
  };

  it('write_file that does not fit: IO_ERROR ENOSPC, the original keeps its bytes and mode, no temporary left', async () => {
    pendingGrowth.add('a.txt');
    const history = historyNames();
    const r = await call('write_file', { path: 'a.txt', content: GROW, expected_hash: contentHash(A) });
    pendingGrowth.clear();
    expect(r.ok).toBe(false);
    expect(r.error).toMatchObject({ code: 'IO_ERROR', details: { errno: 'ENOSPC' }, retryable: false });
    expect(r.error.path).toBe(path.join(root, 'a.txt')); // the target, never the internal temporary name
    expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe(A);
    expect(statSync(path.join(root, 'a.txt')).mode & 0o777).toBe(0o640);
    expect(temporaries(root)).toEqual([]);
    // The undo record, written while the write ran, was dropped with it: no record, no temporary.
    expect(historyNames()).toEqual(history);
  });

  it('edit_file that does not fit: IO_ERROR ENOSPC, nothing changed', async () => {
    pendingGrowth.add('a.txt');
    const history = historyNames();
    const r = await call('edit_file', {
      path: 'a.txt',
      edits: [{ old_text: 'line 2', new_text: GROW }],
      expected_hash: contentHash(A),
    });
    pendingGrowth.clear();
    expect(r.error).toMatchObject({ code: 'IO_ERROR', details: { errno: 'ENOSPC' } });
    expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe(A);
    expect(temporaries(root)).toEqual([]);
    expect(historyNames()).toEqual(history);
  });

  it('a two-file patch whose second file does not fit: ROLLBACK_COMPLETE, both files as before, no journal', async () => {
    pendingGrowth.add('b.txt');
    const patch =
      `--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-original a\n+patched a\n line 2\n` +
      `--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,3 @@\n original b\n line 2\n+${GROW}\n`;
    const r = await call('apply_patch', {
      patch,
      expected_hashes: { 'a.txt': contentHash(A), 'b.txt': contentHash(B) },
    });
    pendingGrowth.clear();
    expect(r.ok).toBe(false);
    expect(r.error.code).toBe('ROLLBACK_COMPLETE');
    expect(r.error.recovery).toBe('check_already_applied');
    expect(r.error.details.cause).toMatchObject({ code: 'IO_ERROR', details: { errno: 'ENOSPC' } });
    expect(r.error.details.files).toEqual([
      { path: path.join(root, 'a.txt'), status: 'restored' },
      { path: path.join(root, 'b.txt'), status: 'restored' },
    ]);
    expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe(A);
    expect(readFileSync(path.join(root, 'b.txt'), 'utf8')).toBe(B);
    expect(temporaries(root)).toEqual([]);
    const journal = path.join(aux.dir, 'state', 'journal');
    expect(existsSync(journal) ? readdirSync(journal) : []).toEqual([]);
  });

  it('afterwards, a write that fits succeeds', async () => {
    const r = await call('write_file', { path: 'a.txt', content: 'small\n', expected_hash: contentHash(A) });
    expect(r.ok, JSON.stringify(r.error)).toBe(true);
    expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('small\n');
    expect(statSync(path.join(root, 'a.txt')).mode & 0o777).toBe(0o640);
    if (client) expect(client.stderr()).not.toMatch(/INTERNAL|incident/);
  });
});

describe('EIO (injected through setWriteFaultInjector; in-process through callTool)', () => {
  const tree = makeTree({}, 'fs-tools-eio-');
  const stateDir = makeTree({}, 'fs-tools-eio-state-');
  cleanups.push(tree.cleanup, stateDir.cleanup);
  const config = parseConfig(['--state-dir', stateDir.dir, tree.dir], {
    cwd: tree.dir,
    home: '/nonexistent',
    toolNames: TOOL_NAMES,
  });
  const state = createProcessState(config, TOOLS, 'faults');
  const call = (tool: string, args: Record<string, unknown>) =>
    callTool(state, tool, args, new AbortController().signal);
  const eio = (target: string) =>
    Object.assign(new Error(`EIO: i/o error, write '${target}'`), { code: 'EIO', syscall: 'write', path: target });
  let n = 0;
  const area = (files: Record<string, string>) => {
    const d = path.join(tree.dir, `case${++n}`);
    mkdirSync(d);
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(d, name), content);
    return d;
  };

  it.each(['write', 'rename'] as const)(
    'a single-file write failing at the %s step: IO_ERROR EIO, original intact',
    async (at) => {
      const d = area({ 'f.txt': A });
      setWriteFaultInjector((step, target) => {
        if (step === at) throw eio(target);
      });
      for (const [tool, args] of [
        ['write_file', { path: path.join(d, 'f.txt'), content: 'new\n', expected_hash: contentHash(A) }],
        [
          'edit_file',
          {
            path: path.join(d, 'f.txt'),
            edits: [{ old_text: 'line 2', new_text: 'edited' }],
            expected_hash: contentHash(A),
          },
        ],
      ] as const) {
        const o = await call(tool, args);
        expect(o.ok).toBe(false);
        if (!o.ok)
          expect(o.envelope.error).toMatchObject({
            code: 'IO_ERROR',
            details: { errno: 'EIO' },
            path: path.join(d, 'f.txt'),
          });
        expect(readFileSync(path.join(d, 'f.txt'), 'utf8')).toBe(A);
        expect(temporaries(d)).toEqual([]);
      }
    },
  );

  it('the second file of a patch failing: ROLLBACK_COMPLETE, every file as before', async () => {
    const d = area({ 'a.txt': A, 'b.txt': B, 'c.txt': 'c\n' });
    setWriteFaultInjector((step, target) => {
      if (step === 'write' && target.endsWith('b.txt')) throw eio(target);
    });
    const patch =
      ['a', 'b']
        .map((x) => `--- a/${x}.txt\n+++ b/${x}.txt\n@@ -1,2 +1,2 @@\n-original ${x}\n+patched ${x}\n line 2\n`)
        .join('') + '--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+created\n';
    const o = await call('apply_patch', {
      patch,
      path: d,
      expected_hashes: { 'a.txt': contentHash(A), 'b.txt': contentHash(B) },
    });
    expect(o.ok).toBe(false);
    if (o.ok) return;
    expect(o.envelope.error.code).toBe('ROLLBACK_COMPLETE');
    expect(o.envelope.error.details.cause as { code: string; details: { errno: string } }).toMatchObject({
      code: 'IO_ERROR',
      details: { errno: 'EIO' },
    });
    expect(readFileSync(path.join(d, 'a.txt'), 'utf8')).toBe(A);
    expect(readFileSync(path.join(d, 'b.txt'), 'utf8')).toBe(B);
    expect(existsSync(path.join(d, 'new.txt'))).toBe(false);
    expect(temporaries(d)).toEqual([]);
  });

  it('a disk that fails from the second file on, rollback included: ROLLBACK_FAILED, and details.files tells the truth', async () => {
    const d = area({ 'a.txt': A, 'b.txt': B });
    let writes = 0;
    setWriteFaultInjector((step, target) => {
      if (step === 'write' && ++writes >= 2) throw eio(target);
    });
    const patch = ['a', 'b']
      .map((x) => `--- a/${x}.txt\n+++ b/${x}.txt\n@@ -1,2 +1,2 @@\n-original ${x}\n+patched ${x}\n line 2\n`)
      .join('');
    const o = await call('apply_patch', {
      patch,
      path: d,
      expected_hashes: { 'a.txt': contentHash(A), 'b.txt': contentHash(B) },
    });
    expect(o.ok).toBe(false);
    if (o.ok) return;
    expect(o.envelope.error.code).toBe('ROLLBACK_FAILED');
    expect(o.envelope.error.recovery).toBe('check_already_applied');
    expect(o.envelope.error.details.files).toEqual([
      { path: path.join(d, 'a.txt'), status: 'not_restored', reason: 'IO_ERROR' },
      { path: path.join(d, 'b.txt'), status: 'restored' },
    ]);
    // What details.files says is what is on disk: a.txt holds the patch, b.txt its old bytes.
    expect(readFileSync(path.join(d, 'a.txt'), 'utf8')).toBe(A.replace('original a', 'patched a'));
    expect(readFileSync(path.join(d, 'b.txt'), 'utf8')).toBe(B);
    expect(temporaries(d)).toEqual([]);
  });
});

describe('unreadable entries inside a search (real server process as the user nobody)', () => {
  const NOBODY = 65534;
  const asRoot = process.getuid?.() === 0;
  const tree = makeTree(
    {
      a: { '1.txt': 'needle one\n' },
      locked: { 'hidden.txt': 'needle hidden\n', deeper: { 'x.txt': 'needle x\n' } },
      open: {
        'ok.txt': 'needle ok\n',
        'sealed.txt': 'needle sealed\n',
        inner: { 'locked-too': { 'y.txt': 'needle y\n' }, 'z.txt': 'needle z\n' },
      },
    },
    'fs-tools-unreadable-',
  );
  const stateDir = makeTree({}, 'fs-tools-unreadable-state-');
  cleanups.push(() => {
    for (const p of ['locked', 'open/inner/locked-too']) chmodSync(path.join(tree.dir, p), 0o755);
    tree.cleanup();
    stateDir.cleanup();
  });

  it('skips and counts them, keeps searching, and a read of the unreadable file is FILE_POLICY_DENIED source os', async () => {
    chmodSync(tree.dir, 0o755);
    // The server runs as nobody: its state directory must be its own and not writable by others (checked at start).
    if (asRoot) chownSync(stateDir.dir, NOBODY, NOBODY);
    chmodSync(stateDir.dir, 0o700);
    chmodSync(path.join(tree.dir, 'locked'), 0o000);
    chmodSync(path.join(tree.dir, 'open/inner/locked-too'), 0o000);
    chmodSync(path.join(tree.dir, 'open/sealed.txt'), 0o000);
    const child = spawn(process.execPath, [CLI, '--state-dir', stateDir.dir, tree.dir], {
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    let out = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const send = (m: object) => child.stdin.write(`${JSON.stringify(m)}\n`);
    const answer = async (id: number): Promise<Record<string, any>> => {
      const end = Date.now() + 20_000;
      while (Date.now() < end) {
        const m = out
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, any>)
          .find((x) => x.id === id);
        if (m) return m;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`no answer to ${id}; exit ${child.exitCode}; stdout: ${out.slice(0, 500)}; stderr: ${stderr}`);
    };
    try {
      send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      await answer(1);
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const call = async (id: number, name: string, args: Record<string, unknown>) => {
        send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
        return (await answer(id)).result as {
          isError?: boolean;
          structuredContent?: any;
          content: Array<{ text: string }>;
        };
      };
      const search = await call(2, 'search_files', { query: 'needle' });
      expect(search.isError, search.content[0].text).toBeFalsy();
      expect(search.structuredContent.matches.map((m: { path: string }) => m.path)).toEqual([
        'a/1.txt',
        'open/inner/z.txt',
        'open/ok.txt',
      ]);
      // Two unreadable directories and one unreadable file.
      expect(search.structuredContent.skipped.unreadable).toBe(3);
      const list = await call(3, 'list_directory', { depth: 5 });
      expect(list.structuredContent.skipped.unreadable).toBe(2);
      const read = await call(4, 'read_file', { path: 'open/sealed.txt' });
      expect(read.isError).toBe(true);
      expect(JSON.parse(read.content[0].text).error).toMatchObject({
        code: 'FILE_POLICY_DENIED',
        details: { source: 'os' },
      });
      const inside = await call(5, 'read_file', { path: 'locked/hidden.txt' });
      expect(JSON.parse(inside.content[0].text).error).toMatchObject({
        code: 'FILE_POLICY_DENIED',
        details: { source: 'os' },
      });
      expect(stderr).not.toMatch(/INTERNAL|incident/);
    } finally {
      child.stdin.end();
      await new Promise((r) => child.once('exit', r));
    }
  });
});
