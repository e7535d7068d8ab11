/**
 * Every advertised schema holds (SPEC §2, STYLE §4.7 pins): a walk over `tools/list` that makes successful and
 * failing calls to every tool, checks each success's structuredContent against that tool's advertised outputSchema
 * with Ajv — under both JSON Schema dialects a client may apply (2020-12, the default of a 2026-07-28 client for a
 * schema without `$schema`; draft-07, the 1.x SDK's Ajv) — and each failure's text against the envelope contract.
 * Every result, success or failure, must also be a protocol CallToolResult (the server does not re-validate its own).
 * A tool added later without a success case here fails the walk. The issue tools' success cases hold every action,
 * so each action's result is parsed by each era's client here (github-issues and gitlab-issues pin the actions'
 * requests and fields once).
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { isCallToolResult } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorEnvelopeSchema } from '../../src/errors/envelope-schema.js';
import { FakeGitHub } from '../helpers/fake-github.js';
import { runBatch } from '../helpers/git-batch.js';
import { FAKE_GITLAB_TOKEN, FakeGitLab } from '../helpers/fake-gitlab.js';
import { envelopeOf } from '../helpers/protocol-asserts.js';
import { afterStartupLine, connect, ERAS, type ListedTool, type TestClient } from '../helpers/server.js';
import { makeTree, symlink } from '../helpers/tree.js';

type Args = Record<string, unknown>;
interface Cases {
  /** Calls that must succeed (at least one per tool). */
  ok: Args[];
  /** Calls that must fail, with the expected code. */
  fail: Array<{ args: Args; code: string }>;
}

/** The table: one entry per tool. A listed tool without an entry fails the walk. */
const CASES: Record<string, Cases> = {
  list_allowed_directories: {
    ok: [{}],
    fail: [],
  },
  read_file: {
    ok: [
      { path: 'a.txt' },
      { path: 'a.txt', start_line: 2, end_line: 2 },
      { path: 'a.txt', tail: 1 },
      { path: 'a.txt', max_bytes: 3 }, // truncated, with a continuation
      { path: 'bin.dat', encoding: 'base64' },
      { path: 'empty.txt' },
      { path: 'crlf.txt' },
      { path: 'link-to-a' },
    ],
    fail: [
      { args: { path: 'missing.txt' }, code: 'NOT_FOUND' },
      { args: { path: '.env' }, code: 'SECRET_DENIED' },
      { args: { path: '/etc/hostname' }, code: 'NOT_ALLOWED' },
      { args: { path: 'src' }, code: 'VALIDATION' },
      { args: { path: 'bin.dat' }, code: 'VALIDATION' },
      { args: { path: 'a.txt', head: 1, tail: 1 }, code: 'VALIDATION' },
      { args: { path: 'a\u0000b' }, code: 'VALIDATION' },
    ],
  },
  read_media: {
    ok: [{ path: 'pixel.png' }],
    fail: [
      { args: { path: 'a.txt' }, code: 'VALIDATION' },
      { args: { path: 'missing.png' }, code: 'NOT_FOUND' },
      { args: { path: '/etc/hostname' }, code: 'NOT_ALLOWED' },
    ],
  },
  read_files: {
    ok: [
      { paths: ['a.txt'] },
      { paths: ['a.txt', 'missing.txt', '.env', 'src/b.ts'], head: 1 }, // per-entry envelopes inside a success
    ],
    fail: [
      { args: { paths: [] }, code: 'VALIDATION' },
      { args: { paths: 'a.txt' }, code: 'VALIDATION' },
    ],
  },
  list_directory: {
    ok: [{}, { path: 'src', depth: 2 }, { max_entries: 1 }, { include: ['*.txt'] }, { path: 'src', long: true }],
    fail: [
      { args: { path: 'a.txt' }, code: 'VALIDATION' },
      { args: { path: 'nope' }, code: 'NOT_FOUND' },
      { args: { path: '/' }, code: 'NOT_ALLOWED' },
      { args: { cursor: 'not-a-cursor' }, code: 'VALIDATION' },
    ],
  },
  search_files: {
    ok: [
      { query: 'TODO' },
      { glob: '**/*.ts' },
      { query: 'todo', case_sensitive: false, context_lines: 1 },
      { query: 'T.DO', regex: true },
      { query: 'TODO', max_results: 1 },
      { query: 'no such text anywhere' },
      { query: 'TODO', output_mode: 'files_with_matches' },
      { query: 'TODO', output_mode: 'count', max_results: 1 },
    ],
    fail: [
      { args: {}, code: 'VALIDATION' },
      { args: { query: 'x', path: '/etc' }, code: 'NOT_ALLOWED' },
      { args: { query: 'x', path: 'nope' }, code: 'NOT_FOUND' },
      { args: { query: '(', regex: true }, code: 'VALIDATION' },
      { args: { glob: '**/*.ts', output_mode: 'count' }, code: 'VALIDATION' },
    ],
  },
  stat: {
    ok: [{ path: 'a.txt' }, { path: 'src' }, { path: 'link-to-a' }, { path: '.env' }, { path: 'a.txt', hash: false }],
    fail: [
      { args: { path: 'nope' }, code: 'NOT_FOUND' },
      { args: { path: '/etc' }, code: 'NOT_ALLOWED' },
    ],
  },
};

