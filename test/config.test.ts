/**
 * Pins command-line parsing (SPEC §1) through parseConfig with a fake ParseEnvironment and real temp directories:
 * defaults; every flag; repeated --root and positional roots (order kept, duplicates folded onto the first), relative
 * roots against cwd, roots through symlinks; an empty root is a UsageError, a missing or non-directory one is left out
 * when serving and a UsageError in the other modes; a leading `~/` is the home directory; `call TOOL JSON`
 * and `tools --json`; bad --auto-occ / --client-roots / --mutation-budget / limits / --tools / unknown flags are
 * UsageErrors (exit 2, one line). The default root is cwd, except when cwd is / or the home directory (then none).
 * Then the built CLI (dist/cli.js) is spawned with bad flags: exit status 2, one line on stderr, nothing on stdout.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { DEFAULT_LIMITS, parseConfig, type ParseEnvironment } from '../src/config.js';
import { UsageError } from '../src/errors/usage-error.js';
import { makeTree, symlink } from './helpers/tree.js';

const TOOL_NAMES = ['read_file', 'list_directory', 'write_file', 'github_issues'];

const tree = makeTree({
  work: { sub: { deeper: {} }, 'a.txt': 'A' },
  other: {},
  home: { project: {} },
  'work-link': symlink('work'),
  'home-link': symlink('home'),
  'policy.json': '{"rules": [{"pattern": "secrets/**", "access": "deny"}]}',
  'bad-policy.json': '{\n  "rules": [\n    {"pattern": "a", "access": "nope"}\n  ]\n}\n',
  'broken-policy.json': '{\n  "rules": [\n',
});
afterAll(() => tree.cleanup());

const T = tree.dir;
const WORK = path.join(T, 'work');
const HOME = path.join(T, 'home');

function env(overrides: Partial<ParseEnvironment> = {}): ParseEnvironment {
  return { cwd: WORK, home: HOME, toolNames: TOOL_NAMES, ...overrides };
}

function usageError(argv: string[], e: ParseEnvironment = env()): UsageError {
  try {
    parseConfig(argv, e);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    const u = error as UsageError;
    expect(u.exitCode).toBe(2);
    expect(u.message).not.toContain('\n');
    expect(u.message.length).toBeGreaterThan(0);
    return u;
  }
  throw new Error(`expected ${JSON.stringify(argv)} to be a usage error`);
}

describe('defaults', () => {
  test('no arguments: serve, cwd as the root, every default', () => {
    const c = parseConfig([], env());
    expect(c.mode).toEqual({ kind: 'serve' });
    expect(c.roots).toEqual([{ given: WORK, real: WORK, source: 'cwd' }]);
    expect(c.rootsFromCommandLine).toBe(false);
    expect(c.readonly).toBe(false);
    expect(c.tools).toBeNull();
    expect(c.allowSecrets).toBe(false);
    expect(c.autoOcc).toBe('block');
    expect(c.mutationBudget).toBe(0);
    expect(c.policy).toEqual({ rules: [] });
    expect(c.policyFile).toBeNull();
    expect(c.gitRemoteAllow).toEqual([]);
    expect(c.clientRoots).toBe('narrow');
    expect(c.auditLog).toBeNull();
    expect(path.isAbsolute(c.stateDir)).toBe(true);
    expect(c.limits).toEqual(DEFAULT_LIMITS);
  });

  test('cwd through a symlink: given keeps the spelling, real is the realpath', () => {
    const c = parseConfig([], env({ cwd: path.join(T, 'work-link') }));
    expect(c.roots).toEqual([{ given: path.join(T, 'work-link'), real: WORK, source: 'cwd' }]);
  });

  test.each([
    ['the filesystem root', '/', HOME],
    ['the home directory', HOME, HOME],
    ['the home directory with a trailing slash', `${HOME}/`, HOME],
    ['the home directory reached through a symlink', path.join(T, 'home-link'), HOME],
    ['the home directory, home given through a symlink', HOME, path.join(T, 'home-link')],
  ])('cwd is %s: no default root', (_label, cwd, home) => {
    const c = parseConfig([], env({ cwd, home }));
    expect(c.roots).toEqual([]);
    expect(c.rootsFromCommandLine).toBe(false);
  });

  test('a directory below home is a default root', () => {
    const c = parseConfig([], env({ cwd: path.join(HOME, 'project') }));
    expect(c.roots.map((r) => r.real)).toEqual([path.join(HOME, 'project')]);
  });

  test('explicit roots are kept even when cwd is home or /', () => {
    for (const cwd of ['/', HOME]) {
      const c = parseConfig([WORK], env({ cwd }));
      expect(c.roots.map((r) => r.real)).toEqual([WORK]);
      expect(c.rootsFromCommandLine).toBe(true);
    }
    expect(parseConfig([HOME], env({ cwd: HOME })).roots.map((r) => r.real)).toEqual([HOME]);
  });
});

describe('roots', () => {
  test('repeated --root keeps the order given', () => {
    const c = parseConfig(['--root', WORK, `--root=${path.join(T, 'other')}`], env());
    expect(c.roots).toEqual([
      { given: WORK, real: WORK, source: 'cli' },
      { given: path.join(T, 'other'), real: path.join(T, 'other'), source: 'cli' },
    ]);
    expect(c.rootsFromCommandLine).toBe(true);
  });

  test('positional roots keep the order given', () => {
    const c = parseConfig([path.join(T, 'other'), WORK], env());
    expect(c.roots.map((r) => r.real)).toEqual([path.join(T, 'other'), WORK]);
  });

  test('--root and positional roots combine', () => {
    const c = parseConfig(['--root', path.join(T, 'other'), WORK], env());
    expect(c.roots.map((r) => r.real).sort()).toEqual([path.join(T, 'other'), WORK].sort());
  });

  test.each([
    [['sub'], path.join(WORK, 'sub')],
    [['./sub/deeper'], path.join(WORK, 'sub', 'deeper')],
    [['.'], WORK],
    [['..'], T],
    [['../other'], path.join(T, 'other')],
  ])('relative root %j resolves against cwd → %s', (argv, expected) => {
    const c = parseConfig(argv, env());
    expect(c.roots).toEqual([{ given: expected, real: expected, source: 'cli' }]);
  });

  test('a root through a symlink keeps both spellings', () => {
    const c = parseConfig(['../work-link'], env());
    expect(c.roots).toEqual([{ given: path.join(T, 'work-link'), real: WORK, source: 'cli' }]);
  });

  test('duplicates fold onto the first occurrence: the first root stays first', () => {
    const other = path.join(T, 'other');
    const c = parseConfig([WORK, other, WORK], env());
    expect(c.roots.map((r) => r.real)).toEqual([WORK, other]);
    const d = parseConfig([other, path.join(T, 'work-link'), WORK], env());
    expect(d.roots.map((r) => r.real)).toEqual([other, WORK]);
    expect(d.roots[1].given).toBe(path.join(T, 'work-link'));
  });

  test.each([
    ['a missing root', ['--root', 'does-not-exist', 'call', 'read_file'], /does not exist/],
    ['a missing --root', ['--root', path.join(T, 'nope'), 'tools'], /does not exist/],
    ['a file as root', ['--root', 'a.txt', 'call', 'read_file'], /not a directory/],
    ['an empty root', [''], /empty/],
    ['an empty --root', ['--root='], /empty/],
    ['a NUL byte', ['a\0b'], /NUL/],
    ['--root without a value', ['--root'], /root/],
  ])('%s → UsageError', (_label, argv, reason) => {
    expect(usageError(argv).message).toMatch(reason);
  });

  test('serving: a missing root or a file is left out with its reason, never replaced by the cwd default', () => {
    const c = parseConfig(['does-not-exist', WORK, 'a.txt'], env());
    expect(c.roots.map((r) => r.real)).toEqual([WORK]);
    expect(c.rejectedRoots).toEqual([
      { given: path.join(WORK, 'does-not-exist'), source: 'cli', reason: 'missing' },
      { given: path.join(WORK, 'a.txt'), source: 'cli', reason: 'not_a_directory' },
    ]);
    const none = parseConfig(['does-not-exist'], env());
    expect([none.roots, none.rootsFromCommandLine]).toEqual([[], true]);
    // --help and --version use no root: a bad one does not stop them.
    expect(parseConfig(['--help', 'does-not-exist'], env()).mode.kind).toBe('help');
  });

  test('a leading `~/` or a bare `~` is the home directory (client configurations run no shell); `~user` is not', () => {
    expect(parseConfig(['~'], env()).roots).toEqual([{ given: HOME, real: HOME, source: 'cli' }]);
    const project = path.join(HOME, 'project');
    expect(parseConfig(['--root', '~/project'], env()).roots).toEqual([
      { given: project, real: project, source: 'cli' },
    ]);
    expect(parseConfig(['~nobody', 'x/~/y'], env()).rejectedRoots.map((r) => r.given)).toEqual([
      path.join(WORK, '~nobody'),
      path.join(WORK, 'x/~/y'),
    ]);
  });

  test('`~` is not expanded when HOME is empty or relative (it would name the working directory or a path under it)', () => {
    // os.homedir() returns HOME as set: '' made `~` the working directory, 'rel' made `~/project` WORK/rel/project.
    for (const home of ['', 'rel', '.']) {
      const c = parseConfig(['~', '~/project'], env({ home }));
      expect(c.roots).toEqual([]);
      expect(c.rejectedRoots.map((r) => [r.given, r.reason])).toEqual([
        [path.join(WORK, '~'), 'missing'],
        [path.join(WORK, '~', 'project'), 'missing'],
      ]);
    }
  });
});

describe('flags', () => {
  test('--readonly --allow-secrets (the SPEC §1 npx example)', () => {
    const c = parseConfig(['--readonly', '--allow-secrets'], env());
    expect(c.readonly).toBe(true);
    expect(c.allowSecrets).toBe(true);
    expect(c.roots.map((r) => r.real)).toEqual([WORK]);
  });

  test('--readonly=true|false and --allow-secrets=true|false (the MCP Bundle command line)', () => {
    const on = parseConfig(['--readonly=true', '--allow-secrets=true'], env());
    expect([on.readonly, on.allowSecrets]).toEqual([true, true]);
    const off = parseConfig(['--readonly=false', '--allow-secrets=false', '--', WORK], env());
    expect([off.readonly, off.allowSecrets]).toEqual([false, false]);
    expect(off.roots.map((r) => r.real)).toEqual([WORK]);
    expect(usageError(['--readonly=yes']).message).toContain('--readonly takes no value, or =true / =false');
    // After `--`, such a word is a root name, not a flag.
    expect(parseConfig(['--', '--readonly=true'], env()).rejectedRoots[0].given).toBe(
      path.join(WORK, '--readonly=true'),
    );
  });

  test.each(['off', 'warn', 'block'] as const)('--auto-occ=%s', (mode) => {
    expect(parseConfig([`--auto-occ=${mode}`], env()).autoOcc).toBe(mode);
    expect(parseConfig(['--auto-occ', mode], env()).autoOcc).toBe(mode);
  });

  test.each(['narrow', 'replace', 'ignore'] as const)('--client-roots=%s', (mode) => {
    expect(parseConfig([`--client-roots=${mode}`], env()).clientRoots).toBe(mode);
  });

  test.each([
    ['0', 0],
    ['1', 1],
    ['25', 25],
  ])('--mutation-budget=%s', (raw, n) => {
    expect(parseConfig([`--mutation-budget=${raw}`], env()).mutationBudget).toBe(n);
  });

  test('--tools takes tool names and groups', () => {
    const c = parseConfig(['--tools=fs-read, write_file,issues'], env());
    expect(c.tools).toEqual(new Set(['fs-read', 'write_file', 'issues']));
    for (const group of ['fs-read', 'fs-write', 'git', 'issues']) {
      expect(parseConfig([`--tools=${group}`], env()).tools).toEqual(new Set([group]));
    }
  });

  test('--policy loads the file, relative to cwd', () => {
    const c = parseConfig(['--policy=../policy.json'], env());
    expect(c.policyFile).toBe(path.join(T, 'policy.json'));
    expect(c.policy).toEqual({ rules: [{ pattern: 'secrets/**', access: 'deny' }] });
  });

  test('--git-remote-allow: `default` and `*` are kept; an entry that is no host is a usage error (issue #12)', () => {
    expect(parseConfig(['--git-remote-allow=default, *,ghe.corp.example:8443'], env()).gitRemoteAllow).toEqual([
      'default',
      '*',
      'ghe.corp.example:8443',
    ]);
    expect(() => parseConfig(['--git-remote-allow=github.com,not a host'], env())).toThrow(/not a host/);
    expect(() => parseConfig(['--git-remote-allow=github.com/../x'], env())).toThrow(/not a host/);
  });

  test('--git-remote-allow splits, trims and drops empties', () => {
    const c = parseConfig(['--git-remote-allow= github.com, gitlab.example.com/group ,,https://h/o/r.git'], env());
    expect(c.gitRemoteAllow).toEqual(['github.com', 'gitlab.example.com/group', 'https://h/o/r.git']);
  });

  test('--audit-log and --state-dir resolve against cwd', () => {
    const c = parseConfig(['--audit-log=logs/audit.jsonl', '--state-dir', '../state'], env());
    expect(c.auditLog).toBe(path.join(WORK, 'logs', 'audit.jsonl'));
    expect(c.stateDir).toBe(path.join(T, 'state'));
  });

  test('every size and time limit flag', () => {
    const c = parseConfig(
      [
        '--max-read-bytes=1',
        '--max-list-entries=2',
        '--max-search-results=3',
        '--max-search-file-bytes=4',
        '--max-edit-bytes=5',
        '--forge-timeout-ms=6',
        '--forge-output-bytes=7',
        '--git-timeout-ms=8',
        '--max-media-bytes=9',
        '--history-max-changes=10',
        '--history-max-bytes=11',
      ],
      env(),
    );
    expect(c.limits).toEqual({
      maxReadBytes: 1,
      maxListEntries: 2,
      maxSearchResults: 3,
      maxSearchFileBytes: 4,
      maxEditBytes: 5,
      forgeTimeoutMs: 6,
      forgeOutputBytes: 7,
      gitTimeoutMs: 8,
      maxMediaBytes: 9,
      historyMaxChanges: 10,
      historyMaxBytes: 11,
    });
  });

  test.each([[['--help']], [['-h']], [['--readonly', '--help']]])('%j → help', (argv) => {
    expect(parseConfig(argv, env()).mode).toEqual({ kind: 'help' });
  });

  test.each([[['--version']], [['-v']]])('%j → version', (argv) => {
    expect(parseConfig(argv, env()).mode).toEqual({ kind: 'version' });
  });
});

describe('subcommands', () => {
  test('call TOOL JSON', () => {
    const c = parseConfig(['call', 'read_file', '{"path":"a.txt"}'], env());
    expect(c.mode).toEqual({ kind: 'call', tool: 'read_file', rawArgs: '{"path":"a.txt"}', format: 'json' });
    expect(c.roots.map((r) => r.real)).toEqual([WORK]);
  });

  test('call TOOL without JSON means {}', () => {
    expect(parseConfig(['call', 'list_directory'], env()).mode).toEqual({
      kind: 'call',
      tool: 'list_directory',
      rawArgs: '{}',
      format: 'json',
    });
  });

  test('options before and after call, roots through --root', () => {
    const c = parseConfig(['--readonly', 'call', 'read_file', '{}', '--root', path.join(T, 'other')], env());
    expect(c.mode).toMatchObject({ kind: 'call', tool: 'read_file' });
    expect(c.readonly).toBe(true);
    expect(c.roots.map((r) => r.real)).toEqual([path.join(T, 'other')]);
    expect(c.rootsFromCommandLine).toBe(true);
  });

  test("roots before the command word are roots; the words after it are the command's", () => {
    const c = parseConfig([path.join(T, 'other'), 'call', 'read_file', '-', '--format=text'], env());
    expect(c.mode).toEqual({ kind: 'call', tool: 'read_file', rawArgs: '-', format: 'text' });
    expect(c.roots.map((r) => r.real)).toEqual([path.join(T, 'other')]);
    expect(parseConfig([path.join(T, 'other'), 'batch'], env()).mode).toEqual({ kind: 'batch' });
  });

  test.each([
    [['help'], undefined],
    [['help', 'call'], 'call'],
    [['help', '--help'], 'help'],
    [['tools', '--help'], 'tools'],
    [['batch', '--help'], 'batch'],
    [['version', '--help'], 'version'],
    [['call', '--help'], 'call'],
    [['call', 'read_file', '--help'], 'read_file'],
    [['help', 'read_file'], 'read_file'],
    [['help', 'exit-codes'], 'exit-codes'],
    [['/no/such/root', 'tools', '--help'], 'tools'],
  ])('%j → help %s, no root read', (argv, topic) => {
    const c = parseConfig(argv, env());
    expect(c.mode).toEqual(topic === undefined ? { kind: 'help' } : { kind: 'help', topic });
    expect(c.roots).toEqual([]);
  });

  test('a word near a command that names an existing directory is a root', () => {
    mkdirSync(path.join(WORK, 'tool'), { recursive: true });
    const c = parseConfig(['tool'], env());
    expect(c.mode).toEqual({ kind: 'serve' });
    expect(c.roots.map((r) => r.real)).toEqual([path.join(WORK, 'tool')]);
  });

  test('version as a word', () => {
    expect(parseConfig(['version'], env()).mode).toEqual({ kind: 'version' });
  });

  test('tools and tools --json', () => {
    expect(parseConfig(['tools'], env()).mode).toEqual({ kind: 'tools', json: false });
    expect(parseConfig(['tools', '--json'], env()).mode).toEqual({ kind: 'tools', json: true });
    expect(parseConfig(['--json', 'tools'], env()).mode).toEqual({ kind: 'tools', json: true });
    expect(parseConfig(['--readonly', 'tools', '--json'], env()).readonly).toBe(true);
  });

  test.each([
    ['call without a tool', ['call'], /tool name/],
    ['call with an extra argument', ['call', 'read_file', '{}', 'extra'], /extra/],
    ['tools with an extra argument', ['tools', 'more'], /more/],
    ['--json outside tools', ['--json'], /--json/],
    ['--json with call', ['--json', 'call', 'read_file'], /--json/],
    ['an unknown tool', ['call', 'reed_file'], /unknown tool 'reed_file'; did you mean read_file\?/],
    ['an unknown help topic', ['help', 'exit-code'], /did you mean exit-codes\?/],
    ['help with two topics', ['help', 'call', 'tools'], /unexpected argument after help TOPIC: tools/],
    ['a mistyped command', ['cal'], /unknown command 'cal'; did you mean call\?/],
    ['--format outside call', ['--format=text', 'tools'], /--format only applies/],
    ['a bad --format', ['--format=yaml', 'call', 'read_file'], /--format must be one of json\|text/],
  ])('%s → UsageError', (_label, argv, reason) => {
    expect(usageError(argv).message).toMatch(reason);
  });
});

describe('bad flags → UsageError (exit 2, one line)', () => {
  test.each([
    [['--auto-occ=maybe'], /auto-occ.*maybe/],
    [['--auto-occ='], /auto-occ/],
    [['--client-roots=wide'], /client-roots.*wide/],
    [['--mutation-budget=-1'], /mutation-budget/],
    [['--mutation-budget', '-1'], /mutation-budget/],
    [['--mutation-budget=abc'], /mutation-budget/],
    [['--mutation-budget=1.5'], /mutation-budget/],
    [['--mutation-budget=99999999999999999999'], /mutation-budget/],
    [['--max-read-bytes=0'], /max-read-bytes/],
    [['--max-read-bytes=lots'], /max-read-bytes/],
    [['--git-timeout-ms=-5'], /git-timeout-ms/],
    [['--tools=bogus'], /bogus/],
    [['--tools=fs-read,bogus'], /bogus/],
    [['--tools='], /tools/],
    [['--tools=,'], /tools/],
    [['--bogus'], /unknown option '--bogus'/],
    [['--read-only'], /unknown option '--read-only'; did you mean --readonly\? \(see fs-tools --help\)$/],
    [['--readonly=yes'], /^--readonly takes no value, or =true \/ =false \(see fs-tools --help\)$/],
    [['--mutation-budget=-1'], /^--mutation-budget must be 0 or more, got '-1'$/],
    [['-x'], /-x/],
    [['--readonly=yes'], /readonly/],
    [['--policy=/nonexistent/policy.json'], /nonexistent/],
    [['--policy=../bad-policy.json'], /bad-policy\.json/],
    [['--policy=../broken-policy.json'], /broken-policy\.json.*not valid JSON/],
    [['--policy'], /policy/],
  ])('%j', (argv, reason) => {
    expect(usageError(argv).message).toMatch(reason);
  });

  test('UsageError messages are one line even when the cause spans several', () => {
    expect(new UsageError('first\nsecond\r\n  third').message).toBe('first second third');
  });
});

describe('the built CLI (dist/cli.js)', () => {
  const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

  test.each([
    [['--bogus']],
    [['--auto-occ=maybe']],
    [['--policy=/nonexistent']],
    [['--policy=../broken-policy.json']],
    [['--policy=../bad-policy.json']],
    [['--mutation-budget=-1']],
    [['--tools=bogus']],
    [['--root', 'does-not-exist', 'call', 'read_file']],
    [['call']],
  ])('%j exits 2 with one line on stderr and nothing on stdout', (argv) => {
    const r = spawnSync(process.execPath, [CLI, ...argv], { cwd: WORK, encoding: 'utf8', timeout: 30_000, input: '' });
    expect(r.error).toBeUndefined();
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^fs-tools: [^\n]+\n$/);
    expect(r.status).toBe(2);
  });

  test('--version prints the version and the kernel wall on stdout and exits 0', () => {
    const r = spawnSync(process.execPath, [CLI, '--version'], { cwd: WORK, encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.\d+\.\d+\S*\nkernel wall: [^\n]+\nnative reads: (on|off \([^\n]+\))[^\n]*\n$/);
    expect(r.stderr).toBe('');
  });
});
