/**
 * The audit log (SPEC §9) from the outside: with --audit-log FILE every tool call — success or envelope — appends
 * exactly one JSON line (tool, outcome, paths, duration_ms); file content, including a refused secret's, never
 * reaches it; and a log that cannot be written leaves every call working and is reported once on stderr.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode, protocolError, waitFor } from '../helpers/protocol-asserts.js';
import { connect, ERAS, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const READ_MARKER = 'AUDIT-CONTENT-MARKER-51c9e2';
const SECRET_MARKER = 'AUDIT-SECRET-MARKER-0b7d44';

interface AuditLine {
  time: string;
  tool: string;
  action?: string;
  paths: string[];
  outcome: string;
  duration_ms: number;
  [key: string]: unknown;
}

describe.each(ERAS)('--audit-log (%s era)', (era) => {
  const tree = makeTree({
    'a.txt': `first line\n${READ_MARKER}\n`,
    '.env': `TOKEN=${SECRET_MARKER}\n`,
    src: { 'b.ts': `// ${READ_MARKER}\n` },
  });
  const logDir = makeTree({}, 'fs-tools-audit-');
  const logFile = path.join(logDir.dir, 'audit.jsonl');
  let client: TestClient;
  beforeAll(async () => {
    client = await connect(era, { args: [`--audit-log=${logFile}`, tree.dir] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
    logDir.cleanup();
  });

  const rawLog = (): string => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const lines = (): AuditLine[] =>
    rawLog()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditLine);

  /** Makes one call and returns the one line it appended. */
  async function callAndLine(tool: string, args: Record<string, unknown>): Promise<AuditLine> {
    const before = lines().length;
    await client.call(tool, args);
    const after = lines();
    expect(after.length, `${tool} appended ${after.length - before} lines`).toBe(before + 1);
    return after[after.length - 1];
  }

  it('appends exactly one well-formed line per call, success or envelope', async () => {
    // `paths` names what the call was about; each listed path must end with the given suffix.
    const cases: Array<{ tool: string; args: Record<string, unknown>; outcome: string; paths?: string[] }> = [
      { tool: 'read_file', args: { path: 'a.txt' }, outcome: 'ok', paths: ['a.txt'] },
      { tool: 'read_file', args: { path: '.env' }, outcome: 'SECRET_DENIED', paths: ['.env'] },
      { tool: 'read_file', args: { path: 'missing.txt' }, outcome: 'NOT_FOUND', paths: ['missing.txt'] },
      { tool: 'read_file', args: { path: '/etc/hostname' }, outcome: 'NOT_ALLOWED', paths: ['/etc/hostname'] },
      { tool: 'read_file', args: { file_path: 'a.txt' }, outcome: 'VALIDATION' },
      { tool: 'read_files', args: { paths: ['a.txt', '.env'] }, outcome: 'ok' },
      { tool: 'list_directory', args: { path: 'src' }, outcome: 'ok' },
      { tool: 'search_files', args: { query: READ_MARKER }, outcome: 'ok' },
      { tool: 'stat', args: { path: 'a.txt' }, outcome: 'ok' },
      { tool: 'list_allowed_directories', args: {}, outcome: 'ok' },
    ];
    for (const c of cases) {
      const line = await callAndLine(c.tool, c.args);
      expect(line.tool).toBe(c.tool);
      expect(line.outcome, `${c.tool} ${JSON.stringify(c.args)}`).toBe(c.outcome);
      expect(Array.isArray(line.paths)).toBe(true);
      for (const p of line.paths) expect(typeof p).toBe('string');
      if (c.paths) {
        expect(line.paths).toHaveLength(c.paths.length);
        c.paths.forEach((suffix, i) => expect(line.paths[i].endsWith(suffix), line.paths[i]).toBe(true));
      }
      expect(typeof line.duration_ms).toBe('number');
      expect(line.duration_ms).toBeGreaterThanOrEqual(0);
      expect(Number.isNaN(Date.parse(line.time))).toBe(false);
    }
    // Every line is one JSON object on its own line.
    for (const raw of rawLog().split('\n').filter(Boolean)) expect(() => JSON.parse(raw)).not.toThrow();
    expect(rawLog().endsWith('\n')).toBe(true);
  });

  it('records the paths of a multi-path call and the hash of a read', async () => {
    const line = await callAndLine('read_files', { paths: ['a.txt', 'src/b.ts'] });
    expect(line.paths).toEqual(['a.txt', 'src/b.ts']);
    const read = await callAndLine('read_file', { path: 'a.txt' });
    expect(read.hash_after).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(read.bytes).toBe(Buffer.byteLength(`first line\n${READ_MARKER}\n`));
  });

  it('does not log an unknown tool name (a protocol error, not a tool call)', async () => {
    const before = lines().length;
    expect((await protocolError(client.call('no_such_tool', {}))).code).toBe(-32602);
    expect(lines().length).toBe(before);
  });

  it('never contains file content, the refused secret, or argument values', async () => {
    await client.call('read_file', { path: '.env' });
    await client.call('read_files', { paths: ['.env', 'a.txt'] });
    await client.call('search_files', { query: 'TOKEN' });
    const log = rawLog();
    expect(log.length).toBeGreaterThan(0);
    expect(log).not.toContain(SECRET_MARKER);
    expect(log).not.toContain(READ_MARKER);
    expect(log).not.toContain('first line');
    expect(log).not.toContain('TOKEN');
    // and the refusal itself is on record
    expect(lines().some((l) => l.tool === 'read_file' && l.outcome === 'SECRET_DENIED')).toBe(true);
  });

  it('mutations log hashes and sizes but never the written text, edit text or patch body', async () => {
    const WRITE_MARKER = 'AUDIT-WRITE-MARKER-6d21';
    const EDIT_MARKER = 'AUDIT-EDIT-MARKER-c3f0';
    const PATCH_MARKER = 'AUDIT-PATCH-MARKER-88e1';
    const written = await callAndLine('write_file', { path: 'w.txt', content: `${WRITE_MARKER}\nsecond\nthird\n` });
    expect(written.outcome).toBe('ok');
    expect(written.hash_after).toMatch(/^sha256:[0-9a-f]{64}$/);
    const edited = await callAndLine('edit_file', {
      path: 'w.txt',
      edits: [{ old_text: 'second', new_text: EDIT_MARKER }],
    });
    expect(edited.outcome).toBe('ok');
    expect(edited.hash_before).toBe(written.hash_after);
    const patch = `--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n ${WRITE_MARKER}\n ${EDIT_MARKER}\n-third\n+${PATCH_MARKER}\n`;
    expect((await callAndLine('apply_patch', { patch })).outcome).toBe('ok');
    const refused = await callAndLine('edit_file', {
      path: 'w.txt',
      edits: [{ old_text: 'not there', new_text: EDIT_MARKER }],
    });
    expect(refused.outcome).toBe('PATCH_FAILED');
    const log = rawLog();
    for (const marker of [WRITE_MARKER, EDIT_MARKER, PATCH_MARKER]) expect(log).not.toContain(marker);
  });

  it('writes nothing to stderr while the log works', () => {
    expect(client.stderr()).not.toContain('audit');
  });
});

