/**
 * Recovery benchmark (issue 21): can an agent act on fs-tools' error envelope alone?
 *
 * A scripted agent meets ~120 realistic failures, each a real tools/call against a fixture tree this script builds,
 * over one MCP stdio session (the SDK client in node_modules; a second, --readonly session only for the READONLY
 * cases). The agent's policy is generic per code and per structured field — it reads ONLY `code`, `path`, `details`,
 * `retryable`, `recovery` and the OCC fields (`expected_hash`, `current_hash`, `conflict`), never `message` or
 * `suggestion` — and it does not know the answer in advance: it knows its intent (the line it wants to change, the
 * file it wants to read, whether replacing a destination is acceptable), as a model does, and it learns the rest only
 * from envelopes or from the read calls it chooses to make (read_file, list_directory, git_status, stat).
 *
 * Per case: recovered (goal state reached, or stopped when stopping is right), envelope-only (recovered without any
 * information-gathering call), extra calls (calls after the failing one), misleading (the agent followed a structured
 * hint and it led to a wrong state, a call succeeded with a wrong result, or a must-stop envelope said retryable).
 *
 * Usage: node bench/recovery.mjs [--json] (needs dist/cli.js: `npm run bench:recovery` builds it first).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const MAX_EXTRA_CALLS = 6;
const STOP_CODES = new Set(['SECRET_DENIED', 'READONLY', 'FILE_POLICY_DENIED', 'BUDGET_EXCEEDED', 'ROOTS_EMPTY',
  'TOOL_UNAVAILABLE', 'REWRITE_BLOCKED', 'ROLLBACK_PARTIAL', 'ROLLBACK_FAILED', 'INTERNAL']);
const INFO_TOOLS = new Set(['read_file', 'list_directory', 'git_status', 'stat', 'search_files', 'list_allowed_directories']);

// ---------- fixture ----------
const TMP = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-recovery-')));
const ROOT = path.join(TMP, 'root');
mkdirSync(ROOT);
const sh = (cmd, args, cwd = ROOT) => execFileSync(cmd, args, { cwd, stdio: 'pipe' }).toString();

/** A small Python module, varied by `n` so that no two cases share content. */
function module(n) {
  return [
    `import os  # module ${n}`, '',
    `def load_${n}():`, `    timeout = ${10 + n}`, `    retries = ${n % 5 + 1}`, '    return timeout', '',
    `def save_${n}():`, `    path = "out_${n}.txt"`, '    mode = "w"', '    return path', '',
    `def run_${n}():`, `    load_${n}()`, `    save_${n}()`, '    return 0', '',
  ].join('\n');
}
function put(rel, text) {
  const abs = path.join(ROOT, rel);
  mkdirSync(path.dirname(abs), { recursive: true });
  writeFileSync(abs, text);
  return abs;
}
const read = (abs) => readFileSync(abs, 'utf8');
const sha = (text) => `sha256:${createHash('sha256').update(text).digest('hex')}`;

// ---------- the agent ----------
let session; // { call(tool, args) → { ok, value|envelope } }

async function connect(args) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, ...args], stderr: 'pipe' });
  const client = new Client({ name: 'fs-tools-recovery-bench', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return {
    async call(tool, args) {
      const r = await client.callTool({ name: tool, arguments: args });
      if (r.isError) {
        let envelope;
        try { envelope = JSON.parse(r.content[0].text).error; } catch { envelope = { code: 'UNPARSEABLE', details: {} }; }
        // The agent's view: structured fields only.
        const { code, path: p, details, retryable, recovery, expected_hash, current_hash, conflict } = envelope;
        return { ok: false, e: { code, path: p, details: details ?? {}, retryable, recovery, expected_hash, current_hash, conflict } };
      }
      return { ok: true, value: r.structuredContent ?? {} };
    },
    close: () => client.close(),
  };
}

/** Edit distance (for picking a name out of a listing, as a model would). */
function lev(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) for (let j = 1; j <= b.length; j++) {
    d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
  }
  return d[a.length][b.length];
}

/**
 * The agent's knowledge after reading a file: builds the edit it intends (the line matching intent.anchor becomes
 * intent.replace(line)), with as many lines of context above as make old_text unique.
 */
function regenerateEdit(content, intent) {
  const lines = content.split('\n');
  const idx = lines.findIndex((l) => intent.anchor.test(l));
  if (idx === -1) return null;
  for (let k = 0; k <= idx; k++) {
    const oldText = lines.slice(idx - k, idx + 1).join('\n');
    if (content.split(oldText).length === 2) {
      const replaced = intent.replace(lines[idx]);
      // null: the intent is to delete the line (with its newline).
      if (replaced === null) return { old_text: `${oldText}\n`, new_text: lines.slice(idx - k, idx).map((l) => `${l}\n`).join('') };
      const newText = [...lines.slice(idx - k, idx), replaced].join('\n');
      return { old_text: oldText, new_text: newText };
    }
  }
  return null;
}

/**
 * For a no_match whose nearest region is `in_order` (old_text's lines in order, not adjacent): when every missing line
 * is one the edit keeps unchanged (it is in new_text too) and the region holds exactly the other lines, removes the
 * missing lines from old_text and new_text (or, with `dryRun`, only says whether it would).
 */
function dropMoved(edit, nearest, dryRun) {
  const io = nearest?.in_order;
  if (!edit || !io || io.missing.length !== io.of - io.found || nearest.excerpt.split('\n').length !== io.found) return false;
  const ol = edit.old_text.split('\n');
  const nl = edit.new_text.split('\n');
  for (const m of io.missing) {
    const i = ol.indexOf(m.expected);
    const j = nl.indexOf(m.expected);
    if (i === -1 || j === -1) return false;
    if (!dryRun) { ol.splice(i, 1); nl.splice(j, 1); }
  }
  if (!dryRun) { edit.old_text = ol.join('\n'); edit.new_text = nl.join('\n'); }
  return true;
}

