#!/usr/bin/env node
/**
 * Real-commit patch benchmark (issue 17), `npm run bench:patch`.
 *
 * Cases: every non-merge commit of this repository's history (HEAD's ancestry) that modifies text files; one case per
 * modified file (the commit's `git diff` of that file), and from it the damaged variants language models typically
 * produce. Each case is applied, side by side, with apply_patch (ONE real MCP session over stdio with dist/cli.js),
 * `git apply`, `git apply --recount`, GNU `patch` and the `diff` package's applyPatch, each to a fresh copy of the
 * file before the commit; the result is compared byte for byte with the file after the commit. Per variant and tool:
 *   correct  reported success and the bytes are the commit's;
 *   wrong    reported success and the bytes differ (a silent misplacement: the worst outcome);
 *   refused  reported failure and the file is unchanged;
 *   damaged  reported failure and the file changed (e.g. GNU patch applying some hunks and rejecting others);
 * and the mean wall time per patch (process spawn included for git and patch; in-process for the diff package; one
 * MCP round trip for apply_patch).
 *
 * Variants (what the issue lists; choices where it is silent):
 *   clean              `git diff` as is (3 lines of context)
 *   no_line_numbers    every hunk header `@@ @@`
 *   wrong_counts       hunk counts off (odd hunks +2 on both sides, even hunks −1, at least 1)
 *   stale_top          4–20 lines inserted at the top of the target since the diff was made (expected: the commit's
 *                      result with the same lines on top)
 *   stale_mid          the same number of lines inserted between the first and second hunk (files with ≥ 2 hunks)
 *   stripped_ws        trailing blanks stripped from context and removed lines (added lines keep theirs: the
 *                      expected bytes must stay the commit's)
 *   no_headers         no diff --git / index / --- / +++ lines; the tools get the target file instead
 *   fenced             inside "Here is the patch:" + a ```diff fence
 *   reversed_hunks     the file's hunks in reverse order (files with ≥ 2 hunks)
 *   reduced_context    `git diff -U1`
 *   crlf_target        the target (and the expected result) with CRLF line endings, the patch with LF
 *   blank_no_space     context lines that are empty written as empty lines (no leading space)
 *   reduced_no_numbers `git diff -U1` and `@@ @@` (a harder combination: one line of context often repeats)
 *   reduced_stale_top  `git diff -U1` and lines inserted at the top
 *
 * Options: --sample=N (every k-th case, about N in all), --tools=a,b (apply_patch,git_apply,git_apply_recount,
 * gnu_patch,diff_pkg), --variants=a,b, --until=REV (the history up to REV instead of HEAD: a fixed set of cases that
 * later commits do not shift), --json (one JSON object on stdout instead of the table), --verbose (list the cases
 * apply_patch did not get right).
 * Needs dist/ (npm run build), git, and GNU patch for its column (apt-get install patch).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { isUtf8 } from 'node:buffer';
import { applyPatch as diffApplyPatch, parsePatch } from 'diff';
import { startServer } from './mcp.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.join(HERE, '..', 'dist', 'cli.js');

const ALL_TOOLS = ['apply_patch', 'git_apply', 'git_apply_recount', 'gnu_patch', 'diff_pkg'];
const ALL_VARIANTS = ['clean', 'no_line_numbers', 'wrong_counts', 'stale_top', 'stale_mid', 'stripped_ws', 'no_headers',
  'fenced', 'reversed_hunks', 'reduced_context', 'crlf_target', 'blank_no_space', 'reduced_no_numbers', 'reduced_stale_top'];

function parseArgs(argv) {
  const opts = { sample: 0, tools: ALL_TOOLS, variants: ALL_VARIANTS, json: false, verbose: false, repo: null, until: 'HEAD' };
  for (const a of argv) {
    const [k, v] = a.replace(/^--/, '').split('=');
    if (k === 'sample') opts.sample = Number(v);
    else if (k === 'tools') opts.tools = v.split(',');
    else if (k === 'variants') opts.variants = v.split(',');
    else if (k === 'json') opts.json = true;
    else if (k === 'verbose') opts.verbose = true;
    else if (k === 'repo') opts.repo = v;
    else if (k === 'until') opts.until = v;
    else throw new Error(`unknown option ${a}`);
  }
  return opts;
}

function git(repo, args, encoding = 'utf8') {
  return execFileSync('git', ['-C', repo, '-c', 'core.quotepath=off', ...args], { encoding, maxBuffer: 256 << 20, stdio: ['ignore', 'pipe', 'ignore'] });
}

/** A diff of one file between c^ and c, with a/ b/ prefixes whatever the user's config says. */
function fileDiff(repo, commit, file, context) {
  return git(repo, ['-c', 'diff.noprefix=false', '-c', 'diff.mnemonicprefix=false', 'diff', '--no-color', '--no-ext-diff',
    '--no-renames', `-U${context}`, `${commit}^`, commit, '--', file]);
}

