/**
 * The kernel wall addon's spawn (native/fs_tools_spawn.c, src/vcs/run-command.ts) loaded straight from the build that
 * the tests' global setup made (dist/native/<platform>-<arch>/fs_tools_landlock.node), for tests that run the
 * subprocess runner in-process both ways. Null off Linux or where the build has no addon (no C compiler): those tests
 * then run Node's path only, as the server would.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { nativeSpawner, type NativeSpawner } from '../../src/vcs/run-command.js';

/** The built addon's path. */
export const WALL_ADDON = path.resolve('dist/native', `${process.platform}-${process.arch}`, 'fs_tools_landlock.node');

/** The addon's spawn functions, or null (not built). */
export function loadNativeSpawner(): NativeSpawner | null {
  if (process.platform !== 'linux' || !existsSync(WALL_ADDON)) return null;
  return nativeSpawner(createRequire(import.meta.url)(WALL_ADDON) as object);
}

/** The starters a runner test runs under: Node's `spawn` (null), then the addon's when built. */
export function starters(): Array<[string, NativeSpawner | null]> {
  const spawner = loadNativeSpawner();
  return spawner
    ? [
        ['Node spawn', null],
        ['the wall addon', spawner],
      ]
    : [['Node spawn', null]];
}
