/**
 * src/patch/merge3.ts against `git merge-file` on real histories (docs/tools.md "Merging instead of refusing"): triples
 * taken deterministically from this repository's own history. For every file with at least three revisions, each
 * window of three consecutive revisions N, N+1, N+2 gives two triples whose base is N+1: one side undoes the N → N+1
 * change, the other makes the N+1 → N+2 change (and the same with the sides swapped). The rule pinned:
 *  - where git merges cleanly, merge3 produces the same bytes, or refuses (conflict or too large);
 *  - where git reports a conflict, merge3 never produces bytes.
 * git merge-file runs once per triple, all from one shell process (one spawn for the whole batch).
 * `npm test` compares the first 400 triples (FS_TOOLS_MERGE3_TRIPLES, default 400: about half this file's CPU, and both
 * outcomes still occur well over a hundred times each); `npm run test:full-counts` (.ci/run) compares 1,200, at
 * least the 1,000 the acceptance asks for.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { merge3 } from '../../src/patch/merge3.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** Triples most used (keeps the run short): 400 in `npm test`, 1,200 in `npm run test:full-counts`. */
const MAX_TRIPLES = Number(process.env.FS_TOOLS_MERGE3_TRIPLES ?? 400);
/** Triples needed: the acceptance bound of 1,000, or all asked for when fewer are. */
const MIN_TRIPLES = Math.min(1000, MAX_TRIPLES);
const MAX_FILE_BYTES = 256 * 1024;

function git(args: string[], input?: string): Buffer {
  return execFileSync('git', ['-C', REPO, ...args], { input, maxBuffer: 1 << 30 });
}

/** path → commits that changed it, oldest first (first-parent order of `git log`). */
function revisionsByPath(): Map<string, string[]> {
  const out = git(['log', '--format=@@%H', '--name-only', '--no-renames', 'HEAD']).toString('utf8');
  const byPath = new Map<string, string[]>();
  let commit = '';
  for (const line of out.split('\n')) {
    if (line.startsWith('@@')) commit = line.slice(2);
    else if (line !== '') {
      const list = byPath.get(line) ?? [];
      list.push(commit);
      byPath.set(line, list);
    }
  }
  for (const list of byPath.values()) list.reverse();
  return byPath;
}

/** The blobs named `commit:path`, read through one `git cat-file --batch`; null for a missing or large one. */
function readBlobs(specs: string[]): Map<string, string | null> {
  const out = git(['cat-file', '--batch'], specs.map((s) => `${s}\n`).join(''));
  const blobs = new Map<string, string | null>();
  let at = 0;
  for (const spec of specs) {
    const nl = out.indexOf(10, at);
    const header = out.subarray(at, nl).toString('utf8');
    at = nl + 1;
    if (header.endsWith(' missing')) {
      blobs.set(spec, null);
      continue;
    }
    const size = Number(header.split(' ')[2]);
    const body = out.subarray(at, at + size);
    at += size + 1;
    blobs.set(spec, size <= MAX_FILE_BYTES && !body.includes(0) ? body.toString('utf8') : null);
  }
  return blobs;
}

it(`agrees with git merge-file on at least ${MIN_TRIPLES} triples from this repository`, () => {
  const byPath = revisionsByPath();
  const windows: Array<[string, string, string, string]> = [];
  for (const p of [...byPath.keys()].sort()) {
    if (p === 'package-lock.json') continue;
    const revs = byPath.get(p)!;
    for (let i = 0; i + 2 < revs.length; i++) windows.push([p, revs[i], revs[i + 1], revs[i + 2]]);
  }
  const blobs = readBlobs([...new Set(windows.flatMap(([p, ...cs]) => cs.map((c) => `${c}:${p}`)))]);
  const triples: Array<{ base: string; theirs: string; ours: string }> = [];
  for (const [p, n0, n1, n2] of windows) {
    const [a, b, c] = [n0, n1, n2].map((cm) => blobs.get(`${cm}:${p}`));
    if (a == null || b == null || c == null || a === b || b === c) continue;
    triples.push({ base: b, theirs: a, ours: c }, { base: b, theirs: c, ours: a });
    if (triples.length >= MAX_TRIPLES) break;
  }
  expect(triples.length).toBeGreaterThanOrEqual(MIN_TRIPLES);

  const dir = path.join(os.tmpdir(), `fs-tools-merge3-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  try {
    triples.forEach((t, i) => {
      writeFileSync(path.join(dir, `${i}.base`), t.base);
      writeFileSync(path.join(dir, `${i}.theirs`), t.theirs);
      writeFileSync(path.join(dir, `${i}.ours`), t.ours);
    });
    // git merge-file -p CURRENT BASE OTHER: exit 0 clean, N > 0 conflicts.
    const script =
      'i=0; while [ "$i" -lt "$1" ]; do git merge-file -p "$i.ours" "$i.base" "$i.theirs" > "$i.out"; ' +
      'echo "$?" > "$i.rc"; i=$((i+1)); done';
    execFileSync('sh', ['-c', script, 'sh', String(triples.length)], { cwd: dir });
    const tally = { gitClean: 0, gitConflict: 0, same: 0, refused: 0, tooLarge: 0 };
    const wrong: string[] = [];
    triples.forEach((t, i) => {
      const rc = Number(readFileSync(path.join(dir, `${i}.rc`), 'utf8'));
      expect(rc).toBeGreaterThanOrEqual(0);
      expect(rc).toBeLessThan(128);
      const ours = merge3(t.base, t.theirs, t.ours);
      if (ours.kind === 'too_large') tally.tooLarge++;
      if (rc === 0) {
        tally.gitClean++;
        if (ours.kind === 'merged') {
          if (ours.text === readFileSync(path.join(dir, `${i}.out`), 'utf8')) tally.same++;
          else wrong.push(`triple ${i}: git merged cleanly, merge3 produced other bytes`);
        } else tally.refused++;
      } else {
        tally.gitConflict++;
        if (ours.kind === 'merged') wrong.push(`triple ${i}: git reports ${rc} conflict(s), merge3 merged`);
      }
    });
    console.log(`merge3 vs git merge-file: ${triples.length} triples`, tally);
    expect(wrong).toEqual([]);
    // The comparison means something only when both outcomes occur in numbers.
    expect(tally.same).toBeGreaterThan(100);
    expect(tally.gitConflict).toBeGreaterThan(100);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
