/**
 * Attack (issue 13): patterns that would freeze a backtracking matcher, in every vector that matches patterns —
 * search_files `glob`, `include` and `exclude` (search_files and list_directory), `.gitignore` lines at several
 * depths, a `--policy` file, and the built-in secret rules — against names the agent can create itself (`a` × 40 +
 * `b`: micromatch spent ~110 s on `*a*a…*c` against it; 255-byte names). Real server over stdio. Pins:
 * - every call completes (or is refused) within CALL_BOUND_MS, and a concurrent list_allowed_directories, issued
 *   back to back for as long as the call runs, is answered within 1 s every time (measured here);
 * - over-limit patterns are VALIDATION with details.reason "pattern_too_complex" (glob, include, exclude) before any
 *   path is looked at; an over-limit .gitignore line is skipped, matches nothing, and is counted in
 *   `skipped.ignore_rules`; a --policy rule over the limit stops start-up with status 2 and one stderr line;
 * - within the limits, results are right: the adversarial globs find exactly the files they match, the secret rules
 *   still mark and refuse 255-byte secret names, the policy rules still hide and deny.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, connect, type TestClient } from '../helpers/server.js';
import { makeTree, type TreeSpec } from '../helpers/tree.js';
import { entryObject, entryPath } from '../helpers/entries.js';

/** The stated bound for one call of this suite (README "Patterns"); measured: well under 1 s each. */
const CALL_BOUND_MS = 10_000;
/** The stated bound for a concurrent list_allowed_directories. */
const PROBE_BOUND_MS = 1_000;

const A40B = `${'a'.repeat(40)}b`;
const LONG = `${'a'.repeat(254)}b`; // 255 bytes
const LONG_SECRET = `.env.${'a'.repeat(250)}`; // 255 bytes, a secret name
const LONG_PEM = `${'a'.repeat(251)}.pem`; // 255 bytes, a secret name
const EVIL_STAR = `${'*a'.repeat(16)}*c`; // micromatch: ~110 s on A40B
const STARS = '*'.repeat(100);
const BRACES = '{a,b}'.repeat(20); // a million alternatives if expanded
const NESTED = `${'{a,{aa,{b,'.repeat(8)}c${'}}}'.repeat(8)}`;
const EXTGLOB = `+(a|aa)${'+(a|aa)'.repeat(20)}c`;
const CLASSES = '[a-z]'.repeat(100);
const ADVERSARIAL = [EVIL_STAR, STARS, BRACES, NESTED, EXTGLOB, CLASSES, `**/${EVIL_STAR}`];
/** Over the limits: refused. */
const TOO_COMPLEX = ['{1..5000}', 'x!(a)', 'a'.repeat(2000), `${'{a,'.repeat(40)}b${'}'.repeat(40)}`];

/** Many long names per directory, so each call has real work. */
function files(n: number): TreeSpec {
  const spec: TreeSpec = {
    [A40B]: 'x\n',
    [LONG]: 'x\n',
    [LONG_SECRET]: 'TOKEN=1\n',
    [LONG_PEM]: 'k\n',
    'keep.txt': 'hello\n',
  };
  for (let i = 0; i < n; i++) spec[`${'a'.repeat(200)}${i}${'a'.repeat(40)}b`] = 'x\n';
  return spec;
}

// Adversarial lines that match none of the names here (so every directory is walked and every name tested).
const gitignoreLines = [
  EVIL_STAR,
  `${STARS}c`,
  CLASSES,
  `**/${EVIL_STAR}`,
  '[a-z]'.repeat(150),
  `${'*/'.repeat(50)}*`,
  `!${EVIL_STAR}`,
  'b'.repeat(2000), // over the limit: skipped, counted
  'ignored-*.tmp',
].join('\n');

const t = makeTree(
  {
    '.gitignore': gitignoreLines,
    ...files(150),
    'ignored-1.tmp': '',
    d1: {
      '.gitignore': gitignoreLines,
      ...files(150),
      d2: { '.gitignore': gitignoreLines, ...files(150), d3: { '.gitignore': gitignoreLines, ...files(150) } },
    },
  },
  'fs-tools-pattern-dos-',
);
const root = t.dir;
afterAll(() => t.cleanup());

/**
 * Runs `call` while probing list_allowed_directories back to back; returns the call's outcome, its duration and the
 * slowest probe.
 */
async function underProbe<T>(
  client: TestClient,
  call: () => Promise<T>,
): Promise<{ value: T; ms: number; probeMax: number; probes: number }> {
  const started = performance.now();
  let done = false;
  const pending = call().finally(() => {
    done = true;
  });
  let probeMax = 0;
  let probes = 0;
  do {
    const t0 = performance.now();
    const r = await client.call('list_allowed_directories', {});
    expect(r.isError).toBeFalsy();
    probeMax = Math.max(probeMax, performance.now() - t0);
    probes++;
  } while (!done);
  const value = await pending;
  if (process.env.PATTERN_DOS_VERBOSE)
    console.log(
      `call ${(performance.now() - started).toFixed(0)} ms, ${probes} probes, slowest ${probeMax.toFixed(0)} ms`,
    );
  return { value, ms: performance.now() - started, probeMax, probes };
}

