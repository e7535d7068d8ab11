/**
 * A tool's reference, rendered from its declaration: the description, every argument with its type, whether it is
 * required, its default and its meaning, an example call, and the top-level fields of its result. One renderer for
 * both places a user reads it: the reference section of docs/tools.md (markdown; test/distribution/tools-doc.test.ts
 * fails when the page disagrees with the schemas) and `fs-tools help TOOL` / `fs-tools call TOOL --help` (plain text,
 * docs/cli.md). The arguments come from the input schema the server enforces (`documentedInputSchema`), so defaults
 * and bounds that tools/list leaves out are shown too.
 */
import type { AnyTool } from '../tools/define-tool.js';
import { advertise, documentedInputSchema } from './tool-schemas.js';

/** The JSON Schema keywords the reference reads. */
interface Schema {
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
}

/** One argument of a tool as the reference states it. */
export interface ArgumentDoc {
  name: string;
  /** A short type: `string`, `integer 1..100`, `"a" | "b"`, `array of string`, `object`. */
  type: string;
  required: boolean;
  /** The default as JSON text, or null when the schema declares none. */
  default: string | null;
  /** The schema's description of the argument ('' when it has none). */
  meaning: string;
}

/** A short type for a JSON Schema node: `string`, `integer 1..100`, `"a" | "b"`, `array of string`, `object`. */
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

/** Every argument of `tool`, in declaration order. */
export function argumentsOf(tool: AnyTool): ArgumentDoc[] {
  const input = documentedInputSchema(tool) as Schema;
  return Object.entries(input.properties ?? {}).map(([name, s]) => ({
    name,
    type: typeOf(s),
    required: (input.required ?? []).includes(name),
    default: s.default === undefined ? null : JSON.stringify(s.default),
    meaning: s.description ?? '',
  }));
}

/** A placeholder value for a schema node: the first enum value, the lower bound, a NAME in capitals for a string. */
function exampleValue(name: string, s: Schema): unknown {
  if (s.enum) return s.enum[0];
  if (s.const !== undefined) return s.const;
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives?.[0]) return exampleValue(name, alternatives[0]);
  const t = Array.isArray(s.type) ? s.type[0] : s.type;
  if (t === 'integer' || t === 'number') return s.minimum ?? 1;
  if (t === 'boolean') return true;
  if (t === 'array') return s.items ? [exampleValue(name, s.items)] : [];
  if (t === 'object') return exampleObject(s);
  return name.toUpperCase();
}

/** An object holding only the required members of `s`, each with its placeholder. */
function exampleObject(s: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of s.required ?? []) {
    const member = s.properties?.[name];
    if (member) out[name] = exampleValue(name, member);
  }
  return out;
}

/** The arguments of an example call of `tool`: its required arguments with placeholders. */
export function exampleArguments(tool: AnyTool): Record<string, unknown> {
  return exampleObject(documentedInputSchema(tool));
}

/** The top-level fields of `tool`'s result (its output schema without the envelope's `error`). */
function resultFields(tool: AnyTool): string[] {
  const output = advertise(tool).outputSchema as Schema;
  return Object.keys(output.properties ?? {}).filter((f) => f !== 'error');
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The markdown reference of `tools` (the generated section of docs/tools.md). */
export function renderReference(tools: readonly AnyTool[]): string {
  const out: string[] = [];
  for (const tool of tools) {
    out.push(`### \`${tool.name}\``, '', tool.description, '');
    const args = argumentsOf(tool);
    if (args.length === 0) out.push('No arguments.', '');
    else {
      out.push('| argument | type | required | default | meaning |', '|---|---|---|---|---|');
      for (const a of args) {
        const dflt = a.default === null ? '' : `\`${a.default}\``;
        out.push(
          `| \`${a.name}\` | ${cell(a.type)} | ${a.required ? 'yes' : ''} | ${cell(dflt)} | ${cell(a.meaning)} |`,
        );
      }
      out.push('');
    }
    out.push(`Example: \`fs-tools call ${tool.name} '${JSON.stringify(exampleArguments(tool))}'\``, '');
    const fields = resultFields(tool);
    if (fields.length) out.push(`Result fields: ${fields.map((f) => `\`${f}\``).join(', ')}.`, '');
  }
  return out.join('\n');
}

/** `text` folded into lines of at most `width` characters, each prefixed by `indent`. */
function wrap(text: string, indent: string, width = 100): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(indent + line);
  return lines;
}

/** The plain-text help of one tool (`fs-tools help TOOL`): what `renderReference` says of it, for a terminal. */
export function renderToolHelp(tool: AnyTool): string {
  const out = [`${tool.name}: ${tool.title}`, '', ...wrap(tool.description, '  '), ''];
  const args = argumentsOf(tool);
  if (args.length === 0) out.push('Arguments: none', '');
  else {
    out.push('Arguments:');
    const nameWidth = Math.max(...args.map((a) => a.name.length));
    for (const a of args) {
      const marks = [a.required ? 'required' : '', a.default === null ? '' : `default ${a.default}`].filter(Boolean);
      out.push(`  ${a.name.padEnd(nameWidth)}  ${a.type}${marks.length ? `  (${marks.join(', ')})` : ''}`);
      out.push(...wrap(a.meaning, ' '.repeat(nameWidth + 6)));
    }
    out.push('');
  }
  out.push('Example:', `  fs-tools call ${tool.name} '${JSON.stringify(exampleArguments(tool))}'`, '');
  const fields = resultFields(tool);
  if (fields.length) out.push(...wrap(`Result fields: ${fields.join(', ')}.`, ''), '');
  out.push(`Failures come back as an envelope (exit 1): fs-tools help exit-codes, docs/errors.md.`);
  return `${out.join('\n')}\n`;
}