/** Renames the key at a dotted/bracketed field path (`edits[0].old_string`, `edits.0.oldText`) to `to`. */
function renameField(args, field, to) {
  const parts = String(field).split(/[.[\]]+/).filter(Boolean);
  let holder = args;
  for (const p of parts.slice(0, -1)) holder = holder?.[p];
  const key = parts[parts.length - 1];
  if (!holder || !(key in holder) || !to) return false;
  holder[to] = holder[key];
  delete holder[key];
  return true;
}

/**
 * An ambiguous edit, disambiguated from the envelope's candidate_context alone: prefix old_text and new_text with the
 * 1, then 2 lines before each candidate; when exactly one candidate's result matches the intent's goal, the edit is
 * rewritten in place and true returned.
 */
function pickCandidate(edit, contexts, intent) {
  for (let k = 1; k <= 2; k++) {
    const fits = contexts.filter((cc) => cc.before.length >= k)
      .map((cc) => cc.before.slice(-k).join('\n'))
      .filter((prefix) => intent.anchorDone.test(`${prefix}\n${edit.new_text}\n`));
    if (fits.length === 1) {
      edit.old_text = `${fits[0]}\n${edit.old_text}`;
      edit.new_text = `${fits[0]}\n${edit.new_text}`;
      return true;
    }
  }
  return false;
}

/** The path-valued argument of a call (the one the envelope's path refers to). */
function pathKeyOf(call, envPath) {
  for (const k of ['path', 'source', 'destination']) {
    const v = call.args[k];
    if (typeof v === 'string' && (v === envPath || path.resolve(ROOT, v) === envPath)) return k;
  }
  return call.args.path !== undefined ? 'path' : call.args.source !== undefined ? 'source' : null;
}

/**
 * Runs one case: the failing call, then the generic policy until success, stop, or MAX_EXTRA_CALLS.
 * @returns {{ outcome: 'done'|'stopped'|'gave_up', extra: number, infoCalls: number, followedHint: boolean, firstCode: string, trail: string[] }}
 */
