/**
 * The command line's commands as a user runs them (docs/cli.md): the built dist/cli.js spawned, stdout, stderr and the
 * exit status asserted one by one. `help` per command and per tool (the tool's arguments checked against its
 * declared schema), the flag-message fixes, "did you mean" for flags, commands and tools, `call TOOL -`, `--format
 * text` against what an MCP client receives, `batch` (read-then-edit in one session, a bad line in the middle), and
 * that a refused command line creates nothing (no state directory, no file). `--help`, `--version` and `tools` are
 * checked here only (test/e2e/cli.test.ts ran the same command lines again). The modern-era clients that give what an
 * MCP client receives probe in place (one server start per connect, test/helpers/server.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { renderHelp } from '../../src/cli/help.js';
import { COMMANDS } from '../../src/config.js';
import { advertise } from '../../src/server/tool-schemas.js';
import { TOOLS } from '../../src/tools/registry.js';
import { CLI, connect, coverageEnv } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const PACKAGE = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const project = makeTree({ 'a.txt': 'hello\n', src: { 'main.ts': 'export {};\n// TODO: wire it\n' } });
const states = makeTree({});
afterAll(() => {
  project.cleanup();
  states.cleanup();
});

let stateCount = 0;
/** Runs `fs-tools ARGS` in the project with a fresh state home; `stateDir` is where fs-tools would create its state. */
function run(args: string[], input = '', cwd = project.dir) {
  const home = path.join(states.dir, `s${stateCount++}`);
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...coverageEnv(), XDG_STATE_HOME: home },
    timeout: 30_000,
    input,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, stateDir: path.join(home, 'fs-tools') };
}

/** A usage error: exit 2, nothing on stdout, one `fs-tools: ` line on stderr, no state directory created. */
function expectUsageError(r: ReturnType<typeof run>, reason: RegExp) {
  expect(r.status, r.stderr).toBe(2);
  expect(r.stdout).toBe('');
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^fs-tools: /);
  expect(lines[0]).toMatch(reason);
  expect(existsSync(r.stateDir), 'a refused command line created the state directory').toBe(false);
}

