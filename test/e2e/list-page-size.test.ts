/**
 * list_directory's page sizes (issue #19), through a real server over stdio. Pins:
 *  - a names-and-types listing answers up to 10,000 entries in one page (a 1,500-entry directory in one call), with
 *    the text naming every entry once, in the same order;
 *  - a `long` listing's page defaults to 1,000 entries, and `max_entries` raises it up to the 10,000 most;
 *  - `--max-list-entries=N` is the most entries per page in both modes and the default of both when smaller.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';
import { entryPath } from '../helpers/entries.js';

const COUNT = 1500;
const names = Array.from({ length: COUNT }, (_, i) => `f${String(i).padStart(4, '0')}.txt`);

describe('list_directory page sizes', () => {
  const tree = makeTree({ wide: {} }, 'fs-tools-pages-');
  const wide = path.join(tree.dir, 'wide');
  const stateDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-state-')));
  let client: TestClient;
  let capped: TestClient;

  beforeAll(async () => {
    for (const n of names) writeFileSync(path.join(wide, n), '');
    [client, capped] = await Promise.all([
      connect('modern', { args: ['--state-dir', stateDir, tree.dir] }),
      connect('modern', { args: ['--state-dir', stateDir, '--max-list-entries=100', tree.dir] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([client?.close(), capped?.close()]);
    tree.cleanup();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('names and types: the whole directory in one page, the text naming each entry once', async () => {
    const r = await client.call('list_directory', { path: 'wide' });
    expect(r.isError).toBeFalsy();
    const s = r.structuredContent!;
    expect(s.entries).toEqual(names);
    expect(s.truncated).toBe(false);
    expect(s.next_cursor).toBeNull();
    expect(r.content[0].text!.split('\n')).toEqual(names);
  });

  it('long: 1,000 entries a page by default, up to 10,000 with max_entries', async () => {
    const first = await client.callOk('list_directory', { path: 'wide', long: true });
    expect(first.entries.map(entryPath)).toEqual(names.slice(0, 1000));
    expect(first.truncated).toBe(true);
    const rest = await client.callOk('list_directory', { path: 'wide', long: true, cursor: first.next_cursor });
    expect(rest.entries.map(entryPath)).toEqual(names.slice(1000));
    expect(rest.next_cursor).toBeNull();
    const all = await client.callOk('list_directory', { path: 'wide', long: true, max_entries: 20_000 });
    expect(all.entries.map(entryPath)).toEqual(names);
    const some = await client.callOk('list_directory', { path: 'wide', max_entries: 7 });
    expect(some.entries).toEqual(names.slice(0, 7));
  });

  it.each([
    ['names and types', {}],
    ['long', { long: true }],
    ['max_entries above the flag', { max_entries: 5000 }],
  ])('--max-list-entries=100 caps every page (%s)', async (_label, args) => {
    const s = await capped.callOk('list_directory', { path: 'wide', ...args });
    expect(s.entries.map(entryPath)).toEqual(names.slice(0, 100));
    expect(s.truncated).toBe(true);
  });
});
