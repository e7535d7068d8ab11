/**
 * The registry of the process's state (src/process-slots.ts): a slot's value is built once, by its one owner, and a
 * second claim of the same name fails instead of splitting the state in two. Which module owns which slot is checked
 * statically in test/architecture.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { claimedSlots, processSlot } from '../src/process-slots.js';

describe('processSlot', () => {
  it('builds the value once and hands back that object', () => {
    let built = 0;
    const value = processSlot('fs/history', () => {
      built++;
      return { lastIdMs: 0 };
    });
    value.lastIdMs = 42;
    expect(built).toBe(1);
    expect(claimedSlots()).toContain('fs/history');
  });

  it('refuses a second claim of a name, leaving the first value in place', () => {
    const first = processSlot('vcs/git-locate', () => ({ cache: null }));
    let built = 0;
    expect(() =>
      processSlot('vcs/git-locate', () => {
        built++;
        return { cache: null };
      }),
    ).toThrow('process slot vcs/git-locate claimed twice');
    expect(built).toBe(0);
    expect(claimedSlots().filter((n) => n === 'vcs/git-locate')).toHaveLength(1);
    expect(first).toEqual({ cache: null });
  });
});