describe('help', () => {
  it.each(COMMANDS.map((c) => [c]))('help %s and %s --help print the same help, exit 0', (command) => {
    const viaWord = run(['help', command]);
    const viaFlag = run([command, '--help']);
    expect(viaWord.status, viaWord.stderr).toBe(0);
    expect(viaWord.stderr).toBe('');
    expect(viaWord.stdout).toContain(command === 'version' ? 'fs-tools version' : `fs-tools `);
    expect(viaWord.stdout).not.toContain('Options:'); // not the general help
    expect(viaFlag).toEqual({ ...viaWord, stateDir: viaFlag.stateDir });
    expect(existsSync(viaWord.stateDir)).toBe(false);
  });

  it.each(TOOLS.map((t) => [t.name]))(
    'the help of %s: every argument with its type and required mark, and an example of its required arguments',
    (name) => {
      // In-process (the same function the command prints), so 21 tools cost no 21 spawns; the spawned forms below.
      const help = renderHelp(name, 'GENERAL', TOOLS);
      const schema = advertise(TOOLS.find((t) => t.name === name)!).inputSchema as {
        properties?: Record<string, unknown>;
        required?: string[];
      };
      const lines = help.split('\n');
      for (const arg of Object.keys(schema.properties ?? {})) {
        const line = lines.find((l) => new RegExp(`^  ${arg} +\\S`).test(l));
        expect(line, `${name}: argument ${arg}`).toBeDefined();
        expect(line!.includes('(required'), `${name}.${arg} required mark`).toBe((schema.required ?? []).includes(arg));
      }
      if (!schema.properties) expect(help).toContain('Arguments: none');
      const example = /^ {2}fs-tools call (\S+) '(.*)'$/m.exec(help);
      expect(example?.[1]).toBe(name);
      expect(Object.keys(JSON.parse(example![2]) as object).sort()).toEqual([...(schema.required ?? [])].sort());
    },
  );

  it.each([['read_file'], ['edit_file'], ['github_issues']])('help %s = call %s --help, exit 0', (name) => {
    const viaWord = run(['help', name]);
    const viaCall = run(['call', name, '--help']);
    expect(viaWord.status, viaWord.stderr).toBe(0);
    expect(viaWord.stderr).toBe('');
    expect(viaWord.stdout).toBe(renderHelp(name, 'GENERAL', TOOLS));
    expect(viaCall.stdout).toBe(viaWord.stdout);
    expect(existsSync(viaCall.stateDir)).toBe(false);
  });

  it('shows types and defaults from the schema the server enforces', () => {
    const r = run(['help', 'read_file']);
    expect(r.stdout).toMatch(/^ {2}encoding +"utf8" \| "base64" +\(default "utf8"\)$/m);
    expect(r.stdout).toMatch(/^ {2}path +string +\(required\)$/m);
    expect(r.stdout).toMatch(/^ {2}head +integer 1\.\.10000000$/m);
  });

  it('help and --help without a topic print the general usage; help exit-codes the exit codes', () => {
    const general = run(['--help']);
    expect(general.status).toBe(0);
    expect(general.stderr).toBe('');
    expect(general.stdout).toContain('Usage:');
    expect(general.stdout).toContain('batch');
    expect(general.stdout).toContain('call TOOL [JSON_ARGS|-]');
    expect(run(['help']).stdout).toBe(general.stdout);
    const codes = run(['help', 'exit-codes']);
    expect(codes.status).toBe(0);
    expect(codes.stderr).toBe('');
    for (const code of ['0', '1', '2']) expect(codes.stdout).toMatch(new RegExp(`^ {2}${code} {2}\\S`, 'm'));
  });

  it('--help never reads a root: a root that does not exist does not hide it', () => {
    const r = run(['/no/such/root', 'tools', '--help']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('fs-tools [options] tools [--json]');
  });

  it('the version as a word; --version prints the package version, then the kernel wall and the native reads', () => {
    const r = run(['version']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(run(['--version']).stdout);
    const [version, wall, native] = r.stdout.split('\n');
    expect(version).toBe(PACKAGE.version);
    expect(wall).toMatch(/^kernel wall: /);
    expect(native).toMatch(/^native reads: (on|off \(.+\))/);
  });
});

describe('tools', () => {
  it('one line per tool: its name, then a purpose that is not its title', () => {
    const r = run(['tools']);
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(TOOLS.length);
    lines.forEach((line, i) => {
      const [, name, purpose] = /^(\S+) +(\S.*)$/.exec(line)!;
      expect(name).toBe(TOOLS[i].name);
      expect(purpose.toLowerCase()).not.toBe(TOOLS[i].title.toLowerCase());
      expect(purpose.length).toBeGreaterThan(15);
    });
  });
});

describe('command words and roots', () => {
  it('a root before the command is a root, not a command', () => {
    const r = run([project.dir, 'call', 'read_file', '{"path":"a.txt"}'], '', '/');
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).content).toBe('hello\n');
  });

  it('a mistyped command is a usage error with did you mean, not a missing root', () => {
    expectUsageError(run(['tols']), /unknown command 'tols'; did you mean tools\?/);
    expectUsageError(run(['bach']), /did you mean batch\?/);
  });
});

describe('flag messages', () => {
  it('--readonly=yes names the pointer to --help once', () => {
    const r = run(['--readonly=yes', 'tools']);
    expectUsageError(r, /--readonly takes no value/);
    expect(r.stderr.split('(see fs-tools --help)')).toHaveLength(2);
  });

  it('--mutation-budget=-1 must be 0 or more; --max-read-bytes=0 must be 1 or more', () => {
    expectUsageError(run(['--mutation-budget=-1', 'tools']), /--mutation-budget must be 0 or more, got '-1'$/);
    expectUsageError(run(['--max-read-bytes=0', 'tools']), /--max-read-bytes must be 1 or more, got '0'$/);
  });

  it('--readonly with a --tools list of mutating tools leaves nothing: exit 2, nothing written', () => {
    expectUsageError(run(['--readonly', '--tools=write_file', 'tools']), /leaves no tool/);
    const r = run(['--readonly', '--tools=write_file', 'call', 'write_file', '{"path":"new.txt","content":"x"}']);
    expectUsageError(r, /--tools=write_file with --readonly leaves no tool/);
    expect(existsSync(path.join(project.dir, 'new.txt'))).toBe(false);
    // Served too: the server does not start with nothing to serve.
    expectUsageError(run(['--readonly', '--tools=fs-write']), /leaves no tool/);
  });

  it('did you mean for flags, commands and tools (exit 2)', () => {
    expectUsageError(run(['--read-only', 'tools']), /unknown option '--read-only'; did you mean --readonly\?/);
    expectUsageError(run(['call', 'serch_files', '{}']), /unknown tool 'serch_files'; did you mean search_files\?/);
    expectUsageError(run(['help', 'serch_files']), /did you mean search_files\?/);
    expectUsageError(run(['call', 'serch_files', '--help']), /did you mean search_files\?/);
    expectUsageError(run(['--tools=fs-reed', 'tools']), /did you mean fs-read\?/);
    expectUsageError(run(['--format=txt', 'call', 'stat', '{"path":"a.txt"}']), /--format must be one of json\|text/);
    expectUsageError(run(['--format=text', 'tools']), /--format only applies to `fs-tools call`/);
  });
});

