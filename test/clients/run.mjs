#!/usr/bin/env node
/**
 * Client compatibility suite (issue #15; `npm run test:clients`, run from .ci/run).
 *
 * Installs EXACT pinned versions of four real MCP clients from the npm registry into a cache directory outside the
 * repository, configures each the way the README's "Clients" section tells users, points the three agent clients
 * at a local fake model on 127.0.0.1 (test/clients/fake-model.mjs) that plays a fixed script of tool calls, and
 * checks what each client hands its model: the content, the facts for the next call (content_hash, range, new
 * hash after an edit), every envelope field on failure, and that no client-injected parameter is rejected. The same
 * script runs against the official filesystem server (@modelcontextprotocol/server-filesystem, a devDependency) and
 * a size table compares the bytes each client hands its model, per result and for the tool declarations. Next to
 * each ratio it prints the bytes of the contract's facts the official server does not give (contractFacts, measured
 * on the recorded output) and the ratio without them, and checks that ratio is at most 1.0 per operation and client.
 * MCP Inspector's CLI checks the default mode (it answers roots/list with []) and --strict schema portability.
 *
 * Environment: FS_TOOLS_CLIENTS_DIR (install cache; default ~/.cache/fs-tools/clients-<pins>),
 * FS_TOOLS_CLIENTS=claude,codex,gemini,inspector (subset), FS_TOOLS_CLIENTS_SIZES_JSON=FILE (write the table),
 * FS_TOOLS_CLIENTS_DUMP=DIR (write what each client handed its model, per client and server, for inspection).
 * Prints "N passed, N failed" last; exits 1 on any failed check.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeModel } from './fake-model.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FS_TOOLS = path.join(REPO, 'dist', 'cli.js');
const OFFICIAL = path.join(REPO, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

/** The clients, pinned exactly (npm registry only). All run on Node 20 (see README "Clients" for engines notes). */
export const PINNED = {
  '@anthropic-ai/claude-code': '2.1.332',
  '@openai/codex': '0.171.0',
  '@google/gemini-cli': '0.61.0',
  '@modelcontextprotocol/inspector': '2.12.0',
};
const RUN_TIMEOUT_MS = 120_000;
/** Clients whose model request carries an image from an MCP tool result (the suite checks the bytes arrive). */
const IMAGE_CLIENTS = new Set(['Claude Code', 'Gemini CLI']);

let passed = 0;
let failed = 0;
const failures = [];
function check(ok, label, detail = '') {
  if (ok) {
    passed++;
    console.log(`  ok   ${label}`);
    return true;
  }
  failed++;
  failures.push(label);
  console.log(`  FAIL ${label}${detail ? `\n       ${String(detail).slice(0, 600).replace(/\n/g, '\n       ')}` : ''}`);
  return false;
}

// ---------------------------------------------------------------- install

function clientsDir() {
  const key = createHash('sha256').update(JSON.stringify(PINNED)).digest('hex').slice(0, 12);
  return process.env.FS_TOOLS_CLIENTS_DIR || path.join(os.homedir(), '.cache', 'fs-tools', `clients-${key}`);
}

function installedVersion(dir, pkg) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
}

function ensureClients(dir) {
  const missing = Object.entries(PINNED).filter(([pkg, v]) => installedVersion(dir, pkg) !== v);
  if (missing.length === 0) return;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'fs-tools-client-suite', private: true, dependencies: PINNED }, null, 2),
  );
  console.log(`installing ${missing.map(([p, v]) => `${p}@${v}`).join(' ')} into ${dir}`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: 'inherit' });
  for (const [pkg, v] of Object.entries(PINNED)) {
    if (installedVersion(dir, pkg) !== v) throw new Error(`${pkg}@${v} did not install`);
  }
}

// ---------------------------------------------------------------- workspace and script

