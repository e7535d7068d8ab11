/**
 * The gates (src/policy/gates.ts; SPEC §4.4): the mutation budget and the read-only switch, in-process. Pins:
 *  - a ticket counts only when spent; a released ticket frees its place; settling twice changes nothing;
 *  - with calls in flight up to the limit, the next reservation waits and proceeds when a ticket is released, but is
 *    refused (BUDGET_EXCEEDED, used and limit in details) once the in-flight ones were spent;
 *  - limit 0 means unlimited; READONLY names the tool (and action) and nothing else.
 */
import { describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { assertWritable, MutationBudget } from '../../src/policy/gates.js';

const settledWithin = async <T>(p: Promise<T>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe('MutationBudget', () => {
  it('counts spent tickets only, once each', async () => {
    const b = new MutationBudget(3);
    const t1 = await b.reserve();
    const t2 = await b.reserve();
    t1.spend();
    t1.spend();
    t1.release();
    t2.release();
    t2.spend();
    expect(b.used).toBe(1);
    expect(() => b.assertAvailable()).not.toThrow();
  });

  it('a reservation beyond the limit waits for a release, then proceeds', async () => {
    const b = new MutationBudget(1);
    const first = await b.reserve();
    const second = b.reserve();
    expect(await settledWithin(second, 20)).toBe(false);
    first.release();
    const t = await second;
    t.spend();
    expect(b.used).toBe(1);
  });

  it('a waiting reservation is refused with BUDGET_EXCEEDED once the budget is spent', async () => {
    const b = new MutationBudget(1);
    const first = await b.reserve();
    const second = b.reserve();
    first.spend();
    await expect(second).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED', details: { used: 1, limit: 1 } });
    expect(b.used).toBe(1);
    expect(() => b.assertAvailable()).toThrow(ToolError);
  });

  it('limit 0 is unlimited', async () => {
    const b = new MutationBudget(0);
    for (let i = 0; i < 50; i++) (await b.reserve()).spend();
    expect(b.used).toBe(50);
    expect(() => b.assertAvailable()).not.toThrow();
  });
});

describe('assertWritable', () => {
  it('passes when not read-only', () => {
    expect(() => assertWritable(false, 'write_file')).not.toThrow();
  });

  it('READONLY names the tool, and the action when there is one', () => {
    expect(() => assertWritable(true, 'write_file')).toThrow(
      expect.objectContaining({ code: 'READONLY', details: { tool: 'write_file' } }),
    );
    try {
      assertWritable(true, 'github_issues', 'create');
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({ code: 'READONLY', details: { tool: 'github_issues', action: 'create' } });
      expect((error as Error).message).toContain('github_issues create');
    }
  });
});
