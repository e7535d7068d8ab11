/**
 * The object stores a view shows git (docs/security.md "What git may read"): the repository's objects directory and
 * every alternate, verified inside the roots, and the private mirror of each that holds links to the verified fan-out
 * directories and pack files only.
 */

import {
  lstatSync,
  mkdirSync,
  opendirSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  type Dir,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { lstatOrNull, realPathInside, repoError, VIEW_CAPS, type Verifier } from './git-verifier.js';
import {
  heldSince,
  rememberHeld,
  rememberListing,
  settled,
  viewCaches,
  type CachedListing,
  type FsTime,
} from './git-view-cache.js';
import { closeDirectory, openVerifiedDirectory, stampOf, stampSubdirs, type DirStamp } from './git-native-stat.js';
import type { Slicer } from './slicer.js';

/** Most alternates git follows (it stops at depth 5 too). */
const MAX_ALTERNATE_DEPTH = 5;

/** Most alternate object directories in all (each is checked on every call). */
const MAX_ALTERNATES = 64;

/**
 * Most pack files (packs, their indexes and reverse indexes) of all verified stores together: each is a link in the
 * view's mirror, built, fingerprinted and read back on every call (`mirrorObjects`, `holdsExactly`, partly in one
 * go), so their number is bounded before any of that. git's own `gc.autoPackLimit` keeps a store near 50 packs.
 */
export const MAX_PACK_FILES = 4096;

/** One verified object directory as git will see it through the view's mirror (`mirrorObjects`). */
export interface ObjectStore {
  /** Real path of the object directory. */
  dir: string;
  /** Its loose-object fan-out directories (`00`…`ff`) and `pack` that exist: name → verified real path. */
  subdirs: Map<string, string>;
  /** The pack files of its `pack` directory git may read (`PACK_FILE`): name → verified real path. */
  packFiles: Map<string, string>;
}

const FANOUT = /^[0-9a-f]{2}$/;

/**
 * The files of a `pack` directory the view passes to git: packs, their indexes and reverse indexes. Nothing else
 * (a `multi-pack-index` names packs by relative paths git does not check for `..`; bitmaps, `.keep` and `.promisor`
 * files are not needed to read objects).
 */
const PACK_FILE = /^pack-(?:[0-9a-f]{40}|[0-9a-f]{64})\.(?:pack|idx|rev)$/;

/** An object-store directory's entries by type (`CachedListing` less its version). */
type StoreListing = Pick<CachedListing, 'links' | 'directories' | 'files'>;

const NO_ENTRIES: StoreListing = { links: [], directories: [], files: [] };

/**
 * The most entries of one object-store directory read synchronously (a fan-out directory of a few hundred loose
 * objects, every `pack` and `info` directory git itself leaves); the rest come through the thread pool STORE_BATCH
 * at a time. Counted in entries, not taken from the directory's st_size: a file system may report any size.
 */
const SYNC_LIST_ENTRIES = 2048;

/** Entries of an object-store directory read per readdir batch (opendir(3)'s buffer). */
const STORE_BATCH = 512;

/**
 * The entries of object-store directory `d` (a verified real path) by type; null when it cannot be listed whole (gone,
 * unreadable: mode 0311 lets git open an entry by name that the server cannot see, or a read failing midway). An
 * unchanged directory (same dev, ino, mtime and ctime, stat taken before the listing) is not listed again
 * (`viewCaches`); the caller verifies each link entry again whatever the listing's age. The first SYNC_LIST_ENTRIES
 * entries are read synchronously: no round trip through the thread pool per directory (a repository whose objects
 * changed in the last 2 s lists all 256 fan-out directories on every call); the rest of a larger directory a batch
 * at a time through the thread pool, each entry sorted between `slicer` checks, so a directory of any size holds the
 * event loop for a batch at most (docs/security.md "Bounded work": one listing of 200,000 entries converted and
 * sorted in one go held it for 100–160 ms, four at once 470–670 ms). `stamp`, when given, is the directory's stamp
 * taken through a held descriptor of its parent (`stampSubdirs`): a kept listing with that stamp is the answer without a
 * stat by path; on a miss the directory is stat'ed and listed by path as without it.
 */
async function listStoreDirectory(
  d: string,
  slicer: Slicer,
  now: FsTime | null,
  stamp?: DirStamp,
): Promise<StoreListing | null> {
  const hit = viewCaches.listings.get(d);
  if (hit && stamp && sameDir(hit, stamp)) return hit;
  let st: Stats;
  try {
    st = statSync(d);
  } catch {
    return null;
  }
  if (hit && !stamp && sameDir(hit, st)) return hit;
  const listing: StoreListing = { links: [], directories: [], files: [] };
  let dir: Dir;
  try {
    dir = opendirSync(d, { bufferSize: STORE_BATCH });
  } catch {
    return null;
  }
  try {
    let read = 0;
    for (;;) {
      const e = read < SYNC_LIST_ENTRIES ? dir.readSync() : await dir.read();
      if (e === null) break;
      read++;
      if (e.isSymbolicLink()) listing.links.push(e.name);
      else if (e.isDirectory()) listing.directories.push(e.name);
      else if (e.isFile()) listing.files.push(e.name);
      const wait = slicer.check();
      if (wait) await wait;
    }
  } catch {
    return null;
  } finally {
    dir.closeSync();
  }
  if (settled(st, now))
    rememberListing(d, { dev: st.dev, ino: st.ino, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ...listing });
  return listing;
}

const sameDir = (a: DirStamp, b: DirStamp): boolean =>
  a.dev === b.dev && a.ino === b.ino && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;

/**
 * Verifies the objects directory and every alternate it names (recursively, as git follows them, each at most once):
 * its entries (fan-out directories, pack, info), every pack file and every loose object that is a link must lead
 * inside the roots (a loose object linked to an outside file would let git's answer tell whether that file exists).
 * Returns each store once, the repository's own first. git never reads these stores' `info/` (alternates,
 * commit-graph): it reads the view's mirror of them (`mirrorObjects`), so an alternates file changed after this check
 * does not reach git.
 * `seen` (real paths of the stores verified so far) and `packCount` (pack files counted so far, and the repository's
 * objects directory the error names) are shared by the whole recursion: the pack-file cap trips at the first file
 * past it, across the repository and every alternate, not after each of up to MAX_ALTERNATES stores has been listed
 * and verified whole (64 stores of 4,096 linked pack files each were all verified, seconds of work per call, before
 * the total was checked).
 * @throws ToolError NOT_ALLOWED (a link or alternate outside the roots), SECRET_DENIED, unsupported_repository
 *   (alternates too deep or too many, a quoted alternate path, more than MAX_PACK_FILES pack files in all)
 */
export async function verifyObjects(
  objectsDir: string,
  verify: Verifier,
  slicer: Slicer,
  now: FsTime | null,
  depth = 0,
  seen = new Set<string>([objectsDir]),
  packCount = { files: 0, objectsDir },
): Promise<ObjectStore[]> {
  const store: ObjectStore = { dir: objectsDir, subdirs: new Map(), packFiles: new Map() };
  const fd = openVerifiedDirectory(objectsDir);
  try {
    await verifyStore(store, fd, verify, slicer, now, packCount);
  } finally {
    closeDirectory(fd);
  }
  const file = path.join(objectsDir, 'info', 'alternates');
  const found = await verify.readLarge(file, 'objects/info/alternates', VIEW_CAPS.list);
  if (!found) return [store];
  if (depth >= MAX_ALTERNATE_DEPTH)
    throw repoError('unsupported_repository', file, `${file} chains alternates deeper than ${MAX_ALTERNATE_DEPTH}.`);
  const out: ObjectStore[] = [store];
  for (let line of found.bytes.toString('utf8').split('\n')) {
    line = line.replace(/\r$/, '');
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('"'))
      throw repoError(
        'unsupported_repository',
        file,
        `${file} uses a quoted alternate path, which the git tools do not support.`,
      );
    const real = realPathInside(objectsDir, line, file, 'objects/info/alternates', verify);
    if (real === null) continue; // git ignores a missing alternate too
    if (seen.has(real)) continue;
    seen.add(real);
    if (seen.size > MAX_ALTERNATES)
      throw repoError(
        'unsupported_repository',
        file,
        `${file} names more than ${MAX_ALTERNATES} alternate object directories in all.`,
      );
    if (!lstatOrNull(real)?.isDirectory()) continue;
    out.push(...(await verifyObjects(real, verify, slicer, now, depth + 1, seen, packCount)));
  }
  return out;
}