/** Splits a one-file diff into its header lines and its hunks (each: header line and body lines). */
function splitDiff(diff) {
  const lines = diff.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const header = [];
  const hunks = [];
  for (const l of lines) {
    if (l.startsWith('@@')) hunks.push({ head: l, body: [] });
    else if (hunks.length === 0) header.push(l);
    else hunks[hunks.length - 1].body.push(l);
  }
  return { header, hunks };
}

const joinDiff = (header, hunks) => `${[...header, ...hunks.flatMap((h) => [h.head, ...h.body])].join('\n')}\n`;
const HEAD_RE = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/;

function staleLines(n, seed) {
  return Array.from({ length: n }, (_, i) => `inserted since the diff was made ${seed}.${i}`).join('\n') + '\n';
}

/** Inserts `block` after line `after` (1-based count of lines kept before it) of `text`. */
function insertAfterLine(text, after, block) {
  let at = 0;
  for (let i = 0; i < after; i++) {
    const j = text.indexOf('\n', at);
    if (j === -1) return null;
    at = j + 1;
  }
  return text.slice(0, at) + block + text.slice(at);
}

/** Every case of the history up to `until`: {id, commit, file, variant, patch, before, expected, headerless}. */
export function buildCases(repo, variants, until = 'HEAD') {
  const commits = git(repo, ['rev-list', '--no-merges', until]).trim().split('\n').filter(Boolean).reverse();
  const cases = [];
  let unit = 0;
  for (const commit of commits) {
    let parent;
    try { parent = git(repo, ['rev-parse', '-q', '--verify', `${commit}^`]).trim(); } catch { continue; }
    if (!parent) continue;
    const numstat = git(repo, ['diff', '--numstat', '--no-renames', '--diff-filter=M', `${commit}^`, commit]).trim();
    for (const line of numstat ? numstat.split('\n') : []) {
      const [added, removed, file] = line.split('\t');
      if (added === "-" || removed === "-") continue; // binary
      const before = git(repo, ['show', `${commit}^:${file}`], 'buffer');
      const after = git(repo, ['show', `${commit}:${file}`], 'buffer');
      if (!isUtf8(before) || !isUtf8(after) || before.includes(0) || after.includes(0) || before.equals(after)) continue;
      const b = before.toString('utf8');
      const a = after.toString('utf8');
      const diff3 = fileDiff(repo, commit, file, 3);
      const { header, hunks } = splitDiff(diff3);
      if (hunks.length === 0) continue;
      unit++;
      const k = 4 + (unit % 17);
      const add = (variant, patch, before, expected, headerless = false) => {
        if (variants.includes(variant)) cases.push({ id: `${commit.slice(0, 8)}:${file}:${variant}`, commit, file, variant, patch, before, expected, headerless });
      };
      add('clean', diff3, b, a);
      add('no_line_numbers', joinDiff(header, hunks.map((h) => ({ head: '@@ @@', body: h.body }))), b, a);
      add('wrong_counts', joinDiff(header, hunks.map((h, i) => {
        const m = HEAD_RE.exec(h.head);
        const fix = (n) => (i % 2 === 0 ? n + 2 : Math.max(1, n - 1));
        return { head: `@@ -${m[1]},${fix(Number(m[2] ?? 1))} +${m[3]},${fix(Number(m[4] ?? 1))} @@${m[5]}`, body: h.body };
      })), b, a);
      const block = staleLines(k, unit);
      add('stale_top', diff3, block + b, block + a);
      if (hunks.length >= 2) {
        const m = HEAD_RE.exec(hunks[0].head);
        const oldEnd = Number(m[1]) + Number(m[2] ?? 1) - 1;
        const newEnd = Number(m[3]) + Number(m[4] ?? 1) - 1;
        const sb = insertAfterLine(b, oldEnd, block);
        const sa = insertAfterLine(a, newEnd, block);
        if (sb !== null && sa !== null) add('stale_mid', diff3, sb, sa);
        add('reversed_hunks', joinDiff(header, [...hunks].reverse()), b, a);
      }
      add('stripped_ws', joinDiff(header, hunks.map((h) => ({
        head: h.head, body: h.body.map((l) => (l[0] === ' ' || l[0] === '-' ? l.replace(/[ \t]+$/, '') || (l[0] === ' ' ? '' : '-') : l)),
      }))), b, a);
      add('no_headers', joinDiff([], hunks), b, a, true);
      add('fenced', `Here is the patch:\n\n\`\`\`diff\n${diff3}\`\`\`\n`, b, a);
      const diff1 = fileDiff(repo, commit, file, 1);
      add('reduced_context', diff1, b, a);
      // Harder combinations: one line of context and no line numbers, or stale ones.
      const split1 = splitDiff(diff1);
      add('reduced_no_numbers', joinDiff(split1.header, split1.hunks.map((h) => ({ head: '@@ @@', body: h.body }))), b, a);
      add('reduced_stale_top', diff1, block + b, block + a);
      if (!b.includes('\r') && !a.includes('\r')) add('crlf_target', diff3, b.replace(/\n/g, '\r\n'), a.replace(/\n/g, '\r\n'));
      add('blank_no_space', joinDiff(header, hunks.map((h) => ({ head: h.head, body: h.body.map((l) => (l === ' ' ? '' : l)) }))), b, a);
    }
  }
  return cases;
}