describe('adversarial patterns, real server', () => {
  let client: TestClient;
  const policyFile = path.join(root, '..', `${path.basename(root)}-policy.json`);
  beforeAll(async () => {
    writeFileSync(
      policyFile,
      JSON.stringify({
        rules: [
          { pattern: EVIL_STAR, access: 'hidden' },
          { pattern: `**/${EXTGLOB}`, access: 'deny' },
          { pattern: BRACES, access: 'read_only' },
          { pattern: STARS, access: 'read_only' },
          { pattern: `d1/**/${CLASSES}`, access: 'read_only' },
        ],
      }),
    );
    client = await connect('modern', { args: [root, `--policy=${policyFile}`] });
    // Warm-up (the first calls of a fresh process load and compile code; not what is measured here).
    await client.callOk('list_allowed_directories', {});
    await client.callOk('search_files', { path: 'd1/d2/d3', glob: '*.txt' });
  });
  afterAll(async () => {
    await client?.close();
    spawnSync('rm', ['-f', policyFile]);
  });

  it.each(ADVERSARIAL)('search_files glob %s', async (glob) => {
    const r = await underProbe(client, () =>
      client.call('search_files', { path: '.', glob, respect_gitignore: false }),
    );
    expect(r.value.isError).toBeFalsy();
    expect(r.ms).toBeLessThan(CALL_BOUND_MS);
    expect(r.probeMax).toBeLessThan(PROBE_BOUND_MS);
  });

  it('within the limits the answers are right: the glob finds exactly its matches, the policy rule hides its own', async () => {
    const found = `${'a'.repeat(40)}d`;
    const hidden = `${'a'.repeat(40)}c`; // matches the policy's EVIL_STAR rule (hidden)
    writeFileSync(path.join(root, 'd1', found), '');
    writeFileSync(path.join(root, 'd1', hidden), '');
    try {
      const r = await client.callOk('search_files', {
        path: '.',
        glob: `${'*a'.repeat(16)}*d`,
        respect_gitignore: false,
      });
      expect(r.files).toEqual([`d1/${found}`]);
      const r2 = await client.callOk('search_files', { path: '.', glob: EVIL_STAR, respect_gitignore: false });
      expect(r2.files).toEqual([]);
      const listed = await client.callOk('list_directory', { path: 'd1', respect_gitignore: false });
      const names = listed.entries.map(entryPath);
      expect(names).toContain(found);
      expect(names).not.toContain(hidden);
    } finally {
      spawnSync('rm', ['-f', path.join(root, 'd1', found), path.join(root, 'd1', hidden)]);
    }
  });

  it.each(ADVERSARIAL)('include and exclude %s (search_files content search and list_directory)', async (glob) => {
    for (const [tool, args] of [
      ['search_files', { path: '.', query: 'hello', include: [glob, '*.txt'], exclude: [glob] }],
      ['search_files', { path: '.', glob: '**', exclude: [glob, STARS] }],
      ['list_directory', { path: '.', depth: 5, include: [glob], exclude: [EXTGLOB] }],
    ] as const) {
      const r = await underProbe(client, () => client.call(tool, args));
      expect(r.value.isError, JSON.stringify(r.value.content)).toBeFalsy();
      expect(r.ms).toBeLessThan(CALL_BOUND_MS);
      expect(r.probeMax).toBeLessThan(PROBE_BOUND_MS);
    }
  });

  it.each(TOO_COMPLEX)(
    'over the limits: %s is VALIDATION pattern_too_complex in glob, include and exclude',
    async (glob) => {
      for (const [tool, args, field] of [
        ['search_files', { path: '.', glob }, 'glob'],
        ['search_files', { path: '.', query: 'x', include: ['*.ts', glob] }, 'include'],
        ['list_directory', { path: '.', exclude: [glob] }, 'exclude'],
        // Arguments are checked before paths: the same with a path outside the roots.
        ['list_directory', { path: '/', include: [glob] }, 'include'],
      ] as const) {
        const t0 = performance.now();
        const { error } = await client.callError(tool, args);
        expect(performance.now() - t0).toBeLessThan(CALL_BOUND_MS);
        expect(error.code).toBe('VALIDATION');
        expect(error.details).toMatchObject({ reason: 'pattern_too_complex', field });
      }
    },
  );

  it('the globs of one call share a budget of automaton states: 100 large include globs are refused', async () => {
    const include = Array.from({ length: 100 }, (_, i) => `${'[a-z]'.repeat(200)}${i}`);
    for (const tool of ['search_files', 'list_directory']) {
      const { error } = await client.callError(tool, {
        path: '.',
        include,
        ...(tool === 'search_files' ? { query: 'x' } : {}),
      });
      expect(error.code).toBe('VALIDATION');
      expect(error.details).toMatchObject({ reason: 'pattern_too_complex', field: 'include', limit: 'call_states' });
    }
  });

  it('.gitignore at four depths with adversarial lines: listings and searches complete; the over-limit line is counted', async () => {
    const r = await underProbe(client, () => client.callOk('list_directory', { path: '.', depth: 6 }));
    expect(r.ms).toBeLessThan(CALL_BOUND_MS);
    expect(r.probeMax).toBeLessThan(PROBE_BOUND_MS);
    // One over-limit line in each of the four .gitignore files (the root's, d1's, d2's, d3's).
    expect(r.value.skipped).toEqual({ unreadable: 0, name_too_long: 0, ignore_rules: 4 });
    const paths = (r.value.entries as unknown[]).map(entryPath);
    // The other lines still apply: `ignored-*.tmp` is ignored; the adversarial lines match none of these names.
    expect(paths).not.toContain('ignored-1.tmp');
    for (const dir of ['', 'd1/', 'd1/d2/', 'd1/d2/d3/']) {
      for (const name of ['keep.txt', A40B, LONG, LONG_SECRET]) expect(paths).toContain(`${dir}${name}`);
    }
    expect(paths).toHaveLength(4 * 155 + 3 * 2 /* d1, d2, d3 and their .gitignore */ + 1 /* root .gitignore */);
    const s = await underProbe(client, () => client.callOk('search_files', { path: 'd1/d2', query: 'hello' }));
    expect(s.ms).toBeLessThan(CALL_BOUND_MS);
    expect(s.probeMax).toBeLessThan(PROBE_BOUND_MS);
    expect(s.value.matches).toHaveLength(2); // d1/d2/keep.txt and d1/d2/d3/keep.txt
    expect(s.value.skipped.ignore_rules).toBe(4); // the root's and d1's (ancestors), d2's and d3's
  });

  it('secret rules on 255-byte names: marked in listings, skipped by search, refused by read_file — promptly', async () => {
    const r = await underProbe(client, () =>
      client.callOk('list_directory', { path: 'd1/d2/d3', respect_gitignore: false }),
    );
    expect(r.probeMax).toBeLessThan(PROBE_BOUND_MS);
    const byPath = new Map(
      (r.value.entries as unknown[]).map((e) => [entryPath(e), entryObject(e) as { secret?: boolean }]),
    );
    expect(byPath.get(LONG_SECRET)?.secret).toBe(true);
    expect(byPath.get(LONG_PEM)?.secret).toBe(true);
    expect(byPath.get(LONG)?.secret).toBeUndefined();
    const s = await client.callOk('search_files', { path: 'd1/d2/d3', query: 'TOKEN', respect_gitignore: false });
    expect(s.matches).toEqual([]);
    expect(s.skipped.secret).toBe(2);
    const { error } = await client.callError('read_file', { path: `d1/${LONG_SECRET}` });
    expect(error.code).toBe('SECRET_DENIED');
  });

  it('policy rules (adversarial but within the limits) still decide, promptly', async () => {
    // `**/+(a|aa)…c` deny, `*a*a…*c` hidden: nothing here ends in c. BRACES/STARS read_only: STARS matches every name.
    const { error } = await client.callError('write_file', { path: 'keep.txt', content: 'x', expected_hash: 'absent' });
    expect(error.code).toBe('FILE_POLICY_DENIED');
    expect(error.details).toMatchObject({ source: 'policy', rule: 'read_only' });
    const r = await underProbe(client, () =>
      client.callOk('search_files', { path: '.', glob: '**', respect_gitignore: false }),
    );
    expect(r.ms).toBeLessThan(CALL_BOUND_MS);
    expect(r.probeMax).toBeLessThan(PROBE_BOUND_MS);
  });
});

describe('--policy rule over the limits', () => {
  it.each(TOO_COMPLEX.map((p) => [p.length > 40 ? `${p.slice(0, 40)}… (${p.length} characters)` : p, p]))(
    '%s stops start-up with status 2 and one line naming pattern_too_complex',
    (_label, pattern) => {
      const file = path.join(root, '..', `${path.basename(root)}-bad-policy.json`);
      writeFileSync(
        file,
        JSON.stringify({
          rules: [
            { pattern: 'ok/**', access: 'deny' },
            { pattern, access: 'deny' },
          ],
        }),
      );
      try {
        const t0 = performance.now();
        const r = spawnSync(process.execPath, [CLI, `--root=${root}`, `--policy=${file}`, 'tools'], {
          encoding: 'utf8',
          timeout: 20_000,
        });
        expect(performance.now() - t0).toBeLessThan(CALL_BOUND_MS);
        expect(r.status).toBe(2);
        expect(r.stdout).toBe('');
        const lines = r.stderr.trim().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/rules\.1\.pattern is too complex \(pattern_too_complex/);
        expect(lines[0].length).toBeLessThan(400);
      } finally {
        spawnSync('rm', ['-f', file]);
      }
    },
  );
});
