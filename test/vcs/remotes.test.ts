/**
 * Remote resolution and the host allow-list (SPEC §8 "Target", §1 --git-remote-allow), table-driven:
 * - parseRemoteUrl: https/http (credentials dropped, ports), ssh:// (ports), git+ssh://, git://, scp-style
 *   (user@host:path, IPv6 in brackets), GitLab nested groups, `.git` and slashes stripped, ssh.github.com folded
 *   into github.com; local paths, file://, Windows drives and `~user` paths are not forge remotes;
 * - resolveRepo: duplicates of one repo (https + ssh, any case) fold into one candidate; different repos are
 *   GH_AMBIGUOUS / GL_AMBIGUOUS with the candidates; none is *_REPO_UNRESOLVED; `hostname` restricts to that host;
 *   GITLAB_HOST's host counts as GitLab; hosts are GitHub/GitLab by exact name (issue #12: no substring test);
 * - listRemotes over configs written by the real git (as the view parses them): `insteadOf` is applied, remote names
 *   with dots work, no remote → [], includes add nothing; the operator's global config (read by a git that reads no
 *   repository) adds its rewrites and remotes, refused over its cap, never from a git inside the roots;
 * - host-allow: host, host:port (the port must match; 443/80 are the defaults), host/owner prefixes on whole
 *   segments, repo URLs in https and scp form, case-insensitivity, malformed entries match nothing, `*` allows all,
 *   the default (no flag) is the operator-configured hosts (gh's hosts.yml, GH_HOST, GITLAB_HOST, CI_SERVER_URL),
 *   `default` extends a given list, GH_HOST_DENIED details.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { assertHostAllowed, isAllowed, parseAllowEntry } from '../../src/vcs/host-allow.js';
import { parseGitConfig } from '../../src/vcs/git-config.js';
import { listRemotes, operatorRemoteConfig, parseRemoteUrl, resolveRepo, type Remote } from '../../src/vcs/remotes.js';
import { makeTree } from '../helpers/tree.js';
import { GH_HOSTS_FILE_MAX_BYTES, ghConfiguredHosts, parseGhHostsYaml } from '../../src/vcs/forge-hosts.js';

/** An environment without any configured forge host (no gh config reachable), so the tests do not depend on the machine. */
const cfgTree = makeTree({ gh: {} }, 'fs-tools-ghhosts-');
afterAll(() => cfgTree.cleanup());
const EMPTY_ENV: NodeJS.ProcessEnv = { GH_CONFIG_DIR: path.join(cfgTree.dir, 'none') };

describe('parseRemoteUrl', () => {
  test.each([
    ['https://github.com/octo/hello.git', { scheme: 'https', host: 'github.com', port: null, path: 'octo/hello' }],
    ['https://github.com/octo/hello', { scheme: 'https', host: 'github.com', port: null, path: 'octo/hello' }],
    ['https://github.com/octo/hello/', { scheme: 'https', host: 'github.com', port: null, path: 'octo/hello' }],
    [
      'https://user:ghp_secret@GitHub.com/octo/hello.git',
      { scheme: 'https', host: 'github.com', port: null, path: 'octo/hello' },
    ],
    ['http://127.0.0.1:8929/a/b/c.git', { scheme: 'http', host: '127.0.0.1', port: 8929, path: 'a/b/c' }],
    [
      'https://gitlab.example.com:8443/group/sub/proj.git',
      { scheme: 'https', host: 'gitlab.example.com', port: 8443, path: 'group/sub/proj' },
    ],
    ['ssh://git@github.com/octo/hello.git', { scheme: 'ssh', host: 'github.com', port: null, path: 'octo/hello' }],
    [
      'ssh://git@ssh.github.com:443/octo/hello.git',
      { scheme: 'ssh', host: 'github.com', port: 443, path: 'octo/hello' },
    ],
    ['git+ssh://git@gitlab.com:2222/a/b/c.git', { scheme: 'ssh', host: 'gitlab.com', port: 2222, path: 'a/b/c' }],
    ['git://github.com/octo/hello.git', { scheme: 'git', host: 'github.com', port: null, path: 'octo/hello' }],
    ['git@github.com:octo/hello.git', { scheme: 'ssh', host: 'github.com', port: null, path: 'octo/hello' }],
    ['github.com:octo/hello', { scheme: 'ssh', host: 'github.com', port: null, path: 'octo/hello' }],
    ['git@gitlab.com:/a/b/c.git', { scheme: 'ssh', host: 'gitlab.com', port: null, path: 'a/b/c' }],
    ['git@[::1]:a/b.git', { scheme: 'ssh', host: '::1', port: null, path: 'a/b' }],
    ['https://[::1]:8080/a/b', { scheme: 'https', host: '::1', port: 8080, path: 'a/b' }],
    ['https://github.com/octo/my%20repo', null],
  ])('%s', (url, expected) => {
    expect(parseRemoteUrl(url)).toEqual(expected);
  });

  test.each([
    '/srv/git/repo.git',
    './relative',
    '../up.git',
    'file:///srv/git/repo.git',
    'C:\\repos\\x',
    'c:/repos/x',
    'https://github.com/',
    'https://github.com/../x',
    'ssh://git@host/~user/repo.git',
    'git@host:~user/repo',
    'ftp://host/a/b',
    '',
  ])('not a forge remote: %s', (url) => {
    expect(parseRemoteUrl(url)).toBeNull();
  });
});

