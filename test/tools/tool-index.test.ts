/**
 * The tool index (src/tools/tool-index.ts), what a one-shot `fs-tools call` works from before any tool module is
 * evaluated, is the registry (src/tools/registry.ts) entry for entry: the same names in the same order, each with its
 * tool's `--tools` group and always-mutating flag (which decide `--tools`/`--readonly` refusals), and a loader that
 * gives the registry's own definition.
 */
import { describe, expect, it } from 'vitest';
import { isAlwaysMutating } from '../../src/server/call-tool.js';
import { TOOLS } from '../../src/tools/registry.js';
import { TOOL_INDEX, TOOL_INDEX_NAMES } from '../../src/tools/tool-index.js';

describe('the tool index', () => {
  it('names every tool of the registry, in its order, with its group and always-mutating flag', () => {
    expect(TOOL_INDEX_NAMES).toEqual(TOOLS.map((t) => t.name));
    expect(TOOL_INDEX.map(({ name, group, mutating }) => ({ name, group, mutating }))).toEqual(
      TOOLS.map((t) => ({ name: t.name, group: t.group, mutating: isAlwaysMutating(t) })),
    );
  });

  it("loads each tool's own definition", async () => {
    const loaded = await Promise.all(TOOL_INDEX.map((entry) => entry.load()));
    loaded.forEach((tool, i) => expect(tool).toBe(TOOLS[i]));
  });
});
