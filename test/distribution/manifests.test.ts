/**
 * Manifests for the places users look for MCP servers (issue #16): `server.json` for the official MCP Registry,
 * validated against the registry's published schema (vendored in test/fixtures/mcp-registry with its source URL),
 * and an MCP Bundle built and validated with the real @anthropic-ai/mcpb CLI, whose command line — with the user's
 * choices substituted as a desktop client would — serves MCP to a real client. Both come from package.json.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PKG = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<string, any>;
const MCPB_CLI = path.join(ROOT, 'node_modules/@anthropic-ai/mcpb/dist/cli/cli.js');

describe('server.json (MCP Registry)', () => {
  const serverJson = JSON.parse(readFileSync(path.join(ROOT, 'server.json'), 'utf8')) as Record<string, any>;

  it('is exactly what package.json generates (no drift)', () => {
    const check = spawnSync(process.execPath, ['scripts/manifests.mjs', '--check'], { cwd: ROOT, encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
    expect(serverJson.version).toBe(PKG.version);
    expect(serverJson.name).toBe(PKG.mcpName);
    expect(serverJson.packages[0].identifier).toBe(PKG.name);
    expect(serverJson.packages[0].version).toBe(PKG.version);
  });

  it("names one repository everywhere: package.json's repository, homepage and bugs, the registry name's account", () => {
    // io.github.OWNER/NAME: the registry checks that OWNER publishes it, so the repository lives under that account.
    const owner = /^io\.github\.([^/]+)\//.exec(PKG.mcpName)?.[1];
    const repo = `https://github.com/${owner}/fs-tools`;
    expect(PKG.repository).toEqual({ type: 'git', url: `git+${repo}.git` });
    expect(PKG.homepage).toBe(`${repo}#readme`);
    expect(PKG.bugs).toEqual({ url: `${repo}/issues` });
    expect(serverJson.repository).toEqual({ url: repo, source: 'github' });
  });

  it('validates against the registry schema it names', () => {
    const schema = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/mcp-registry/server.schema.json'), 'utf8'));
    expect(serverJson.$schema).toBe(schema.$id);
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addFormat('uri', (s: string) => URL.canParse(s));
    const validate = ajv.compile(schema);
    expect(validate(serverJson), JSON.stringify(validate.errors)).toBe(true);
    // The schema really constrains: a description over its 100-character limit and a "latest" version fail.
    expect(validate({ ...serverJson, description: 'x'.repeat(101) })).toBe(false);
    expect(validate({ ...serverJson, packages: [{ ...serverJson.packages[0], version: 'latest' }] })).toBe(false);
  });
});

describe('MCP Bundle (.mcpb)', () => {
  let unpacked: { dir: string; cleanup: () => void };
  let manifest: Record<string, any>;

  beforeAll(() => {
    const out = execFileSync(process.execPath, ['scripts/manifests.mjs', '--mcpb'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    unpacked = makeTree();
    execFileSync(process.execPath, [MCPB_CLI, 'unpack', out, unpacked.dir], { encoding: 'utf8' });
    manifest = JSON.parse(readFileSync(path.join(unpacked.dir, 'manifest.json'), 'utf8'));
  }, 120_000);
  afterAll(() => unpacked?.cleanup());

  it('validates with mcpb and carries the package version and user-configurable roots and flags', () => {
    const validated = spawnSync(process.execPath, [MCPB_CLI, 'validate', path.join(unpacked.dir, 'manifest.json')], {
      encoding: 'utf8',
    });
    expect(validated.status, validated.stdout + validated.stderr).toBe(0);
    expect(manifest.version).toBe(PKG.version);
    expect(manifest.user_config.roots).toMatchObject({ type: 'directory', multiple: true, required: true });
    expect(manifest.user_config.readonly).toMatchObject({ type: 'boolean', default: false });
    expect(manifest.user_config.allow_secrets).toMatchObject({ type: 'boolean', default: false });
    expect(manifest.tools.map((t: { name: string }) => t.name)).toContain('read_file');
  });

  it("serves MCP with the user's choices substituted into its command line (read-only, two roots)", async () => {
    const a = makeTree({ 'a.txt': 'in a\n', '.env': 'SECRET=1\n' });
    const b = makeTree({ 'b.txt': 'in b\n' });
    const outside = makeTree({ 'o.txt': 'outside\n' });
    // As a desktop client does: ${__dirname} is the unpacked bundle, booleans become "true"/"false", a multiple
    // directory setting expands to one argument per directory.
    const values: Record<string, string | string[]> = {
      __dirname: unpacked.dir,
      'user_config.readonly': 'true',
      'user_config.allow_secrets': 'false',
      'user_config.mutation_budget': '0',
      'user_config.roots': [a.dir, b.dir],
    };
    const args = (manifest.server.mcp_config.args as string[]).flatMap((arg) => {
      const whole = /^\$\{([^}]+)\}$/.exec(arg);
      if (whole && Array.isArray(values[whole[1]])) return values[whole[1]];
      return [arg.replace(/\$\{([^}]+)\}/g, (_, k: string) => values[k] as string)];
    });
    expect(manifest.server.mcp_config.command).toBe('node');
    const client = await connect('legacy', { command: process.execPath, args, cwd: outside.dir });
    try {
      const names = (await client.listTools()).map((t) => t.name);
      expect(names).toContain('read_file');
      expect(names).not.toContain('write_file');
      const dirs = await client.callOk('list_allowed_directories');
      expect(JSON.stringify(dirs)).toContain(a.dir);
      expect(JSON.stringify(dirs)).toContain(b.dir);
      expect((await client.callOk('read_file', { path: path.join(b.dir, 'b.txt') })).content).toBe('in b\n');
      expect((await client.callError('read_file', { path: path.join(a.dir, '.env') })).error.code).toBe(
        'SECRET_DENIED',
      );
      expect((await client.callError('read_file', { path: path.join(outside.dir, 'o.txt') })).error.code).toBe(
        'NOT_ALLOWED',
      );
      expect(
        (await client.callError('write_file', { path: path.join(a.dir, 'new.txt'), content: 'x' })).error.code,
      ).toBe('READONLY');
    } finally {
      await client.close();
      a.cleanup();
      b.cleanup();
      outside.cleanup();
    }
  });
});

describe('package.json', () => {
  it('declares no runtime dependencies: dist/ is a self-contained bundle', () => {
    expect(PKG.dependencies ?? {}).toEqual({});
    expect(PKG.bin).toEqual({ 'fs-tools': 'dist/cli.js', 'fs-tools-mcp': 'dist/cli.js' });
  });

  it("ships the bundled packages' licences", () => {
    const notices = readFileSync(path.join(ROOT, 'dist/THIRD-PARTY-LICENSES.txt'), 'utf8');
    for (const name of ['@modelcontextprotocol/server', 'zod', 'diff']) expect(notices).toContain(`${name}@`);
  });
});
