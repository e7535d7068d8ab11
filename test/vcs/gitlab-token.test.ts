/**
 * Issue #12 (forge part), attack kept as a test: GitLab's environment token goes only to its own instance. Pure
 * function, no network: `gitlabToken` decides what viaHttps/glab get, so pinning it pins the header sent.
 */
import { describe, expect, test } from 'vitest';
import { parseGitLabInstance } from '../../src/vcs/gitlab-instance.js';
import { gitlabToken } from '../../src/vcs/gitlab-token.js';

const inst = (raw: string) => {
  const i = parseGitLabInstance(raw);
  if (!i) throw new Error(`unparseable ${raw}`);
  return i;
};

describe('gitlabToken: the token of GITLAB_HOST goes to that instance only', () => {
  const env = { GITLAB_HOST: 'https://example.com/gitlab', GITLAB_TOKEN: 'glpat-SECRET' };

  test.each<[string, boolean]>([
    ['https://example.com/gitlab', true],
    ['https://example.com/gitlab/', true],
    // Same origin, another application below another path: not the token's instance.
    ['https://example.com/other', false],
    ['https://example.com', false],
    ['example.com', false],
    ['https://example.com:8443/gitlab', false],
    ['https://evil.example/gitlab', false],
  ])('%s → token %s', (raw, sent) => {
    const r = gitlabToken(inst(raw), env);
    expect(r.token?.value ?? null).toBe(sent ? 'glpat-SECRET' : null);
    expect(r.withheld).toBe(!sent);
  });

  test("an https instance's token never goes over plain http to the same host and port", () => {
    const local = { GITLAB_HOST: 'https://127.0.0.1:8443', GITLAB_TOKEN: 'glpat-SECRET' };
    expect(gitlabToken(inst('https://127.0.0.1:8443'), local).token?.value).toBe('glpat-SECRET');
    expect(gitlabToken(inst('http://127.0.0.1:8443'), local).token).toBeNull();
  });

  test('CI_JOB_TOKEN only to the CI server instance', () => {
    const ci = { CI_SERVER_URL: 'https://gitlab.corp.example', CI_JOB_TOKEN: 'job-SECRET' };
    expect(gitlabToken(inst('gitlab.corp.example'), ci).token).toMatchObject({
      header: 'JOB-TOKEN',
      value: 'job-SECRET',
    });
    expect(gitlabToken(inst('https://gitlab.corp.example/x'), ci).token).toBeNull();
    expect(gitlabToken(inst('gitlab.corp.example.evil.example'), ci).token).toBeNull();
  });
});