async function runAgent(c) {
  let call = structuredClone(c.call);
  const trail = [];
  let extra = -1;
  let infoCalls = 0;
  let followedHint = false;
  let firstCode = 'none';
  let readContent = null;
  const info = async (tool, args) => { extra++; infoCalls++; trail.push(tool); return session.call(tool, args); };
  while (extra < MAX_EXTRA_CALLS) {
    extra++;
    const r = await session.call(call.tool, call.args);
    if (r.ok) { trail.push(`${call.tool}:ok`); return { outcome: 'done', extra, infoCalls, followedHint, firstCode, trail, value: r.value }; }
    const e = r.e;
    if (firstCode === 'none') firstCode = e.code;
    trail.push(`${call.tool}:${e.code}${e.details?.reason ? `/${e.details.reason}` : ''}`);
    const d = e.details ?? {};
    if (STOP_CODES.has(e.code)) return { outcome: 'stopped', extra, infoCalls, followedHint, firstCode, trail, retryable: e.retryable };
    const next = structuredClone(call);
    if (e.code === 'VALIDATION' && d.reason === 'unknown_parameter') {
      const list = d.unknown ?? [{ field: d.field, closest: d.closest }];
      let renamed = false;
      for (const u of list) renamed = renameField(next.args, u.field, u.closest) || renamed;
      if (!renamed) return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
      followedHint = true;
    } else if (e.code === 'VALIDATION' && d.reason === 'conflicting_parameters') {
      // Keep the first range option the tool lists (start_line/end_line), drop the others.
      for (const k of ['head', 'tail', 'offset']) delete next.args[k];
    } else if (e.code === 'VALIDATION' && d.reason === 'invalid_range') {
      [next.args.start_line, next.args.end_line] = [next.args.end_line, next.args.start_line];
    } else if (e.code === 'VALIDATION' && d.reason === 'is_directory' && call.tool === 'read_file') {
      next.tool = 'list_directory'; next.args = { path: call.args.path };
    } else if (e.code === 'VALIDATION' && d.reason === 'not_a_directory' && call.tool === 'list_directory') {
      next.tool = 'read_file'; next.args = { path: call.args.path };
    } else if (e.code === 'VALIDATION' && d.reason === 'binary') {
      next.args.encoding = 'base64';
    } else if (e.code === 'VALIDATION' && d.reason === 'destination_exists') {
      if (!c.intent?.overwriteOk) return { outcome: 'stopped', extra, infoCalls, followedHint, firstCode, trail };
      let hash = e.current_hash ?? d.current_hash;
      if (!hash) {
        const s = await info('read_file', { path: e.path });
        hash = s.ok ? s.value.content_hash : null;
      } else followedHint = true;
      if (!hash) return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
      next.args.overwrite = true; next.args.expected_hash = hash;
    } else if (e.code === 'NOT_FOUND') {
      const key = pathKeyOf(call, e.path);
      if (d.near?.length) {
        next.args[key] = d.near[0]; followedHint = true;
      } else {
        // Look around: list the nearest existing ancestor and pick the closest name, or stop when none is close.
        const wanted = path.basename(e.path ?? call.args[key]);
        let dir = path.dirname(e.path ?? path.resolve(ROOT, call.args[key]));
        let l = await info('list_directory', { path: dir });
        while (!l.ok && dir.startsWith(ROOT) && dir !== ROOT) { dir = path.dirname(dir); l = await info('list_directory', { path: dir }); }
        const names = l.ok ? (l.value.entries ?? []).map((x) => x.path ?? x.name).filter(Boolean) : [];
        const best = names.map((n) => ({ n, s: lev(path.basename(n).toLowerCase(), wanted.toLowerCase()) })).sort((a, b) => a.s - b.s)[0];
        if (!best || best.s > 2) return { outcome: 'stopped', extra, infoCalls, followedHint, firstCode, trail };
        next.args[key] = path.join(dir, best.n);
      }
    } else if (e.code === 'NOT_ALLOWED' && d.reason !== 'outside_roots') {
      // A link in the way, a change during the call, a link that would point outside: not a wrong base directory.
      return { outcome: 'stopped', extra, infoCalls, followedHint, firstCode, trail };
    } else if (e.code === 'NOT_ALLOWED' && d.near?.length) {
      const key = pathKeyOf(call, e.path);
      if (!key) return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
      next.args[key] = d.near[0]; followedHint = true;
    } else if (e.code === 'NOT_ALLOWED') {
      const key = pathKeyOf(call, e.path);
      const roots = d.roots;
      let root = roots?.[0];
      if (!root) {
        const l = await info('list_allowed_directories', {});
        root = l.ok ? l.value.roots?.[0]?.path : null;
      } else followedHint = true;
      if (!root || !key) return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
      // Re-base the tail of the path (its last two components) on the root; NOT_FOUND's near paths finish the job.
      const parts = String(call.args[key]).split('/').filter(Boolean);
      next.args[key] = path.join(root, ...parts.slice(-2));
    } else if (e.code === 'OCC_MISMATCH' && e.conflict?.reason === 'deleted') {
      return { outcome: 'stopped', extra, infoCalls, followedHint, firstCode, trail };
    } else if (e.code === 'PATCH_FAILED' && d.reason === 'no_match' && call.tool === 'edit_file'
      && (d.failures ?? [d]).every((f) => dropMoved(next.args.edits[f.edit_index], f.nearest, true))) {
      // The envelope's in-order region: old_text's lines are there in order but for some that moved elsewhere; when
      // the edit does not change those, drop them from old_text and new_text (the region is exactly the rest).
      for (const f of d.failures ?? [d]) dropMoved(next.args.edits[f.edit_index], f.nearest, false);
      followedHint = true;
    } else if (e.code === 'PATCH_FAILED' && d.reason === 'ambiguous' && call.tool === 'edit_file' && Array.isArray(d.candidate_context)
      && c.intent?.anchorDone && pickCandidate(next.args.edits[d.edit_index], d.candidate_context, c.intent)) {
      // The envelope shows the lines around each match: extend old_text (and new_text) with the lines before the one
      // the agent means — the one whose result has the shape the agent intends (its goal, not the file's content).
      followedHint = true;
    } else if (e.code === 'HASH_REQUIRED' || e.code === 'OCC_MISMATCH' || (e.code === 'PATCH_FAILED' && e.recovery === 'read_and_rebase'
      && !(d.reason === 'no_match' && (d.failures ?? [d]).every((f) => f.nearest?.first_difference)))) {
      if (d.reason === 'already_applied') {
        // check_already_applied: confirm by reading, then stop (the goal decides whether it was right).
        const s = await info('read_file', { path: e.path ?? call.args.path });
        return { outcome: s.ok && c.intent?.anchorDone?.test(s.value.content) ? 'done' : 'stopped', extra, infoCalls, followedHint, firstCode, trail };
      }
      // A content-addressed change (edit_file's old_text, a patch's context) is re-verified by the server against the
      // current content, so the current hash(es) from the envelope are enough: HASH_REQUIRED with the hash(es), or
      // OCC_MISMATCH "modified" whose conflict says what changed (changed_ranges). A full rewrite (write_file) reads.
      const hashes = e.code === 'HASH_REQUIRED'
        ? (d.files ?? (d.current_hash !== undefined ? [{ path: e.path, current_hash: d.current_hash }] : null))
        : e.conflict?.reason === 'modified' && Array.isArray(e.conflict.changed_ranges) && e.current_hash ? [{ path: e.path, current_hash: e.current_hash }] : null;
      if (hashes && call.tool !== 'write_file') {
        if (call.tool === 'apply_patch' || d.field === 'expected_hashes') {
          next.args.expected_hashes = { ...(next.args.expected_hashes ?? {}), ...Object.fromEntries(hashes.map((h) => [h.path, h.current_hash])) };
        } else next.args.expected_hash = hashes[0].current_hash;
        followedHint = true;
      } else {
        // read_and_rebase: read the file, regenerate the change from the intent on the current content.
        const target = e.path ?? call.args.path;
        const s = await info('read_file', { path: target });
        if (!s.ok) return { outcome: 'stopped', extra, infoCalls, followedHint, firstCode, trail };
        readContent = s.value.content;
        if (c.intent?.anchorDone?.test(readContent) && !c.intent?.anchor.test(readContent)) {
          return { outcome: 'done', extra, infoCalls, followedHint, firstCode, trail };
        }
        const edit = c.intent ? regenerateEdit(readContent, c.intent) : null;
        if (!edit) return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
        next.tool = 'edit_file';
        next.args = { path: s.value.path ?? target, edits: [edit], expected_hash: s.value.content_hash };
      }
    } else if (e.code === 'PATCH_FAILED' && d.reason === 'no_match') {
      // Fix each failing piece at its first difference, as the envelope states it (nearest.first_difference).
      for (const f of d.failures ?? [d]) {
        const fd = f.nearest.first_difference;
        if (call.tool === 'edit_file') {
          const ed = next.args.edits[f.edit_index];
          const ls = ed.old_text.split('\n');
          const i = ls.indexOf(fd.expected);
          if (i === -1) return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
          const nl = ed.new_text.split('\n');
          if (nl[i] === ls[i]) nl[i] = fd.actual;
          ls[i] = fd.actual;
          ed.old_text = ls.join('\n');
          ed.new_text = nl.join('\n');
        } else {
          next.args.patch = next.args.patch.split('\n').map((l) => (l === ` ${fd.expected}` ? ` ${fd.actual}` : l === `-${fd.expected}` ? `-${fd.actual}` : l)).join('\n');
        }
      }
      followedHint = true;
    } else if (e.code === 'PATCH_FAILED' && e.recovery === 'fix_arguments') {
      // The patch text is the problem: rebuild the change from the intent (the lines the agent meant), no read.
      if (!c.intent?.knownOld) return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
      next.tool = 'edit_file';
      next.args = { path: call.args.path, edits: [{ old_text: c.intent.knownOld, new_text: c.intent.replace(c.intent.knownOld) }] };
      followedHint = true;
    } else if (e.code === 'STALE_GIT') {
      const h = d.current_status_hash;
      if (h) { next.args.expected_status_hash = h; followedHint = true; } else {
        const s = await info('git_status', { path: ROOT });
        if (!s.ok) return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
        next.args.expected_status_hash = s.value.status_hash;
      }
    } else {
      return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
    }
    call = next;
  }
  return { outcome: 'gave_up', extra, infoCalls, followedHint, firstCode, trail };
}