describe('call: exit codes, stdin, --format text', () => {
  it('0 with a result, 1 with an envelope, 2 for JSON_ARGS that is not JSON (nothing run)', () => {
    const ok = run(['call', 'read_file', '{"path":"a.txt"}']);
    expect(ok.status).toBe(0);
    expect(existsSync(ok.stateDir), 'a call that runs has its state directory (the check below can fail)').toBe(true);
    const failed = run(['call', 'read_file', '{"path":"missing.txt"}']);
    expect(failed.status).toBe(1);
    expect(JSON.parse(failed.stdout).error.code).toBe('NOT_FOUND');
    expectUsageError(run(['call', 'write_file', '{"path":"b.txt",']), /JSON_ARGS is not valid JSON/);
    expect(existsSync(path.join(project.dir, 'b.txt'))).toBe(false);
  });

  it("'-' reads the arguments from stdin", () => {
    const r = run(['call', 'read_file', '-'], '{"path":"src/main.ts","head":1}\n');
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).content).toBe('export {};\n');
  });

  it("'-' with malformed or over-long stdin is exit 2 and writes nothing", () => {
    expectUsageError(run(['call', 'write_file', '-'], '{"path":"c.txt","content":'), /on stdin is not valid JSON/);
    const huge = JSON.stringify({ path: 'c.txt', content: 'x'.repeat(10 * 1024 * 1024) });
    expectUsageError(run(['call', 'write_file', '-'], huge), /arguments on stdin are over 10485759 bytes/);
    expect(existsSync(path.join(project.dir, 'c.txt'))).toBe(false);
  });

  it('--format text prints the text content an MCP client receives, for a result and for an envelope', async () => {
    const client = await connect('modern', { args: [project.dir] });
    try {
      for (const [tool, args, status] of [
        ['read_file', { path: 'a.txt' }, 0],
        ['search_files', { query: 'TODO' }, 0],
        ['read_file', { path: 'missing.txt' }, 1],
      ] as const) {
        const served = await client.call(tool, args);
        const expected = served.content.map((b) => (b.text!.endsWith('\n') ? b.text : `${b.text}\n`)).join('');
        const r = run(['call', tool, JSON.stringify(args), '--format', 'text']);
        expect(r.status, r.stderr).toBe(status);
        expect(r.stdout).toBe(expected);
        expect(r.stderr).toBe('');
      }
    } finally {
      await client.close();
    }
  });
});

describe('call read_media: the image block', () => {
  it('--format text prints the text blocks a client gets; stderr names the image block without a false pointer', async () => {
    // A 1x1 PNG.
    const png = Buffer.from(
      '89504e470d0a1a0a0000000d4948445200000001000000010806000000' +
        '1f15c4890000000d49444154789c63f80f0000010100051' +
        '8d84e0000000049454e44ae426082',
      'hex',
    );
    const work = makeTree({ 'i.png': png });
    const client = await connect('modern', { args: [work.dir] });
    try {
      const served = await client.call('read_media', { path: 'i.png' });
      const texts = served.content.filter((b) => b.type === 'text');
      expect(served.content.some((b) => b.type === 'image')).toBe(true);
      const r = run(['call', 'read_media', '{"path":"i.png"}', '--format', 'text'], '', work.dir);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe(texts.map((b) => (b.text!.endsWith('\n') ? b.text : `${b.text}\n`)).join(''));
      expect(r.stderr).toBe(
        'fs-tools: the result also holds an image content block (image/png) that the command line does not print\n',
      );
      // --format json is the structured result: it does not carry the image data either (the stderr line must not
      // send the user there for it).
      const json = run(['call', 'read_media', '{"path":"i.png"}'], '', work.dir);
      expect(json.status).toBe(0);
      expect(json.stdout).not.toContain(png.toString('base64'));
    } finally {
      await client.close();
      work.cleanup();
    }
  });
});