/** SPEC §5 content hash of a fixture's bytes. */
const hashOf = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

/** Fixture contents the mutation cases refer to by hash. */
const EDIT_ME = 'line one\nline two\nline three\nline four\nline five\nline six\n';
const PATCH_ME = 'p1\np2\np3\np4\np5\np6\n';
const DELETE_ME = 'delete me\n';

/**
 * Mutating and git tools. The walk runs in registry order and each tool's ok cases before its failing ones, so a
 * case may rely on an earlier case of the same tool (the session remembers hashes of what it wrote).
 */
Object.assign(CASES, {
  write_file: {
    ok: [
      { path: 'mut/new.txt', content: 'new\n' },
      { path: 'mut/new.txt', content: 'replaced\n' }, // written by this session: its hash is known
      { path: 'mut/dry.txt', content: 'dry\n', dry_run: true },
      { path: 'mut/deep/er/file.bin', content_base64: Buffer.from([0, 1, 2]).toString('base64'), create_dirs: true },
    ],
    fail: [
      { args: { path: 'mut/blind.txt', content: 'blind overwrite\n' }, code: 'HASH_REQUIRED' },
      { args: { path: '/etc/fs-tools-schemas.txt', content: 'x' }, code: 'NOT_ALLOWED' },
      { args: { path: '.env', content: 'X=1\n' }, code: 'SECRET_DENIED' },
    ],
  },
  edit_file: {
    ok: [
      { path: 'mut/edit.txt', edits: [{ old_text: 'line two', new_text: 'line 2' }], expected_hash: hashOf(EDIT_ME) },
      { path: 'mut/edit.txt', edits: [{ old_text: 'line four', new_text: 'line 4' }], dry_run: true },
    ],
    fail: [
      { args: { path: 'mut/edit.txt', edits: [{ old_text: '', new_text: 'x' }] }, code: 'VALIDATION' },
      { args: { path: 'mut/edit.txt', edits: [{ old_text: 'no such text', new_text: 'x' }] }, code: 'PATCH_FAILED' },
      {
        args: {
          path: 'mut/edit.txt',
          edits: [{ old_text: 'line one', new_text: 'x' }],
          expected_hash: hashOf('other'),
        },
        code: 'OCC_MISMATCH',
      },
    ],
  },
  apply_patch: {
    ok: [
      {
        patch: '--- a/mut/patch.txt\n+++ b/mut/patch.txt\n@@ -2,3 +2,3 @@\n p2\n-p3\n+P3\n p4\n',
        expected_hashes: { 'mut/patch.txt': hashOf(PATCH_ME) },
      },
      { patch: '--- /dev/null\n+++ b/mut/created-by-patch.txt\n@@ -0,0 +1 @@\n+created\n' },
    ],
    fail: [
      {
        args: { patch: '*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** End Patch\n' },
        code: 'BEGIN_PATCH',
      },
      { args: { patch: 'this is not a diff' }, code: 'PATCH_FAILED' },
    ],
  },
  replace_in_files: {
    ok: [
      { path: 'mut', query: 'p3', replacement: 'P3', dry_run: true },
      { path: 'mut/patch.txt', query: 'p(\\d)', replacement: 'q$1', regex: true, dry_run: true },
      // apply_patch (earlier in the walk) made p3 P3
      {
        path: 'mut/patch.txt',
        query: 'p5',
        replacement: 'P5',
        expected_hashes: { 'patch.txt': hashOf(PATCH_ME.replace('p3', 'P3')) },
      },
    ],
    fail: [
      { args: { query: '(', replacement: 'x', regex: true }, code: 'VALIDATION' },
      { args: { path: '/etc', query: 'x', replacement: 'y' }, code: 'NOT_ALLOWED' },
    ],
  },
  move_path: {
    ok: [{ source: 'mut/move.txt', destination: 'mut/moved.txt' }],
    fail: [
      { args: { source: 'mut/moved.txt', destination: 'mut/edit.txt' }, code: 'VALIDATION' },
      { args: { source: 'mut/no-such.txt', destination: 'mut/x.txt' }, code: 'NOT_FOUND' },
    ],
  },
  copy_path: {
    ok: [
      { source: 'src', destination: 'mut/src-copy', recursive: true },
      { source: 'a.txt', destination: 'mut/a-copy.txt' },
      { source: 'link-to-a', destination: 'mut/link-copy' },
      { source: 'a.txt', destination: 'mut/a-dry.txt', dry_run: true },
    ],
    fail: [
      { args: { source: 'a.txt', destination: 'mut/a-copy.txt' }, code: 'VALIDATION' },
      { args: { source: 'src', destination: 'mut/src-2' }, code: 'VALIDATION' },
      { args: { source: 'mut/no-such.txt', destination: 'mut/x.txt' }, code: 'NOT_FOUND' },
      { args: { source: '.env', destination: 'mut/env-copy' }, code: 'SECRET_DENIED' },
      { args: { source: 'a.txt', destination: '/etc/fs-tools-copy' }, code: 'NOT_ALLOWED' },
    ],
  },
  delete_path: {
    ok: [{ path: 'mut/delete.txt', expected_hash: hashOf(DELETE_ME) }, { path: 'mut/empty-dir' }],
    fail: [
      { args: { path: 'mut/no-such.txt' }, code: 'NOT_FOUND' },
      { args: { path: '/etc/hostname' }, code: 'NOT_ALLOWED' },
    ],
  },
  create_directory: {
    ok: [{ path: 'mut/made/sub' }, { path: 'mut/made/sub' }],
    fail: [{ args: { path: '/etc/fs-tools-schemas-dir' }, code: 'NOT_ALLOWED' }],
  },
  list_changes: {
    ok: [{}, { limit: 1 }],
    fail: [{ args: { limit: 0 }, code: 'VALIDATION' }],
  },
  revert_changes: {
    // The walk runs in tools/list order: delete_path (recorded) came before, so there is a change to preview.
    ok: [{ last: 1, dry_run: true }],
    fail: [
      { args: {}, code: 'VALIDATION' },
      { args: { change_id: '000000000000000-000000000000' }, code: 'NOT_FOUND' },
    ],
  },
  git_status: {
    ok: [{ path: 'repo' }, { path: 'repo/tracked.txt' }],
    fail: [{ args: { path: '/etc' }, code: 'NOT_ALLOWED' }],
  },
  git_diff: {
    ok: [{ path: 'repo' }, { path: 'repo', staged: true }],
    fail: [{ args: { path: 'repo', expected_status_hash: hashOf('stale') }, code: 'STALE_GIT' }],
  },
} satisfies Record<string, Cases>);

