/**
 * What a range read (src/fs/read-range.ts) reads from: an open file's handle, bytes already in memory, or a
 * descriptor read synchronously. Only positional reads, and fstat when the facts cache is used.
 */
import { fstatSync, readSync, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

/**
 * What readRange reads from: an open file (a FileHandle), or a file already in memory (`bytesSource`). Only
 * positional reads, and fstat when the facts cache is used.
 */
export type RangeSource = Pick<FileHandle, 'read' | 'stat'>;

/**
 * A RangeSource over bytes already read (a small file read in one synchronous call, src/tools/read-one.ts): the
 * same answers as the file's handle, without a thread-pool round trip per read. Its `bytes` are the caller's (read for
 * this one call); nothing here writes to them. `close` does nothing (there is no descriptor): read_file's small read
 * closes it like a handle. A class rather than closures over a side table: one object per read, and no weak-map
 * entry for the garbage collector to trace (a read of a small file is one of these per call).
 */
class BytesSource {
  constructor(
    readonly bytes: Buffer,
    private readonly stats: Stats,
  ) {}

  /** `FileHandle.read` at a position, answered from the bytes. */
  read(
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number; buffer: Buffer }> {
    const n = Math.max(0, Math.min(length, this.bytes.length - position));
    if (n > 0) this.bytes.copy(buffer, offset, position, position + n);
    return Promise.resolve({ bytesRead: n, buffer });
  }

  /** `FileHandle.stat`: the stats the bytes were read with. */
  stat(): Promise<Stats> {
    return Promise.resolve(this.stats);
  }

  /** Nothing to close: resolves at once. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A RangeSource over bytes already read (see BytesSource), closed like a handle (a no-op). */
export function bytesSource(bytes: Buffer, stats: Stats): RangeSource & { close(): Promise<void> } {
  return new BytesSource(bytes, stats) as unknown as RangeSource & { close(): Promise<void> };
}

/** The bytes behind a `bytesSource`, or undefined for any other source. */
export function inMemoryBytes(source: RangeSource): Buffer | undefined {
  return source instanceof BytesSource ? source.bytes : undefined;
}

/**
 * A RangeSource reading an open descriptor synchronously: for reads whose size is bounded in advance (a range of a
 * file whose facts are cached), where a thread-pool round trip per read costs more than the read itself.
 */
export function fdSource(fd: number): RangeSource {
  return {
    read: ((buffer: Buffer, offset: number, length: number, position: number) =>
      Promise.resolve().then(() => ({
        bytesRead: readSync(fd, buffer, offset, length, position),
        buffer,
      }))) as unknown as FileHandle['read'],
    stat: (() => Promise.resolve().then(() => fstatSync(fd))) as unknown as FileHandle['stat'],
  };
}
