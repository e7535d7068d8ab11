/**
 * Kill tests (docs/security.md "Locks, temporaries and shutdown"): a real server (dist/cli.js, --allow-secrets) is
 * killed with SIGKILL, or has its stdin closed, at a random moment during a mutation, over and over, for:
 *   - write_file of a secret (`.env`, 1 MiB);
 *   - apply_patch changing three secret files (one transaction, journaled);
 *   - copy_path of a tree of 60 files holding a `.env`;
 *   - replace_in_files across 24 files, secrets among them.
 * After every kill, before any restart, every file holding secret bytes is either secret-named or of the server's
 * own class (src/fs/own-files.ts: never read, listed or searched, whatever it holds). The next start (the next
 * run's server; one more after the last run) sweeps: once it answers, no entry of ours is left anywhere in the root —
 * the list checked is every own-class name: `.fs-tools-lock-*` (locks, their temporaries, break locks),
 * `.NAME.fs-tools-<hex>.tmp` (file temporaries), `.NAME.fs-tools-copy-*` / `-link-*` (copy trees, link temporaries) —
 * and the in-flight registers of killed processes are gone. After a stdin close the process exits by itself, with
 * nothing of ours left even before a restart. Finally a server WITHOUT --allow-secrets finds no secret byte by
 * listing and content search.
 *
 * Runs per tool: FS_TOOLS_KILL_RUNS (default 2 in `npm test`: one of each; `npm run test:kill` runs 100 per tool).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isOwnFileName } from '../../src/fs/own-files.js';
import { secretRuleFor } from '../../src/policy/secrets.js';
import { connect } from '../helpers/server.js';
import { startRaw, type RawServer } from '../helpers/raw-server.js';
import { makeTree } from '../helpers/tree.js';

const RUNS = Math.max(1, Number(process.env.FS_TOOLS_KILL_RUNS ?? 2));
const MARK = 'S3CR3T-MARK-';

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups) c();
});

/** Every file under `dir`: relative path, whether its name (any component) is own-class, its bytes. */
function files(dir: string): Array<{ rel: string; own: boolean; bytes: Buffer }> {
  const out: Array<{ rel: string; own: boolean; bytes: Buffer }> = [];
  const visit = (d: string, rel: string, own: boolean): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      const o = own || isOwnFileName(e.name);
      if (e.isDirectory()) visit(path.join(d, e.name), r, o);
      else if (e.isFile()) out.push({ rel: r, own: o, bytes: readFileSync(path.join(d, e.name)) });
      else if (o) out.push({ rel: r, own: o, bytes: Buffer.alloc(0) });
    }
  };
  visit(dir, '', false);
  return out;
}

/** Own-class entries (files and directories) under `dir`. */
function ownEntries(dir: string): string[] {
  const out: string[] = [];
  const visit = (d: string, rel: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (isOwnFileName(e.name)) out.push(r);
      else if (e.isDirectory()) visit(path.join(d, e.name), r);
    }
  };
  visit(dir, '');
  return out;
}

/** No secret byte outside a secret-named file, except in own-class files (which no tool reads). */
function assertSecretsContained(root: string, when: string): void {
  for (const f of files(root)) {
    if (!f.bytes.includes(MARK)) continue;
    const secretNamed = secretRuleFor(path.join(root, f.rel)) !== null;
    expect(secretNamed || f.own, `${when}: ${f.rel} holds secret bytes`).toBe(true);
  }
}

interface Scenario {
  tool: string;
  setup(root: string): void;
  /** The arguments of run `i` (read what it needs from disk: the previous run may have been rolled back). */
  args(root: string, i: number): Record<string, unknown>;
}

const secretBody = (n: number) => `${MARK}${'x'.repeat(60)}\n`.repeat(n);

