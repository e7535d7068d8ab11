/**
 * Declarations that earn their bytes (issue #15): what every client sends its model on every turn — each tool's
 * name, description and input schema — stays within 1.5× the official filesystem server's bytes per tool, and what
 * the advertised input schemas leave out (Codex drops `default`, `pattern`, min/max … anyway) is carried in words:
 * every non-false default is in the field's description (booleans default to false, said once in the server
 * instructions). The per-client numbers come from the real clients in `npm run test:clients`.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { advertise } from '../../src/server/tool-schemas.js';
import { TOOLS } from '../../src/tools/registry.js';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const OFFICIAL = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url),
);

interface Declared {
  name: string;
  description?: string;
  inputSchema: unknown;
}
const bytesOf = (t: Declared): number =>
  Buffer.byteLength(JSON.stringify({ name: t.name, description: t.description ?? '', inputSchema: t.inputSchema }));
const perTool = (tools: Declared[]): number => tools.reduce((n, t) => n + bytesOf(t), 0) / tools.length;

describe('tool declarations', () => {
  const tree = makeTree({ 'a.txt': 'a\n' });
  afterAll(() => tree.cleanup());

  it('weigh at most 1.5x the official filesystem server per tool', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [OFFICIAL, tree.dir],
      stderr: 'ignore',
    });
    const official = new Client({ name: 'declarations-test', version: '1.0.0' });
    await official.connect(transport);
    const theirs = (await official.listTools()).tools as Declared[];
    await official.close();
    const client = await connect('modern', { args: [tree.dir] });
    const ours = (await client.listTools()) as Declared[];
    await client.close();
    expect(theirs.length).toBeGreaterThan(10);
    const ratio = perTool(ours) / perTool(theirs);
    expect(
      ratio,
      `fs-tools ${perTool(ours).toFixed(0)} B/tool vs official ${perTool(theirs).toFixed(0)} B/tool`,
    ).toBeLessThanOrEqual(1.5);
  });

  it('say every default that is not false in the field description', () => {
    const missing: string[] = [];
    for (const tool of TOOLS) {
      for (const [field, schema] of Object.entries(tool.input.shape as Record<string, z.ZodType>)) {
        if (!(schema instanceof z.ZodDefault)) continue;
        const value = schema.def.defaultValue;
        if (value === false) continue; // the server instructions: booleans default to false
        if (!/default/i.test(schema.description ?? ''))
          missing.push(`${tool.name}.${field} (default ${JSON.stringify(value)})`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('advertise no keyword Codex would drop, and no nested additionalProperties', () => {
    const dropped = [
      'default',
      'pattern',
      'minLength',
      'maxLength',
      'minimum',
      'maximum',
      'minItems',
      'maxItems',
      'propertyNames',
    ];
    for (const tool of TOOLS) {
      const text = JSON.stringify(advertise(tool).inputSchema);
      for (const keyword of dropped) expect(text, `${tool.name} advertises ${keyword}`).not.toContain(`"${keyword}":`);
    }
  });

  it('leave out keywords, never checks: a value breaking a constraint that is not advertised is still VALIDATION', async () => {
    const client = await connect('modern', { args: [tree.dir] });
    try {
      const cases: Array<[string, Record<string, unknown>]> = [
        ['read_file', { path: 'a.txt', head: 0 }], // minimum 1
        ['write_file', { path: 'a.txt', content: 'x', expected_hash: 'sha256:nothex' }], // pattern
        ['edit_file', { path: 'a.txt', edits: [] }], // minItems 1
        ['edit_file', { path: 'a.txt', edits: [{ old_text: '', new_text: 'x' }] }], // minLength 1
        ['list_directory', { depth: 21 }], // maximum 20
        ['read_files', { paths: Array.from({ length: 101 }, () => 'a.txt') }], // maxItems 100
        ['github_issues', { action: 'create', repo: 'o/r', title: 't'.repeat(257) }], // maxLength 256
        ['github_issues', { action: 'list', repo: 'not a repo' }], // pattern
        ['read_file', { path: 'a.txt', colour: 'red' }], // additionalProperties false
      ];
      for (const [tool, args] of cases) expectCode(await client.call(tool, args), 'VALIDATION');
      expect((await client.callOk('read_file', { path: 'a.txt' })).content).toBe('a\n'); // nothing was written
    } finally {
      await client.close();
    }
  });

  it('still describe what each tool does, its limits or failures, and what to do next', () => {
    for (const tool of TOOLS) {
      const d = advertise(tool).description;
      expect(d.length, tool.name).toBeGreaterThanOrEqual(100);
      expect(d, `${tool.name}: failure or limit`).toMatch(
        /\bfail|\b[A-Z]{3,}(?:_[A-Z]+)+\b|VALIDATION|at most|≤|never/i,
      );
    }
  });
});

describe('heavy-call classes (docs/security.md "One queue for heavy calls, and untrusted text")', () => {
  it('every tool that walks a tree or reads many files takes a walk slot, whatever its arguments', () => {
    // revert_changes restores every file of the selected changes (a copied or moved tree, a replace_in_files run):
    // as much work as the tree operation it undoes.
    const byName = new Map(TOOLS.map((t) => [t.name, t]));
    const walkers = ['list_directory', 'search_files', 'read_files', 'replace_in_files', 'copy_path', 'move_path'];
    for (const name of [...walkers, 'revert_changes']) {
      const tool = byName.get(name);
      expect(tool, name).toBeDefined();
      const classes = (tool!.heavy as ((a: Record<string, unknown>) => readonly string[]) | undefined)?.({}) ?? [];
      expect(classes, name).toContain('walk');
    }
  });
});