// ---------- cases ----------
/** @type {Array<{id:string, cat:string, prepare?:()=>Promise<void>|void, call:{tool:string,args:object}, intent?:object, check:(r:any)=>boolean, mustStop?:boolean, pending?:string}>} */
const cases = [];
let n = 0;
const add = (c) => cases.push({ id: `${c.cat}#${++n}`, ...c });
const timeoutIntent = (k, to) => ({ anchor: new RegExp(`^    timeout = ${10 + k}$`), anchorDone: new RegExp(`\\n    timeout = ${to}\\n`), replace: (l) => l.replace(/= \d+/, `= ${to}`), knownOld: `    timeout = ${10 + k}` });
const fileIs = (abs, text) => () => existsSync(abs) && read(abs) === text;
const changedLine = (k, to, base = module(k)) => base.replace(`    timeout = ${10 + k}\n`, `    timeout = ${to}\n`);
const readIt = (abs) => session.call('read_file', { path: abs });

// 1. Stale edits: the agent read the file, someone changed another line, the agent edits with its stale view.
for (let i = 0; i < 12; i++) {
  const k = 100 + i; const abs = put(`stale/m${k}.py`, module(k)); const other = module(k).replace('    mode = "w"', '    mode = "a"');
  add({ cat: 'stale_edit', prepare: async () => { await readIt(abs); writeFileSync(abs, other); },
    call: { tool: 'edit_file', args: { path: abs, edits: [{ old_text: `    timeout = ${10 + k}`, new_text: `    timeout = ${k}` }] } },
    intent: timeoutIntent(k, k), check: fileIs(abs, changedLine(k, k, other)) });
}
for (let i = 0; i < 6; i++) {
  const k = 200 + i; const abs = put(`stale/p${k}.py`, module(k)); const other = module(k).replace('    mode = "w"', '    mode = "x"');
  const patch = `--- a/p${k}.py\n+++ b/p${k}.py\n@@ -3,3 +3,3 @@\n def load_${k}():\n-    timeout = ${10 + k}\n+    timeout = ${k}\n     retries = ${k % 5 + 1}\n`;
  add({ cat: 'stale_edit', prepare: async () => { await readIt(abs); writeFileSync(abs, other); },
    call: { tool: 'apply_patch', args: { path: abs, patch } }, intent: timeoutIntent(k, k), check: fileIs(abs, changedLine(k, k, other)) });
}
// 1b. Formatter-changed files (issue 28): the agent read the file, a formatter or hook rewrote OTHER lines (quote
// style, a header comment, whitespace, a final blank line), the agent edits with its stale view. Once as today (strict:
// OCC_MISMATCH, recovered from the envelope) and once with on_conflict "merge" (merged in the first call): the
// difference of the two categories' mean extra calls is what merging saves.
const formatted = (text, k) =>
  `# formatted by a hook\n${text.replace(`import os  # module ${k}`, `import os # module ${k}`).replace(/"/g, "'")}\n`;