const SCENARIOS: Scenario[] = [
  {
    tool: 'write_file',
    setup: () => undefined,
    args: (root, i) => ({ path: path.join(root, '.env'), content: `v=${i}\n${secretBody(16 * 1024)}` }),
  },
  {
    tool: 'apply_patch',
    setup: (root) => {
      mkdirSync(path.join(root, 'conf'));
      for (const f of ['.env.one', '.env.two', 'conf/.env.three'])
        writeFileSync(path.join(root, f), `v=0\n${secretBody(2048)}`);
    },
    args: (root, i) => ({
      path: root,
      patch: ['.env.one', '.env.two', 'conf/.env.three']
        .map((f) => {
          const first = readFileSync(path.join(root, f), 'utf8').split('\n')[0];
          return `--- a/${f}\n+++ b/${f}\n@@ -1,2 +1,2 @@\n-${first}\n+v=${i}\n ${MARK}${'x'.repeat(60)}\n`;
        })
        .join(''),
    }),
  },
  {
    tool: 'copy_path',
    setup: (root) => {
      mkdirSync(path.join(root, 'src', 'deep'), { recursive: true });
      for (let k = 0; k < 60; k++) writeFileSync(path.join(root, 'src', k % 2 ? 'deep' : '', `f${k}.txt`), `${k}\n`);
      writeFileSync(path.join(root, 'src', '.env'), secretBody(512));
    },
    args: (root, i) => ({ source: path.join(root, 'src'), destination: path.join(root, `dst${i}`), recursive: true }),
  },
  {
    tool: 'replace_in_files',
    setup: (root) => {
      for (let k = 0; k < 24; k++) {
        const name = k % 4 === 0 ? `.env.f${k}` : `f${k}.txt`;
        writeFileSync(path.join(root, name), `v=0\n${k % 4 === 0 ? secretBody(256) : 'plain\n'.repeat(256)}`);
      }
    },
    args: (_root, i) => ({ path: '.', query: 'v=\\d+', replacement: `v=${i}`, regex: true }),
  },
];

/** Starts a server on `root` and waits until it answers (its start-up sweep and journal recovery are done). */
async function start(root: string, state: string): Promise<RawServer> {
  const s = startRaw(['--allow-secrets', '--auto-occ=off', '--state-dir', state, root], { cwd: root });
  await s.ready;
  return s;
}

describe.each(SCENARIOS)('$tool killed at random points', (scenario) => {
  it(
    `SIGKILL or stdin close, ${RUNS} run(s): no secret byte escapes its class; the next start leaves nothing of ours`,
    async () => {
      const t = makeTree({}, 'fs-tools-kill-');
      cleanups.push(t.cleanup);
      const state = makeTree({}, 'fs-tools-kill-state-');
      cleanups.push(state.cleanup);
      const root = t.dir;
      scenario.setup(root);
      // How long one call takes here, uninterrupted: the kill points are spread over it.
      let s = await start(root, state.dir);
      const t0 = performance.now();
      const first = await s.call(scenario.tool, scenario.args(root, 0));
      const duration = performance.now() - t0;
      expect(first?.isError, JSON.stringify(first?.envelope)).toBe(false);
      const stats = { killed: 0, closed: 0, leftBehind: 0 };
      for (let i = 1; i <= RUNS; i++) {
        // The server started for this run swept what the previous kill left.
        expect(ownEntries(root), `run ${i}: after the start`).toEqual([]);
        const inflight = path.join(state.dir, 'inflight');
        const registers = existsSync(inflight) ? readdirSync(inflight) : [];
        expect(registers.length, `run ${i}: registers`).toBeLessThanOrEqual(1); // only the live server's own
        const answer = s.call(scenario.tool, scenario.args(root, i));
        await new Promise((r) => setTimeout(r, Math.random() * duration * 1.2));
        if (i % 2 === 0) {
          s.child.kill('SIGKILL');
          await s.exited;
          stats.killed++;
          if (ownEntries(root).length > 0) stats.leftBehind++;
        } else {
          s.child.stdin.end();
          const exit = await s.exited;
          expect(exit.code, `run ${i}: exit after stdin close`).toBe(0);
          await answer;
          stats.closed++;
          expect(ownEntries(root), `run ${i}: after stdin close`).toEqual([]);
        }
        assertSecretsContained(root, `run ${i}`);
        s = await start(root, state.dir);
      }
      expect(ownEntries(root), 'after the last start').toEqual([]);
      s.child.stdin.end();
      await s.exited;
      expect(stats.killed + stats.closed).toBe(RUNS);
      // Without --allow-secrets: nothing lists or finds a secret byte.
      const c = await connect('legacy', { args: ['--state-dir', state.dir, root] });
      try {
        const found = await c.callOk('search_files', { path: root, query: MARK, max_results: 5 });
        expect(JSON.stringify(found)).not.toContain(MARK);
        const listed = JSON.stringify(await c.callOk('list_directory', { path: root, depth: 3 }));
        expect(listed).not.toMatch(/\.fs-tools-/);
      } finally {
        await c.close();
      }
      process.stderr.write(
        `kill suite ${scenario.tool}: ${RUNS} runs (${stats.killed} SIGKILL, ${stats.closed} stdin close; ` +
          `${stats.leftBehind} kills left files of ours for the sweep); one call ~${Math.round(duration)} ms\n`,
      );
    },
    60_000 + RUNS * 6_000,
  );
});
