/**
 * The test seams a test build of the server takes from its first argument. Only builds with the build-time constant
 * FS_TOOLS_TEST_SEAMS set to true call this (`node scripts/bundle.mjs --test-seams` writes such a build to
 * dist-seams/, never published); the product bundle folds the call away, so dist/cli.js carries neither this module
 * nor the flag, and refuses it as an unknown option (docs/development.md, the test builds).
 *
 * The seams, only as the first argument:
 *   - `--test-seams=kill-at:N`: SIGKILL at the N-th durable step of a multi-file transaction (src/patch/transaction.ts;
 *     the crash tests);
 *   - `--test-seams=copy-fault:ENTRY`: an EACCES before copy_path copies ENTRY (src/mutation/copy-write.ts);
 *   - `--test-seams=copy-delay:MS`: a pause of MS before each entry copy_path copies (a copy that takes a while);
 *   - `--test-seams=lock-stale:MS`: locks not refreshed for MS are stale instead of 10 s (src/fs/path-lock.ts; the
 *     tests of what happens after the stale time);
 *   - `--test-seams=shutdown-grace:MS`: the graceful shutdown gives the calls in flight MS instead of 10 s
 *     (src/server/shutdown.ts; the tests of a call cut off at the end of the grace).
 */
import { armKillPoint } from '../patch/transaction.js';
import { delayCopy, failCopyAt, setCopyFault } from '../mutation/copy-write.js';
import { setLockStaleMs } from '../fs/path-lock.js';
import { setShutdownGrace } from '../server/shutdown.js';

/**
 * Arms the seam `argv[0]` names, if it names one.
 * @param argv the server's arguments (without node and the script)
 * @returns argv without the seam argument (unchanged when the first argument is not a seam)
 */
export function takeTestSeams(argv: string[]): string[] {
  const seam =
    /^--test-seams=(?:kill-at:(\d{1,6})|copy-fault:(.+)|copy-delay:(\d{1,5})|lock-stale:(\d{1,5})|shutdown-grace:(\d{1,5}))$/s.exec(
      argv[0] ?? '',
    );
  if (!seam) return argv;
  if (seam[1] !== undefined) armKillPoint(Number(seam[1]));
  else if (seam[3] !== undefined) setCopyFault(delayCopy(Number(seam[3])));
  else if (seam[4] !== undefined) setLockStaleMs(Number(seam[4]));
  else if (seam[5] !== undefined) setShutdownGrace(Number(seam[5]));
  else setCopyFault(failCopyAt(seam[2]));
  return argv.slice(1);
}
