#!/usr/bin/env node
/**
 * Summarises a V8 CPU profile (`node --cpu-prof`, a `.cpuprofile` JSON file): self time by function and by source
 * file, as text. Used by `npm run bench -- --profile DIR` and on its own:
 *
 *   node bench/profile-summary.mjs FILE.cpuprofile... [TOP]
 *
 * Self time of a node = the sum of the sample intervals (`timeDeltas`) attributed to it; functions with the same name
 * and location are merged. "(idle)" is time the event loop waited (for the thread pool, the disk or the client);
 * "(program)" and "(garbage collector)" are V8's own.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Returns the summary text of one profile.
 * @param {string} file path of a .cpuprofile
 * @param {number} top how many functions to list
 * @returns {string}
 */
export function summarizeProfile(file, top = 25) {
  return summarizeProfiles([file], top);
}

/**
 * Returns the summary text of several profiles taken together (e.g. the soak's eight servers): their self times
 * added up by function and by file.
 * @param {string[]} fileList paths of .cpuprofile files
 * @param {number} top how many functions to list
 * @returns {string}
 */
export function summarizeProfiles(fileList, top = 25) {
  const fns = new Map();
  const files = new Map();
  let total = 0;
  for (const file of fileList) {
    const profile = JSON.parse(readFileSync(file, 'utf8'));
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const selfUs = new Map();
    for (let i = 0; i < profile.samples.length; i++) {
      const id = profile.samples[i];
      selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
    }
    for (const [id, us] of selfUs) {
      total += us;
      const cf = byId.get(id).callFrame;
      const where = cf.url ? `${shortUrl(cf.url)}:${cf.lineNumber + 1}` : '';
      const key = `${cf.functionName || '(anonymous)'} ${where}`.trim();
      fns.set(key, (fns.get(key) ?? 0) + us);
      const fileKey = cf.url ? shortUrl(cf.url) : cf.functionName || '(native)';
      files.set(fileKey, (files.get(fileKey) ?? 0) + us);
    }
  }
  total ||= 1;
  const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms`;
  const name = fileList.length === 1 ? fileList[0] : `${fileList.length} files`;
  const lines = [`CPU profile ${name}: ${(total / 1e6).toFixed(2)} s sampled`, '', 'self time by function:'];
  for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${k}`);
  lines.push('', 'self time by file:');
  for (const [k, us] of [...files].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`  ${pct(us)}  ${k}`);
  return lines.join('\n');
}

function shortUrl(url) {
  const s = url.replace(/^file:\/\//, '');
  const nm = s.lastIndexOf('node_modules/');
  if (nm >= 0) return s.slice(nm);
  const dist = s.indexOf('/dist/');
  return dist >= 0 ? s.slice(dist + 1) : s;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // FILE [TOP], or several files (taken together) and an optional TOP last.
  const args = process.argv.slice(2);
  const top = /^\d+$/.test(args.at(-1) ?? '') ? Number(args.pop()) : 25;
  process.stdout.write(`${summarizeProfiles(args, top)}\n`);
}
