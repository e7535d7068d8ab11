#!/usr/bin/env node
/**
 * `npm run bench:wall`: what the kernel wall costs (docs/security.md "The kernel wall"). fs-tools with the wall
 * (default flags) against itself with `--sandbox=off`, side by side in one run on one small generated tree:
 *  - start-up: spawn → connected → first tools/call answered, N starts of each, interleaved;
 *  - per call: read_file, list_directory, a content search and git_status, M calls of each on one server of each kind,
 *    interleaved call by call.
 * Prints medians and the ratio wall / off (1.00: no cost). Timing lives here, never in a unit test.
 *
 * Options: --starts N (default 20), --calls M (default 200).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, startServer, timeOnce } from './mcp.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(REPO, 'dist', 'cli.js');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const STARTS = arg('--starts', 20);
const CALLS = arg('--calls', 200);

const work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-bench-wall-'));
const root = path.join(work, 'root');
for (let d = 0; d < 20; d++) {
  mkdirSync(path.join(root, `dir${d}`), { recursive: true });
  for (let f = 0; f < 50; f++) {
    writeFileSync(path.join(root, `dir${d}`, `file${f}.ts`), `export const v${f} = ${d * 100 + f};\n`.repeat(40));
  }
}
execFileSync('git', ['init', '-q'], { cwd: root });
execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@example.com', 'add', '-A'], { cwd: root });
execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@example.com', 'commit', '-qm', 'bench'], { cwd: root });

const flags = { wall: [], off: ['--sandbox=off'] };
const start = (kind) => startServer(`fs-tools ${kind}`, [CLI, ...flags[kind], '--state-dir', path.join(work, `state-${kind}`), root]);

try {
  const startup = { wall: [], off: [] };
  for (let i = 0; i < STARTS; i++) {
    for (const kind of i % 2 ? ['off', 'wall'] : ['wall', 'off']) {
      let server;
      startup[kind].push(
        await timeOnce(async () => {
          server = await start(kind);
          await server.call('list_allowed_directories', {});
        }),
      );
      if (kind === 'wall' && i === 0) {
        const listed = await server.call('list_allowed_directories', {});
        const wall = listed.structuredContent.kernel_wall;
        if (!wall.enforced) throw new Error(`the wall is not enforced here: ${wall.reason}`);
      }
      await server.close();
    }
  }
  const servers = { wall: await start('wall'), off: await start('off') };
  const cases = {
    read_file: () => ({ path: 'dir3/file7.ts' }),
    list_directory: () => ({ path: 'dir5' }),
    search_files: () => ({ query: 'v42 = 542' }),
    git_status: () => ({ path: '.' }),
  };
  const rows = [['start-up (spawn → first answer)', median(startup.wall), median(startup.off)]];
  for (const [tool, args] of Object.entries(cases)) {
    const times = { wall: [], off: [] };
    const n = tool === 'git_status' || tool === 'search_files' ? Math.max(10, CALLS / 10) : CALLS;
    for (let i = 0; i < n; i++) {
      for (const kind of i % 2 ? ['off', 'wall'] : ['wall', 'off']) {
        times[kind].push(await timeOnce(() => servers[kind].call(tool, args())));
      }
    }
    rows.push([tool, median(times.wall), median(times.off)]);
  }
  await servers.wall.close();
  await servers.off.close();
  console.log(`kernel wall cost, ${STARTS} starts and ${CALLS} calls per case (medians, ms)\n`);
  console.log(`${'case'.padEnd(34)} ${'wall'.padStart(9)} ${'off'.padStart(9)} ${'wall/off'.padStart(9)}`);
  for (const [name, wall, off] of rows) {
    console.log(`${name.padEnd(34)} ${wall.toFixed(2).padStart(9)} ${off.toFixed(2).padStart(9)} ${(wall / off).toFixed(2).padStart(9)}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
