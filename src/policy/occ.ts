/**
 * Optimistic concurrency (SPEC §5). This file owns the session's remembered hashes: every read and every write
 * records the hash of what is now on disk, keyed by resolved path, so `--auto-occ=block` can use it as the expected
 * hash of a later mutation. The expected-hash checks themselves (OCC_MISMATCH, HASH_REQUIRED) live here too as the
 * mutation tools land.
 */

/** The session's memory of content hashes, keyed by resolved absolute path. One per process. */
export class HashMemory {
  private readonly hashes = new Map<string, string>();

  /** Records the hash of what is on disk at `real` now (after a read or a write). */
  remember(real: string, hash: string): void {
    this.hashes.set(real, hash);
  }

  /** Forgets a path (after delete or move). */
  forget(real: string): void {
    this.hashes.delete(real);
  }

  /** The remembered hash, or undefined when this session never read or wrote the file. */
  recall(real: string): string | undefined {
    return this.hashes.get(real);
  }

  /** Number of remembered files (for list_allowed_directories). */
  get size(): number {
    return this.hashes.size;
  }
}