const remote = (name: string, url: string): Remote => ({ name, url, parsed: parseRemoteUrl(url) });

/** The ToolError thrown by fn. */
function thrown(fn: () => unknown): ToolError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ToolError) return error;
    throw error;
  }
  throw new Error('expected a ToolError');
}

describe('resolveRepo', () => {
  test('https and ssh remotes of the same repo (any case, with or without .git) are one candidate', () => {
    const c = resolveRepo(
      [
        remote('origin', 'git@github.com:Octo/Hello.git'),
        remote('https', 'https://github.com/octo/hello'),
        remote('alias', 'ssh://git@ssh.github.com:443/octo/hello.git'),
      ],
      'github',
      { hostname: null },
    );
    expect(c).toEqual({
      host: 'github.com',
      port: null,
      scheme: 'https',
      repo: 'Octo/Hello',
      remotes: ['origin', 'https', 'alias'],
    });
  });

  test('different repos are GH_AMBIGUOUS with the candidates', () => {
    const e = thrown(() =>
      resolveRepo(
        [
          remote('origin', 'https://github.com/octo/hello.git'),
          remote('upstream', 'git@github.com:someone/hello.git'),
          remote('gl', 'git@gitlab.com:a/b.git'),
        ],
        'github',
        { hostname: null },
      ),
    );
    expect(e.code).toBe('GH_AMBIGUOUS');
    expect(e.details.candidates).toEqual([
      { host: 'github.com', repo: 'octo/hello', remotes: ['origin'] },
      { host: 'github.com', repo: 'someone/hello', remotes: ['upstream'] },
    ]);
  });

  test('the same path on two hosts is two repos', () => {
    expect(
      thrown(() =>
        resolveRepo([remote('a', 'https://github.com/o/r'), remote('b', 'https://github.example.com/o/r')], 'github', {
          hostname: null,
          configured: { github: [{ host: 'github.example.com', port: null }], gitlab: [] },
        }),
      ).code,
    ).toBe('GH_AMBIGUOUS');
  });

  test('issue #12: a host is GitHub/GitLab by its exact name, never because it contains "github"/"gitlab"', () => {
    const none = { github: [], gitlab: [] };
    for (const url of [
      'https://github.attacker.example/o/r',
      'git@mygithub.com:o/r.git',
      'https://github.com.evil.example/o/r',
      'https://evil.example/github.com/o',
    ]) {
      const e = thrown(() => resolveRepo([remote('origin', url)], 'github', { hostname: null, configured: none }));
      expect([url, e.code]).toEqual([url, 'GH_REPO_UNRESOLVED']);
    }
    expect(
      thrown(() =>
        resolveRepo([remote('o', 'https://gitlab.attacker.example/a/b')], 'gitlab', {
          hostname: null,
          configured: none,
        }),
      ).code,
    ).toBe('GL_REPO_UNRESOLVED');
    // A hostile remote next to the real one does not make it ambiguous: it is simply not a GitHub remote.
    expect(
      resolveRepo(
        [remote('origin', 'https://github.com/o/r'), remote('evil', 'https://github.attacker.example/o/r')],
        'github',
        { hostname: null, configured: none },
      ),
    ).toMatchObject({ host: 'github.com', repo: 'o/r', remotes: ['origin'] });
    // Hosts the operator configured (gh's hosts.yml, GH_HOST; GITLAB_HOST, CI_SERVER_URL) count, exactly.
    const configured = {
      github: [{ host: 'ghe.corp.example', port: null }],
      gitlab: [{ host: 'code.corp.example', port: null }],
    };
    expect(
      resolveRepo([remote('o', 'git@ghe.corp.example:t/app.git')], 'github', { hostname: null, configured }).host,
    ).toBe('ghe.corp.example');
    expect(
      thrown(() =>
        resolveRepo([remote('o', 'git@x.ghe.corp.example:t/app.git')], 'github', { hostname: null, configured }),
      ).code,
    ).toBe('GH_REPO_UNRESOLVED');
    expect(
      resolveRepo([remote('o', 'https://code.corp.example/a/b/c')], 'gitlab', { hostname: null, configured }).repo,
    ).toBe('a/b/c');
  });

  test('hostname restricts candidates to that host (any name)', () => {
    const remotes = [remote('a', 'https://github.com/o/r'), remote('b', 'https://ghe.corp.example/o/r')];
    expect(resolveRepo(remotes, 'github', { hostname: 'ghe.corp.example' }).host).toBe('ghe.corp.example');
    expect(thrown(() => resolveRepo(remotes, 'github', { hostname: 'other.example' })).code).toBe('GH_REPO_UNRESOLVED');
  });

  test('no remotes / no matching remote: *_REPO_UNRESOLVED with the reason', () => {
    const none = thrown(() => resolveRepo([], 'gitlab', { hostname: null }));
    expect([none.code, none.details.reason]).toEqual(['GL_REPO_UNRESOLVED', 'no_remotes']);
    const other = thrown(() =>
      resolveRepo([remote('origin', 'https://bitbucket.org/o/r.git'), remote('local', '/srv/x')], 'github', {
        hostname: null,
      }),
    );
    expect([other.code, other.details.reason]).toEqual(['GH_REPO_UNRESOLVED', 'no_matching_remote']);
    expect(other.details.remotes).toEqual([
      { name: 'origin', host: 'bitbucket.org' },
      { name: 'local', host: null },
    ]);
  });

  test('GitHub needs owner/name exactly; GitLab accepts nested groups', () => {
    expect(
      thrown(() => resolveRepo([remote('o', 'https://github.com/a/b/c')], 'github', { hostname: null })).code,
    ).toBe('GH_REPO_UNRESOLVED');
    expect(resolveRepo([remote('o', 'git@gitlab.com:a/b/c.git')], 'gitlab', { hostname: null }).repo).toBe('a/b/c');
  });

  test("GitLab hosts: gitlab.com and GITLAB_HOST's host (exact; issue #12); the web port of an http(s) remote is kept", () => {
    const configured = { github: [], gitlab: [] };
    const remotes = [
      remote('ssh', 'git@code.corp.example:team/app.git'),
      remote('web', 'https://code.corp.example:8443/team/app.git'),
    ];
    expect(thrown(() => resolveRepo(remotes, 'gitlab', { hostname: null, configured })).code).toBe(
      'GL_REPO_UNRESOLVED',
    );
    expect(resolveRepo(remotes, 'gitlab', { hostname: null, gitlabHost: 'code.corp.example', configured })).toEqual({
      host: 'code.corp.example',
      port: 8443,
      scheme: 'https',
      repo: 'team/app',
      remotes: ['ssh', 'web'],
    });
    // Was accepted by a substring test before issue #12.
    expect(
      thrown(() =>
        resolveRepo([remote('o', 'https://gitlab.corp.example/x/y')], 'gitlab', { hostname: null, configured }),
      ).code,
    ).toBe('GL_REPO_UNRESOLVED');
  });
});

