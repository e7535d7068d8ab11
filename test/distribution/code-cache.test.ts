/**
 * The start-up code cache (scripts/code-cache.mjs; docs/security.md "The server's own code and token files"). V8
 * checks a cache only against its source's length, so dist/cli.js uses dist/main.code-cache only when the sha256 of
 * both dist/main.js and the cache are the ones the build recorded, on the Node that made it, and not under
 * NODE_V8_COVERAGE. Watched from inside (a `--require` preload that logs each `vm.Script` with whether it got cached
 * data and whether V8 took it), on copies of dist/ with one thing changed each time:
 *  - the build as made: the program is compiled with the cache and V8 takes it;
 *  - the cache's bytes changed (same length), the program's bytes changed (same length, a key of read_file's result
 *    renamed), the recorded Node version changed, NODE_V8_COVERAGE set: no cached data is handed to V8, and the call
 *    runs the program's text as it is on disk (the renamed key is printed: no stale cached code ran);
 *  - no cache file: a plain compile, the same result.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const DIST = path.dirname(CLI);
const ROOT_OF_DIST = path.dirname(DIST);

/** Logs each vm.Script compiled in this process (main thread) as one JSON line to $SCRIPT_LOG. */
const PRELOAD = `
const fs = require('node:fs');
const Module = require('node:module');
const vm = require('node:vm');
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(code, options) {
    super(code, options);
    fs.appendFileSync(process.env.SCRIPT_LOG, JSON.stringify({
      filename: options && options.filename, cached: Boolean(options && options.cachedData), rejected: this.cachedDataRejected,
    }) + '\\n');
  }
};
Module.syncBuiltinESMExports();
`;

let work: string;
let preload: string;
const tree = makeTree({ 'a.txt': 'one\ntwo\n' }, 'fs-tools-code-cache-root-');

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-code-cache-'));
  preload = path.join(work, 'preload.cjs');
  writeFileSync(preload, PRELOAD);
});
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
  tree.cleanup();
});

/** A copy of dist/ (and package.json beside it, which the program reads its version from), changed by `change`. */
function copyOfDist(name: string, change: (dist: string) => void): string {
  const top = path.join(work, name);
  cpSync(DIST, path.join(top, 'dist'), { recursive: true });
  cpSync(path.join(ROOT_OF_DIST, 'package.json'), path.join(top, 'package.json'));
  change(path.join(top, 'dist'));
  return path.join(top, 'dist', 'cli.js');
}

/** One `call read_file` through `cli`; its parsed result and the scripts the process compiled. */
function call(cli: string, env: Record<string, string> = {}) {
  const log = path.join(work, `scripts-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(log, '');
  const state = mkdtempSync(path.join(work, 'state-'));
  const base = { ...process.env };
  delete base.NODE_V8_COVERAGE;
  const r = spawnSync(
    process.execPath,
    [
      '--require',
      preload,
      cli,
      tree.dir,
      '--state-dir',
      state,
      '--sandbox=off',
      'call',
      'read_file',
      JSON.stringify({ path: path.join(tree.dir, 'a.txt') }),
    ],
    { encoding: 'utf8', env: { ...base, SCRIPT_LOG: log, ...env }, timeout: 60_000 },
  );
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const scripts = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { filename: string; cached: boolean; rejected: boolean | undefined });
  return { result: JSON.parse(r.stdout) as Record<string, unknown>, scripts };
}

/** `bytes` with the byte at `at` changed (same length). */
function flipByte(file: string, at: (bytes: Buffer) => number): void {
  const bytes = readFileSync(file);
  const i = at(bytes);
  bytes[i] ^= 0x01;
  writeFileSync(file, bytes);
}

describe('the code cache of dist/main.js', () => {
  it('is used as built: one script, dist/main.js, compiled with the cache, which V8 takes', () => {
    const { result, scripts } = call(CLI);
    expect(result.total_lines).toBe(2);
    expect(scripts).toEqual([{ filename: `file://${DIST}/main.js`, cached: true, rejected: false }]);
  });

  it("is not used when the cache's bytes differ from the recorded digest (same length)", () => {
    const cli = copyOfDist('cache-changed', (dist) =>
      flipByte(path.join(dist, 'main.code-cache'), (b) => b.length >> 1),
    );
    const { result, scripts } = call(cli);
    expect(result.total_lines).toBe(2);
    expect(scripts).toHaveLength(1);
    expect(scripts[0].cached).toBe(false);
  });

  it("is not used when the program's bytes differ from the recorded digest: the text on disk runs", () => {
    // The same length, so V8's own check (the source's length) would take the cache and run the built code.
    const cli = copyOfDist('program-changed', (dist) => {
      const file = path.join(dist, 'main.js');
      const text = readFileSync(file, 'utf8');
      expect(text).toContain('total_lines');
      writeFileSync(file, text.replaceAll('total_lines', 'TOTAL_LINES'));
    });
    const { result, scripts } = call(cli);
    expect(result.TOTAL_LINES).toBe(2);
    expect(result).not.toHaveProperty('total_lines');
    expect(scripts).toHaveLength(1);
    expect(scripts[0].cached).toBe(false);
  });

  it('is not read on another Node version than the one that made it', () => {
    const cli = copyOfDist('other-node', (dist) => {
      const file = path.join(dist, 'cli.js');
      const text = readFileSync(file, 'utf8');
      expect(text).toContain(`"node":"${process.version}"`);
      writeFileSync(file, text.replace(`"node":"${process.version}"`, '"node":"v0.0.0"'));
    });
    const { scripts } = call(cli);
    expect(scripts.map((s) => s.cached)).toEqual([false]);
  });

  it('is not used under NODE_V8_COVERAGE (cached code has no block counters)', () => {
    const coverage = mkdtempSync(path.join(work, 'coverage-'));
    const { scripts } = call(CLI, { NODE_V8_COVERAGE: coverage });
    expect(scripts.map((s) => s.cached)).toEqual([false]);
  });

  it('is optional: without the file the program compiles plainly, with the same result', () => {
    const cli = copyOfDist('no-cache', (dist) => rmSync(path.join(dist, 'main.code-cache')));
    const plain = call(cli);
    expect(plain.scripts.map((s) => s.cached)).toEqual([false]);
    expect(plain.result).toEqual(call(CLI).result);
  });
});
