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
 *   - `--test-seams=copy-delay:MS`: a pause of MS before each entry copy_path copies (a copy that takes a while).
 */
import { armKillPoint } from '../patch/transaction.js';
import { delayCopy, failCopyAt, setCopyFault } from '../mutation/copy-write.js';

/**
 * Arms the seam `argv[0]` names, if it names one.
 * @param argv the server's arguments (without node and the script)
 * @returns argv without the seam argument (unchanged when the first argument is not a seam)
 */
export function takeTestSeams(argv: string[]): string[] {
  const seam = /^--test-seams=(?:kill-at:(\d{1,6})|copy-fault:(.+)|copy-delay:(\d{1,5}))$/s.exec(argv[0] ?? '');
  if (!seam) return argv;
  if (seam[1] !== undefined) armKillPoint(Number(seam[1]));
  else if (seam[3] !== undefined) setCopyFault(delayCopy(Number(seam[3])));
  else setCopyFault(failCopyAt(seam[2]));
  return argv.slice(1);
}
