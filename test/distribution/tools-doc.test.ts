/**
 * docs/tools.md agrees with the tools' schemas: the reference between `<!-- tools:begin -->` and `<!-- tools:end -->`
 * is rendered here from what tools/list declares (src/server/tool-schemas.ts `advertise`) — every tool, its
 * description, every argument with its type, default, whether it is required and its description, and the top-level
 * fields of its result. The test fails when the page and the schemas disagree; `FS_TOOLS_UPDATE_DOCS=1` rewrites
 * the page instead (read by this test only, never by src/).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { advertise } from '../../src/server/tool-schemas.js';
import { TOOLS } from '../../src/tools/registry.js';

const PAGE = path.join(fileURLToPath(new URL('../..', import.meta.url)), 'docs/tools.md');
const BEGIN = '<!-- tools:begin -->';
const END = '<!-- tools:end -->';

type Schema = {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  minimum?: number;
  maximum?: number;
};

/** A short type for a JSON Schema node: `string`, `integer 1..100`, `"a" \| "b"`, `array of string`, `object`. */
function typeOf(s: Schema): string {
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return [...new Set(alternatives.map(typeOf))].join(' | ');
  const t = Array.isArray(s.type) ? s.type.join(' | ') : (s.type ?? 'any');
  if (t === 'array' && s.items) return `array of ${typeOf(s.items)}`;
  if ((t === 'integer' || t === 'number') && (s.minimum !== undefined || s.maximum !== undefined)) {
    return `${t} ${s.minimum ?? ''}..${s.maximum ?? ''}`;
  }
  return t;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The reference section, rendered from the declarations. */
export function renderReference(): string {
  const out: string[] = [];
  for (const tool of TOOLS) {
    const a = advertise(tool);
    const input = a.inputSchema as Schema;
    out.push(`### \`${a.name}\``, '', a.description ?? '', '');
    const props = Object.entries(input.properties ?? {});
    if (props.length === 0) out.push('No arguments.', '');
    else {
      out.push('| argument | type | required | default | meaning |', '|---|---|---|---|---|');
      for (const [name, s] of props) {
        const required = (input.required ?? []).includes(name) ? 'yes' : '';
        const dflt = s.default === undefined ? '' : `\`${JSON.stringify(s.default)}\``;
        out.push(`| \`${name}\` | ${cell(typeOf(s))} | ${required} | ${cell(dflt)} | ${cell(s.description ?? '')} |`);
      }
      out.push('');
    }
    const output = a.outputSchema as Schema | undefined;
    const fields = Object.keys(output?.properties ?? {});
    if (fields.length) out.push(`Result fields: ${fields.map((f) => `\`${f}\``).join(', ')}.`, '');
  }
  return out.join('\n');
}

describe('docs/tools.md', () => {
  it('states every tool, argument and result field as the schemas declare them', () => {
    const page = readFileSync(PAGE, 'utf8');
    const begin = page.indexOf(BEGIN);
    const end = page.indexOf(END);
    expect(begin, 'the page has the reference markers').toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(begin);
    const rendered = `${BEGIN}\n${renderReference()}\n${END}`;
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