/**
 * The issue tools, against the fakes of test/helpers (gh through HTTP_PROXY to github.localhost; GitLab at
 * GITLAB_HOST = the fake's http://127.0.0.1:PORT, so repo alone targets it).
 */
Object.assign(CASES, {
  github_issues: {
    ok: [
      { action: 'list', repo: 'octo/hello', hostname: 'github.localhost', limit: 2 },
      { action: 'view', repo: 'octo/hello', hostname: 'github.localhost', number: 3 },
      { action: 'comment', repo: 'octo/hello', hostname: 'github.localhost', number: 1, body: 'schemas walk' },
      { action: 'close', repo: 'octo/hello', hostname: 'github.localhost', number: 1, reason: 'completed' },
      { action: 'reopen', repo: 'octo/hello', hostname: 'github.localhost', number: 1 },
      { action: 'edit', repo: 'octo/hello', hostname: 'github.localhost', number: 1, title: 'Renamed', labels: [] },
      {
        action: 'create',
        repo: 'octo/hello',
        hostname: 'github.localhost',
        title: 'New one',
        body: 'Details',
        labels: ['bug'],
        assignees: ['alice'],
      },
    ],
    fail: [
      { args: { action: 'view', repo: 'octo/hello', hostname: 'github.localhost', number: 2 }, code: 'GH_NOT_ISSUE' },
      { args: { action: 'view', repo: 'octo/hello', hostname: 'github.localhost' }, code: 'VALIDATION' },
      { args: { action: 'list', path: '.' }, code: 'GH_REPO_UNRESOLVED' },
    ],
  },
  gitlab_issues: {
    ok: [
      { action: 'list', repo: 'a/b/c' },
      { action: 'view', repo: 'a/b/c', number: 2 },
      { action: 'comment', repo: 'a/b/c', number: 1, body: 'schemas walk' },
      { action: 'close', repo: 'a/b/c', number: 1 },
      { action: 'reopen', repo: 'a/b/c', number: 1 },
      { action: 'edit', repo: 'a/b/c', number: 1, title: 'Renamed' },
      { action: 'create', repo: 'a/b/c', title: 'New', body: 'Text', labels: ['bug'], assignees: ['bob'] },
    ],
    fail: [
      { args: { action: 'view', repo: 'a/b/c', number: 99 }, code: 'GL_NOT_FOUND' },
      { args: { action: 'list', repo: 'a/b/c', hostname: 'http://gitlab.example.com' }, code: 'VALIDATION' },
    ],
  },
} satisfies Record<string, Cases>);

