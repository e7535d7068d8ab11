/**
 * The command line (SPEC §1) as a user runs it: `call` prints the structured result or the envelope with exit 0/1,
 * an unknown tool or a bad flag exits 2 with one line on stderr, `tools --json`, the README's newcomer command from a
 * project directory (cwd default root), and `--readonly --allow-secrets` (its modern-era client probes in place: one
 * server start). `tools`, `--version` and `--help` are checked in test/e2e/cli-commands.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorEnvelopeSchema } from '../../src/errors/envelope-schema.js';
import { TOOLS } from '../../src/tools/registry.js';
import { CLI, connect, ERAS } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

/** Runs `fs-tools ARGS` in `cwd` and returns exit status and output. */
function run(args: string[], cwd: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 30_000,
    input: '',
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const ENV_MARKER = 'CLI-ENV-MARKER-93ab1f';
const project = makeTree({
  'a.txt': 'hello\n',
  '.env': `API_KEY=${ENV_MARKER}\n`,
  src: { 'main.ts': 'export {};\n// TODO: wire the thing\n', 'util.ts': 'const x = 1; // TODO later\n' },
  'README.md': '# demo\n',
});
afterAll(() => project.cleanup());

describe('fs-tools call', () => {
  it('prints the structured result as JSON and exits 0', () => {
    const r = run(['call', 'read_file', '{"path":"a.txt"}'], project.dir);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.content).toBe('hello\n');
    expect(out).not.toHaveProperty('path'); // issue #15: named only when a link was followed
    expect(out.content_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(r.stderr).toBe('');
  });

  it('uses --root and ROOT options like the server', () => {
    const r = run(['--root', project.dir, 'call', 'stat', '{"path":"src"}'], '/');
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).type).toBe('directory');
  });

  it('prints the envelope of a failing call and exits 1', () => {
    const r = run(['call', 'read_file', '{"path":"missing.txt"}'], project.dir);
    expect(r.status).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(ErrorEnvelopeSchema.safeParse(out).success).toBe(true);
    expect(out.error.code).toBe('NOT_FOUND');
  });

  it('a validation failure is an envelope too (exit 1)', () => {
    const r = run(['call', 'read_file', '{"file_path":"a.txt"}'], project.dir);
    expect(r.status).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.error.code).toBe('VALIDATION');
    expect(out.error.details.closest).toBe('path');
  });

  it('a secret is refused without --allow-secrets, and its content is not printed', () => {
    const r = run(['call', 'read_file', '{"path":".env"}'], project.dir);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).error.code).toBe('SECRET_DENIED');
    expect(r.stdout + r.stderr).not.toContain(ENV_MARKER);
  });

  it('a disabled tool is TOOL_UNAVAILABLE (exit 1)', () => {
    const r = run(['--tools=read_file', 'call', 'stat', '{"path":"a.txt"}'], project.dir);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).error.code).toBe('TOOL_UNAVAILABLE');
  });

  it('an unknown tool exits 2 with one line on stderr and nothing on stdout', () => {
    const r = run(['call', 'no_such_tool', '{}'], project.dir);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('no_such_tool');
  });

  it('JSON_ARGS that is not JSON exits 2', () => {
    const r = run(['call', 'read_file', '{path:a.txt}'], project.dir);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('JSON_ARGS defaults to {}', () => {
    const r = run(['call', 'list_allowed_directories'], project.dir);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).roots).toEqual([{ path: project.dir, given: project.dir, source: 'cwd' }]);
  });

  it("the README's newcomer command works from a project directory (cwd default root)", () => {
    // npx fs-tools call search_files '{"path":".","query":"TODO"}'
    const r = run(['call', 'search_files', '{"path":".","query":"TODO"}'], project.dir);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.path).toBe(project.dir);
    expect(out.matches.map((m: { path: string; line: number }) => `${m.path}:${m.line}`).sort()).toEqual([
      'src/main.ts:2',
      'src/util.ts:1',
    ]);
    expect(out.skipped.secret).toBe(1);
  });

  it('--readonly --allow-secrets in a project directory reads a .env', () => {
    const r = run(['--readonly', '--allow-secrets', 'call', 'read_file', '{"path":".env"}'], project.dir);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).content).toBe(`API_KEY=${ENV_MARKER}\n`);
  });
});

describe('fs-tools tools', () => {
  it('--json prints the advertised entries, the same as tools/list', async () => {
    const r = run(['tools', '--json'], project.dir);
    expect(r.status, r.stderr).toBe(0);
    const listed = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(listed.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name));
    const client = await connect('legacy', { args: [project.dir] });
    try {
      const overWire = await client.listTools();
      expect(overWire).toEqual(listed);
    } finally {
      await client.close();
    }
  });

  it('honours --tools', () => {
    const r = run(['--tools=read_file,stat', 'tools', '--json'], project.dir);
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as Array<{ name: string }>).map((t) => t.name)).toEqual(['read_file', 'stat']);
  });
});

describe('fs-tools bad flags', () => {
  it.each([
    [['--no-such-flag']],
    [['--client-roots=sometimes']],
    [['--root', '/no/such/root/dir', 'call', 'stat']],
    [['--policy=/no/such/policy.json']],
  ])('%j exits 2 with one line on stderr', (args) => {
    const r = run(args, project.dir);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^fs-tools: /);
  });
});

describe.each(ERAS)('npx fs-tools --readonly --allow-secrets, served (%s era)', (era) => {
  it('reads the project directory, secrets included, read-only', async () => {
    const client = await connect(era, { args: ['--readonly', '--allow-secrets'], cwd: project.dir });
    try {
      expect((await client.callOk('read_file', { path: '.env' })).content).toBe(`API_KEY=${ENV_MARKER}\n`);
      const dirs = await client.callOk('list_allowed_directories', {});
      expect(dirs.roots).toEqual([{ path: project.dir, given: project.dir, source: 'cwd' }]);
      expect(dirs.flags).toMatchObject({ readonly: true, allow_secrets: true });
      // SPEC §1: always-mutating file tools are left out of tools/list under --readonly.
      for (const tool of await client.listTools()) {
        expect(TOOLS.find((t) => t.name === tool.name)!.mutating, `${tool.name} listed under --readonly`).not.toBe(
          true,
        );
      }
    } finally {
      await client.close();
    }
  });
});