/**
 * `verifyObjects` for one store (`store.dir`, open at `fd` unless null): lists it and its fan-out, `pack` and `info`
 * directories, verifies every link and fills `store.subdirs` and `store.packFiles`. The store's own stamp is taken by
 * fstat of `fd` and its subdirectories' by one batch statx through `fd` (`stampSubdirs`), each kept only when the
 * descriptor is still at the store's path afterwards, so a kept listing is tied to the directory the descriptor holds
 * and the path shows; anything not stamped so is stat'ed by path.
 * @throws ToolError as `verifyObjects`
 */
async function verifyStore(
  store: ObjectStore,
  fd: number | null,
  verify: Verifier,
  slicer: Slicer,
  now: FsTime | null,
  packCount: { files: number; objectsDir: string },
): Promise<void> {
  const objectsDir = store.dir;
  const topStamp = fd === null ? undefined : stampOf(fd, objectsDir);
  const top = (await listStoreDirectory(objectsDir, slicer, now, topStamp)) ?? NO_ENTRIES;
  for (const name of top.links) {
    const wait = slicer.check();
    if (wait) await wait;
    const found = verify.locate(path.join(objectsDir, name), 'object store entry');
    if (found?.stats.isDirectory() && (FANOUT.test(name) || name === 'pack')) store.subdirs.set(name, found.real);
  }
  for (const name of top.directories)
    if (FANOUT.test(name) || name === 'pack') store.subdirs.set(name, path.join(objectsDir, name));
  const subs = [...store.subdirs.keys(), 'info'];
  // The directories listed as such and `info`, stamped in one batch through `fd`; not a name listed as a link (its
  // directory is the link's verified target, not the entry of `fd`).
  const linked = new Set(top.links);
  const stamps =
    fd === null
      ? new Map<string, DirStamp>()
      : stampSubdirs(
          fd,
          objectsDir,
          subs.filter((n) => !linked.has(n)),
        );
  for (const sub of [...subs, path.join('info', 'commit-graphs')]) {
    const wait = slicer.check();
    if (wait) await wait;
    const d = store.subdirs.get(sub) ?? path.join(objectsDir, sub);
    const listing = await listStoreDirectory(d, slicer, now, stamps.get(sub));
    if (listing === null) {
      // Entries that cannot be listed cannot be verified: the directory is not mirrored (git finds no object in it).
      store.subdirs.delete(sub);
      continue;
    }
    // Every link is verified (a loose object linked to an outside file would let git tell whether it exists).
    for (const name of listing.links) {
      const pause = slicer.check();
      if (pause) await pause;
      const found = verify.locate(path.join(d, name), 'object store entry');
      if (sub === 'pack' && PACK_FILE.test(name) && found?.stats.isFile()) {
        store.packFiles.set(name, found.real);
        checkPackFiles(++packCount.files, packCount.objectsDir);
      }
    }
    if (sub === 'pack')
      for (const name of listing.files) {
        const pause = slicer.check();
        if (pause) await pause;
        if (!PACK_FILE.test(name)) continue;
        store.packFiles.set(name, path.join(d, name));
        checkPackFiles(++packCount.files, packCount.objectsDir);
      }
  }
}

