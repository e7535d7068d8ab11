/**
 * Test seams never ship armed (issue #20). Pins:
 *  - the production bundle (dist/main.js, built by the global setup with scripts/bundle.mjs) carries no
 *    `setWriteFaultInjector` and its write-fault switch is the folded constant `false`;
 *  - the production bundle carries no `--test-seams` flag and refuses it as an unknown option (a usage error, exit
 *    2, nothing served), while the seams test build (dist-seams/cli.js, scripts/bundle.mjs --test-seams) takes it;
 *  - the production bundle keeps the 10 s lock stale time and shutdown grace: nothing in it assigns either (the seams
 *    build's lock-stale and shutdown-grace seams do), and its one-shot call reports a lock nobody refreshes as taken
 *    over after 10 s;
 *  - this in-process build (vitest.config.ts defines FS_TOOLS_TEST_SEAMS) does carry the seam, and an injected fault
 *    reaches the writer and leaves nothing behind (so the bundle check above is about a seam that really works);
 *  - no source file names an FS_TOOLS_* environment variable (test-only switches are never read from the
 *    environment; the operator's variables such as GITLAB_TOKEN or XDG_STATE_HOME are not test seams). The names
 *    that may appear are the build-time constants scripts/bundle.mjs defines: FS_TOOLS_TEST_SEAMS,
 *    FS_TOOLS_BROKEN_CONTAINMENT, and the embedded worker code, addon digests and advertised tool entries
 *    (FS_TOOLS_WORKER_CODE, FS_TOOLS_NATIVE_DIGESTS, FS_TOOLS_ADVERTISED), each only in a `declare const`
 *    and `typeof` test, never through process.env.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { setWriteFaultInjector, writeFileAtomic } from '../../src/fs/atomic-write.js';
import type { AllowedPath } from '../../src/policy/resolve-path.js';
import { selfIdentity } from '../../src/fs/process-identity.js';
import { CLI, PROGRAM, SEAMS_CLI, SEAMS_PROGRAM } from '../helpers/server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

afterEach(() => setWriteFaultInjector(null));

describe('test seams', () => {
  it('the production bundle carries no write-fault setter and a constant-off switch', () => {
    const bundle = readFileSync(PROGRAM, 'utf8');
    expect(bundle).not.toContain('setWriteFaultInjector');
    expect(bundle).not.toContain('FS_TOOLS_TEST_SEAMS');
    // The kernel wall's broken-policy test build (scripts/bundle.mjs --broken-containment) folds to false here.
    expect(bundle).not.toContain('FS_TOOLS_BROKEN_CONTAINMENT');
    // Declared with its value, or assigned in the module's lazy initializer (a module only a tool's module imports is
    // evaluated on first use: src/tools/tool-index.ts).
    expect(bundle).toMatch(/\bBROKEN_CONTAINMENT = false;/);
    expect(bundle).toMatch(/\bWRITE_FAULTS_BUILT_IN = false;/);
    expect(bundle).not.toMatch(/\b(BROKEN_CONTAINMENT|WRITE_FAULTS_BUILT_IN) = true;/);
  });

  it('the production bundle has no --test-seams flag and refuses it; the seams test build takes it', () => {
    const product = readFileSync(PROGRAM, 'utf8');
    expect(product.match(/test-seams/gi) ?? []).toEqual([]);
    // The seams module's code is gone with the flag (a dead `if (false)` call to it may remain).
    expect(product).not.toMatch(/kill-at|copy-fault|copy-delay|lock-stale|shutdown-grace/);
    expect(readFileSync(SEAMS_PROGRAM, 'utf8')).toContain('--test-seams=');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-seam-flag-'));
    try {
      // `tools` mode answers without serving: a build that takes the seam prints the tool list, one that does not
      // stops at the unknown option.
      const run = (cli: string) =>
        spawnSync(process.execPath, [cli, '--test-seams=kill-at:1', '--state-dir', dir, '--root', dir, 'tools'], {
          encoding: 'utf8',
          timeout: 30_000,
        });
      const refused = run(CLI);
      expect(refused.status).toBe(2);
      expect(refused.stderr).toMatch(/--test-seams/);
      expect(refused.stdout).toBe('');
      const taken = run(SEAMS_CLI);
      expect(taken.stderr).not.toMatch(/unknown|usage/i);
      expect(taken.status).toBe(0);
      expect(taken.stdout).toContain('read_file');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the production bundle keeps the 10 s lock stale time and the 10 s shutdown grace (the lock-stale and shutdown-grace seams never reach it)', () => {
    // Since the own-files and token-dirs tests moved to the seams build with short timers, this is what pins the
    // product's values. Statically: the defaults are the constants, and nothing assigns the stale time or the grace
    // (the seams build does: the positive control).
    const product = readFileSync(PROGRAM, 'utf8');
    expect(product).toMatch(/\bLOCK_STALE_MS = 1e4;/);
    expect(product).toMatch(/\bSHUTDOWN_GRACE_MS = 1e4;/);
    expect(product).toMatch(/staleMs: LOCK_STALE_MS\b/);
    expect(product).toMatch(/processSlot\("server\/shutdown", \(\) => \(\{ ms: SHUTDOWN_GRACE_MS \}\)\)/);
    const assigns = /\.staleMs = |\bgrace\.ms = /g;
    expect(product.match(assigns) ?? []).toEqual([]);
    expect((readFileSync(SEAMS_PROGRAM, 'utf8').match(assigns) ?? []).length).toBe(2);
    // And as the product answers: a lock nobody refreshes (another host's) is taken over after 10 s.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-seam-defaults-'));
    try {
      const lock = `.fs-tools-lock-${createHash('sha256').update('a.txt').digest('hex').slice(0, 32)}`;
      writeFileSync(path.join(dir, lock), JSON.stringify({ ...selfIdentity(), host: 'another-host.example' }));
      const args = JSON.stringify({ path: path.join(dir, 'a.txt'), content: 'x' });
      const r = spawnSync(
        process.execPath,
        [CLI, '--sandbox=off', '--state-dir', path.join(dir, '.state'), dir, 'call', 'write_file', args],
        { cwd: dir, encoding: 'utf8', timeout: 30_000 },
      );
      expect(r.status, r.stderr).toBe(1);
      const { error } = JSON.parse(r.stdout) as { error: { message: string; details: Record<string, unknown> } };
      expect(error.details).toMatchObject({ reason: 'locked', held_by: 'not_refreshed', lock });
      expect(error.message).toContain('not been refreshed for 10 s');
      expect(error.details.clears_in_s).toBeGreaterThanOrEqual(9);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the in-process build carries the seam: an injected ENOSPC aborts the write and leaves no file', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-seam-'));
    try {
      const target = path.join(dir, 'a.txt') as AllowedPath;
      setWriteFaultInjector((step) => {
        if (step === 'write') throw Object.assign(new Error('ENOSPC: injected'), { code: 'ENOSPC' });
      });
      await expect(
        writeFileAtomic(target, Buffer.from('x'), { isInside: (p) => p === dir || p.startsWith(`${dir}/`) }),
      ).rejects.toMatchObject({ code: 'ENOSPC' });
      expect(existsSync(target)).toBe(false);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('no source file reads an FS_TOOLS_* environment variable', () => {
    const offenders: string[] = [];
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith('.ts')) {
          const text = readFileSync(p, 'utf8');
          if (
            /\bFS_TOOLS_(?!TEST_SEAMS\b|BROKEN_CONTAINMENT\b|WORKER_CODE\b|NATIVE_DIGESTS\b|ADVERTISED\b)[A-Z_]+/.test(
              text,
            )
          ) {
            offenders.push(path.relative(ROOT, p));
          }
          if (/process\.env(\.|\[['"`])FS_TOOLS_/.test(text)) offenders.push(path.relative(ROOT, p));
        }
      }
    };
    walk(path.join(ROOT, 'src'));
    expect(offenders).toEqual([]);
  });
});