describe('listRemotes (configs read by the view, real git writes them)', () => {
  const tree = makeTree({ home: {} }, 'fs-tools-remotes-');
  afterAll(() => tree.cleanup());
  const env = { ...process.env, HOME: path.join(tree.dir, 'home'), GIT_CONFIG_NOSYSTEM: '1' };
  const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, env, encoding: 'utf8' });
  /** The repository's own config as the view parses it (no includes). */
  const repoConfig = (repo: string) => parseGitConfig(readFileSync(path.join(repo, '.git', 'config'), 'utf8'))!;
  /** Runs fn with HOME (the operator's global config) set to `home`, restored afterwards. */
  async function withHome<T>(home: string, fn: () => Promise<T>): Promise<T> {
    const saved = { HOME: process.env.HOME, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME };
    process.env.HOME = home;
    process.env.XDG_CONFIG_HOME = path.join(home, '.config');
    try {
      return await fn();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  }

  test("the operator's global config never comes from a git inside the roots (git_inside_roots; nothing run)", async () => {
    // Every location counts as inside the roots here: whatever git PATH finds is one the agent could have planted.
    const e = await operatorRemoteConfig({ timeoutMs: 10_000, isInside: () => true }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(e).toBeInstanceOf(ToolError);
    expect((e as ToolError).details).toMatchObject({ reason: 'git_inside_roots' });
  });

  test('applies insteadOf, keeps dotted names, and lists nothing for a repo without remotes', () => {
    const repo = path.join(tree.dir, 'repo');
    execFileSync('mkdir', ['-p', repo]);
    git(repo, 'init', '-q');
    expect(listRemotes([new Map(), repoConfig(repo)])).toEqual([]);
    git(repo, 'config', 'url.https://github.com/.insteadOf', 'gh:');
    git(repo, 'remote', 'add', 'origin', 'gh:octo/hello');
    git(repo, 'remote', 'add', 'my.fork', 'git@github.com:me/hello.git');
    const remotes = listRemotes([new Map(), repoConfig(repo)]);
    expect(remotes).toEqual([
      {
        name: 'origin',
        url: 'https://github.com/octo/hello',
        parsed: { scheme: 'https', host: 'github.com', port: null, path: 'octo/hello' },
      },
      {
        name: 'my.fork',
        url: 'git@github.com:me/hello.git',
        parsed: { scheme: 'ssh', host: 'github.com', port: null, path: 'me/hello' },
      },
    ]);
    // What git itself makes of the same config.
    expect(git(repo, 'ls-remote', '--get-url', 'origin').trim()).toBe('https://github.com/octo/hello');
    expect(thrown(() => resolveRepo(remotes, 'github', { hostname: null })).code).toBe('GH_AMBIGUOUS');
  });

  test("attack: a hostile config's include.path / includeIf (e.g. to a file outside the roots) adds no remote and rewrites none", () => {
    // The included file could be another repository's config (a private project and its host) or any outside file;
    // the forge target must come from the repository's own config (and the operator's global one) only.
    const repo = path.join(tree.dir, 'hostile');
    const outside = path.join(tree.dir, 'outside.cfg');
    writeFileSync(
      outside,
      '[remote "leak"]\n\turl = https://gitlab.com/secretgroup/secretproj.git\n' +
        '[url "https://evil.example/"]\n\tinsteadOf = https://github.com/\n',
    );
    execFileSync('mkdir', ['-p', repo]);
    git(repo, 'init', '-q');
    git(repo, 'remote', 'add', 'origin', 'https://github.com/octo/hello.git');
    git(repo, 'config', 'include.path', outside);
    git(repo, 'config', `includeIf.gitdir:${repo}/.git.path`, outside);
    // Positive control: git itself does read the included file.
    expect(git(repo, 'config', '--get', 'remote.leak.url').trim()).toBe(
      'https://gitlab.com/secretgroup/secretproj.git',
    );
    expect(listRemotes([new Map(), repoConfig(repo)])).toEqual([
      {
        name: 'origin',
        url: 'https://github.com/octo/hello.git',
        parsed: { scheme: 'https', host: 'github.com', port: null, path: 'octo/hello' },
      },
    ]);
  });

  test("the operator's global config: its rewrites apply to the repository's remotes, its remotes come first, no repository is read", async () => {
    const home = path.join(tree.dir, 'operator-home');
    const repo = path.join(tree.dir, 'global-rewrite');
    execFileSync('mkdir', ['-p', home, repo]);
    writeFileSync(
      path.join(home, '.gitconfig'),
      '[url "https://github.com/"]\n\tinsteadOf = corp:\n[remote "shared"]\n\turl = corp:octo/shared\n' +
        `[include]\n\tpath = ${path.join(tree.dir, 'outside.cfg')}\n`,
    );
    git(repo, 'init', '-q');
    git(repo, 'remote', 'add', 'origin', 'corp:octo/hello');
    // git run from inside the repository would also see its config; operatorRemoteConfig runs git in no repository.
    const operator = await withHome(home, () => operatorRemoteConfig({ timeoutMs: 10_000, isInside: () => false }));
    expect([...operator.keys()]).toEqual(['url.https://github.com/.insteadof', 'remote.shared.url']);
    expect(listRemotes([operator, repoConfig(repo)]).map((r) => [r.name, r.url])).toEqual([
      ['shared', 'https://github.com/octo/shared'],
      ['origin', 'https://github.com/octo/hello'],
    ]);
  });

  test("the operator's remote settings larger than the cap are refused, not used as if complete", async () => {
    const home = path.join(tree.dir, 'huge-home');
    execFileSync('mkdir', ['-p', home]);
    const filler = Array.from(
      { length: 12_000 },
      (_, i) => `[remote "r${i}"]\n\turl = https://github.com/o/${'x'.repeat(80)}${i}\n`,
    ).join('');
    writeFileSync(path.join(home, '.gitconfig'), filler);
    const e = await withHome(home, () => operatorRemoteConfig({ timeoutMs: 20_000, isInside: () => false })).then(
      () => null,
      (error: unknown) => error,
    );
    expect(e).toBeInstanceOf(ToolError);
    expect((e as ToolError).details).toMatchObject({ reason: 'git_output_limit' });
  });

  test('insteadOf: the longest matching prefix wins; the first url of a remote is its url', () => {
    const repo = path.join(tree.dir, 'rewrites');
    execFileSync('mkdir', ['-p', repo]);
    git(repo, 'init', '-q');
    git(repo, 'config', 'url.https://a.example/.insteadOf', 'x:');
    git(repo, 'config', 'url.https://github.com/.insteadOf', 'x:gh/');
    git(repo, 'remote', 'add', 'origin', 'x:gh/octo/hello');
    git(repo, 'config', '--add', 'remote.origin.url', 'https://second.example/o/r');
    const want = git(repo, 'ls-remote', '--get-url', 'origin').trim();
    expect(want).toBe('https://github.com/octo/hello');
    expect(listRemotes([new Map(), repoConfig(repo)]).map((r) => r.url)).toEqual([want]);
  });
});