/** About `n` cases, the same share of every variant, spread evenly over the history (deterministic). */
export function sample(cases, n) {
  const byVariant = new Map();
  for (const c of cases) byVariant.set(c.variant, [...(byVariant.get(c.variant) ?? []), c]);
  const per = Math.max(1, Math.round(n / byVariant.size));
  return [...byVariant.values()].flatMap((list) => {
    if (list.length <= per) return list;
    const step = list.length / per;
    return Array.from({ length: per }, (_, i) => list[Math.floor(i * step + step / 2)]);
  });
}

const sha = (buf) => `sha256:${createHash('sha256').update(buf).digest('hex')}`;

function outcome(ok, afterBytes, beforeBytes, expectedBytes) {
  if (ok) return afterBytes.equals(expectedBytes) ? 'correct' : 'wrong';
  return afterBytes.equals(beforeBytes) ? 'refused' : 'damaged';
}

function runProcess(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', timeout: 30_000 });
  return { ok: r.status === 0, message: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().slice(0, 300) };
}

/** Runs every case with every tool; returns per-case results, and the ids of the cases left out for policy. */
export async function runCases(cases, tools, work) {
  const root = path.join(work, 'root');
  mkdirSync(root, { recursive: true });
  const stateDir = path.join(work, 'state');
  mkdirSync(stateDir);
  const server = tools.includes('apply_patch') ? await startServer('fs-tools', [CLI, '--state-dir', stateDir, root]) : null;
  const results = [];
  const policySkipped = [];
  let n = 0;
  try {
    for (const c of cases) {
      n++;
      const beforeBytes = Buffer.from(c.before, 'utf8');
      const expectedBytes = Buffer.from(c.expected, 'utf8');
      const patchFile = path.join(work, `p${n}.diff`);
      writeFileSync(patchFile, c.patch);
      const res = { id: c.id, variant: c.variant, tools: {} };
      for (const tool of tools) {
        const dir = path.join(root, `c${n}-${tool}`);
        const target = path.join(dir, c.file);
        mkdirSync(path.dirname(target), { recursive: true });
        writeFileSync(target, beforeBytes);
        let ok = false;
        let message = '';
        const t0 = performance.now();
        if (tool === 'apply_patch') {
          try {
            await server.call('apply_patch', {
              patch: c.patch, path: c.headerless ? target : dir, expected_hashes: { [target]: sha(beforeBytes) }, allow_rewrite: true,
            });
            ok = true;
          } catch (error) {
            message = String(error.message ?? error);
          }
        } else if (tool === 'git_apply' || tool === 'git_apply_recount') {
          // Outside a repository git apply works on plain files; a headerless patch has no file for it.
          const r = runProcess('git', ['apply', ...(tool === 'git_apply_recount' ? ['--recount'] : []), patchFile], dir);
          ({ ok, message } = r);
        } else if (tool === 'gnu_patch') {
          const common = ['-f', '-s', '--no-backup-if-mismatch', '-r', '-', '-i', patchFile];
          const r = c.headerless ? runProcess('patch', [...common, target], dir) : runProcess('patch', ['-p1', ...common], dir);
          ({ ok, message } = r);
        } else if (tool === 'diff_pkg') {
          try {
            const parsed = parsePatch(c.patch).filter((p) => p.hunks.length > 0);
            if (parsed.length !== 1) throw new Error(`${parsed.length} file patches`);
            const out = diffApplyPatch(readFileSync(target, 'utf8'), parsed[0]);
            if (out === false) throw new Error('applyPatch returned false');
            writeFileSync(target, out);
            ok = true;
          } catch (error) {
            message = String(error.message ?? error);
          }
        }
        const ms = performance.now() - t0;
        let afterBytes;
        try { afterBytes = readFileSync(target); } catch { afterBytes = Buffer.alloc(0); }
        res.tools[tool] = { outcome: outcome(ok, afterBytes, beforeBytes, expectedBytes), ms, message: ok ? '' : message };
        rmSync(dir, { recursive: true, force: true });
      }
      // A file fs-tools' policy refuses to write (a secret's name, a protected path) says nothing about placement: such
      // cases are left out of the table and counted apart.
      if (/"code":"(SECRET_DENIED|NOT_ALLOWED)"/.test(res.tools.apply_patch?.message ?? '')) policySkipped.push(c.id);
      else results.push(res);
    }
  } finally {
    await server?.close();
  }
  return { results, policySkipped };
}

