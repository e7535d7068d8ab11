/**
 * The tools/list entries the build embeds (scripts/advertised-tools.mjs, src/server/tool-schemas.ts) are the ones
 * src/ generates from the tools' zod schemas, byte for byte: the built program answers `tools --json` (the same
 * entries as tools/list, test/e2e/cli.test.ts) with exactly the text of `advertise` run here on src/, where no entry is
 * embedded. And the program does answer from the embedded entries: it carries every tool's, and `tools --json` runs
 * none of zod's JSON Schema generation (what the embedding is for: docs/benchmarks.md "Server start-up").
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { advertise } from '../../src/server/tool-schemas.js';
import { TOOLS } from '../../src/tools/registry.js';
import { CLI, PROGRAM } from '../helpers/server.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-advertised-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the advertised entries embedded in dist/main.js', () => {
  it('are the bytes src/ generates from the zod schemas', () => {
    const r = spawnSync(process.execPath, [CLI, '--root', dir, 'tools', '--json'], { cwd: dir, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${JSON.stringify(TOOLS.map(advertise), null, 2)}\n`);
  });

  it('are embedded for every tool, and tools --json generates none at run time', () => {
    const program = readFileSync(PROGRAM, 'utf8');
    const table = /builtEntries \?\?= JSON\.parse\(("(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`)\)/.exec(program);
    expect(table, 'dist/main.js parses an embedded table').not.toBeNull();
    for (const tool of TOOLS) expect(table![1]).toContain(`"name":"${tool.name}"`);
    // zod's JSON Schema generator, wrapped so that any call of it fails the process: a `tools --json` that generated
    // an entry instead of taking the embedded one would exit non-zero.
    const marker = 'function toJSONSchema(';
    expect(program).toContain(marker);
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        [
          "const fs = require('node:fs'); const { Script } = require('node:vm'); const { createRequire } = require('node:module');",
          `const text = fs.readFileSync(${JSON.stringify(PROGRAM)}, 'utf8').replace(${JSON.stringify(marker)}, 'function toJSONSchema() { process.exit(7); } function unusedToJSONSchema(');`,
          `const url = ${JSON.stringify(`file://${PROGRAM}`)};`,
          `process.argv = [process.argv[0], ${JSON.stringify(PROGRAM)}, '--root', ${JSON.stringify(dir)}, 'tools', '--json'];`,
          'new Script(text, { filename: url }).runInThisContext()(createRequire(url), url);',
        ].join('\n'),
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(TOOLS.length);
  });
});