for (const merge of [false, true]) {
  for (let i = 0; i < 6; i++) {
    const k = (merge ? 700 : 600) + i; const abs = put(`formatted/m${k}.py`, module(k)); const other = formatted(module(k), k);
    const viaPatch = i % 2 === 1;
    const patch = `--- a/m${k}.py\n+++ b/m${k}.py\n@@ -3,3 +3,3 @@\n def load_${k}():\n-    timeout = ${10 + k}\n+    timeout = ${k}\n     retries = ${k % 5 + 1}\n`;
    const args = viaPatch ? { path: abs, patch } : { path: abs, edits: [{ old_text: `    timeout = ${10 + k}`, new_text: `    timeout = ${k}` }] };
    if (merge) args.on_conflict = 'merge';
    add({ cat: merge ? 'formatter_merge' : 'formatter', prepare: async () => { await readIt(abs); writeFileSync(abs, other); },
      call: { tool: viaPatch ? 'apply_patch' : 'edit_file', args }, intent: timeoutIntent(k, k), check: fileIs(abs, changedLine(k, k, other)) });
  }
}
// 2. Typos in old_text (read first: the session knows the hash).
const typos = [
  (k) => `    timeout = ${11 + k}`, // wrong number
  (k) => `  timeout = ${10 + k}`, // wrong indentation
  (k) => `    timeout = ${10 + k}\n`, // one line + newline, and wrong below
  (k) => `    timout = ${10 + k}`, // missing letter
];
for (let i = 0; i < 12; i++) {
  const k = 300 + i; const abs = put(`typo/m${k}.py`, module(k)); const t = typos[i % 4](k);
  const oldText = i % 4 === 2 ? `    timeout = ${10 + k}\n    retries = 9\n` : t;
  const newText = i % 4 === 2 ? `    timeout = ${k}\n    retries = 9\n` : `    timeout = ${k}`;
  add({ cat: 'typo_old_text', prepare: () => readIt(abs), call: { tool: 'edit_file', args: { path: abs, edits: [{ old_text: oldText, new_text: newText }] } },
    intent: timeoutIntent(k, k), check: i % 4 === 2 ? fileIs(abs, changedLine(k, k)) : fileIs(abs, changedLine(k, k)) });
}
// 3. Ambiguous matches: `    return path`-like lines exist once, but `    return timeout` / `    return 0`... use "mode" twice.
for (let i = 0; i < 8; i++) {
  const k = 400 + i; const text = module(k).replace('    return 0', '    mode = "w"\n    return 0'); const abs = put(`ambig/m${k}.py`, text);
  add({ cat: 'ambiguous', prepare: () => readIt(abs), call: { tool: 'edit_file', args: { path: abs, edits: [{ old_text: '    mode = "w"', new_text: '    mode = "wb"' }] } },
    intent: { anchor: /^    mode = "w"$/, anchorDone: /path = "out_\d+\.txt"\n    mode = "wb"/, replace: (l) => l.replace('"w"', '"wb"') },
    check: fileIs(abs, text.replace('    mode = "w"', '    mode = "wb"')) });
}
// 4. Damaged patches.
for (let i = 0; i < 12; i++) {
  const k = 500 + i; const abs = put(`damaged/m${k}.py`, module(k)); const kind = i % 4;
  const good = ` def load_${k}():\n-    timeout = ${10 + k}\n+    timeout = ${k}\n     retries = ${k % 5 + 1}\n`;
  const patch = kind === 0 ? `Change the timeout of load_${k} to ${k}.` // prose
    : kind === 1 ? '@@\n@@\n' // Codex's bare @@ lines left after stripping *** markers
      : kind === 2 ? `@@ -3,3 +3,3 @@\n def load_${k}():\n-    timeout = ${11 + k}\n+    timeout = ${k}\n     retries = ${k % 5 + 1}\n` // wrong removed line
        : `@@ -3,3 +3,3 @@\n def load_${k}():\nstray\n-    timeout = ${10 + k}\n+    timeout = ${k}\n`; // malformed
  void good;
  add({ cat: 'damaged_patch', prepare: () => readIt(abs), call: { tool: 'apply_patch', args: { path: abs, patch } }, intent: timeoutIntent(k, k), check: fileIs(abs, changedLine(k, k)) });
}
// 5. Wrong parameter names.
const paramCases = [
  (abs) => ({ tool: 'read_file', args: { file: abs } }),
  (abs) => ({ tool: 'read_file', args: { filepath: abs } }),
  (abs) => ({ tool: 'read_file', args: { file_path: abs } }),
  (abs, k) => ({ tool: 'edit_file', args: { path: abs, edits: [{ old_string: `    timeout = ${10 + k}`, new_string: `    timeout = ${k}` }] } }),
  (abs, k) => ({ tool: 'edit_file', args: { path: abs, edits: [{ oldText: `    timeout = ${10 + k}`, newText: `    timeout = ${k}` }] } }),
  (abs, k) => ({ tool: 'edit_file', args: { file: abs, edits: [{ old_text: `    timeout = ${10 + k}`, new_text: `    timeout = ${k}` }] } }),
  (abs) => ({ tool: 'read_file', args: { path: abs, line: 2, end: 4 } }),
];
for (let i = 0; i < 14; i++) {
  const k = 600 + i; const abs = put(`params/m${k}.py`, module(k)); const mk = paramCases[i % paramCases.length]; const call = mk(abs, k);
  const isEdit = call.tool === 'edit_file';
  add({ cat: 'parameter_name', prepare: () => readIt(abs), call, intent: timeoutIntent(k, k),
    check: isEdit ? fileIs(abs, changedLine(k, k)) : (r) => r.outcome === 'done' && typeof r.value?.content === 'string' && read(abs) === module(k) });
}
for (let i = 0; i < 2; i++) {
  const k = 620 + i; const src = put(`params/mv${k}.py`, module(k)); const dst = path.join(ROOT, `params/moved${k}.py`);
  add({ cat: 'parameter_name', call: { tool: 'move_path', args: { from: src, to: dst } }, check: () => !existsSync(src) && existsSync(dst) && read(dst) === module(k) });
}
// 6. Path mistakes (typos in names).
const pathTypos = [
  ['src/util.ts', 'src/utils.ts'], ['src/Index.ts', 'src/index.ts'], ['srcc/config.ts', 'src/config.ts'], ['lib/helpers.ts', 'src/deep/helpers.ts'],
  ['README.MD', 'README.md'], ['docs/guide.mdd', 'docs/guide.md'], ['src/deep/helper.ts', 'src/deep/helpers.ts'],
];
for (let i = 0; i < 14; i++) {
  const base = `paths${i}`; const [wrong, right] = pathTypos[i % pathTypos.length];
  for (const f of ['src/utils.ts', 'src/index.ts', 'src/config.ts', 'src/deep/helpers.ts', 'README.md', 'docs/guide.md']) put(`${base}/${f}`, `// ${base}/${f}\n`);
  const rightAbs = path.join(ROOT, base, right);
  if (i < 7) {
    add({ cat: 'path_typo', call: { tool: 'read_file', args: { path: path.join(ROOT, base, wrong) } }, check: (r) => r.outcome === 'done' && r.value?.content === `// ${base}/${right}\n` });
  } else {
    add({ cat: 'path_typo', prepare: () => readIt(rightAbs), call: { tool: 'edit_file', args: { path: path.join(ROOT, base, wrong), edits: [{ old_text: `// ${base}/${right}`, new_text: `// edited ${right}` }] } },
      check: fileIs(rightAbs, `// edited ${right}\n`) });
  }
}
// 7. Wrong kinds.
for (let i = 0; i < 6; i++) {
  const d = path.join(ROOT, `kinds/d${i}`); put(`kinds/d${i}/a.txt`, 'a\n'); const f = path.join(d, 'a.txt');
  add({ cat: 'wrong_kind', call: i % 2 ? { tool: 'read_file', args: { path: d } } : { tool: 'list_directory', args: { path: f } },
    check: (r) => r.outcome === 'done' && (i % 2 ? Array.isArray(r.value?.entries) : r.value?.content === 'a\n') });
}
// 8. Moves onto existing files (the agent means to replace the destination).
for (let i = 0; i < 6; i++) {
  const k = 800 + i; const src = put(`moves/new${k}.py`, module(k)); const dst = put(`moves/old${k}.py`, module(k + 1));
  add({ cat: 'move_onto_existing', call: { tool: 'move_path', args: { source: src, destination: dst } }, intent: { overwriteOk: true },
    check: () => !existsSync(src) && read(dst) === module(k) });
}
// 9. STALE_GIT: the agent took a status hash, someone changed the work tree, the agent edits with it.
let statusHashes = [];
for (let i = 0; i < 4; i++) {
  const k = 900 + i; const abs = put(`git/m${k}.py`, module(k));
  add({ cat: 'stale_git', prepare: async () => { await readIt(abs); const s = await session.call('git_status', { path: ROOT }); statusHashes[i] = s.value?.status_hash; put(`git/other${k}.txt`, 'x\n'); },
    call: { tool: 'edit_file', args: { path: abs, edits: [{ old_text: `    timeout = ${10 + k}`, new_text: `    timeout = ${k}` }] } }, statusIndex: i,
    intent: timeoutIntent(k, k), check: fileIs(abs, changedLine(k, k)) });
}
// 10. Binary files.
for (let i = 0; i < 4; i++) {
  const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0xfe, i, 0x00, 0xc3]);
  const abs = path.join(ROOT, `bin/img${i}.png`); mkdirSync(path.dirname(abs), { recursive: true }); writeFileSync(abs, bytes);
  add({ cat: 'binary', call: { tool: 'read_file', args: { path: abs } }, check: (r) => r.outcome === 'done' && r.value?.encoding === 'base64' && Buffer.from(r.value.content, 'base64').equals(bytes) });
}
// 11. Ranges.
for (let i = 0; i < 4; i++) {
  const k = 1000 + i; const abs = put(`ranges/m${k}.py`, module(k));
  const args = i % 2 ? { path: abs, start_line: 6, end_line: 3 } : { path: abs, start_line: 3, end_line: 6, head: 5 };
  add({ cat: 'range', call: { tool: 'read_file', args }, check: (r) => r.outcome === 'done' && r.value?.content === module(k).split('\n').slice(2, 6).join('\n') + '\n' });
}
// 12. Must-stop: secrets, .git internals, policy deny.
for (let i = 0; i < 4; i++) {
  const abs = put(`stop/s${i}/.env`, 'TOKEN=x\n');
  add({ cat: 'must_stop', mustStop: true, call: i % 2 ? { tool: 'read_file', args: { path: abs } } : { tool: 'write_file', args: { path: abs, content: 'TOKEN=y\n' } }, check: fileIs(abs, 'TOKEN=x\n') });
}
for (let i = 0; i < 4; i++) {
  const abs = i < 2 ? path.join(ROOT, '.git', 'config') : put(`locked/f${i}.txt`, 'locked\n');
  const before = i < 2 ? null : 'locked\n';
  add({ cat: 'must_stop', mustStop: true, call: { tool: 'write_file', args: { path: abs, content: 'x\n' } }, check: () => before === null ? !read(abs).startsWith('x\n') : read(abs) === before });
}
// 13. Deleted after the agent read it: stopping (not re-creating) is right.
for (let i = 0; i < 4; i++) {
  const k = 1100 + i; const abs = put(`deleted/m${k}.py`, module(k));
  add({ cat: 'deleted_after_read', mustStop: true, prepare: async () => { await readIt(abs); unlinkSync(abs); },
    call: i % 2 ? { tool: 'edit_file', args: { path: abs, edits: [{ old_text: `    timeout = ${10 + k}`, new_text: `    timeout = ${k}` }] } }
      : { tool: 'apply_patch', args: { path: abs, patch: `--- a/m${k}.py\n+++ b/m${k}.py\n@@ -3,3 +3,3 @@\n def load_${k}():\n-    timeout = ${10 + k}\n+    timeout = ${k}\n     retries = ${k % 5 + 1}\n` } },
    intent: timeoutIntent(k, k), check: () => !existsSync(abs) });
}
for (let i = 0; i < 2; i++) {
  const k = 1150 + i; const abs = put(`deleted/w${k}.py`, module(k));
  add({ cat: 'deleted_after_read', mustStop: true, prepare: async () => { await readIt(abs); unlinkSync(abs); },
    call: { tool: 'write_file', args: { path: abs, content: changedLine(k, k) } }, intent: timeoutIntent(k, k), check: () => !existsSync(abs) });
}
// 14. Paths outside the roots (a wrong base directory).
for (let i = 0; i < 4; i++) {
  const rel = `outside${i}/notes.md`; put(rel, `notes ${i}\n`);
  add({ cat: 'outside_roots', call: { tool: 'read_file', args: { path: path.join('/home/agent/project', rel) } }, check: (r) => r.outcome === 'done' && r.value?.content === `notes ${i}\n` });
}
// 15. A multi-file patch without hashes for files the session never read (HASH_REQUIRED).
for (let i = 0; i < 2; i++) {
  const k = 1200 + i; const a = put(`multi${i}/a.py`, module(k)); const b = put(`multi${i}/b.py`, module(k + 50));
  const hunk = (kk, name) => `--- a/${name}\n+++ b/${name}\n@@ -3,3 +3,3 @@\n def load_${kk}():\n-    timeout = ${10 + kk}\n+    timeout = ${kk}\n     retries = ${kk % 5 + 1}\n`;
  add({ cat: 'hash_required_multi', call: { tool: 'apply_patch', args: { patch: `${hunk(k, `multi${i}/a.py`)}${hunk(k + 50, `multi${i}/b.py`)}` } },
    check: () => read(a) === changedLine(k, k) && read(b) === changedLine(k + 50, k + 50) });
}
// 16. A deletion edit with a typo in old_text (issue 30: never "already applied"): remove the debug line, keeping the
// line above as the anchor; the file says debugLog, the agent typed debuglog.
for (let i = 0; i < 3; i++) {
  const k = 1400 + i; const text = `const a${k} = 1;\nconst debugLog = true;\nconst b${k} = 2;\n`; const abs = put(`deltypo/d${k}.js`, text);
  add({ cat: 'deletion_typo', prepare: () => readIt(abs),
    call: { tool: 'edit_file', args: { path: abs, edits: [{ old_text: `const a${k} = 1;\nconst debuglog = true;\n`, new_text: `const a${k} = 1;\n` }] } },
    intent: { anchor: /^const debugLog = true;$/m, anchorDone: new RegExp(`const a${k} = 1;\nconst b${k} = 2;`), replace: () => null },
    check: fileIs(abs, `const a${k} = 1;\nconst b${k} = 2;\n`) });
}
// 17. A moved line: the agent's old_text keeps `retries` below `timeout`, but it moved into save_k.
for (let i = 0; i < 3; i++) {
  const k = 1500 + i; const r = `    retries = ${k % 5 + 1}`;
  const text = module(k).replace(`${r}\n`, '').replace('    mode = "w"\n', `    mode = "w"\n${r}\n`); const abs = put(`moved/m${k}.py`, text);
  add({ cat: 'moved_line', prepare: () => readIt(abs),
    call: { tool: 'edit_file', args: { path: abs, edits: [{ old_text: `def load_${k}():\n    timeout = ${10 + k}\n${r}\n    return timeout\n`, new_text: `def load_${k}():\n    timeout = ${k}\n${r}\n    return timeout\n` }] } },
    intent: timeoutIntent(k, k), check: fileIs(abs, text.replace(`    timeout = ${10 + k}\n`, `    timeout = ${k}\n`)) });
}
// 18. Indentation-shifted edits: a block quoted at another depth (Python, YAML), a Makefile recipe sent with spaces.
const indentCases = [
  (k) => ({ name: `ind/c${k}.py`, text: `class C${k}:\n    def load(self):\n        timeout = ${k}\n        return timeout\n\n    def save(self):\n        return ${k}\n`,
    old_text: `def load(self):\n    timeout = ${k}\n`, new_text: `def load(self):\n    timeout = ${k + 1}\n`,
    from: `        timeout = ${k}\n`, to: `        timeout = ${k + 1}\n`, anchor: new RegExp(`^        timeout = ${k}$`) }),
  (k) => ({ name: `ind/s${k}.yaml`, text: `svc${k}:\n  web:\n    image: app:${k}\n    replicas: 2\n  db:\n    image: pg:15\n    replicas: 1\n`,
    old_text: `image: app:${k}\nreplicas: 2\n`, new_text: `image: app:${k + 1}\nreplicas: 2\n`,
    from: `    image: app:${k}\n`, to: `    image: app:${k + 1}\n`, anchor: new RegExp(`^    image: app:${k}$`) }),
  (k) => ({ name: `ind/mk${k}/Makefile`, text: `CC = cc\n\nall: x${k}\n\t$(CC) -o x${k} x.c\n\techo done\n`,
    old_text: `all: x${k}\n    $(CC) -o x${k} x.c\n`, new_text: `all: x${k}\n    $(CC) -O2 -o x${k} x.c\n`,
    from: `\t$(CC) -o x${k} x.c\n`, to: `\t$(CC) -O2 -o x${k} x.c\n`, anchor: new RegExp(`^\\t\\$\\(CC\\) -o x${k} x\\.c$`) }),
];
for (let i = 0; i < 6; i++) {
  const k = 1600 + i; const c = indentCases[i % 3](k); const abs = put(c.name, c.text);
  add({ cat: 'indentation', prepare: () => readIt(abs),
    call: { tool: 'edit_file', args: { path: abs, edits: [{ old_text: c.old_text, new_text: c.new_text }] } },
    intent: { anchor: c.anchor, anchorDone: new RegExp(c.to.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), replace: () => c.to.slice(0, -1) },
    check: fileIs(abs, c.text.replace(c.from, c.to)) });
}
// 19. READONLY (second session, --readonly).
const readonlyCases = [];
for (let i = 0; i < 4; i++) {
  const k = 1300 + i; const abs = put(`ro/m${k}.py`, module(k));
  readonlyCases.push({ id: `must_stop_readonly#${i}`, cat: 'must_stop', mustStop: true,
    call: { tool: 'edit_file', args: { path: abs, edits: [{ old_text: `    timeout = ${10 + k}`, new_text: `    timeout = ${k}` }] } }, check: fileIs(abs, module(k)) });
}

