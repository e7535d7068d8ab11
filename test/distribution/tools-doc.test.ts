/**
 * docs/tools.md agrees with the tools' schemas: the reference between `<!-- tools:begin -->` and `<!-- tools:end -->`
 * is rendered by src/server/tool-docs.ts (the renderer `fs-tools help TOOL` uses too) from the schemas the server
 * enforces — every tool, its description, every argument with its type, default, whether it is required and its
 * description, an example call, and the top-level fields of its result. The test fails when the page and the schemas disagree; `FS_TOOLS_UPDATE_DOCS=1` rewrites
 * the page instead (read by this test only, never by src/).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderReference } from '../../src/server/tool-docs.js';
import { TOOLS } from '../../src/tools/registry.js';

const PAGE = path.join(fileURLToPath(new URL('../..', import.meta.url)), 'docs/tools.md');
const BEGIN = '<!-- tools:begin -->';
const END = '<!-- tools:end -->';

describe('docs/tools.md', () => {
  it('states every tool, argument and result field as the schemas declare them', () => {
    const page = readFileSync(PAGE, 'utf8');
    const begin = page.indexOf(BEGIN);
    const end = page.indexOf(END);
    expect(begin, 'the page has the reference markers').toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(begin);
    const rendered = `${BEGIN}\n${renderReference(TOOLS)}\n${END}`;
    const current = page.slice(begin, end + END.length);
    if (process.env.FS_TOOLS_UPDATE_DOCS === '1' && current !== rendered) {
      writeFileSync(PAGE, page.slice(0, begin) + rendered + page.slice(end + END.length));
      return;
    }
    expect(current).toBe(rendered);
  });

  it('the reference is not empty: every tool has a section', () => {
    const page = readFileSync(PAGE, 'utf8');
    for (const tool of TOOLS) expect(page).toContain(`### \`${tool.name}\``);
  });
});
