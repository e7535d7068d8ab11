/**
 * Review of the planted-execution guard for the user's own git configuration (docs/security.md "Execution-bearing
 * files and git directories"): with a root that holds the home directory, `~/.gitconfig` and
 * `$XDG_CONFIG_HOME/git/config` are configuration every repository's git reads; a `core.fsmonitor` written there runs
 * on the user's next `git status` anywhere. Through the real server over stdio and the user's real git.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({ home: {}, state: {}, outside: {} }, 'fs-tools-user-config-');
const HOME = path.join(T.dir, 'home');
const MARK = path.join(T.dir, 'outside', 'marker');
const h = (...p: string[]) => path.join(HOME, ...p);

function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('GIT_') && k !== 'XDG_CONFIG_HOME' && v !== undefined) env[k] = v;
  return {
    ...env,
    HOME,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@e.invalid',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@e.invalid',
  };
}
function git(cwd: string, ...args: string[]): void {
  try {
    execFileSync('git', args, { cwd, env: cleanEnv(), stdio: 'ignore' });
  } catch {
    /* a planted fsmonitor fails the command: the marker decides */
  }
}
const FSMONITOR = `[core]\n\tfsmonitor = "touch ${MARK}; false"\n`;

let client: TestClient;
beforeAll(async () => {
  writeFileSync(h('.gitconfig'), '[user]\n\tname = me\n');
  mkdirSync(h('.config/git'), { recursive: true });
  mkdirSync(h('project'));
  git(h('project'), 'init', '-q');
  client = await connect('modern', { args: ['--state-dir', path.join(T.dir, 'state'), HOME], env: cleanEnv() });
}, 60_000);
afterAll(async () => {
  await client?.close();
  T.cleanup();
});

describe('the user configuration inside a root', () => {
  it('control: core.fsmonitor in ~/.gitconfig runs on the user git status', () => {
    const before = readFileSync(h('.gitconfig'), 'utf8');
    writeFileSync(h('.gitconfig'), FSMONITOR);
    git(h('project'), 'status', '--short');
    expect(existsSync(MARK)).toBe(true);
    rmSync(MARK);
    writeFileSync(h('.gitconfig'), before);
  });

  it.each([['.gitconfig'], ['.config/git/config']])(
    '~/%s: writing core.fsmonitor is refused; the user git status runs nothing',
    async (rel) => {
      const before = existsSync(h(rel)) ? readFileSync(h(rel), 'utf8') : null;
      const hash =
        before === null ? undefined : ((await client.callOk('read_file', { path: h(rel) })).content_hash as string);
      const envelope = await client.callError('write_file', { path: h(rel), content: FSMONITOR, expected_hash: hash });
      expect(envelope.error.code).toBe('FILE_POLICY_DENIED');
      expect(envelope.error.details).toMatchObject({ source: 'builtin', rule: 'git_dir', reason: 'user_config' });
      // Moved onto, or its directory deleted: refused the same way.
      writeFileSync(h('staged'), FSMONITOR);
      const moved = await client.callError('move_path', { source: h('staged'), destination: h(rel), overwrite: true });
      expect(moved.error.code).toBe('FILE_POLICY_DENIED');
      rmSync(h('staged'));
      expect(existsSync(h(rel)) ? readFileSync(h(rel), 'utf8') : null).toBe(before);
      git(h('project'), 'status', '--short');
      expect(existsSync(MARK)).toBe(false);
    },
  );
});
