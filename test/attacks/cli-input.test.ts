/**
 * Attack: the command line's `call` and `batch` as a hostile input source or a careless pipeline would drive them
 * (docs/cli.md). The MCP path refuses a line that is not valid UTF-8 (src/server/stdio-guard.ts); `batch` and
 * `call TOOL -` must not turn such bytes into U+FFFD and run the call with a path or content the sender never wrote.
 * A usage error on stderr must not quote the arguments (stdin may be a secret file piped by mistake). A reader that
 * closes stdout early (`| head -1`) must not crash the process with a stack trace, and `batch` must not go on running
 * requests whose results nobody reads. SIGTERM or Ctrl-C during a batch (`timeout 60 fs-tools batch` in CI) must
 * shut down as the server does: the call in flight finishes, no later line runs, and none of fs-tools' own lock files
 * or temporaries stay in the user's work tree. Each case runs the built CLI and checks the bytes on disk.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, SEAMS_CLI } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const states = makeTree({});
afterAll(() => states.cleanup());
let stateCount = 0;
const envFor = () => ({ ...process.env, XDG_STATE_HOME: path.join(states.dir, `s${stateCount++}`) });

function run(args: string[], input: string | Buffer, cwd: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, env: envFor(), input, timeout: 30_000 });
  return { status: r.status, stdout: r.stdout.toString('utf8'), stderr: r.stderr.toString('utf8') };
}

const writeLine = (file: string, content: string) =>
  JSON.stringify({ tool: 'write_file', arguments: { path: file, content } });

describe('invalid UTF-8 is refused, never replaced by U+FFFD', () => {
  it('batch: a line with invalid UTF-8 gets an error line and writes nothing; the next line still runs', () => {
    const work = makeTree({});
    try {
      const bad = Buffer.concat([
        Buffer.from('{"tool":"write_file","arguments":{"path":"b'),
        Buffer.from([0xff]),
        Buffer.from('.txt","content":"x'),
        Buffer.from([0xfe, 0xff]),
        Buffer.from('y"}}\n'),
      ]);
      const r = run(['batch'], Buffer.concat([bad, Buffer.from(`${writeLine('ok.txt', 'fine')}\n`)]), work.dir);
      expect(r.status, r.stderr).toBe(1);
      const out = r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, any>);
      expect(out).toHaveLength(2);
      expect(out[0]).toMatchObject({
        tool: null,
        ok: false,
        error: { code: 'VALIDATION', details: { line: 1, reason: 'malformed_json' } },
      });
      expect(out[0].error.message).toMatch(/not valid UTF-8/);
      expect(out[1]).toMatchObject({ tool: 'write_file', ok: true });
      expect(readdirSync(work.dir)).toEqual(['ok.txt']);
    } finally {
      work.cleanup();
    }
  });

  it('call TOOL -: arguments on stdin with invalid UTF-8 are a usage error (exit 2), nothing written', () => {
    const work = makeTree({});
    try {
      const input = Buffer.concat([
        Buffer.from('{"path":"c.txt","content":"x'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('y"}'),
      ]);
      const r = run(['call', 'write_file', '-'], input, work.dir);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^fs-tools: the JSON on stdin is not valid UTF-8\n$/);
      expect(readdirSync(work.dir)).toEqual([]);
    } finally {
      work.cleanup();
    }
  });
});

describe('a usage error does not quote the arguments', () => {
  it('JSON that does not parse is named by position only, on stdin and in JSON_ARGS', () => {
    const work = makeTree({});
    try {
      const marker = 'ghp_SECRETMARKER';
      for (const [args, input] of [
        [['call', 'write_file', '-'], `GITHUB_TOKEN=${marker}\nPASSWORD=hunter2\n`],
        [['call', 'write_file', `${marker}=hunter2`], ''],
        [['call', 'write_file', `{"path":"x","content":"${marker}"`], ''],
      ] as const) {
        const r = run([...args], input, work.dir);
        expect(r.status, r.stderr).toBe(2);
        expect(r.stderr).toMatch(/^fs-tools: (the JSON on stdin|JSON_ARGS) is not valid JSON/);
        expect(r.stderr).not.toContain('SECRET');
        expect(r.stderr).not.toContain('GITHUB');
        expect(r.stderr).not.toContain('hunter2');
      }
      expect(readdirSync(work.dir)).toEqual([]);
    } finally {
      work.cleanup();
    }
  });
});

/** Runs the CLI with its stdout's read end closed before the child writes; resolves with its status and stderr. */
function runWithStdoutClosed(
  args: string[],
  input: string,
  cwd: string,
): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: envFor(), stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader is gone: every write of the child is EPIPE
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
    child.stdin.on('error', () => {}); // the child may stop reading
    child.stdin.end(input);
  });
}