// 17. Issue 30's near misses: a backslash path, outside paths whose tail exists inside (deeper than the last two
// components), copy/move onto a link with the hash read through it, replace_in_files naming a secret in
// expected_hashes or needing hashes, and a revert onto a file swapped for a link.
for (let i = 0; i < 2; i++) {
  put(`i30/bs${i}/src/util.ts`, `// util ${i}\n`);
  add({ cat: 'near_path_backslash', call: { tool: 'read_file', args: { path: `i30/bs${i}\\src\\util.ts` } },
    check: (r) => r.outcome === 'done' && r.value?.content === `// util ${i}\n` });
}
for (let i = 0; i < 2; i++) {
  put(`i30/out${i}/pkg/src/lib/util.ts`, `// deep ${i}\n`);
  const given = i === 0 ? `/home/me/proj/i30/out${i}/pkg/src/lib/util.ts` : `../../i30/out${i}/pkg/src/lib/util.ts`;
  add({ cat: 'outside_roots', call: { tool: 'read_file', args: { path: given } },
    check: (r) => r.outcome === 'done' && r.value?.content === `// deep ${i}\n` });
}
for (const tool of ['copy_path', 'move_path']) {
  const dir = `i30/${tool}`;
  put(`${dir}/target.txt`, 'target\n'); put(`${dir}/new.txt`, `new for ${tool}\n`);
  const ln = path.join(ROOT, dir, 'ln');
  symlinkSync('target.txt', ln);
  let hash = null;
  add({ cat: 'onto_link', prepare: async () => { hash = (await readIt(ln)).value?.content_hash; },
    call: { tool, args: { source: path.join(ROOT, dir, 'new.txt'), destination: ln, overwrite: true } },
    intent: { overwriteOk: true },
    check: () => lstatSync(ln).isFile() && read(ln) === `new for ${tool}\n` && read(path.join(ROOT, dir, 'target.txt')) === 'target\n' });
  // The hash just read through the link is passed (filled in before the call: the agent read it).
  cases[cases.length - 1].withHash = () => hash;
}
{
  const a = put('i30/rep/a.txt', 'hello world\n'); put('i30/rep/.env', 'TOKEN=hello\n');
  add({ cat: 'must_stop', mustStop: true, call: { tool: 'replace_in_files', args: { path: path.join(ROOT, 'i30/rep'), query: 'hello', replacement: 'bye',
    expected_hashes: { 'a.txt': sha('hello world\n'), '.env': sha('TOKEN=hello\n') } } },
    check: () => read(a) === 'hello world\n' && read(path.join(ROOT, 'i30/rep/.env')) === 'TOKEN=hello\n' });
  const b = put('i30/rep2/b.txt', 'hello there\n');
  add({ cat: 'hash_required_replace', call: { tool: 'replace_in_files', args: { path: b, query: 'hello', replacement: 'bye' } },
    check: () => read(b) === 'bye there\n' });
}
{
  const f = put('i30/rev/f.txt', 'f0\n'); const other = put('i30/rev/other.txt', 'other\n');
  add({ cat: 'must_stop', mustStop: true,
    prepare: async () => { await session.call('write_file', { path: f, content: 'f1\n', expected_hash: sha('f0\n') }); unlinkSync(f); symlinkSync('other.txt', f); },
    call: { tool: 'revert_changes', args: { last: 1 } },
    check: () => lstatSync(f).isSymbolicLink() && readlinkSync(f) === 'other.txt' && read(other) === 'other\n' });
}

