/**
 * The native addon's build (scripts/build-native.mjs, run by scripts/bundle.mjs; issue #19). Pins:
 * - with a C compiler it writes fs_tools_native.node into the given directory, and the loader accepts it;
 * - without one (CC names a missing program) the build still succeeds, says why in one line, and writes nothing —
 *   the server then reads with its JavaScript path;
 * - the binary is never committed (.gitignore covers dist/), and the package ships it (package.json "files").
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNativeAddon } from '../../src/fs/native-load.js';
import { loadKernelWallAddon } from '../../src/fs/kernel-wall.js';
import { fileSha256 } from '../helpers/worker-code.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = path.join(ROOT, 'scripts/build-native.mjs');
const work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-native-build-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const hasCompiler = spawnSync('cc', ['--version']).status === 0;

describe('scripts/build-native.mjs', () => {
  it.runIf(hasCompiler)('compiles the addon where a compiler exists, and it loads', () => {
    const out = path.join(work, 'with');
    const r = spawnSync(process.execPath, [SCRIPT, out], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(out).sort()).toEqual([
      'fs_tools_landlock.node',
      'fs_tools_landlock_exec',
      'fs_tools_native.node',
    ]); // no temporary left
    const built = pathToFileURL(path.join(out, 'fs_tools_native.node'));
    expect(loadNativeAddon(built, fileSha256(built)).loaded).not.toBeNull();
    const wall = pathToFileURL(path.join(out, 'fs_tools_landlock.node'));
    expect(typeof loadKernelWallAddon(wall, fileSha256(wall))).toBe('object');
  });

  it('without a compiler: exits 0, says why in one line per addon, writes nothing', () => {
    const out = path.join(work, 'without');
    const r = spawnSync(process.execPath, [SCRIPT, out], {
      encoding: 'utf8',
      env: { ...process.env, CC: path.join(work, 'no-such-cc') },
    });
    expect(r.status).toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(2);
    expect(r.stderr).toMatch(/kernel-wall addon not built .*without the wall/);
    expect(r.stderr).toMatch(/native reads not built .*JavaScript path/);
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });

  it('the binary is shipped, never committed', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('dist/native/*/fs_tools_native.node');
    expect(pkg.files).toContain('dist/native/*/fs_tools_landlock.node');
    expect(readFileSync(path.join(ROOT, '.gitignore'), 'utf8').split('\n')).toContain('dist/');
    const tracked = spawnSync('git', ['ls-files', '*.node'], { cwd: ROOT, encoding: 'utf8' });
    expect(tracked.stdout).toBe('');
  });
});