/**
 * Fails closed when `count` pack files (of the stores verified from `objectsDir`) pass MAX_PACK_FILES.
 * @throws ToolError VALIDATION unsupported_repository (details `limit`), naming the objects directory only
 */
function checkPackFiles(count: number, objectsDir: string): void {
  if (count > MAX_PACK_FILES)
    throw repoError(
      'unsupported_repository',
      objectsDir,
      `${objectsDir} and its alternates hold more than ${MAX_PACK_FILES} pack files (packs, indexes, reverse indexes).`,
      'Repack the repository (`git repack -ad`) or use git directly; the server mirrors a bounded number of pack files.',
      { limit: MAX_PACK_FILES },
    );
}

/**
 * The object stores as git sees them: for each verified store a directory `alt/N` of the private dir holding links to
 * its verified fan-out directories and a `pack` directory of links to its verified pack files, nothing else (no
 * `info/`: git never reads a repository's alternates or commit-graph files, so an alternates file changed after
 * verification cannot reach git; no `multi-pack-index`, whose pack names may hold `..`). Returns the
 * mirrors' paths for the view's own `objects/info/alternates`, in the stores' order.
 */
export async function mirrorObjects(
  privateDir: string,
  stores: ObjectStore[],
  slicer: Slicer,
  now: FsTime | null,
): Promise<string[]> {
  const base = path.join(privateDir, 'alt');
  const fingerprint = JSON.stringify(stores.map((s) => [[...s.subdirs], [...s.packFiles]]));
  if (
    viewCaches.mirrors.get(privateDir) === fingerprint &&
    (await mirrorIntact(base, stores, fingerprint, slicer, now))
  )
    return stores.map((_, n) => path.join(base, String(n)));
  viewCaches.mirrors.delete(privateDir);
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { mode: 0o700 });
  const out: string[] = [];
  for (const [n, store] of stores.entries()) {
    const mirror = path.join(base, String(n));
    mkdirSync(mirror, { mode: 0o700 });
    for (const [name, real] of store.subdirs) {
      const wait = slicer.check();
      if (wait) await wait;
      if (name !== 'pack') symlinkSync(real, path.join(mirror, name));
    }
    // The pack directory is rebuilt, not linked: links to the verified pack files only, so git reads no other file
    // of it (a multi-pack-index naming an outside pack, a link planted after verification).
    if (store.subdirs.has('pack')) {
      const pack = path.join(mirror, 'pack');
      mkdirSync(pack, { mode: 0o700 });
      for (const [name, real] of store.packFiles) {
        const wait = slicer.check();
        if (wait) await wait;
        symlinkSync(real, path.join(pack, name));
      }
    }
    out.push(mirror);
  }
  viewCaches.mirrors.set(privateDir, fingerprint);
  return out;
}

