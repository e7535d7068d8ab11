/**
 * Review of the read of a file named by its real path (src/policy/authorize.ts `authorizeSpelledFile`), against the
 * real server: every path below answers exactly as the same path spelled with a `/./` (which never takes the
 * shortcut), for policy rules (deny, hidden, read_only), the state directory and the audit log inside a root, hard
 * links to a secret, a denied and a hidden file (readable under both spellings: policy matches names, and a hard link
 * is a file in the root, docs/security.md), a second root given through a link, a root that is a file, a root
 * narrowed by client roots, /proc/self/root and /proc/self/cwd, long, Unicode and case spellings; and while a child
 * process swaps a parent directory for a link to outside and the file for a FIFO in a loop, every call answers, a
 * read returns the inside file's bytes only, and no answer holds outside content or names an outside path.
 */
import { spawn } from 'node:child_process';
import { linkSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type CallResult, type TestClient } from '../helpers/server.js';
import { makeTree, symlink } from '../helpers/tree.js';

const OUTSIDE = 'OUTSIDE_CONTENT';

/** `p` with a `/./` before its last component (the spelling the shortcut never takes). */
const dotted = (p: string): string => `${path.dirname(p)}/./${path.basename(p)}`;

describe('a path spelled as its real path answers as its /./ spelling', () => {
  const outside = makeTree({ 'x.txt': `${OUTSIDE} x\n`, sub: { 'f.txt': `${OUTSIDE} f\n` } });
  const other = makeTree({ 'o.txt': 'other root\n' });
  const fileRootDir = makeTree({ 'single.txt': 'single\n' });
  const tree = makeTree({
    'a.txt': 'hello\n',
    '.env': 'API_KEY=1\n',
    'café.txt': 'nfc\n',
    private: { 'b.txt': 'denied\n' },
    hiddendir: { 'h.txt': 'hidden\n' },
    ro: { 'r.txt': 'read only\n' },
    logs: {},
    '.state': { 'x.txt': 'state\n' },
    'link-other': symlink(other.dir),
    race: { 'f.txt': 'race f\n' },
  });
  const root = tree.dir;
  linkSync(`${root}/.env`, `${root}/public.txt`);
  linkSync(`${root}/private/b.txt`, `${root}/alias.txt`);
  linkSync(`${root}/hiddendir/h.txt`, `${root}/alias-hidden.txt`);
  const policyDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-policy-')));
  const policyFile = path.join(policyDir, 'policy.json');
  writeFileSync(
    policyFile,
    JSON.stringify({
      rules: [
        { pattern: 'private', access: 'deny' },
        { pattern: 'hiddendir', access: 'hidden' },
        { pattern: 'ro/**', access: 'read_only' },
      ],
    }),
  );
  const outputs: string[] = [];
  let client: TestClient;

  const read = async (p: string): Promise<CallResult> => {
    const r = await client.call('read_file', { path: p });
    outputs.push(JSON.stringify(r));
    return r;
  };

  beforeAll(async () => {
    client = await connect('legacy', {
      args: [
        '--state-dir',
        `${root}/.state`,
        `--audit-log=${root}/logs/audit.log`,
        `--policy=${policyFile}`,
        root,
        `${root}/link-other`,
        `${fileRootDir.dir}/single.txt`,
      ],
    });
    await client.call('read_file', { path: `${root}/a.txt` }); // the audit log now exists
  });
  afterAll(async () => {
    await client?.close();
    for (const t of [tree, outside, other, fileRootDir]) t.cleanup();
    rmSync(policyDir, { recursive: true, force: true });
  });

  it.each([
    'a.txt',
    '.env',
    'public.txt',
    'alias.txt',
    'alias-hidden.txt',
    'private/b.txt',
    'hiddendir/h.txt',
    'ro/r.txt',
    '.state/x.txt',
    'logs/audit.log',
    'café.txt',
    'cafe\u0301.txt',
    'A.TXT',
    `${'n'.repeat(256)}.txt`,
    'link-other/o.txt',
  ])('%s', async (name) => {
    const spelled = await read(`${root}/${name}`);
    expect(spelled).toEqual(await read(dotted(`${root}/${name}`)));
  });

  it.each([
    () => `${other.dir}/o.txt`,
    () => `${fileRootDir.dir}/single.txt`,
    () => `/proc/self/root${root}/a.txt`,
    () => `/proc/self/cwd/a.txt`,
  ])('%s', async (p) => {
    expect(await read(p())).toEqual(await read(dotted(p())));
  });

  it('a parent swapped for a link to outside and a file for a FIFO, in a loop, never leaks', async () => {
    const script = `
      const fs = require('node:fs');
      const [race, out] = process.argv.slice(1);
      const end = Date.now() + 3000;
      while (Date.now() < end) {
        try { fs.renameSync(race, race + '-real'); fs.symlinkSync(out, race); } catch {}
        try { fs.rmSync(race); fs.renameSync(race + '-real', race); } catch {}
        try { fs.renameSync(race + '/f.txt', race + '/f.keep'); } catch {}
        try { require('node:child_process').execFileSync('mkfifo', [race + '/f.txt']); } catch {}
        try { fs.rmSync(race + '/f.txt'); fs.renameSync(race + '/f.keep', race + '/f.txt'); } catch {}
      }`;
    const child = spawn(process.execPath, ['-e', script, `${root}/race`, `${outside.dir}/sub`], { stdio: 'ignore' });
    const codes = new Map<string, number>(); // answers by code, 'ok' for a read
    const started = Date.now();
    try {
      while (Date.now() - started < 2500) {
        const r = await read(`${root}/race/f.txt`);
        const key = r.isError ? JSON.parse(r.content[0].text!).error.code : 'ok';
        codes.set(key, (codes.get(key) ?? 0) + 1);
        if (!r.isError) expect((r.structuredContent as { content: string }).content).toBe('race f\n');
      }
    } finally {
      child.kill();
    }
    expect(codes.get('ok')).toBeGreaterThan(0);
    expect(
      [...codes.keys()].filter((k) => !['ok', 'NOT_FOUND', 'NOT_ALLOWED', 'FILE_POLICY_DENIED'].includes(k)),
    ).toEqual([]);
  }, 20_000);

  it('a root narrowed by client roots', async () => {
    const narrowed = await connect('legacy', { args: [root], clientRoots: [`file://${root}/ro`] });
    try {
      for (const p of [`${root}/a.txt`, `${root}/ro/r.txt`, `${root}/.env`]) {
        const spelled = await narrowed.call('read_file', { path: p });
        expect(spelled).toEqual(await narrowed.call('read_file', { path: dotted(p) }));
        outputs.push(JSON.stringify(spelled));
      }
    } finally {
      await narrowed.close();
    }
  });

  it('never returns outside content nor names an outside path', () => {
    expect(outputs.length).toBeGreaterThan(100);
    for (const o of outputs) {
      expect(o).not.toContain(OUTSIDE);
      expect(o).not.toContain(outside.dir);
    }
  });
});
