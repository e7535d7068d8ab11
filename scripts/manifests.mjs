#!/usr/bin/env node
/**
 * The manifests users' clients read, generated from package.json so their versions and names cannot drift:
 *
 * - `server.json` at the repository root — the entry for the official MCP Registry (schema
 *   https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json; vendored in test/fixtures).
 *   Written by `npm run manifests`; test/distribution/manifests.test.ts fails when the committed file differs from
 *   what this script generates.
 * - With `--mcpb`: an MCP Bundle (`build/fs-tools-mcp-<version>.mcpb`) for one-click installs in desktop clients:
 *   manifest.json (MCPB manifest 0.3) with the roots and the main flags as user_config, the bundled server under
 *   server/, validated and packed with @anthropic-ai/mcpb. Needs dist/ (npm run build).
 *
 * Usage: node scripts/manifests.mjs [--mcpb] [--check]
 *   --check  exit 1 (and write nothing) when server.json is not what package.json generates
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The MCP Registry schema version server.json is written for. */
export const SERVER_SCHEMA_URL = 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json';

/**
 * server.json for the MCP Registry, from package.json.
 * @param {Record<string, any>} pkg the parsed package.json
 * @returns {Record<string, unknown>}
 */
export function serverJson(pkg) {
  return {
    $schema: SERVER_SCHEMA_URL,
    name: pkg.mcpName,
    title: 'fs-tools',
    description: pkg.description,
    repository: { url: repositoryUrl(pkg), source: 'github' },
    version: pkg.version,
    packages: [
      {
        registryType: 'npm',
        identifier: pkg.name,
        version: pkg.version,
        runtimeHint: 'npx',
        transport: { type: 'stdio' },
        packageArguments: [
          {
            type: 'positional',
            valueHint: 'root',
            description: 'A directory the agent may access (repeatable). Default: the current directory.',
            format: 'filepath',
            isRequired: false,
            isRepeated: true,
          },
        ],
      },
    ],
  };
}

/**
 * The MCP Bundle manifest (manifest_version 0.3), from package.json and the tool list of the built server.
 * Booleans reach the server as `--readonly=true|false` (the CLI accepts that form for exactly this launcher).
 * @param {Record<string, any>} pkg the parsed package.json
 * @param {Array<{name: string, description?: string}>} tools `fs-tools tools --json` of the built server
 * @returns {Record<string, unknown>}
 */
export function mcpbManifest(pkg, tools) {
  return {
    manifest_version: '0.3',
    name: 'fs-tools',
    display_name: 'fs-tools',
    version: pkg.version,
    description: pkg.description,
    long_description:
      'Read, search, write, edit and patch files, see git state, and work with GitHub and GitLab issues — inside the '
      + 'directories you choose, with secret files hidden, optional read-only mode, a mutation budget and optimistic '
      + 'hash checks. Every failure is one coded JSON envelope that tells the agent how to recover.',
    author: { name: 'The fs-tools authors' },
    license: pkg.license,
    keywords: pkg.keywords,
    server: {
      type: 'node',
      entry_point: 'server/cli.js',
      mcp_config: {
        command: 'node',
        args: [
          '${__dirname}/server/cli.js',
          '--readonly=${user_config.readonly}',
          '--allow-secrets=${user_config.allow_secrets}',
          '--mutation-budget=${user_config.mutation_budget}',
          '--',
          '${user_config.roots}',
        ],
      },
    },
    tools: tools.map((t) => ({ name: t.name, description: firstSentence(t.description ?? '') })),
    compatibility: { platforms: ['darwin', 'linux'], runtimes: { node: pkg.engines.node } },
    user_config: {
      roots: {
        type: 'directory',
        title: 'Project directories',
        description: 'The directories the agent may read and change. Nothing outside them is reachable.',
        multiple: true,
        required: true,
      },
      readonly: {
        type: 'boolean',
        title: 'Read-only',
        description: 'Refuse every change to files and issues.',
        default: false,
      },
      allow_secrets: {
        type: 'boolean',
        title: 'Allow secret files',
        description: 'Let the agent read and write secret files (.env, keys, credentials).',
        default: false,
      },
      mutation_budget: {
        type: 'number',
        title: 'Mutation budget',
        description: 'At most this many changes per session (0: no limit).',
        default: 0,
        min: 0,
      },
    },
  };
}

/**
 * package.json's `repository.url` as a browsable URL (`git+https://…/x.git` → `https://…/x`).
 * @param {Record<string, any>} pkg
 */
function repositoryUrl(pkg) {
  return String(pkg.repository.url).replace(/^git\+/, '').replace(/\.git$/, '');
}

/** @param {string} text */
function firstSentence(text) {
  const end = text.search(/\.(\s|$)/);
  return end === -1 ? text : text.slice(0, end + 1);
}

/** Builds, validates and packs the .mcpb; returns its path. */
function buildMcpb(pkg) {
  // The worker threads' code is embedded in dist/main.js (scripts/worker-bundles.mjs).
  if (!existsSync(`${root}/dist/cli.js`)) throw new Error('dist/cli.js is missing: run npm run build first');
  const listed = spawnSync(process.execPath, [`${root}/dist/cli.js`, 'tools', '--json'], { encoding: 'utf8', cwd: root });
  if (listed.status !== 0) throw new Error(`fs-tools tools --json failed: ${listed.stderr}`);
  const dir = `${root}/build/mcpb`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(`${dir}/server`, { recursive: true });
  for (const f of readdirSync(`${root}/dist`)) {
    // The loader, the program and its code cache (scripts/code-cache.mjs), and the licences.
    if (f.endsWith('.js') || f === 'main.code-cache' || f === 'THIRD-PARTY-LICENSES.txt') {
      copyFileSync(`${root}/dist/${f}`, `${dir}/server/${f}`);
    }
  }
  // dist/cli.js is an ES module, and the program reads its version from ../package.json.
  writeFileSync(`${dir}/package.json`, `${JSON.stringify({ name: pkg.name, version: pkg.version, type: 'module', license: pkg.license }, null, 2)}\n`);
  copyFileSync(`${root}/LICENSE`, `${dir}/LICENSE`);
  writeFileSync(`${dir}/manifest.json`, `${JSON.stringify(mcpbManifest(pkg, JSON.parse(listed.stdout)), null, 2)}\n`);
  const mcpb = `${root}/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js`;
  const validated = spawnSync(process.execPath, [mcpb, 'validate', `${dir}/manifest.json`], { encoding: 'utf8' });
  if (validated.status !== 0) throw new Error(`mcpb validate failed:\n${validated.stdout}${validated.stderr}`);
  const out = `${root}/build/${pkg.name}-${pkg.version}.mcpb`;
  const packed = spawnSync(process.execPath, [mcpb, 'pack', dir, out], { encoding: 'utf8' });
  if (packed.status !== 0) throw new Error(`mcpb pack failed:\n${packed.stdout}${packed.stderr}`);
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const pkg = JSON.parse(readFileSync(`${root}/package.json`, 'utf8'));
  const text = `${JSON.stringify(serverJson(pkg), null, 2)}\n`;
  const current = existsSync(`${root}/server.json`) ? readFileSync(`${root}/server.json`, 'utf8') : '';
  if (process.argv.includes('--check')) {
    if (current !== text) {
      process.stderr.write('server.json differs from what package.json generates: run npm run manifests\n');
      process.exit(1);
    }
  } else if (current !== text) {
    writeFileSync(`${root}/server.json`, text);
  }
  if (process.argv.includes('--mcpb')) process.stdout.write(`${buildMcpb(pkg)}\n`);
}
