/**
 * Review attack on links as copy_path / move_path destinations (docs/tools.md "Links as destinations"), through the
 * real server: `overwrite: true` onto a link whose target lies outside the roots replaced the link, and its undo was
 * then refused ("would point outside the roots; it is not recreated") — for a move, the whole revert, so the moved
 * file could not be put back either: a mutation reported done whose undo was lost. Now both tools refuse it up front
 * (NOT_ALLOWED link_target_outside), the link, its outside target and the source unchanged; a link to an inside
 * file is still replaced and undone.
 */
import { lstatSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

let client: TestClient;
let R = '';
let O = '';
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  const r = makeTree();
  const o = makeTree();
  const s = makeTree({}, 'fs-tools-state-');
  cleanups.push(r.cleanup, o.cleanup, s.cleanup);
  R = r.dir;
  O = o.dir;
  writeFileSync(path.join(O, 'out.txt'), 'OUT');
  client = await connect('modern', { args: ['--state-dir', s.dir, R] });
});
afterAll(async () => {
  const stderr = client?.stderr() ?? '';
  await client?.close();
  for (const c of cleanups) c();
  expect(stderr).not.toMatch(/INTERNAL|incident/);
});

describe.each(['copy_path', 'move_path'])('%s with overwrite onto a link to outside the roots', (tool) => {
  it('is refused up front: link_target_outside, nothing changed inside or outside', async () => {
    const src = path.join(R, `${tool}-src.txt`);
    const ln = path.join(R, `${tool}-ln`);
    writeFileSync(src, 'SRC');
    symlinkSync(path.join(O, 'out.txt'), ln);
    const before = snapshotTree(R, { withMtime: true });
    const outside = snapshotTree(O, { withMtime: true });
    const e = expectCode(
      await client.call(tool, { source: src, destination: ln, overwrite: true }),
      'NOT_ALLOWED',
    ).error;
    expect(e.details.reason).toBe('link_target_outside');
    expect(e.path).toBe(ln);
    expect(JSON.stringify(e)).not.toContain(O);
    expect(snapshotTree(R, { withMtime: true })).toEqual(before);
    expect(snapshotTree(O, { withMtime: true })).toEqual(outside);
    expect(lstatSync(ln).isSymbolicLink()).toBe(true);
    expect(readFileSync(src, 'utf8')).toBe('SRC');
  });

  it('a link to an inside file is still replaced, and revert_changes puts the link back', async () => {
    const src = path.join(R, `${tool}-src2.txt`);
    const ln = path.join(R, `${tool}-ln2`);
    writeFileSync(src, 'SRC2');
    writeFileSync(path.join(R, `${tool}-target.txt`), 'T');
    symlinkSync(`${tool}-target.txt`, ln);
    const r = await client.callOk(tool, { source: src, destination: ln, overwrite: true });
    expect(r.overwritten).toBe(true);
    expect(readFileSync(ln, 'utf8')).toBe('SRC2');
    await client.callOk('revert_changes', { last: 1 });
    expect(readlinkSync(ln)).toBe(`${tool}-target.txt`);
    expect(readFileSync(path.join(R, `${tool}-target.txt`), 'utf8')).toBe('T');
    expect(readFileSync(src, 'utf8')).toBe('SRC2');
  });
});
