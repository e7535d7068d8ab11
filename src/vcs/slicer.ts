/**
 * Slices of event-loop time for long synchronous loops (parsing a 64 MiB packed-refs, a 4 MiB config, an index of a
 * hundred thousand entries): the loop asks `check()` per item and awaits the promise it gets once the slice is used
 * up, so no call holds the event loop for more than about `sliceMs` (docs/security.md "What git may read").
 */
export class Slicer {
  private start = performance.now();
  /** @param sliceMs the longest run between two yields, ms */
  constructor(private readonly sliceMs = 2) {}

  /** A promise to await when the slice is used up, else null (cheap enough to call per item). */
  check(): Promise<void> | null {
    if (performance.now() - this.start < this.sliceMs) return null;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        this.start = performance.now();
        resolve();
      }),
    );
  }
}
