/**
 * The start-up code cache file (dist/main.code-cache) is optional, so whatever stands at its name must end in a
 * plain compile of the program, never in a start-up that waits or reads without bound (docs/security.md "The
 * server's own code and token files"). Where the package lies inside a root, copy_path copies a symbolic link whose
 * target is inside the roots as a link, so the agent can put a link to a FIFO in a root at the cache's name (tried
 * through the server); another process can put a FIFO or a link to a device there. Before the loader checked what it opened, a FIFO there hung every start for ever (and a link
 * to /dev/zero read 4 GB before failing). Each case runs a copy of dist/ with a one-shot `call read_file` and a
 * deadline: the call answers, and no cached data is handed to V8.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const DIST = path.dirname(CLI);

/** Logs each vm.Script compiled in the main thread (whether it got cached data) as one JSON line to $SCRIPT_LOG. */
const PRELOAD = `
const fs = require('node:fs');
const Module = require('node:module');
const vm = require('node:vm');
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(code, options) {
    super(code, options);
    fs.appendFileSync(process.env.SCRIPT_LOG, JSON.stringify({ cached: Boolean(options && options.cachedData) }) + '\\n');
  }
};
Module.syncBuiltinESMExports();
`;

let work: string;
let preload: string;
const tree = makeTree({ 'a.txt': 'one\ntwo\n' }, 'fs-tools-cache-file-root-');

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-cache-file-'));
  preload = path.join(work, 'preload.cjs');
  writeFileSync(preload, PRELOAD);
});
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
  tree.cleanup();
});

/** A copy of dist/ (with package.json beside it) whose cache file `plant` replaced; its cli.js. */
function distWithCache(name: string, plant: (cacheFile: string) => void): string {
  const top = path.join(work, name);
  cpSync(DIST, path.join(top, 'dist'), { recursive: true });
  cpSync(path.join(path.dirname(DIST), 'package.json'), path.join(top, 'package.json'));
  const cacheFile = path.join(top, 'dist', 'main.code-cache');
  rmSync(cacheFile, { force: true });
  plant(cacheFile);
  return path.join(top, 'dist', 'cli.js');
}

/** One `call read_file` through `cli` with a 15 s deadline: its status, stdout and the scripts it compiled. */
function callWithDeadline(cli: string) {
  const log = path.join(work, `scripts-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(log, '');
  const env: NodeJS.ProcessEnv = { ...process.env, SCRIPT_LOG: log };
  delete env.NODE_V8_COVERAGE; // the loader reads no cache under coverage: the attack needs it to try
  const r = spawnSync(
    process.execPath,
    [
      '--require',
      preload,
      cli,
      tree.dir,
      '--state-dir',
      mkdtempSync(path.join(work, 'state-')),
      '--sandbox=off',
      'call',
      'read_file',
      JSON.stringify({ path: path.join(tree.dir, 'a.txt') }),
    ],
    { encoding: 'utf8', env, timeout: 15_000, killSignal: 'SIGKILL' },
  );
  const scripts = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  return { status: r.status, signal: r.signal, stdout: r.stdout, scripts };
}

describe('dist/main.code-cache: whatever stands there, start-up compiles plainly and answers', () => {
  it('a FIFO (nobody writes it): no wait', () => {
    const cli = distWithCache('fifo', (file) => {
      const made = spawnSync('mkfifo', [file]);
      expect(made.status).toBe(0);
    });
    const r = callWithDeadline(cli);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ total_lines: 2 });
    expect(r.scripts).toEqual(['{"cached":false}']);
  });

  it('a symbolic link to /dev/zero: no unbounded read', () => {
    const cli = distWithCache('dev-zero', (file) => symlinkSync('/dev/zero', file));
    const r = callWithDeadline(cli);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.scripts).toEqual(['{"cached":false}']);
  });

  it('a regular file longer than the cache the build recorded: not read, a plain compile', () => {
    const cli = distWithCache('longer', (file) => {
      writeFileSync(file, Buffer.concat([readFileSync(path.join(DIST, 'main.code-cache')), Buffer.alloc(1)]));
    });
    const r = callWithDeadline(cli);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ total_lines: 2 });
    expect(r.scripts).toEqual(['{"cached":false}']);
  });
});