/**
 * True when the mirrors under `base` (a reused private dir's `alt`, itself checked a directory by `isTidy`) hold
 * exactly what `mirrorObjects` writes for `stores`: directories `0`…`n-1`, each with a link per fan-out directory
 * whose text is the verified real path, and `pack` a directory of links to the verified pack files; nothing else.
 */
async function mirrorIntact(
  base: string,
  stores: ObjectStore[],
  fingerprint: string,
  slicer: Slicer,
  now: FsTime | null,
): Promise<boolean> {
  try {
    if (!holdsExactly(base, new Map(), new Set(stores.map((_, n) => String(n))), fingerprint, now)) return false;
    for (const [n, store] of stores.entries()) {
      const mirror = path.join(base, String(n));
      const links = new Map([...store.subdirs].filter(([name]) => name !== 'pack'));
      const hasPack = store.subdirs.has('pack');
      if (!holdsExactly(mirror, links, new Set(hasPack ? ['pack'] : []), fingerprint, now)) return false;
      if (hasPack && !holdsExactly(path.join(mirror, 'pack'), store.packFiles, new Set(), fingerprint, now))
        return false;
      const wait = slicer.check();
      if (wait) await wait;
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * True when directory `dir` holds exactly the links `links` (name → the link's text) and the directories `dirs`
 * (entry types as listed: a link is never taken for a directory). A directory found so for the mirror `fingerprint`
 * and showing the same stamp since (`heldSince`: no entry added, removed or replaced) is not listed again.
 */
function holdsExactly(
  dir: string,
  links: ReadonlyMap<string, string>,
  dirs: ReadonlySet<string>,
  fingerprint: string,
  now: FsTime | null,
): boolean {
  const st = lstatSync(dir);
  if (!st.isDirectory()) return false;
  if (heldSince(dir, st, fingerprint)) return true;
  const entries = readdirSync(dir, { withFileTypes: true });
  if (entries.length !== links.size + dirs.size) return false;
  for (const e of entries) {
    const target = links.get(e.name);
    if (target !== undefined) {
      if (!e.isSymbolicLink() || readlinkSync(path.join(dir, e.name)) !== target) return false;
    } else if (!dirs.has(e.name) || !e.isDirectory()) return false;
  }
  rememberHeld(dir, st, fingerprint, now);
  return true;
}