describe('batch', () => {
  it('read then edit in one session passes auto-OCC; a bad line in the middle gets an error line; exit 1', () => {
    const work = makeTree({ 'notes.txt': 'one\ntwo\n' });
    try {
      // Control: in separate processes the edit has no hash memory and is refused.
      const alone = run(
        ['call', 'edit_file', '{"path":"notes.txt","edits":[{"old_text":"two","new_text":"2"}]}'],
        '',
        work.dir,
      );
      expect(alone.status).toBe(1);
      expect(JSON.parse(alone.stdout).error.code).toBe('HASH_REQUIRED');
      expect(readFileSync(path.join(work.dir, 'notes.txt'), 'utf8')).toBe('one\ntwo\n');

      const lines = [
        { tool: 'read_file', arguments: { path: 'notes.txt' } },
        '{"tool": "read_file", "arguments": ', // malformed JSON
        '',
        { tool: 'serch_files', arguments: { query: 'x' } },
        { tool: 'edit_file', arguments: { path: 'notes.txt', edits: [{ old_text: 'two', new_text: '2' }] } },
        { tool: 'read_file', arguments: { path: 'notes.txt' } },
      ];
      const input = lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n');
      const r = run(['batch'], input, work.dir);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toBe('');
      const out = r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, any>);
      expect(out).toHaveLength(5); // the blank line is skipped
      expect(out[0]).toMatchObject({ tool: 'read_file', ok: true, result: { content: 'one\ntwo\n' } });
      expect(out[1]).toMatchObject({
        tool: null,
        ok: false,
        error: { code: 'VALIDATION', details: { line: 2, reason: 'malformed_json' } },
      });
      expect(out[2]).toMatchObject({
        tool: 'serch_files',
        ok: false,
        error: { code: 'VALIDATION', details: { line: 4, closest: 'search_files' } },
      });
      expect(out[3]).toMatchObject({ tool: 'edit_file', ok: true, result: { replacements: 1 } });
      expect(out[4]).toMatchObject({ tool: 'read_file', ok: true, result: { content: 'one\n2\n' } });
      expect(Object.keys(out[0]).sort()).toEqual(['ok', 'result', 'tool']);
      expect(Object.keys(out[1]).sort()).toEqual(['error', 'ok', 'tool']);
      expect(readFileSync(path.join(work.dir, 'notes.txt'), 'utf8')).toBe('one\n2\n');
    } finally {
      work.cleanup();
    }
  });

  it('every line ok is exit 0; an envelope line is exit 1; empty stdin is exit 0 with no output', () => {
    const ok = run(['batch'], `${JSON.stringify({ tool: 'stat', arguments: { path: 'a.txt' } })}\n`);
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ tool: 'stat', ok: true, result: { type: 'file' } });
    const failed = run(['batch'], `${JSON.stringify({ tool: 'stat', arguments: { path: 'nope' } })}\n`);
    expect(failed.status).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ tool: 'stat', ok: false, error: { code: 'NOT_FOUND' } });
    const empty = run(['batch'], '');
    expect(empty).toMatchObject({ status: 0, stdout: '', stderr: '' });
  });

  it('an over-long line is dropped with an error line, and the next line still runs', () => {
    const input = `${'x'.repeat(10 * 1024 * 1024 + 10)}\n${JSON.stringify({ tool: 'stat', arguments: { path: 'a.txt' } })}`;
    const r = run(['batch'], input);
    expect(r.status).toBe(1);
    const out = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, any>);
    expect(out).toHaveLength(2);
    expect(out[0]).toMatchObject({
      ok: false,
      error: { code: 'VALIDATION', details: { line: 1, reason: 'too_large' } },
    });
    expect(out[1]).toMatchObject({ tool: 'stat', ok: true });
  });

  it('extra arguments after batch are a usage error; nothing is read or run', () => {
    expectUsageError(
      run(['batch', 'more'], '{"tool":"write_file","arguments":{"path":"d.txt","content":"x"}}'),
      /unexpected argument after batch: more/,
    );
    expect(existsSync(path.join(project.dir, 'd.txt'))).toBe(false);
  });
});