describe.each(ERAS)('--audit-log that cannot be written (%s era)', (era) => {
  const tree = makeTree({ 'a.txt': 'hello\n', 'plain-file': 'x', 'log-dir': {} });
  const unwritable: Array<[string, string]> = [
    ['a path under a regular file', path.join(tree.dir, 'plain-file', 'audit.log')],
    ['a missing directory', '/nonexistent-dir-fs-tools/x.log'],
    ['a directory', path.join(tree.dir, 'log-dir')],
  ];
  const clients = new Map<string, TestClient>();
  beforeAll(async () => {
    await Promise.all(
      unwritable.map(async ([, logPath]) => {
        clients.set(logPath, await connect(era, { args: [`--audit-log=${logPath}`, tree.dir] }));
      }),
    );
  });
  afterAll(async () => {
    await Promise.all([...clients.values()].map((c) => c.close()));
    tree.cleanup();
  });

  it.each(unwritable)('%s: calls keep working and stderr says so exactly once', async (_label, logPath) => {
    const client = clients.get(logPath)!;
    expect((await client.callOk('read_file', { path: 'a.txt' })).content).toBe('hello\n');
    expectCode(await client.call('read_file', { path: 'missing' }), 'NOT_FOUND');
    expect((await client.callOk('stat', { path: 'a.txt' })).type).toBe('file');
    await client.callOk('list_allowed_directories', {});
    const warned = await waitFor(() => client.stderr().includes('cannot write audit log'));
    expect(warned, client.stderr()).toBe(true);
    await client.callOk('read_file', { path: 'a.txt' });
    await new Promise((r) => setTimeout(r, 100));
    const mentions = client
      .stderr()
      .split('\n')
      .filter((l) => l.includes('audit log'));
    expect(mentions, client.stderr()).toHaveLength(1);
    expect(mentions[0]).toContain(logPath);
    expect(mentions[0]).toMatch(/^fs-tools: /);
    // Nothing was created in place of the log.
    expect(readFileSync(path.join(tree.dir, 'plain-file'), 'utf8')).toBe('x');
  });
});

describe('--audit-log appends to an existing log', () => {
  const tree = makeTree({ 'a.txt': 'hello\n' });
  const logDir = makeTree({}, 'fs-tools-audit-');
  afterAll(() => {
    tree.cleanup();
    logDir.cleanup();
  });

  it('keeps earlier lines and adds its own after them', async () => {
    const logFile = path.join(logDir.dir, 'nested', 'audit.jsonl');
    mkdirSync(path.dirname(logFile));
    writeFileSync(logFile, '{"earlier":true}\n');
    const client = await connect('legacy', { args: [`--audit-log=${logFile}`, tree.dir] });
    try {
      await client.callOk('read_file', { path: 'a.txt' });
    } finally {
      await client.close();
    }
    const text = readFileSync(logFile, 'utf8').split('\n').filter(Boolean);
    expect(text[0]).toBe('{"earlier":true}');
    expect(text).toHaveLength(2);
    expect(JSON.parse(text[1]).tool).toBe('read_file');
  });
});