describe('stdout closed early (EPIPE)', () => {
  it('call: no crash, no stack trace; the status is the call outcome', async () => {
    const work = makeTree({ 'a.txt': 'hello\n' });
    try {
      const ok = await runWithStdoutClosed(['call', 'read_file', '{"path":"a.txt"}'], '', work.dir);
      expect(ok.stderr).not.toMatch(/EPIPE|Unhandled|at /);
      expect(ok.status, ok.stderr).toBe(0);
      const failed = await runWithStdoutClosed(['call', 'read_file', '{"path":"nope.txt"}'], '', work.dir);
      expect(failed.stderr).not.toMatch(/EPIPE|Unhandled|at /);
      expect(failed.status, failed.stderr).toBe(1);
    } finally {
      work.cleanup();
    }
  });

  it('batch: stops at the first output that cannot be written; later requests are not run; exit 1', async () => {
    const work = makeTree({});
    try {
      const input = Array.from({ length: 40 }, (_, i) => `${writeLine(`w${i + 1}.txt`, 'x')}\n`).join('');
      const r = await runWithStdoutClosed(['batch'], input, work.dir);
      expect(r.stderr).not.toMatch(/EPIPE|Unhandled|at /);
      expect(r.stderr).toMatch(/^fs-tools: stdout was closed; the batch stopped after line 1/);
      expect(r.status).toBe(1);
      // The first request ran before its answer could fail to go out; nothing after it.
      expect(readdirSync(work.dir)).toEqual(['w1.txt']);
      expect(readFileSync(path.join(work.dir, 'w1.txt'), 'utf8')).toBe('x');
      expect(existsSync(path.join(work.dir, 'w2.txt'))).toBe(false);
    } finally {
      work.cleanup();
    }
  });
});

describe('SIGTERM or SIGINT during a batch', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal}: the copy in flight finishes, no later line runs, nothing of ours is left in the root; exit 1`, async () => {
      const files: Record<string, string> = {};
      for (let i = 0; i < 20; i++) files[`f${String(i).padStart(2, '0')}.txt`] = `file ${i}\n`;
      const work = makeTree({ src: files });
      const state = makeTree({});
      try {
        const lines = [
          JSON.stringify({ tool: 'copy_path', arguments: { source: 'src', destination: 'dst', recursive: true } }),
          writeLine('later.txt', 'x'),
        ];
        const child = spawn(
          process.execPath,
          [SEAMS_CLI, '--test-seams=copy-delay:50', '--state-dir', path.join(state.dir, 's'), 'batch'],
          { cwd: work.dir, env: envFor(), stdio: ['pipe', 'pipe', 'pipe'] },
        );
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
        child.stdin.end(`${lines.join('\n')}\n`);
        const own = () => readdirSync(work.dir).filter((e) => e.startsWith('.fs-tools-'));
        for (let waited = 0; own().length === 0 && waited < 20_000; waited += 20) {
          await new Promise((r) => setTimeout(r, 20));
        }
        expect(own().length, 'the copy is in flight').toBeGreaterThan(0);
        child.kill(signal);
        const status = await closed;
        expect(status, stderr).toBe(1);
        expect(stderr).toMatch(new RegExp(`^fs-tools: ${signal}: 1 call\\(s\\) in flight finished$`, 'm'));
        expect(stderr).toMatch(/^fs-tools: shutting down; the batch stopped after line 1 /m);
        expect(own()).toEqual([]);
        expect(readdirSync(path.join(work.dir, 'dst'))).toHaveLength(20);
        expect(existsSync(path.join(work.dir, 'later.txt'))).toBe(false);
        const out = stdout.trimEnd().split('\n');
        expect(out).toHaveLength(1);
        expect(JSON.parse(out[0])).toMatchObject({ tool: 'copy_path', ok: true, result: { entries: 20 } });
      } finally {
        work.cleanup();
        state.cleanup();
      }
    }, 30_000);
  }
});

describe('serve keeps its own signal handling', () => {
  it('SIGINT still ends a server at once (the batch/call handler is not installed for serve)', async () => {
    const work = makeTree({});
    try {
      const child = spawn(process.execPath, [CLI, work.dir], { cwd: work.dir, env: envFor(), stdio: 'pipe' });
      let stderr = '';
      const started = new Promise<void>((resolve) =>
        child.stderr.setEncoding('utf8').on('data', (d: string) => {
          stderr += d;
          if (stderr.includes('kernel wall')) resolve();
        }),
      );
      const closed = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
        child.on('close', (code, signal) => resolve({ code, signal })),
      );
      await started;
      child.kill('SIGINT');
      expect(await closed).toEqual({ code: null, signal: 'SIGINT' });
      expect(stderr).not.toMatch(/in flight finished/);
    } finally {
      work.cleanup();
    }
  }, 30_000);
});
