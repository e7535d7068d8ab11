/**
 * read_file of a path spelled as its real path is authorized without resolving it (src/policy/authorize.ts
 * `authorizeSpelledFile`): the open's proof that the descriptor is at that path stands in for the realpath, and any
 * failure of that open sends the call through the full resolution. Pins, against the real server:
 * - every kind of path answers exactly as the same path spelled with a `/./` (which the shortcut never takes): a plain
 *   file, a link on the way inside the roots (read, `path` the real one), a link on the way out of the roots, a final
 *   link in and out, a dangling link, a FIFO, a directory, a secret, a missing file, a missing directory on the way;
 * - a directory swapped for a link between two reads of the same spelling (the parent held open by the first read):
 *   a link out of the roots is NOT_ALLOWED and no outside byte is returned; a link inside reads the file it leads to,
 *   with its real path; swapped back, the plain file is read again;
 * - no output holds the outside content.
 */
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type CallResult, type TestClient } from '../helpers/server.js';
import { fifo, makeTree, symlink } from '../helpers/tree.js';

const OUTSIDE = 'OUTSIDE_CONTENT';

describe('read_file of a path spelled as its real path', () => {
  const outside = makeTree({
    'x.txt': `${OUTSIDE} x\n`,
    sub: { 'y.txt': `${OUTSIDE} y\n`, 'f.txt': `${OUTSIDE} f\n` },
  });
  const tree = makeTree({
    'a.txt': 'hello\n',
    '.env': 'API_KEY=1\n',
    dir: { 'inner.txt': 'inner\n', sub: { 'deep.txt': 'deep\n' } },
    other: { 'f.txt': 'other f\n' },
    swap: { 'f.txt': 'swap f\n' },
    'link-in': symlink('a.txt'),
    'link-dir': symlink('dir'),
    'link-out': symlink(path.join(outside.dir, 'x.txt')),
    'link-out-dir': symlink(path.join(outside.dir, 'sub')),
    dangling: symlink('no-such-file'),
    pipe: fifo(),
  });
  const root = realpathSync(tree.dir);
  const stateDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-state-')));
  const outputs: string[] = [];
  let client: TestClient;

  const read = async (p: string): Promise<CallResult> => {
    const r = await client.call('read_file', { path: p });
    outputs.push(JSON.stringify(r));
    return r;
  };

  beforeAll(async () => {
    client = await connect('legacy', { args: ['--state-dir', stateDir, root] });
  });
  afterAll(async () => {
    await client?.close();
    tree.cleanup();
    outside.cleanup();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it.each([
    'a.txt',
    'dir/inner.txt',
    'dir/sub/deep.txt',
    'link-dir/inner.txt',
    'link-dir/sub/deep.txt',
    'link-out-dir/y.txt',
    'link-in',
    'link-out',
    'dangling',
    'pipe',
    'dir',
    '.env',
    'missing.txt',
    'missing/x.txt',
  ])('%s answers as the same path spelled with /./', async (name) => {
    const spelled = await read(`${root}/${name}`);
    const dotted = await read(`${root}/./${name}`);
    expect(spelled).toEqual(dotted);
  });

  it('a directory swapped for a link between reads of the same spelling', async () => {
    const file = `${root}/swap/f.txt`;
    expect((await read(file)).structuredContent).toMatchObject({ content: 'swap f\n' });
    // Out of the roots: refused, nothing outside returned.
    renameSync(`${root}/swap`, `${root}/swap-real`);
    symlinkSync(path.join(outside.dir, 'sub'), `${root}/swap`);
    const out = await read(file);
    expect(out.isError).toBe(true);
    expect(JSON.parse(out.content[0].text!).error).toMatchObject({ code: 'NOT_ALLOWED' });
    // Inside the roots: the file the link leads to, with its real path.
    rmSync(`${root}/swap`);
    symlinkSync(`${root}/other`, `${root}/swap`);
    const viaLink = await read(file);
    expect(viaLink.structuredContent).toMatchObject({ content: 'other f\n', path: `${root}/other/f.txt` });
    // Back to a directory: the plain file again, no `path`.
    rmSync(`${root}/swap`);
    mkdirSync(`${root}/swap`);
    writeFileSync(`${root}/swap/f.txt`, 'new f\n');
    const back = await read(file);
    expect(back.structuredContent).toMatchObject({ content: 'new f\n' });
    expect(back.structuredContent).not.toHaveProperty('path');
  });

  it('never returns outside content', () => {
    expect(outputs.length).toBeGreaterThan(20);
    for (const o of outputs) expect(o).not.toContain(OUTSIDE);
  });
});
