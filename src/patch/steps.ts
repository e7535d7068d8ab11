/**
 * Long line-by-line loops written once as generators that `yield` at checkpoints (every STEP_LINES lines or so), and
 * run either at once (`runSteps`, for callers that need a plain value) or in slices of event-loop time
 * (`runStepsSliced`: after a checkpoint, once about `sliceMs` of work has run, it waits for a `setImmediate` turn),
 * so a diff or a rewrite guard of a 100,000-line window never holds the event loop for long
 * (docs/security.md "Bounded work"). Both give the same result: the generator does the same work either way.
 */
import { Slicer } from '../vcs/slicer.js';

/** Lines (or other items) processed between two checkpoints of a step generator. */
export const STEP_LINES = 1024;

/** A computation that yields (nothing) at checkpoints and returns its result. */
export type Steps<T> = Generator<void, T, void>;

/** Runs `steps` to its end at once; returns its result. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * Runs `steps` to its end, yielding to the event loop at checkpoints once about `sliceMs` ms of work has run.
 * @param sliceMs longest run between two yields, ms (10 by default)
 */
export async function runStepsSliced<T>(steps: Steps<T>, sliceMs = 10): Promise<T> {
  const slicer = new Slicer(sliceMs);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    const wait = slicer.check();
    if (wait) await wait;
  }
}
