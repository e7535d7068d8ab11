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
 * A RangeSource over bytes already read (a small file read in one synchronous call, src/tools/read-file.ts): the
 * same answers as the file's handle, without a thread-pool round trip per read.
 */
export function bytesSource(bytes: Buffer, stats: Stats): RangeSource {
  const source: RangeSource = {
    read: ((buffer: Buffer, offset: number, length: number, position: number) => {
      const n = Math.max(0, Math.min(length, bytes.length - position));
      if (n > 0) bytes.copy(buffer, offset, position, position + n);
      return Promise.resolve({ bytesRead: n, buffer });
    }) as unknown as FileHandle['read'],
    stat: (() => Promise.resolve(stats)) as unknown as FileHandle['stat'],
  };
  inMemory.set(source, bytes);
  return source;
}

/**
 * The bytes behind each `bytesSource`: the streaming pass scans them where they are instead of copying
 * them into a buffer of its own first. The bytes are the caller's (read for this one call); nothing here writes to them.
 * Not process state (test/architecture.test.ts allow list): a side table of each source, gone with it.
 */
const inMemory = new WeakMap<RangeSource, Buffer>();

/** The bytes behind a `bytesSource`, or undefined for any other source. */
export function inMemoryBytes(source: RangeSource): Buffer | undefined {
  return inMemory.get(source);
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