/** Per variant and tool: counts and mean ms; plus the totals and the acceptance checks for apply_patch. */
export function summarize(results, tools) {
  const variants = [...new Set(results.map((r) => r.variant))];
  const table = {};
  for (const v of [...variants, 'all']) {
    table[v] = {};
    for (const t of tools) table[v][t] = { cases: 0, correct: 0, wrong: 0, refused: 0, damaged: 0, ms: 0 };
  }
  for (const r of results) {
    for (const t of tools) {
      for (const v of [r.variant, 'all']) {
        const cell = table[v][t];
        cell.cases++;
        cell[r.tools[t].outcome]++;
        cell.ms += r.tools[t].ms;
      }
    }
  }
  for (const v of Object.keys(table)) for (const t of tools) table[v][t].ms = table[v][t].cases ? table[v][t].ms / table[v][t].cases : 0;
  // apply_patch refusing a case that another tool applied correctly.
  const refusedElsewhereCorrect = tools.includes('apply_patch')
    ? results.filter((r) => r.tools.apply_patch.outcome !== 'correct' && tools.some((t) => t !== 'apply_patch' && r.tools[t].outcome === 'correct')).map((r) => r.id)
    : [];
  return { variants, table, refusedElsewhereCorrect };
}

function formatTable(summary, tools) {
  const out = [];
  const pct = (c) => (c.cases ? `${((100 * c.correct) / c.cases).toFixed(1)} %` : '-');
  out.push(`| variant | cases | ${tools.join(' | ')} |`);
  out.push(`|---|---:|${tools.map(() => '---:').join('|')}|`);
  for (const v of [...summary.variants, 'all']) {
    const row = summary.table[v];
    const cell = (c) => `${c.correct} / ${c.wrong} / ${c.refused} / ${c.damaged}`;
    const name = v === 'all' ? '**all**' : v;
    out.push(`| ${name} | ${row[tools[0]].cases} | ${tools.map((t) => (v === 'all' ? `**${cell(row[t])}** (${pct(row[t])})` : cell(row[t]))).join(' | ')} |`);
  }
  out.push(`| ms per patch | | ${tools.map((t) => summary.table.all[t].ms.toFixed(1)).join(' | ')} |`);
  return `cells: correct / wrong / refused / damaged\n\n${out.join('\n')}`;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const repo = opts.repo ?? git(HERE, ['rev-parse', '--show-toplevel']).trim();
  const shallow = git(repo, ['rev-parse', '--is-shallow-repository']).trim() === 'true';
  let cases = buildCases(repo, opts.variants, opts.until);
  if (opts.sample > 0 && cases.length > opts.sample) cases = sample(cases, opts.sample);
  let tools = opts.tools;
  if (tools.includes('gnu_patch') && spawnSync('patch', ['--version']).status !== 0) {
    process.stderr.write('GNU patch not found (apt-get install patch): its column is left out\n');
    tools = tools.filter((t) => t !== 'gnu_patch');
  }
  const work = mkdtempSync(path.join(tmpdir(), 'fs-tools-bench-patch-'));
  const t0 = performance.now();
  let results;
  let policySkipped;
  try {
    ({ results, policySkipped } = await runCases(cases, tools, work));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const summary = summarize(results, tools);
  const commits = new Set(cases.map((c) => c.commit)).size;
  const ap = summary.table.all.apply_patch;
  const acceptance = ap ? {
    wrong: ap.wrong, damaged: ap.damaged, correct_pct: ap.cases ? (100 * ap.correct) / ap.cases : 0,
    refused_where_another_tool_was_correct: summary.refusedElsewhereCorrect,
  } : null;
  if (opts.json) {
    const misses = results.filter((r) => r.tools.apply_patch && r.tools.apply_patch.outcome !== 'correct')
      .map((r) => ({ id: r.id, outcome: r.tools.apply_patch.outcome, message: r.tools.apply_patch.message.slice(0, 300) }));
    process.stdout.write(`${JSON.stringify({ commits, cases: results.length, policy_skipped: policySkipped, shallow, table: summary.table, acceptance, misses })}\n`);
    return;
  }
  if (policySkipped.length) console.log(`Left out (fs-tools policy refuses to write these files): ${policySkipped.join(', ')}`);
  console.log(`Patch benchmark: ${results.length} cases from ${commits} commits of ${repo}${shallow ? ' (shallow clone: only the history present)' : ''}, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  console.log('');
  console.log(formatTable(summary, tools));
  if (acceptance) {
    console.log('');
    console.log(`apply_patch: ${acceptance.correct_pct.toFixed(2)} % correct, ${acceptance.wrong} wrong, ${acceptance.damaged} damaged; refused where another tool was correct: ${acceptance.refused_where_another_tool_was_correct.length}`);
    if (opts.verbose) {
      for (const r of results) {
        const a = r.tools.apply_patch;
        if (a.outcome !== 'correct') console.log(`  ${a.outcome} ${r.id}: ${a.message.replace(/\s+/g, ' ').slice(0, 240)}  [others: ${tools.filter((t) => t !== 'apply_patch').map((t) => `${t}=${r.tools[t].outcome}`).join(' ')}]`);
      }
    }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