// git repo + policy
sh('git', ['init', '-q']);
sh('git', ['-c', 'user.email=b@b', '-c', 'user.name=b', 'add', '-A']);
sh('git', ['-c', 'user.email=b@b', '-c', 'user.name=b', 'commit', '-qm', 'fixture']);
const policyFile = path.join(TMP, 'policy.json');
writeFileSync(policyFile, JSON.stringify({ rules: [{ pattern: 'locked/**', access: 'read_only' }] }));
const stateDir = mkdtempSync(path.join(TMP, 'state-'));

// ---------- run ----------
const started = Date.now();
const results = [];
async function runAll(list) {
  for (const c of list) {
    if (c.prepare) await c.prepare();
    if (c.statusIndex !== undefined) c.call.args.expected_status_hash = statusHashes[c.statusIndex];
    if (c.withHash) c.call.args.expected_hash = c.withHash();
    const r = await runAgent(c);
    let goal = false;
    try { goal = c.check(r); } catch { goal = false; }
    const recovered = c.mustStop ? r.outcome === 'stopped' && goal : r.outcome === 'done' && goal;
    const misleading = (!c.mustStop && r.outcome === 'done' && !goal) || (c.mustStop && r.retryable === true)
      || (!recovered && r.followedHint && r.outcome !== 'stopped');
    results.push({ id: c.id, cat: c.cat, recovered, envelopeOnly: recovered && r.infoCalls === 0, extra: r.extra, misleading, firstCode: r.firstCode, outcome: r.outcome, trail: r.trail.join(' → ') });
  }
}
session = await connect(['--state-dir', stateDir, `--policy=${policyFile}`, ROOT]);
await runAll(cases);
await session.close();
session = await connect(['--readonly', '--state-dir', stateDir, ROOT]);
await runAll(readonlyCases);
await session.close();
const seconds = (Date.now() - started) / 1000;
rmSync(TMP, { recursive: true, force: true });