let fakeGitHub: FakeGitHub;
let fakeGitLab: FakeGitLab;
beforeAll(async () => {
  [fakeGitHub, fakeGitLab] = await Promise.all([FakeGitHub.start(), FakeGitLab.start()]);
});
afterAll(async () => {
  await Promise.all([fakeGitHub.close(), fakeGitLab.close()]);
});

/** The environment that points the issue tools at the fakes. */
function issueFakesEnv(): Record<string, string> {
  return { ...fakeGitHub.env(), GITLAB_HOST: fakeGitLab.url, GITLAB_TOKEN: FAKE_GITLAB_TOKEN };
}

/** A git work tree with one commit, one modified file and one untracked file. */
function makeRepo(dir: string): void {
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@example.com',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@example.com',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
  };
  // One child process for the three (test/helpers/git-batch.ts).
  runBatch(dir, env, [
    ['git', 'init', '-q', '-b', 'main'],
    ['git', 'add', 'tracked.txt'],
    ['git', 'commit', '-q', '-m', 'init'],
  ]);
}

/** A generic failure every tool has: an unknown parameter. */
const UNKNOWN_PARAMETER: Args = { __not_a_parameter__: true };

/**
 * Compiles advertised schemas under both dialects, strictly (unknown keywords are schema bugs). One engine per
 * dialect for the whole file, and each distinct schema text compiled once per dialect: both eras list the same
 * schemas, and the same text compiled by the same engine is the same validator (a compile that throws is not kept, so
 * it throws again wherever it is asked for).
 */
