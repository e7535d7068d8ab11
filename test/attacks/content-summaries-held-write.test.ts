/**
 * Attack on content summaries (native/fs_tools_native_summary.c; docs/security.md "Content summaries"): a write in
 * progress during the read. The kernel sets a file's mtime and ctime once, when a write(2) starts, then copies the
 * bytes; a write whose source pages fault (here: userfaultfd holds the second page) can take any time, and its bytes
 * land with no later stamp. A search that reads the file 2.1 s after such a write started sees the racy window as
 * passed (ctime 2.1 s old), stores a summary of the half-written bytes, and every later search skips the file under
 * the same key — although the write has since completed with the needle. A fresh read (`--native=off`) finds it.
 *
 * Real server over stdio; a C helper built with gcc at test time (skipped without gcc, userfaultfd or the addon):
 * - search 1 remembers the directory; the helper starts one 8 KiB pwrite over `held.txt` (same size) and stops in it;
 * - 2.1 s later search 2 reads page 0 new and page 1 old (no needle) and stores the summary;
 * - the write completes with `needle_uffd` in page 1; the stamp (dev, ino, size, mtime, ctime) is shown unchanged;
 * - search 3 must find the needle, as a server with `--native=off` does.
 *
 * Accepted, as git's stat check and the read cache (src/fs/content-cache.ts) accept it, and documented
 * (docs/security.md "Content summaries", "Not seen"): this test pins that behaviour — the kept summary answers — and
 * that a fresh read finds the needle, so a change of either shows here.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const scratch = makeTree({ root: {} }, 'fs-tools-summary-held-write-');
const ROOT = path.join(scratch.dir, 'root');
afterAll(() => scratch.cleanup());
const HELPER = path.join(scratch.dir, 'uffd-write');
const hasAddon = process.platform === 'linux' && loadBuiltAddon() !== null;
const built =
  hasAddon &&
  (() => {
    writeFileSync(`${HELPER}.c`, helperSource());
    return spawnSync('gcc', ['-O1', '-pthread', '-o', HELPER, `${HELPER}.c`], { stdio: 'ignore' }).status === 0;
  })();
const usable = built && spawnSync(HELPER, ['probe', 'n'], { encoding: 'utf8' }).stdout === 'uffd\n';

function helperSource(): string {
  return String.raw`/* Writes 2 pages over 'target' from offset 0 in ONE write(2) whose second source page is missing (userfaultfd): the
 * kernel updates the target's times when the write starts, copies page 0, then waits for page 1 until stdin says go. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static long page;
static int uffd;
static char *src;
static const char *second;

static void *handler(void *arg) {
  (void)arg;
  struct pollfd p = {uffd, POLLIN, 0};
  if (poll(&p, 1, -1) != 1) exit(3);
  struct uffd_msg msg;
  if (read(uffd, &msg, sizeof msg) != sizeof msg || msg.event != UFFD_EVENT_PAGEFAULT) exit(4);
  printf("fault\n");
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) exit(5);
  char *buf = aligned_alloc(page, page);
  memset(buf, 'b', page);
  for (long i = 63; i < page; i += 64) buf[i] = '\n';
  memcpy(buf, second, strlen(second));
  struct uffdio_copy c = {(unsigned long)(src + page), (unsigned long)buf, page, 0, 0};
  if (ioctl(uffd, UFFDIO_COPY, &c) != 0) exit(6);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  second = argv[2];
  page = sysconf(_SC_PAGESIZE);
  uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
  if (uffd < 0) { printf("nouffd\n"); return 8; }
  struct uffdio_api api = {UFFD_API, 0, 0};
  if (ioctl(uffd, UFFDIO_API, &api) != 0) { printf("nouffd\n"); return 9; }
  if (strcmp(argv[1], "probe") == 0) { printf("uffd\n"); return 0; }
  int fd = open(argv[1], O_WRONLY);
  if (fd < 0) return 7;
  src = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(src, 'a', page);
  for (long i = 63; i < page; i += 64) src[i] = '\n';
  struct uffdio_register r = {{(unsigned long)(src + page), page}, UFFDIO_REGISTER_MODE_MISSING, 0};
  if (ioctl(uffd, UFFDIO_REGISTER, &r) != 0) { printf("nouffd\n"); return 10; }
  pthread_t t;
  pthread_create(&t, NULL, handler, NULL);
  ssize_t n = pwrite(fd, src, 2 * page, 0);
  pthread_join(t, NULL);
  printf("done %zd\n", n);
  return n == 2 * page ? 0 : 11;
}
`;
}

const stampOf = (file: string) =>
  (({ dev, ino, size, mtimeMs, ctimeMs }) => ({ dev, ino, size, mtimeMs, ctimeMs }))(statSync(file, { bigint: true }));

describe.runIf(usable)('a write held in progress across the racy window', () => {
  it('the summary of the half-written bytes answers (accepted); --native=off finds the needle', async () => {
    const file = path.join(ROOT, 'held.txt');
    writeFileSync(file, `${'c'.repeat(63)}\n`.repeat(128)); // 8 KiB: two pages, no needle
    const client = await connect('modern', { args: [ROOT] });
    const writer = spawn(HELPER, [file, 'needle_uffd'], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    const saw = (s: string) =>
      new Promise<void>((resolve) => {
        const check = () => (out.includes(s) ? resolve() : undefined);
        writer.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          check();
        });
        check();
      });
    try {
      const query = { path: ROOT, query: 'needle_uffd' };
      expect((await client.callOk('search_files', query)).files_matched).toBe(0); // remembers the directory
      await saw('fault'); // the write started (its times are now) and waits for its second page
      await new Promise((r) => setTimeout(r, 2100));
      expect((await client.callOk('search_files', query)).files_matched).toBe(0); // reads half-written bytes
      const stamp = stampOf(file);
      writer.stdin.write('go\n');
      await saw('done 8192');
      // Armed: the needle is in the file, the stamp did not move.
      expect(readFileSync(file, 'latin1')).toContain('needle_uffd');
      expect(stampOf(file)).toEqual(stamp);
      const after = await client.callOk('search_files', query);
      const off = await connect('modern', { args: ['--native=off', ROOT] });
      try {
        const fresh = await off.callOk('search_files', query);
        expect(fresh.files_matched).toBe(1);
        expect(after.files_matched).toBe(0); // the accepted gap: the write was stamped when it started
      } finally {
        await off.close();
      }
    } finally {
      writer.kill();
      await client.close();
    }
  }, 60_000);
});