// ---------- report ----------
const cats = [...new Set(results.map((r) => r.cat))];
const row = (label, rs) => {
  const rec = rs.filter((r) => r.recovered).length;
  const env = rs.filter((r) => r.envelopeOnly).length;
  const mean = rs.reduce((s, r) => s + r.extra, 0) / rs.length;
  const mis = rs.filter((r) => r.misleading).length;
  return `| ${label} | ${rs.length} | ${rec} | ${env} | ${mean.toFixed(2)} | ${mis} |`;
};
const lines = ['| category | cases | recovered / stopped right | envelope-only | mean extra calls | misleading |', '|---|---:|---:|---:|---:|---:|',
  ...cats.map((c) => row(c, results.filter((r) => r.cat === c))), row('**total**', results)];
if (process.argv.includes('--json')) console.log(JSON.stringify(results, null, 2));
console.log(lines.join('\n'));
const total = results.length; const rec = results.filter((r) => r.recovered).length; const env = results.filter((r) => r.envelopeOnly).length;
console.log(`\n${total} cases in ${seconds.toFixed(1)} s: recovered ${rec}/${total}, envelope-only ${env}/${total} (${(100 * env / total).toFixed(1)} %), `
  + `mean extra calls ${(results.reduce((s, r) => s + r.extra, 0) / total).toFixed(2)}, misleading ${results.filter((r) => r.misleading).length}`);
const extraOf = (cat) => results.filter((r) => r.cat === cat).reduce((s, r) => s + r.extra, 0);
console.log(`formatter-changed files: on_conflict "merge" took ${extraOf('formatter_merge')} extra calls where the strict rule took `
  + `${extraOf('formatter')} (${results.filter((r) => r.cat === 'formatter').length} cases each)`);
const bad = results.filter((r) => !r.recovered || !r.envelopeOnly || r.misleading);
if (bad.length) {
  console.log('\nNot recovered, not envelope-only, or misleading:');
  for (const r of bad) console.log(`- ${r.id} [${r.recovered ? 'recovered' : 'NOT recovered'}${r.misleading ? ', MISLEADING' : ''}] ${r.trail}`);
}
