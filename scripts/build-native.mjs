#!/usr/bin/env node
/**
 * Compiles the content-search addon (native/fs_tools_native.c, issue #19) into
 * dist/native/<platform>-<arch>/fs_tools_native.node with the system C compiler and Node's own headers (node_api.h
 * only: the binary is ABI-stable across Node versions). Run by scripts/bundle.mjs, so `npm run build` and a checkout's
 * `npm install` build it; the published tarball ships the binary (package.json "files"), so installing from the
 * registry needs no compiler.
 *
 * Never fails the build: without a compiler (`cc`, or $CC) or the headers, or off Linux, it says so in one line on
 * stderr and leaves the addon out — the server then reads with its JavaScript path. Nothing is downloaded (no
 * node-gyp). The binary is written beside its final name and renamed in, so a running server never loads half a file.
 *
 * Usage: node scripts/build-native.mjs [OUT_DIR]   (default: dist/native/<platform>-<arch>)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = path.join(root, 'native/fs_tools_native.c');
const outDir = process.argv[2] ?? path.join(root, 'dist/native', `${process.platform}-${process.arch}`);
const target = path.join(outDir, 'fs_tools_native.node');

/** Where node_api.h is: next to this Node (its install prefix), then the distribution's package. */
function headerDir() {
  const candidates = [
    path.join(path.dirname(path.dirname(process.execPath)), 'include/node'),
    '/usr/include/node',
    '/usr/local/include/node',
  ];
  return candidates.find((d) => existsSync(path.join(d, 'node_api.h'))) ?? null;
}

function skip(reason) {
  process.stderr.write(`fs-tools: native reads not built (${reason}); content search uses its JavaScript path\n`);
  process.exit(0);
}

if (process.platform !== 'linux') skip(`${process.platform} is not Linux`);
if (!existsSync(source)) skip('no native/ sources');
const include = headerDir();
if (!include) skip('node_api.h not found');
const cc = process.env.CC || 'cc';
mkdirSync(outDir, { recursive: true });

/**
 * Compiles one addon (one source file or several) into `out` (beside its final name, then renamed in). Returns null,
 * or why it was not built.
 * @param {string | string[]} src @param {string} out @param {string[]} libs
 */
function compile(src, out, libs = [], kind = 'shared') {
  const temporary = `${out}.tmp-${process.pid}`;
  const compiled = spawnSync(
    cc,
    [
      '-O2',
      '-std=c11',
      '-Wall',
      '-Wextra',
      '-Werror',
      ...(kind === 'shared' ? ['-fPIC', '-shared', '-fvisibility=hidden'] : ['-fPIE', '-pie']),
      '-D_FORTIFY_SOURCE=2',
      '-fstack-protector-strong',
      `-I${include}`,
      '-o',
      temporary,
      ...(Array.isArray(src) ? src : [src]),
      ...libs,
    ],
    { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' },
  );
  if (compiled.error || compiled.status !== 0) {
    rmSync(temporary, { force: true });
    if (compiled.error) return `${cc}: ${compiled.error.code ?? compiled.error.message}`;
    process.stderr.write(compiled.stderr ?? '');
    return `${cc} failed`;
  }
  renameSync(temporary, out);
  return null;
}

// The kernel wall's addon (native/fs_tools_landlock.c, docs/security.md "The kernel wall"): built first and on its
// own, so that a failure of one addon leaves the other.
// Its spawn (native/fs_tools_spawn.c) starts git without forking the server. Never unloaded (-z nodelete): a thread
// of its spawn may still wait for a child when the environment that loaded it (a worker thread) ends and Node closes
// the library, and would run code no longer mapped.
const wall = compile(
  [path.join(root, 'native/fs_tools_landlock.c'), path.join(root, 'native/fs_tools_spawn.c')],
  path.join(outDir, 'fs_tools_landlock.node'),
  ['-lpthread', '-Wl,-z,nodelete'],
);
if (wall) process.stderr.write(`fs-tools: kernel-wall addon not built (${wall}); the server runs without the wall\n`);
// Its exec helper: git runs through it, under a narrower layer (no forge configuration, no token directories).
const helper = wall ?? compile(path.join(root, 'native/fs_tools_landlock_exec.c'), path.join(outDir, 'fs_tools_landlock_exec'), [], 'executable');
if (helper && !wall) process.stderr.write(`fs-tools: kernel-wall exec helper not built (${helper}); git runs in the server's own wall\n`);
const reads = compile(
  [
    source,
    path.join(root, 'native/fs_tools_native_stat.c'),
    path.join(root, 'native/fs_tools_native_summary.c'),
    path.join(root, 'native/fs_tools_watch.c'),
  ],
  target,
);
if (reads) skip(reads);