const sha = (b) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** CRC-32 (ISO-HDLC), for the PNG chunks below (zlib.crc32 needs Node 20.15). */
function crc32(buf) {
  let c = ~0;
  for (const byte of buf) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

/** A valid 16x16 RGB PNG (a red-green gradient): the image read_media must bring to each client's model. */
export function smallPng() {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const size = 16;
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  const raw = Buffer.alloc(size * (1 + size * 3));
  for (let y = 0; y < size; y++) {
    raw[y * (1 + size * 3)] = 0; // filter: none
    for (let x = 0; x < size; x++) raw.set([x * 16, y * 16, 128], y * (1 + size * 3) + 1 + x * 3);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A fresh workspace: a 4 KB source file, a 300-line file, 20 search hits, a 200-entry directory, a file to edit. */
function makeWorkspace(base) {
  const ws = fs.mkdtempSync(path.join(base, 'ws-'));
  const src = path.join(ws, 'src');
  fs.mkdirSync(src);
  let module = '// A 4 KB source file for the client suite.\n';
  for (let i = 0; module.length < 4000; i++) {
    module += `export const marker_${String(i).padStart(4, '0')} = "value ${i}"; // item ${i}\n`;
  }
  module = module.slice(0, module.lastIndexOf('\n', 4096) + 1);
  fs.writeFileSync(path.join(src, 'module.ts'), module);
  fs.writeFileSync(
    path.join(src, 'edit.ts'),
    'export function answer(): number {\n  const answer = 41;\n  return answer;\n}\n',
  );
  fs.writeFileSync(
    path.join(ws, 'big.txt'),
    Array.from({ length: 300 }, (_, i) => `line ${String(i + 1).padStart(3, '0')}: the quick brown fox jumps\n`).join(
      '',
    ),
  );
  fs.mkdirSync(path.join(ws, 'search'));
  for (let i = 1; i <= 20; i++)
    fs.writeFileSync(path.join(ws, 'search', `needle-${String(i).padStart(2, '0')}.txt`), `NEEDLE number ${i}\n`);
  fs.mkdirSync(path.join(ws, 'many'));
  for (let i = 1; i <= 200; i++) fs.writeFileSync(path.join(ws, 'many', `f${String(i).padStart(3, '0')}.txt`), '');
  const png = smallPng();
  fs.writeFileSync(path.join(ws, 'pic.png'), png);
  return { ws, module, png, editBefore: fs.readFileSync(path.join(src, 'edit.ts')) };
}

/** The fixed script, per server, with labels for the size table. */
function scriptFor(server, w, { gemini }) {
  const wfp = gemini ? { wait_for_previous: true } : {};
  if (server === 'fs-tools') {
    return [
      { label: 'read 4 KB file', tool: 'read_file', args: { path: 'src/module.ts' } },
      {
        label: 'read 100-line range',
        tool: 'read_file',
        args: { path: 'big.txt', start_line: 101, end_line: 200, ...wfp },
      },
      // fs-tools searches file content here; the official server has no content search, so its row is its name search.
      { label: 'search content, 20 matches', tool: 'search_files', args: { path: 'search', query: 'NEEDLE' } },
      { label: 'list 200 entries', tool: 'list_directory', args: { path: 'many' } },
      {
        label: 'edit',
        tool: 'edit_file',
        args: {
          path: 'src/edit.ts',
          expected_hash: sha(w.editBefore),
          edits: [{ old_text: 'const answer = 41;', new_text: 'const answer = 42;' }],
        },
      },
      { label: 'fail: not found', tool: 'read_file', args: { path: 'missing.txt' }, fail: 'NOT_FOUND' },
      { label: 'fail: outside roots', tool: 'read_file', args: { path: '/etc/hostname' }, fail: 'NOT_ALLOWED' },
      {
        label: 'fail: edit no match',
        tool: 'edit_file',
        args: { path: 'src/edit.ts', edits: [{ old_text: 'no such text here', new_text: 'x' }] },
        fail: 'PATCH_FAILED',
      },
      // The search both servers have: file names matching a glob.
      { label: 'search by name, 20 files', tool: 'search_files', args: { path: 'search', glob: '**/needle-*' } },
      // Last, outside the size table: the image must reach the model (issue #18 acceptance).
      { label: 'read small PNG', tool: 'read_media', args: { path: 'pic.png' }, image: true },
    ];
  }
  const abs = (p) => path.join(w.ws, p);
  return [
    { label: 'read 4 KB file', tool: 'read_text_file', args: { path: abs('src/module.ts') } },
    { label: 'read 100-line range', tool: 'read_text_file', args: { path: abs('big.txt'), head: 100, ...wfp } },
    {
      label: 'search content, 20 matches',
      tool: 'search_files',
      args: { path: abs('search'), pattern: '**/needle-*' },
    },
    { label: 'list 200 entries', tool: 'list_directory', args: { path: abs('many') } },
    {
      label: 'edit',
      tool: 'edit_file',
      args: { path: abs('src/edit.ts'), edits: [{ oldText: 'const answer = 41;', newText: 'const answer = 42;' }] },
    },
    { label: 'fail: not found', tool: 'read_text_file', args: { path: abs('missing.txt') }, fail: true },
    { label: 'fail: outside roots', tool: 'read_text_file', args: { path: '/etc/hostname' }, fail: true },
    {
      label: 'fail: edit no match',
      tool: 'edit_file',
      args: { path: abs('src/edit.ts'), edits: [{ oldText: 'no such text here', newText: 'x' }] },
      fail: true,
    },
    { label: 'search by name, 20 files', tool: 'search_files', args: { path: abs('search'), pattern: '**/needle-*' } },
    { label: 'read small PNG', tool: 'read_media_file', args: { path: abs('pic.png') }, image: true },
  ];
}

// ---------------------------------------------------------------- clients

/** Writes each client's configuration as the README says, and returns how to run it. */
const CLIENTS = {
  claude: {
    name: 'Claude Code',
    setup({ home, ws, serverCmd, fakeUrl, binDir }) {
      // README: `claude mcp add NAME -- node …/dist/cli.js ROOT` (local scope: this project, in HOME/.claude.json).
      // Once per HOME (a retry reuses it); stdout must be a pipe (with it ignored, `claude mcp add` did not return).
      const added =
        fs.existsSync(path.join(home, '.claude.json')) &&
        fs.readFileSync(path.join(home, '.claude.json'), 'utf8').includes('"fs"');
      if (!added) {
        execFileSync(path.join(binDir, 'claude'), ['mcp', 'add', 'fs', '--', ...serverCmd], {
          cwd: ws,
          env: { PATH: process.env.PATH, HOME: home },
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: 60_000,
        });
      }
      return {
        bin: 'claude',
        args: [
          '-p',
          'Run the script.',
          '--allowedTools',
          'mcp__fs',
          '--model',
          'claude-opus-4-5',
          '--output-format',
          'text',
        ],
        // ENABLE_TOOL_SEARCH=false: 2.1 otherwise defers MCP tools behind ToolSearch, and a scripted model cannot search.
        env: {
          ANTHROPIC_API_KEY: 'fake-key',
          ANTHROPIC_BASE_URL: fakeUrl,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_AUTOUPDATER: '1',
          ENABLE_TOOL_SEARCH: 'false',
        },
        cwd: ws,
      };
    },
    /** Claude Code appends its own reminders to a tool result; they are the client's, not the server's bytes. */
    clean: (t) => t.replace(/\n*<system-reminder>[\s\S]*?<\/system-reminder>\s*$/g, ''),
  },
  codex: {
    name: 'Codex CLI',
    setup({ home, ws, serverCmd, fakeUrl }) {
      const codexHome = path.join(home, '.codex');
      fs.mkdirSync(codexHome, { recursive: true });
      // README: [mcp_servers.fs] in ~/.codex/config.toml. The model provider points at the fake (Responses API).
      fs.writeFileSync(
        path.join(codexHome, 'config.toml'),
        [
          'model = "gpt-5-codex"',
          'model_provider = "fake"',
          '[model_providers.fake]',
          'name = "fake"',
          `base_url = "${fakeUrl}/v1"`,
          'wire_api = "responses"',
          'env_key = "FAKE_OPENAI_KEY"',
          '[mcp_servers.fs]',
          `command = ${JSON.stringify(serverCmd[0])}`,
          `args = ${JSON.stringify(serverCmd.slice(1))}`,
          '',
        ].join('\n'),
      );
      return {
        bin: 'codex',
        args: ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', 'Run the script.'],
        env: { CODEX_HOME: codexHome, FAKE_OPENAI_KEY: 'fake-key' },
        cwd: ws,
      };
    },
    /** Codex prefixes each result with its own wall-time line. */
    clean: (t) => t.replace(/^Wall time: [\d.]+ seconds\nOutput:\n?/, ''),
  },
  gemini: {
    name: 'Gemini CLI',
    setup({ home, ws, serverCmd, fakeUrl }) {
      const dir = path.join(home, '.gemini');
      fs.mkdirSync(dir, { recursive: true });
      // README: mcpServers in ~/.gemini/settings.json; the project folder must be trusted (or folder trust off) or
      // Gemini CLI does not start workspace MCP servers. trust: true skips per-call confirmation (as --yolo does).
      fs.writeFileSync(
        path.join(dir, 'settings.json'),
        JSON.stringify({
          mcpServers: { fs: { command: serverCmd[0], args: serverCmd.slice(1), trust: true } },
          security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
        }),
      );
      return {
        bin: 'gemini',
        args: ['-p', 'Run the script.', '--approval-mode', 'yolo', '-m', 'gemini-2.5-flash'],
        env: { GEMINI_API_KEY: 'fake-key', GOOGLE_GEMINI_BASE_URL: fakeUrl, NO_COLOR: '1' },
        cwd: ws,
      };
    },
    /** Gemini CLI wraps each text block in <untrusted_context> tags: kept, they are what its model sees. */
    clean: (t) => t,
  },
};

async function runClient(clientKey, server, dir, base) {
  const client = CLIENTS[clientKey];
  const w = makeWorkspace(base);
  const script = scriptFor(server, w, { gemini: clientKey === 'gemini' });
  const home = fs.mkdtempSync(path.join(base, `home-${clientKey}-`));
  const serverCmd = server === 'fs-tools' ? [process.execPath, FS_TOOLS, w.ws] : [process.execPath, OFFICIAL, w.ws];
  let attempt = 0;
  for (;;) {
    attempt++;
    const fake = await startFakeModel(script.map(({ tool, args }) => ({ tool, args })));
    const run = client.setup({
      home,
      ws: w.ws,
      serverCmd,
      fakeUrl: fake.url,
      binDir: path.join(dir, 'node_modules', '.bin'),
    });
    const bin = path.join(dir, 'node_modules', '.bin', run.bin);
    const output = await new Promise((resolve) => {
      const child = spawn(bin, run.args, {
        cwd: run.cwd,
        env: { PATH: process.env.PATH, HOME: home, TMPDIR: os.tmpdir(), CI: '1', TERM: 'dumb', ...run.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        out += d;
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, out });
      });
    });
    await fake.close();
    const st = fake.state;
    // A client that sent its first request before the MCP server had listed its tools ends the turn at once (seen under
    // load); up to two retries.
    if ((!st.declarations || st.declarations === 'pending') && attempt < 3) continue;
    const results = script.map((s, i) => {
      const r = st.results[i];
      return r ? { ...r, text: client.clean(r.text) } : null;
    });
    // The server instructions (paths relative to the first root, booleans default to false, how to read an
    // envelope) must reach the model: the declarations rely on them.
    const instructionsSeen = (st.bodies ?? []).some((b) => JSON.stringify(b).includes('booleans default to false'));
    // Whether the PNG reached the model AS AN IMAGE (base64 inside a JSON text does not count: a model cannot see it).
    const imageSeen = (st.bodies ?? []).some((b) => hasImagePart(b, w.png.toString('base64')));
    return {
      script,
      results,
      imageSeen,
      declarations: Array.isArray(st.declarations) ? st.declarations : [],
      output: output.out,
      code: output.code,
      log: st.log,
      w,
      calls: st.calls,
      instructionsSeen,
    };
  }
}

// ---------------------------------------------------------------- checks

/**
 * True when a model request holds an image part with exactly these base64 bytes, in any of the three wire formats:
 * Anthropic `{type: "image", source: {data}}`, Gemini `{inlineData: {data}}`, OpenAI Responses
 * `{type: "input_image", image_url: "data:…;base64,…"}`.
 */
function hasImagePart(node, b64) {
  if (Array.isArray(node)) return node.some((n) => hasImagePart(n, b64));
  if (!node || typeof node !== 'object') return false;
  if (node.type === 'image' && node.source?.data === b64) return true;
  if (node.inlineData?.data === b64) return true;
  if (node.type === 'input_image' && String(node.image_url ?? '').endsWith(`,${b64}`)) return true;
  return Object.values(node).some((v) => hasImagePart(v, b64));
}

/** The first JSON object starting at `{"error":{` in a text (raw or once-escaped). */
function findEnvelope(text) {
  for (const candidate of [text, text.replace(/\\"/g, '"').replace(/\\\\/g, '\\')]) {
    let at = candidate.indexOf('{"error":{');
    while (at >= 0) {
      let depth = 0;
      let inString = false;
      for (let i = at; i < candidate.length; i++) {
        const c = candidate[i];
        if (inString) {
          if (c === '\\') i++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === '{') depth++;
        else if (c === '}' && --depth === 0) {
          try {
            return JSON.parse(candidate.slice(at, i + 1));
          } catch {
            break;
          }
        }
      }
      at = candidate.indexOf('{"error":{', at + 1);
    }
  }
  return null;
}

function checkFsToolsRun(clientName, run) {
  const { results, w } = run;
  const t = (i) => results[i]?.text ?? '';
  check(
    results.every(Boolean),
    `${clientName}: every scripted call reached the model (${results.filter(Boolean).length}/${results.length})`,
    `${run.output.slice(-800)}\n${run.log.slice(-5).join('\n')}`,
  );
  const esc = (s) => JSON.stringify(s).slice(1, -1);
  const has = (i, s) => t(i).includes(s) || t(i).includes(esc(s));
  // 1. content and hash of a whole read
  check(
    has(0, w.module.split('\n')[20]) && has(0, w.module.split('\n').at(-2)),
    `${clientName}: read shows the file content`,
    t(0).slice(0, 300),
  );
  check(t(0).includes(sha(w.module)), `${clientName}: read shows content_hash`, t(0).slice(-300));
  // 2. range: lines 101-200 only, with the range facts and the whole file's hash
  const big = fs.readFileSync(path.join(w.ws, 'big.txt'));
  check(
    has(1, 'line 150: the quick') && !has(1, 'line 201:') && !has(1, 'line 100:'),
    `${clientName}: range shows exactly lines 101-200`,
    t(1).slice(0, 200),
  );
  check(
    /lines 101-200 of 300|"start_line":101,"end_line":200/.test(t(1)),
    `${clientName}: range facts (lines 101-200 of 300)`,
    t(1).slice(-300),
  );
  check(t(1).includes(sha(big)), `${clientName}: range shows the whole file's content_hash`);
  check(
    !/Unknown parameter|unknown_parameter/.test(t(1)),
    `${clientName}: no client-injected parameter rejected`,
    t(1).slice(0, 300),
  );
  // 3. search: 20 matches
  check(
    (t(2).match(/NEEDLE number \d+/g) ?? []).length >= 20,
    `${clientName}: search shows 20 matches`,
    t(2).slice(0, 300),
  );
  // 4. listing: 200 entries
  check(
    has(3, 'f001.txt') && has(3, 'f200.txt') && (t(3).match(/f\d{3}\.txt/g) ?? []).length >= 200,
    `${clientName}: listing shows 200 entries`,
  );
  // 5. edit: the new hash of what is on disk
  const after = fs.readFileSync(path.join(w.ws, 'src', 'edit.ts'));
  check(after.toString().includes('const answer = 42;'), `${clientName}: edit applied on disk`);
  check(t(4).includes(sha(after)), `${clientName}: edit shows the new content_hash`, t(4).slice(0, 300));
  // 6-8. failures: every envelope field
  for (let i = 5; i < 8; i++) {
    const step = run.script[i];
    const env = findEnvelope(t(i));
    const e = env?.error;
    const fields =
      e &&
      typeof e.code === 'string' &&
      typeof e.message === 'string' &&
      'path' in e &&
      typeof e.details === 'object' &&
      typeof e.suggestion === 'string' &&
      e.suggestion.length > 0 &&
      typeof e.retryable === 'boolean' &&
      typeof e.recovery === 'string';
    check(
      Boolean(fields) && e.code === step.fail,
      `${clientName}: ${step.label} shows the whole envelope (${step.fail})`,
      t(i).slice(0, 500),
    );
  }
  check(
    !results.some((r) => r && /Structured content does not match|-32602/.test(r.text)),
    `${clientName}: no -32602 output-schema rejection`,
  );
  check(run.instructionsSeen, `${clientName}: the server instructions reach the model (path and default conventions)`);
  // 9. search by name: the 20 file names
  const byName = run.script.findIndex((s) => s.label === 'search by name, 20 files');
  check(
    new Set(t(byName).match(/needle-\d\d\.txt/g) ?? []).size === 20,
    `${clientName}: search by name shows the 20 files`,
    t(byName).slice(0, 300),
  );
  // 10. read_media: the image itself (base64) in the model request, in each client whose model request can carry an
  // image from a tool result (README "Clients" says which can).
  if (IMAGE_CLIENTS.has(clientName)) {
    check(run.imageSeen, `${clientName}: read_media's image (base64 PNG) reaches the model`);
  } else {
    // Codex hands its model JSON.stringify(structuredContent) when a result has one (SPEC §2: every success has
    // one), so the image block is dropped; the model still gets the facts. If this starts failing, Codex passes
    // images now: move it to IMAGE_CLIENTS and update the README.
    const w = run.w;
    const media = run.script.findIndex((s) => s.image);
    check(
      !run.imageSeen && t(media).includes(sha(w.png)),
      `${clientName}: read_media's facts (content_hash) reach the model; the image does not (README "Clients")`,
      t(media).slice(0, 300),
    );
  }
}

// ---------------------------------------------------------------- bad roots through Claude Code

/**
 * A root the way a user writes it in a client configuration: `claude mcp add fs -- node …/dist/cli.js ~/proj ~/typo`
 * (Claude Code starts the server with no shell, so fs-tools expands `~/` itself, and `~/typo` does not exist). The
 * server must connect (it used to exit 2, and Claude Code showed only "Failed to connect"), serve `~/proj`, and the
 * model's list_allowed_directories result must name the missing root and why (docs/security.md "Roots").
 */
async function runClaudeBadRoots(dir, base) {
  const home = fs.mkdtempSync(path.join(base, 'home-bad-roots-'));
  const proj = path.join(home, 'proj');
  fs.mkdirSync(proj);
  const env = { PATH: process.env.PATH, HOME: home };
  const bin = path.join(dir, 'node_modules', '.bin', 'claude');
  execFileSync(bin, ['mcp', 'add', 'fs', '--', process.execPath, FS_TOOLS, '~/proj', '~/typo'], {
    cwd: proj,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  const health = execFileSync(bin, ['mcp', 'list'], { cwd: proj, env, encoding: 'utf8', timeout: 60_000 });
  check(
    /fs: .*~\/typo.*Connected/.test(health),
    'Claude Code: a server with `~/proj ~/typo` in its args connects',
    health,
  );
  let seen = null;
  for (let attempt = 1; attempt <= 3 && !seen; attempt++) {
    const fake = await startFakeModel([{ tool: 'list_allowed_directories', args: {} }]);
    const run = CLIENTS.claude.setup({ home, ws: proj, serverCmd: [], fakeUrl: fake.url, binDir: path.dirname(bin) });
    await new Promise((resolve) => {
      const child = spawn(bin, run.args, {
        cwd: proj,
        env: { ...env, TMPDIR: os.tmpdir(), CI: '1', TERM: 'dumb', ...run.env },
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
      child.on('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await fake.close();
    // A first model request sent before the MCP server listed its tools ends the turn at once (as above): retry.
    seen = fake.state.results[0]?.text ?? null;
  }
  const structured = parseFirstJson(seen ?? '');
  check(
    structured?.roots?.[0]?.path === proj &&
      structured?.rejected_roots?.[0]?.root === path.join(home, 'typo') &&
      structured?.rejected_roots?.[0]?.reason === 'missing',
    "Claude Code: the model's list_allowed_directories names `~/proj` as the root and `~/typo` as missing",
    seen ?? 'no result reached the model',
  );
}

/** The tool's JSON at the start of `text` (Claude Code appends its `<system-reminder>` blocks after it), or null. */
function parseFirstJson(text) {
  try {
    return JSON.parse(text.split(/\n*<system-reminder>/)[0].trim());
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- inspector

function runInspector(dir, base) {
  const w = makeWorkspace(base);
  const bin = path.join(dir, 'node_modules', '.bin', 'inspector');
  const run = (args) => {
    try {
      const stdout = execFileSync(bin, ['--cli', process.execPath, FS_TOOLS, w.ws, ...args], {
        cwd: w.ws,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 60_000,
        env: { ...process.env, CI: '1' },
      });
      return { code: 0, stdout, stderr: '' };
    } catch (error) {
      return { code: error.status ?? -1, stdout: String(error.stdout ?? ''), stderr: String(error.stderr ?? '') };
    }
  };
  const read = run(['--method', 'tools/call', '--tool-name', 'read_file', '--tool-arg', 'path=src/module.ts']);
  check(
    read.code === 0 && read.stdout.includes(sha(w.module)) && !read.stdout.includes('ROOTS_EMPTY'),
    'Inspector (default mode, roots/list answered []): read_file under the command-line root works',
    `${read.stdout.slice(0, 400)} ${read.stderr.slice(0, 400)}`,
  );
  const dirs = run(['--method', 'tools/call', '--tool-name', 'list_allowed_directories']);
  check(
    dirs.stdout.includes('client_offered_none') || dirs.stdout.includes('"command_line"'),
    'Inspector: list_allowed_directories says which rule kept the command-line root',
    dirs.stdout.slice(0, 600),
  );
  const strict = run(['--method', 'tools/list', '--strict']);
  check(
    strict.code === 0 && !/Warning:|Error:/.test(strict.stderr),
    'Inspector --strict: no schema portability finding',
    strict.stderr.slice(0, 800),
  );
  const official = (() => {
    try {
      execFileSync(bin, ['--cli', process.execPath, OFFICIAL, w.ws, '--method', 'tools/list', '--strict'], {
        cwd: w.ws,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 60_000,
      });
      return 'clean';
    } catch (error) {
      return (
        String(error.stderr ?? '')
          .split('\n')
          .filter((l) => /warnings?|errors?/.test(l))
          .at(-1) ?? 'findings'
      );
    }
  })();
  console.log(`  (official server under --strict: ${official})`);
}

// ---------------------------------------------------------------- sizes

function bytes(s) {
  return Buffer.byteLength(s ?? '', 'utf8');
}

/** Per-tool bytes of the declarations a client sends its model: name, description and input schema. */
function declarationBytes(decls) {
  if (!decls.length) return null;
  const total = decls.reduce(
    (n, d) =>
      n +
      bytes(
        JSON.stringify({
          name: d.name,
          description: d.description ?? '',
          parameters: d.input_schema ?? d.parameters ?? d.parametersJsonSchema ?? d.parameters_json_schema ?? {},
        }),
      ),
    0,
  );
  return { tools: decls.length, total, perTool: Math.round(total / decls.length) };
}

// ---------------------------------------------------------------- the floor: the contract's facts

/**
 * Result members the contract requires that the official server's results do not carry, per fs-tools tool (SPEC §6's
 * result column). Members the official server gives an equivalent of (read's `content`, edit's `diff`, listing and
 * search paths) are not in these lists: their bytes stay on fs-tools' side of the comparison.
 */
const CONTRACT_MEMBERS = {
  read_file: ['content_hash', 'size', 'total_lines', 'range', 'truncated', 'continuation', 'eol', 'bom', 'encoding'],
  search_files: ['files_scanned', 'files_matched', 'skipped', 'truncated', 'next_cursor'],
  list_directory: ['truncated', 'next_cursor'],
  edit_file: ['previous_hash', 'content_hash', 'replacements'],
};
/** Per-match members of search_files (SPEC §6: path, line, column, text, context); `path` the official gives too. */
const CONTRACT_MATCH_MEMBERS = ['line', 'column', 'text', 'before', 'after'];
/**
 * `details` members the SPEC requires per code (§3.1 PATCH_FAILED, §6.2 the failing edit's index, §5 HASH_REQUIRED,
 * §7 STALE_GIT, §6.1/§6.2 VALIDATION reasons). Other details (NOT_FOUND's `near`, NOT_ALLOWED's `reason` and `roots`)
 * are fs-tools' own choices and count against it.
 */
const CONTRACT_DETAILS = {
  PATCH_FAILED: ['reason', 'edit_index', 'hunk', 'hunks', 'expected', 'nearest', 'candidates', 'current_hash'],
  HASH_REQUIRED: ['current_hash'],
  STALE_GIT: ['current_status_hash'],
  VALIDATION: ['reason'],
  IO_ERROR: ['errno'],
};
/** Items of the text facts line (src/tools/read-file.ts factsNote) and what SPEC §6 read_file fact each one is. */
const TEXT_FACT_ITEMS = [
  /^content_hash sha256:[0-9a-f]{64}$/,
  /^lines \d+-\d+ of \d+$/,
  /^bytes \d+-\d+ of \d+$/,
  /^eol (crlf|mixed|none)$/,
  /^bom$/,
  /^base64$/,
  /^truncated, continue with (start_line|offset): \d+$/,
];

/** A JSON string escaped once more, as it appears inside another JSON string (Gemini's error text). */
const escOnce = (s) => JSON.stringify(s).slice(1, -1);
/** Occurrences of `needle` in `text`. */
function occurrences(text, needle) {
  let n = 0;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) n++;
  return n;
}

/**
 * Bytes of one JSON member `"key":value` as it appears in `text`, with the comma that separates it from its
 * neighbour, in every copy (plain and, inside Gemini's error text, escaped once). `keep` is a part of the member, as
 * it is spelled in plain JSON (a value the official server gives too), whose bytes stay on fs-tools' side.
 */
function memberBytes(text, key, value, keep = '') {
  const member = `"${key}":${JSON.stringify(value)}`;
  let total = 0;
  for (const esc of [(x) => x, escOnce]) {
    for (const form of [`,${member}`, `${member},`, member]) {
      const n = occurrences(text, esc(form));
      if (n > 0) {
        total += n * (bytes(esc(form)) - bytes(esc(keep)));
        break;
      }
    }
  }
  return total;
}

/**
 * The contract's facts in one fs-tools result that the official server's result for the same step does not give,
 * measured on the recorded text exactly as the client handed it to its model: `[{fact, bytes}]`.
 *   - Envelope: Gemini shows the text and, parsed from it, the same envelope again as structuredContent; that second
 *     copy exists only because seeds/001 makes the text JSON (the official server's plain text is not parsed), so it
 *     counts whole. In the envelope itself: the seeds/001 framing `{"error":{…}}` and every required member with its value (SPEC §3: code, path, details, suggestion,
 *     retryable, recovery), except what the official server's text also says — its message stands for ours (only
 *     `"message":""` is counted), and a `path` the official text names too counts only its member name; inside
 *     `details` only the members the SPEC requires for that code (CONTRACT_DETAILS).
 *   - JSON results (Claude Code, Codex): the members of CONTRACT_MEMBERS with their values; per search match
 *     line/column/text; a range's final line terminator when the official content drops it (SPEC §6.1: lossless).
 *   - Text results (Gemini CLI): the facts line after a read when every item is a SPEC §6 read fact (the line and
 *     the client's wrapper around that block: it exists only to carry them), else its contract items alone; a
 *     write's `content_hash …` and replacement count; a search's summary (files matched and scanned); the final
 *     line terminator as above.
 */
export function contractFacts(tool, text, officialText, { ws, officialWs }) {
  const facts = [];
  const add = (fact, n) => {
    if (n > 0) facts.push({ fact, bytes: n });
  };
  const norm = (t, dir) => t.split(dir).join('<WS>');
  const official = norm(officialText ?? '', officialWs);
  let envelope = findEnvelope(text)?.error;
  if (envelope) {
    // Gemini CLI parses the JSON text of an error result (the envelope, as seeds/001 requires) and shows that parse
    // again as structuredContent: a second copy that exists only because the contract's text is JSON.
    const parsedCopy = `,"structuredContent":${JSON.stringify({ error: envelope })}`;
    if (text.includes(parsedCopy)) {
      add("Gemini's parsed copy of the envelope", bytes(parsedCopy));
      text = text.replace(parsedCopy, '');
      envelope = findEnvelope(text)?.error ?? envelope;
    }
    const copies = occurrences(text, '{"error":{') + occurrences(text, escOnce('{"error":{'));
    const framing = occurrences(text, '{"error":{') * 12 + occurrences(text, escOnce('{"error":{')) * 16;
    add(`envelope framing {"error":{…}} x${copies}`, framing);
    for (const key of ['code', 'suggestion', 'retryable', 'recovery']) {
      if (key in envelope) add(key, memberBytes(text, key, envelope[key]));
    }
    const spelled = (v) => JSON.stringify(v).slice(1, -1);
    add('"message" member name', memberBytes(text, 'message', envelope.message, spelled(envelope.message)));
    if (envelope.path !== null && official.includes(norm(envelope.path, ws))) {
      add('"path" member name', memberBytes(text, 'path', envelope.path, spelled(envelope.path)));
    } else add('path', memberBytes(text, 'path', envelope.path));
    const wanted = CONTRACT_DETAILS[envelope.code] ?? [];
    const details = envelope.details ?? {};
    const extra = Object.fromEntries(Object.entries(details).filter(([k]) => !wanted.includes(k)));
    // The details member minus its non-contract members (which stay on fs-tools' side).
    add(
      `details {${Object.keys(details)
        .filter((k) => wanted.includes(k))
        .join(', ')}}`,
      memberBytes(text, 'details', details, JSON.stringify(extra).slice(1, -1)),
    );
    for (const key of ['expected_hash', 'current_hash', 'conflict']) {
      if (key in envelope) add(key, memberBytes(text, key, envelope[key]));
    }
    return facts;
  }
  let parsed = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // a text result
  }
  if (parsed && typeof parsed === 'object') {
    for (const key of CONTRACT_MEMBERS[tool] ?? []) {
      if (key in parsed) add(key, memberBytes(text, key, parsed[key]));
    }
    if (tool === 'search_files') {
      let n = 0;
      for (const m of parsed.matches ?? []) {
        for (const key of CONTRACT_MATCH_MEMBERS) if (key in m) n += bytes(`,"${key}":${JSON.stringify(m[key])}`);
      }
      add('matches: line, column, text', n);
    }
    if (tool === 'read_file') {
      let theirs = null;
      try {
        theirs = JSON.parse(officialText).content;
      } catch {
        // not JSON
      }
      if (typeof parsed.content === 'string' && parsed.content.endsWith('\n') && theirs && !theirs.endsWith('\n')) {
        add('final line terminator (SPEC §6.1 lossless range)', bytes(escOnce('\n')));
      }
    }
    return facts;
  }
  // Text (Gemini CLI).
  const block = /\n<untrusted_context>\n\[fs-tools: ([^\]\n]*)\]\n<\/untrusted_context>/.exec(text);
  if (block) {
    const items = block[1].split('; ');
    if (items.every((i) => TEXT_FACT_ITEMS.some((re) => re.test(i))))
      add(`facts block (${items.length} items)`, bytes(block[0]));
    else for (const i of items) if (TEXT_FACT_ITEMS.some((re) => re.test(i))) add(i.split(' ')[0], bytes(`${i}; `));
    if (
      /\n\n<\/untrusted_context>/.test(text.slice(0, block.index + 1)) &&
      !/\n\n<\/untrusted_context>/.test(officialText)
    ) {
      add('final line terminator (SPEC §6.1 lossless range)', 1);
    }
  }
  if (tool === 'edit_file') {
    add('content_hash', bytes(/; content_hash sha256:[0-9a-f]{64}/.exec(text)?.[0] ?? ''));
    add('replacements', bytes(/\d+ replacement\(s\)/.exec(text)?.[0] ?? ''));
  }
  if (tool === 'search_files')
    add('files matched and scanned', bytes(/\n\[\d+ match(es)? in \d+ files?, \d+ scanned\]/.exec(text)?.[0] ?? ''));
  return facts;
}

function sizeTable(rows) {
  const lines = [];
  lines.push('');
  lines.push(
    'Bytes each client hands its model (fs-tools vs official filesystem server, same script); "facts": bytes of',
  );
  lines.push("the contract's facts the official server does not give; floor: (fs-tools - facts) / official");
  const clients = [...new Set(rows.map((r) => r.client))];
  const header = ['operation', ...clients.flatMap((c) => [`${c} fs-tools`, 'official', 'ratio', 'facts', 'floor'])];
  const table = [header];
  const labels = rows[0]?.labels ?? [];
  for (const [i, label] of labels.entries()) {
    const row = [label];
    for (const c of clients) {
      const mine = rows.find((r) => r.client === c && r.server === 'fs-tools');
      const theirs = rows.find((r) => r.client === c && r.server === 'official');
      const a = mine?.sizes[i];
      const b = theirs?.sizes[i];
      const f = mine?.facts?.[i];
      row.push(
        a ?? '-',
        b ?? '-',
        a && b ? (a / b).toFixed(2) : '-',
        f ? f.bytes : '-',
        a && b && f ? ((a - f.bytes) / b).toFixed(2) : '-',
      );
    }
    table.push(row);
  }
  const decl = ['declarations / tool'];
  for (const c of clients) {
    const a = rows.find((r) => r.client === c && r.server === 'fs-tools')?.decl;
    const b = rows.find((r) => r.client === c && r.server === 'official')?.decl;
    decl.push(
      a ? `${a.perTool} (${a.tools})` : '-',
      b ? `${b.perTool} (${b.tools})` : '-',
      a && b ? (a.perTool / b.perTool).toFixed(2) : '-',
      '',
      '',
    );
  }
  table.push(decl);
  const widths = table[0].map((_, col) => Math.max(...table.map((r) => String(r[col]).length)));
  for (const r of table)
    lines.push(
      r
        .map((v, col) =>
          String(v)
            .padStart(col ? widths[col] : 0)
            .padEnd(col ? 0 : widths[col]),
        )
        .join('  '),
    );
  return lines.join('\n');
}

/**
 * Computes each fs-tools row's contract facts against the official row of the same client and asserts the floor:
 * without the contract's facts, fs-tools hands the model at most what the official server does, per operation.
 */
function checkFloor(rows) {
  for (const mine of rows.filter((r) => r.server === 'fs-tools')) {
    const theirs = rows.find((r) => r.client === mine.client && r.server === 'official');
    if (!theirs) continue;
    mine.facts = mine.labels.map((label, i) => {
      const list = contractFacts(mine.tools[i], mine.texts[i] ?? '', theirs.texts[i] ?? '', {
        ws: mine.ws,
        officialWs: theirs.ws,
      });
      return { bytes: list.reduce((n, f) => n + f.bytes, 0), list };
    });
    for (const [i, label] of mine.labels.entries()) {
      const a = mine.sizes[i];
      const b = theirs.sizes[i];
      if (!a || !b) continue;
      const f = mine.facts[i];
      const ok = check(
        a - f.bytes <= b,
        `${mine.client}: ${label}: without the contract's facts (${f.bytes} bytes) at most the official size ` +
          `(${a - f.bytes} <= ${b})`,
        f.list.map((x) => `${x.fact}: ${x.bytes}`).join('; '),
      );
      if (ok) console.log(`       facts: ${f.list.map((x) => `${x.fact} ${x.bytes}`).join('; ') || 'none'}`);
    }
    // Issue #15: the declarations the client hands its model weigh at most 1.5x the official server's per tool, in
    // each client (exact totals, not the rounded per-tool figures of the table).
    const a = mine.decl;
    const b = theirs.decl;
    if (a && b) {
      const ratio = a.total / a.tools / (b.total / b.tools);
      check(
        ratio <= 1.5,
        `${mine.client}: declarations at most 1.5x the official server's per tool (${ratio.toFixed(3)})`,
        `${a.total} B / ${a.tools} tools vs ${b.total} B / ${b.tools} tools`,
      );
    }
  }
}

// ---------------------------------------------------------------- main

async function main() {
  if (!fs.existsSync(FS_TOOLS)) throw new Error('dist/cli.js missing: run npm run build first');
  const only = (process.env.FS_TOOLS_CLIENTS ?? 'claude,codex,gemini,inspector').split(',').map((s) => s.trim());
  const dir = clientsDir();
  ensureClients(dir);
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'fs-tools-clients-'));
  const rows = [];
  try {
    for (const key of ['claude', 'codex', 'gemini']) {
      if (!only.includes(key)) continue;
      const name = CLIENTS[key].name;
      console.log(
        `\n${name} ${PINNED[{ claude: '@anthropic-ai/claude-code', codex: '@openai/codex', gemini: '@google/gemini-cli' }[key]]}`,
      );
      for (const server of ['fs-tools', 'official']) {
        const started = Date.now();
        const run = await runClient(key, server, dir, base);
        console.log(
          `  (${server}: ${((Date.now() - started) / 1000).toFixed(1)} s, ${run.results.filter(Boolean).length}/${run.script.length} results)`,
        );
        if (server === 'fs-tools') checkFsToolsRun(name, run);
        else
          check(
            run.results.every(Boolean),
            `${name}: the official server ran the same script (${run.results.filter(Boolean).length}/${run.script.length})`,
            run.output.slice(-500),
          );
        if (server === 'official') console.log(`  (official: image reached the model: ${run.imageSeen})`);
        const sized = run.script.map((s, i) => ({ s, r: run.results[i] })).filter(({ s }) => !s.image);
        rows.push({
          client: name,
          server,
          labels: sized.map(({ s }) => s.label),
          sizes: sized.map(({ r }) => (r ? bytes(r.text) : null)),
          texts: sized.map(({ r }) => r?.text ?? null),
          tools: sized.map(({ s }) => s.tool),
          ws: run.w.ws,
          decl: declarationBytes(run.declarations),
        });
        if (process.env.FS_TOOLS_CLIENTS_DUMP) {
          fs.mkdirSync(process.env.FS_TOOLS_CLIENTS_DUMP, { recursive: true });
          fs.writeFileSync(
            path.join(process.env.FS_TOOLS_CLIENTS_DUMP, `${key}-${server}.json`),
            JSON.stringify({ results: run.results, declarations: run.declarations }, null, 2),
          );
        }
      }
    }
    if (only.includes('claude')) {
      console.log('\nClaude Code, bad roots');
      await runClaudeBadRoots(dir, base);
    }
    if (only.includes('inspector')) {
      console.log(`\nMCP Inspector ${PINNED['@modelcontextprotocol/inspector']}`);
      runInspector(dir, base);
    }
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
  if (rows.length) {
    console.log("\nThe floor (fs-tools without the contract's facts <= the official server, per operation and client)");
    checkFloor(rows);
    console.log(sizeTable(rows));
    if (process.env.FS_TOOLS_CLIENTS_SIZES_JSON)
      fs.writeFileSync(process.env.FS_TOOLS_CLIENTS_SIZES_JSON, JSON.stringify(rows, null, 2));
  }
  console.log('');
  if (failures.length) console.log(`failed: ${failures.join('; ')}`);
  console.log(`clients: ${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

main().catch((error) => {
  console.error(error.stack ?? String(error));
  console.log(`clients: ${passed} passed, ${failed + 1} failed`);
  process.exitCode = 1;
});