function compilers(): Array<{ dialect: string; compile: (schema: object) => ValidateFunction }> {
  return COMPILERS;
}
/** `compile` with its results kept by schema text. */
function compiledOnce(compile: (schema: object) => ValidateFunction): (schema: object) => ValidateFunction {
  const compiled = new Map<string, ValidateFunction>();
  return (schema) => {
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (!validate) {
      validate = compile(schema);
      compiled.set(key, validate);
    }
    return validate;
  };
}
// strictRequired off: the output schemas' `anyOf: [{required: [success fields]}, {required: ['error']}]` names
// properties declared one level up, which is correct JSON Schema (Ajv's own default leaves this check off; the
// SDKs' validators do too). Every other strict check stays on.
const draft07 = new Ajv({ strict: true, strictRequired: false, allErrors: true });
const draft2020 = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
const COMPILERS: Array<{ dialect: string; compile: (schema: object) => ValidateFunction }> = [
  { dialect: 'draft-07', compile: compiledOnce((schema) => draft07.compile(schema)) },
  { dialect: '2020-12', compile: compiledOnce((schema) => draft2020.compile(schema)) },
];

describe.each(ERAS)('advertised schemas hold for every tool (%s era)', (era) => {
  const tree = makeTree({
    'a.txt': 'alpha\nTODO one\nomega\n',
    'empty.txt': '',
    'crlf.txt': 'one\r\ntwo\r\n',
    'bin.dat': Buffer.from([0x00, 0x01, 0xfe, 0xff, 0x80]),
    'pixel.png': Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
      'base64',
    ),
    '.env': 'SECRET=schemas-secret-value\n',
    'link-to-a': symlink('a.txt'),
    src: { 'b.ts': 'export const b = 1; // TODO two\n', deep: { 'c.ts': '// todo three\n' } },
    mut: {
      'blind.txt': 'never read\n',
      'edit.txt': EDIT_ME,
      'patch.txt': PATCH_ME,
      'move.txt': 'move me\n',
      'delete.txt': DELETE_ME,
      'empty-dir': {},
    },
    repo: { 'tracked.txt': 'one\n' },
  });
  makeRepo(path.join(tree.dir, 'repo'));
  writeFileSync(path.join(tree.dir, 'repo', 'tracked.txt'), 'one\ntwo\n');
  writeFileSync(path.join(tree.dir, 'repo', 'untracked.txt'), 'new\n');
  let client: TestClient;
  let tools: ListedTool[];
  beforeAll(async () => {
    fakeGitHub.reset();
    fakeGitLab.reset();
    client = await connect(era, { args: [tree.dir], env: issueFakesEnv() });
    tools = await client.listTools();
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it('every advertised schema compiles under draft-07 and 2020-12', () => {
    for (const { dialect, compile } of compilers()) {
      for (const tool of tools) {
        expect(() => compile(tool.inputSchema), `${tool.name} inputSchema (${dialect})`).not.toThrow();
        expect(() => compile(tool.outputSchema!), `${tool.name} outputSchema (${dialect})`).not.toThrow();
      }
    }
  });

  it('every listed tool has a success case in the table', () => {
    const missing = tools.map((t) => t.name).filter((name) => !CASES[name]?.ok.length);
    expect(missing, 'add success cases for these tools to CASES').toEqual([]);
  });

  it('every success satisfies the outputSchema; every failure is exactly one envelope', async () => {
    const dialects = compilers();
    let successes = 0;
    let failures = 0;
    for (const tool of tools) {
      const cases = CASES[tool.name];
      if (!cases) continue; // reported by the test above
      const validators = dialects.map((d) => ({ dialect: d.dialect, validate: d.compile(tool.outputSchema!) }));
      const inputValidators = dialects.map((d) => ({ dialect: d.dialect, validate: d.compile(tool.inputSchema) }));

      for (const args of cases.ok) {
        const label = `${tool.name}(${JSON.stringify(args)})`;
        const result = await client.call(tool.name, args);
        // The server does not re-validate its own results (issue #19: create-server.ts skips the SDK's second pass);
        // this walk is the proof that each one is a protocol CallToolResult (both eras' clients also parse it).
        expect.soft(isCallToolResult(result), `${label} vs CallToolResult`).toBe(true);
        expect.soft(result.isError, `${label}: ${result.content[0]?.text}`).toBeFalsy();
        if (result.isError) continue;
        successes++;
        expect.soft(result.content[0]?.type, label).toBe('text');
        expect.soft(typeof result.content[0]?.text, label).toBe('string');
        for (const { dialect, validate } of validators) {
          const valid = validate(result.structuredContent);
          expect.soft(valid, `${label} vs outputSchema (${dialect}): ${JSON.stringify(validate.errors)}`).toBe(true);
        }
        // The advertised inputSchema accepts what the server accepts.
        for (const { dialect, validate } of inputValidators) {
          expect
            .soft(validate(args), `${label} vs inputSchema (${dialect}): ${JSON.stringify(validate.errors)}`)
            .toBe(true);
        }
        // Per-entry envelopes (read_files) follow the envelope contract too.
        for (const entry of (result.structuredContent?.results as Array<Record<string, unknown>> | undefined) ?? []) {
          if (entry.ok === false) {
            const parsed = ErrorEnvelopeSchema.safeParse({ error: entry.error });
            expect.soft(parsed.success, `${label} entry ${String(entry.path)}`).toBe(true);
          }
        }
      }

      for (const { args, code } of [...cases.fail, { args: UNKNOWN_PARAMETER, code: 'VALIDATION' }]) {
        const label = `${tool.name}(${JSON.stringify(args)})`;
        const result = await client.call(tool.name, args);
        expect.soft(isCallToolResult(result), `${label} vs CallToolResult`).toBe(true);
        const envelope = envelopeOf(result);
        failures++;
        expect.soft(envelope.error.code, `${label}: ${envelope.error.message}`).toBe(code);
        expect.soft(result.structuredContent, label).toBeUndefined();
        // A text-only client (Gemini CLI's McpComplianceTransport) turns the parsed first text block of a result
        // without structuredContent into structuredContent and validates it against the outputSchema: the
        // envelope must pass, or the model sees "-32602 Structured content does not match" instead (issue #15).
        for (const { dialect, validate } of validators) {
          expect
            .soft(
              validate(envelope),
              `${label} envelope vs outputSchema (${dialect}): ${JSON.stringify(validate.errors)}`,
            )
            .toBe(true);
        }
      }
    }
    expect(successes).toBeGreaterThanOrEqual(tools.length);
    expect(failures).toBeGreaterThanOrEqual(tools.length);
  });

  it('per-entry results of read_files mix successes and envelopes', async () => {
    const r = await client.callOk('read_files', { paths: ['a.txt', 'missing.txt', '.env'] });
    expect(r.results.map((e: { ok: boolean }) => e.ok)).toEqual([true, false, false]);
    expect(r.results[1].error.code).toBe('NOT_FOUND');
    expect(r.results[2].error.code).toBe('SECRET_DENIED');
    expect(JSON.stringify(r)).not.toContain('schemas-secret-value');
    expect([r.succeeded, r.failed]).toEqual([1, 2]);
  });

  it('wrote nothing to stderr', () => {
    expect(afterStartupLine(client.stderr())).toBe('');
  });
});
