/**
 * Issue #14, "no silent gaps": what a walk cannot reach is counted as skipped with its reason, never just missing.
 * - A directory nested below PATH_MAX (its absolute path is longer than the OS accepts: ENAMETOOLONG) is walked
 *   through directory descriptors (src/fs/verified-dir.ts), so listings and glob search reach it; a file there that
 *   content search cannot open by a provable path is counted as skipped (unreadable or name_too_long), never missing.
 * - A directory below search's depth limit (64) is skipped.too_deep (list_directory's depth is the caller's own
 *   request, so it reports nothing there).
 * Both eras.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, ERAS, type Era, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ long: {}, deep: {} }, 'fs-tools-gaps-');
const LONG = path.join(scratch.dir, 'long');
const DEEP = path.join(scratch.dir, 'deep');
const segment = 'n'.repeat(250);

beforeAll(() => {
  // Built with relative cd's (bash), which work below PATH_MAX where absolute paths do not: 20 × 251 > 4096.
  execFileSync('bash', [
    '-c',
    `cd "${LONG}" && echo needle > top.txt && for i in $(seq 20); do mkdir ${segment} && cd ${segment}; done && echo needle > bottom.txt`,
  ]);
  execFileSync('bash', [
    '-c',
    `cd "${DEEP}" && for i in $(seq 70); do mkdir d && cd d; done && echo needle > bottom.txt`,
  ]);
});
// rm -rf removes what is below PATH_MAX (it works relative to directory descriptors).
afterAll(() => {
  execFileSync('rm', ['-rf', scratch.dir]);
});

describe.each(ERAS)('walk gaps are counted (%s era)', (era: Era) => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connect(era, { args: [scratch.dir] });
  });
  afterAll(async () => {
    await client.close();
  });

  it('search_files below PATH_MAX: glob reaches the file; content search counts what it cannot open, and says so', async () => {
    const r = await client.call('search_files', { path: LONG, query: 'needle' });
    const s = r.structuredContent as Record<string, any>;
    expect(s.matches.map((m: { path: string }) => m.path)).toEqual(['top.txt']);
    expect((s.skipped.unreadable ?? 0) + (s.skipped.name_too_long ?? 0)).toBe(1);
    expect(r.content.map((c) => c.text).join('\n')).toMatch(/1 (unreadable|name_too_long)/);
    const g = await client.callOk('search_files', { path: LONG, glob: '**/*.txt' });
    expect(g.files).toEqual([`${Array(20).fill(segment).join('/')}/bottom.txt`, 'top.txt']);
    // Issue #15: skip reasons appear only above 0, `skipped` not at all when nothing was skipped.
    expect(g).not.toHaveProperty('skipped');
  });

  it('list_directory below PATH_MAX: every level is listed, nothing skipped', async () => {
    const s = await client.callOk('list_directory', { path: LONG, depth: 20 });
    expect(s.skipped).toEqual({ unreadable: 0, name_too_long: 0 });
    expect(s.entries.length).toBe(21); // top.txt and the 20 directories (depth 20 is the most a listing goes)
  });

  it('search_files: a directory below the depth limit is skipped.too_deep', async () => {
    const r = await client.call('search_files', { path: DEEP, query: 'needle' });
    const s = r.structuredContent as Record<string, any>;
    expect(s.matches).toEqual([]);
    expect(s.skipped.too_deep).toBe(1);
    expect(r.content.map((c) => c.text).join('\n')).toContain('1 too_deep');
    // list_directory reports nothing for the depth it was asked for.
    const l = await client.callOk('list_directory', { path: DEEP, depth: 3 });
    expect(l.entries).toEqual(['d/', 'd/d/', 'd/d/d/']); // plain directories: path and / (issue #15)
    expect(l.skipped).toEqual({ unreadable: 0, name_too_long: 0 });
  });
});