describe('--git-remote-allow', () => {
  const target = (host: string, port: number, repo: string) => ({ host, port, repo });
  test.each([
    // [entries, host, port, repo, allowed]
    [['*'], 'evil.example', 443, 'o/r', true],
    [['github.com/octo', '*'], 'evil.example', 443, 'o/r', true],
    [['github.com'], 'github.com', 443, 'o/r', true],
    [['GitHub.com'], 'github.com', 443, 'O/R', true],
    [['github.com'], 'gitlab.com', 443, 'o/r', false],
    [['github.com/octo'], 'github.com', 443, 'octo/hello', true],
    [['github.com/octo'], 'github.com', 443, 'octopus/hello', false],
    [['github.com/octo/hello'], 'github.com', 443, 'octo/hello', true],
    [['github.com/octo/hello'], 'github.com', 443, 'octo/hello2', false],
    [['https://github.com/octo/hello.git'], 'github.com', 443, 'octo/hello', true],
    [['https://github.com/octo/hello.git'], 'github.com', 443, 'octo/other', false],
    [['git@github.com:octo/hello.git'], 'github.com', 443, 'octo/hello', true],
    [['https://github.com'], 'github.com', 443, 'x/y', true],
    [['gitlab.example.com:8443'], 'gitlab.example.com', 8443, 'a/b/c', true],
    [['gitlab.example.com:8443'], 'gitlab.example.com', 443, 'a/b/c', false],
    [['gitlab.example.com:443'], 'gitlab.example.com', 443, 'a/b', true],
    [['gitlab.example.com'], 'gitlab.example.com', 8443, 'a/b', false],
    [['github.com'], 'github.com', 8443, 'o/r', false],
    [['127.0.0.1:8929/a/b'], '127.0.0.1', 8929, 'a/b/c', true],
    [['127.0.0.1:8929/a/b'], '127.0.0.1', 8930, 'a/b/c', false],
    [['http://127.0.0.1:8929/a'], '127.0.0.1', 8929, 'a/b/c', true],
    [['not a host', '::::'], 'github.com', 443, 'o/r', false],
    [['evil.com', 'github.com/octo'], 'github.com', 443, 'octo/x', true],
  ])('%j admits %s:%i %s → %s', (entries, host, port, repo, allowed) => {
    expect(isAllowed(entries, target(host, port, repo), EMPTY_ENV)).toBe(allowed);
  });

  test('issue #12: the default (no flag) is the operator-configured hosts, exact names, not "any"', () => {
    const env = {
      ...EMPTY_ENV,
      GH_HOST: 'ghe.corp.example',
      GITLAB_HOST: 'https://code.corp.example:8443',
      CI_SERVER_URL: 'https://ci-gitlab.example/',
    };
    const ok = (host: string, port = 443, e: NodeJS.ProcessEnv = env, allow: string[] = []) =>
      isAllowed(allow, target(host, port, 'o/r'), e);
    expect([
      ok('github.com'),
      ok('gitlab.com'),
      ok('ghe.corp.example'),
      ok('code.corp.example', 8443),
      ok('ci-gitlab.example'),
    ]).toEqual([true, true, true, true, true]);
    expect([
      ok('evil.example'),
      ok('github.attacker.example'),
      ok('api.github.com'),
      ok('code.corp.example', 443),
      ok('github.localhost', 80),
    ]).toEqual([false, false, false, false, false]);
    expect(ok('ghe.corp.example', 443, EMPTY_ENV)).toBe(false);
    // A given list replaces the default; `default` puts it back; `*` allows any host.
    expect(ok('github.com', 443, env, ['ghe.corp.example'])).toBe(false);
    expect(ok('github.com', 443, env, ['default', 'extra.example'])).toBe(true);
    expect(ok('extra.example', 443, env, ['default', 'extra.example'])).toBe(true);
    expect(ok('evil.example', 443, env, ['*'])).toBe(true);
  });

  test("issue #12: the hosts of gh's own hosts.yml (GH_CONFIG_DIR, else XDG_CONFIG_HOME/gh, else ~/.config/gh)", () => {
    const dir = path.join(cfgTree.dir, 'gh');
    writeFileSync(
      path.join(dir, 'hosts.yml'),
      [
        'github.com:',
        '    oauth_token: gho_secretsecretsecret',
        '    user: me',
        '"ghe.corp.example":',
        '    user: me',
        'ghe2.corp.example:8443: # a comment',
        '    user: me',
        'not a host name:',
        '  nested.example:',
        '- list.example',
        'oauth_token: x',
      ].join('\n'),
    );
    const expected = [
      { host: 'github.com', port: null },
      { host: 'ghe.corp.example', port: null },
      { host: 'ghe2.corp.example', port: 8443 },
    ];
    expect(ghConfiguredHosts({ GH_CONFIG_DIR: dir })).toEqual(expected);
    expect(ghConfiguredHosts({ XDG_CONFIG_HOME: cfgTree.dir })).toEqual(expected);
    expect(ghConfiguredHosts({}, path.join(cfgTree.dir, 'nohome'))).toEqual([]);
    expect(isAllowed([], target('ghe.corp.example', 443, 'o/r'), { GH_CONFIG_DIR: dir })).toBe(true);
    expect(isAllowed([], target('nested.example', 443, 'o/r'), { GH_CONFIG_DIR: dir })).toBe(false);
    // Fail closed: a file too large contributes no host (and nothing of it is ever reported).
    writeFileSync(path.join(dir, 'hosts.yml'), `big.example:\n${'#'.repeat(GH_HOSTS_FILE_MAX_BYTES)}\n`);
    expect(ghConfiguredHosts({ GH_CONFIG_DIR: dir })).toEqual([]);
    expect(parseGhHostsYaml('a.example:\r\nb.example:\r\n')).toEqual([
      { host: 'a.example', port: null },
      { host: 'b.example', port: null },
    ]);
  });

  test('entries parse into host, port and path segments', () => {
    expect(parseAllowEntry('GitHub.com/Octo')).toEqual({ host: 'github.com', port: null, segments: ['octo'] });
    expect(parseAllowEntry('https://gitlab.example.com:8443/a/b.git')).toEqual({
      host: 'gitlab.example.com',
      port: 8443,
      segments: ['a', 'b'],
    });
    expect(parseAllowEntry('')).toBeNull();
  });

  test('GH_HOST_DENIED names the host, port, repo and the list', () => {
    const e = thrown(() => assertHostAllowed(['github.com/octo'], target('github.com', 443, 'evil/x'), EMPTY_ENV));
    expect(e.code).toBe('GH_HOST_DENIED');
    expect(e.details).toEqual({ host: 'github.com', port: 443, repo: 'evil/x', allowed: ['github.com/octo'] });
    expect(e.message).toMatch(/nothing was sent/);
  });
});
