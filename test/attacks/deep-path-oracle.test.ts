/**
 * Attack on the depth bound of path resolution (docs/security.md "Bounded work"): a link inside a root whose target
 * first goes deeper than MAX_PATH_COMPONENTS inside the root and then climbs out with `..` to an outside path. When the
 * outside path exists the kernel resolves the whole spelling (shallow answer, outside: NOT_ALLOWED); when it does not,
 * the component walk took over and stopped at the bound on a prefix inside the root, answering VALIDATION
 * `path_too_deep` — an existence oracle for paths outside the roots. Both must be the same refusal. Real server over
 * stdio, real files; the outside directory gains nothing.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MAX_PATH_COMPONENTS, pathComponentCount } from '../../src/fs/path-within.js';
import { envelopeOf } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const root = makeTree({}, 'fs-tools-deep-oracle-');
const outside = makeTree({ 'present.txt': 'outside\n' }, 'fs-tools-deep-oracle-out-');
const stateDir = makeTree({}, 'fs-tools-deep-oracle-state-');
/** Levels of the directory chain inside the root: past the bound from the root's depth. */
const LEVELS = MAX_PATH_COMPONENTS + 20;
let client: TestClient;

beforeAll(async () => {
  const chain = Array.from({ length: LEVELS }, () => 'a').join('/');
  expect(spawnSync('mkdir', ['-p', chain], { cwd: root.dir }).status).toBe(0);
  // root/out -> a/…/a/../…/../<outside>: down LEVELS, back up to `/`, then to the outside directory.
  const up = Array.from({ length: LEVELS + pathComponentCount(root.dir) }, () => '..').join('/');
  symlinkSync(`${chain}/${up}${outside.dir}`, path.join(root.dir, 'out'));
  // root/short -> a/…/a (the deepest directory the bound allows), holding `l -> <outside>`: the link is the component
  // past the bound, so the component walk never read it.
  const atCap = Array.from({ length: MAX_PATH_COMPONENTS - pathComponentCount(root.dir) }, () => 'a').join('/');
  symlinkSync(outside.dir, path.join(root.dir, atCap, 'l'));
  symlinkSync(atCap, path.join(root.dir, 'short'));
  client = await connect('modern', { args: ['--state-dir', stateDir.dir, root.dir] });
}, 60_000);

afterAll(async () => {
  await client?.close();
  root.cleanup();
  outside.cleanup();
  stateDir.cleanup();
});

const refusal = async (tool: string, args: Record<string, unknown>) => {
  const e = envelopeOf(await client.call(tool, args)).error;
  return { code: e.code, reason: e.details.reason, path: e.path, message: e.message };
};

it.each([
  ['down past the bound and back up with ..', 'out'],
  ['a link just past the bound', 'short/l'],
])(
  'answers an outside path reached through %s the same whether it exists or not',
  async (_, via) => {
    const present = path.join(root.dir, via, 'present.txt');
    const missing = path.join(root.dir, via, 'missing.txt');
    for (const tool of ['read_file', 'stat']) {
      const a = await refusal(tool, { path: present });
      const b = await refusal(tool, { path: missing });
      expect(a.code).toBe('NOT_ALLOWED');
      expect({ code: b.code, reason: b.reason }).toEqual({ code: a.code, reason: a.reason });
    }
    const w1 = await refusal('write_file', { path: present, content: 'x' });
    const w2 = await refusal('write_file', { path: missing, content: 'x' });
    expect(w1.code).toBe('NOT_ALLOWED');
    expect({ code: w2.code, reason: w2.reason }).toEqual({ code: w1.code, reason: w1.reason });
    expect(readdirSync(outside.dir)).toEqual(['present.txt']);
  },
  60_000,
);
