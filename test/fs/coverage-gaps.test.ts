/**
 * In-process pins of three small pieces the e2e suites exercise only in the spawned server: the content bound of
 * reads of files that do not report their size (src/fs/hash.ts checkContentBound), the verified addon loader's
 * refusals (src/fs/native-load.ts loadVerifiedAddon), and who refused an EACCES (src/errors/to-envelope.ts
 * setDenialSource / refusalSource, set by the kernel wall at start-up).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { refusalSource, setDenialSource, toEnvelope } from '../../src/errors/to-envelope.js';
import { checkContentBound, contentPastSizeError, type ContentBound } from '../../src/fs/hash.js';
import {
  copyVerifiedNativeFile,
  describeNativeReads,
  loadNativeAddonAtStart,
  loadVerifiedAddon,
  nativeLoadReason,
} from '../../src/fs/native-load.js';

describe('checkContentBound', () => {
  const bound = (reportedSize: number, maxBytes: number): ContentBound => ({ reportedSize, maxBytes, path: '/p/f' });
  const never = () => Promise.reject(new Error('stat must not be called within the bound'));

  it('within max(reported size, cap): passes without a stat', async () => {
    await expect(checkContentBound(bound(10, 100), 100, never)).resolves.toBeUndefined();
    await expect(checkContentBound(bound(500, 100), 500, never)).resolves.toBeUndefined();
  });

  it('past it: a file that grew goes on, with the new size remembered', async () => {
    const b = bound(10, 100);
    await expect(checkContentBound(b, 150, () => Promise.resolve({ size: 200 }))).resolves.toBeUndefined();
    expect(b.reportedSize).toBe(200);
  });

  it('past it, and past the size fstat reports now (a procfs file that says 0): VALIDATION file_too_large', async () => {
    await expect(checkContentBound(bound(0, 100), 101, () => Promise.resolve({ size: 0 }))).rejects.toMatchObject({
      code: 'VALIDATION',
      details: { reason: 'file_too_large', size: 0, limit: 100 },
    });
  });
});

describe('contentPastSizeError', () => {
  it('names the file, or says "The file" when the path is not known', () => {
    expect(contentPastSizeError({ reportedSize: 0, maxBytes: 5, path: null }).message).toMatch(/^The file reports 0/);
    expect(contentPastSizeError({ reportedSize: 0, maxBytes: 5, path: '/p/f' }).message).toMatch(/^\/p\/f reports 0/);
  });
});

describe('copyVerifiedNativeFile copies only the file built', () => {
  it('a missing source, no digest, another digest: nothing copied; the right digest: a copy of that mode', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-copy-gaps-'));
    try {
      const src = path.join(dir, 'helper');
      writeFileSync(src, 'helper bytes');
      const digest = createHash('sha256').update('helper bytes').digest('hex');
      expect(copyVerifiedNativeFile(path.join(dir, 'absent'), path.join(dir, 'a'), digest, 0o500)).toBe('missing');
      expect(copyVerifiedNativeFile(src, path.join(dir, 'b'), null, 0o500)).toBe('no_digest');
      expect(copyVerifiedNativeFile(src, path.join(dir, 'c'), 'c'.repeat(64), 0o500)).toBe('digest_mismatch');
      expect(existsSync(path.join(dir, 'c'))).toBe(false);
      expect(copyVerifiedNativeFile(src, path.join(dir, 'd'), digest, 0o500)).toBe('copied');
      expect(readFileSync(path.join(dir, 'd'), 'utf8')).toBe('helper bytes');
      expect(statSync(path.join(dir, 'd')).mode & 0o777).toBe(0o500);
      // An existing destination is never written through.
      expect(copyVerifiedNativeFile(src, path.join(dir, 'd'), digest, 0o500)).toBe('failed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('loadNativeAddonAtStart in this unbundled build (no recorded digest): the JavaScript path, nothing said', () => {
    const lines: string[] = [];
    expect(loadNativeAddonAtStart((l) => lines.push(l))).toEqual({
      inUse: false,
      reason: 'this build has no native addon (built without a C compiler)',
    });
    expect(lines).toEqual([]);
  });

  it('nativeLoadReason says every reason native reads are off in words (--version, list_allowed_directories)', () => {
    const reasons = [
      'unsupported',
      'no_digest',
      'missing',
      'digest_mismatch',
      'not_loadable',
      'wrong_interface',
    ] as const;
    const words = reasons.map(nativeLoadReason);
    expect(new Set(words).size).toBe(reasons.length);
    expect(words[2]).toMatch(/missing/);
    expect(words[3]).toMatch(/sha256 differs/);
    expect(words[4]).toMatch(/load error/);
    expect(describeNativeReads({ inUse: false, reason: words[3] })).toBe(`native reads: off (${words[3]})`);
    expect(describeNativeReads({ inUse: true, path: '/proc/self/fd/9' })).toMatch(/^native reads: on/);
  });
});

describe('loadVerifiedAddon refuses before loading anything', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-addon-gaps-'));
  it('no digest, a missing file, a digest that differs', () => {
    const file = path.join(dir, 'x.node');
    writeFileSync(file, 'not an addon');
    const accept = (e: unknown) => e;
    expect(loadVerifiedAddon(pathToFileURL(file), null, accept).loaded).toBeNull();
    expect(loadVerifiedAddon(pathToFileURL(file), null, accept)).toMatchObject({ reason: 'no_digest' });
    const missing = loadVerifiedAddon(pathToFileURL(path.join(dir, 'absent.node')), 'a'.repeat(64), accept);
    expect(missing.loaded).toBeNull();
    const other = loadVerifiedAddon(pathToFileURL(file), 'b'.repeat(64), accept);
    expect(other.loaded).toBeNull();
    expect(other).not.toMatchObject({ reason: 'no_digest' });
    // The right digest of a file that is no addon: still nothing loaded.
    const digest = createHash('sha256').update(readFileSync(file)).digest('hex');
    expect(loadVerifiedAddon(pathToFileURL(file), digest, accept).loaded).toBeNull();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('who refused an EACCES', () => {
  afterEach(() => setDenialSource(() => 'os'));
  const eacces = (p: string) => Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES', path: p });

  it('the operating system, unless the kernel wall says it was the kernel', () => {
    expect(toEnvelope(eacces('/r/x')).error.details).toMatchObject({ source: 'os', errno: 'EACCES' });
    expect(refusalSource('/r/x')).toBe('os');
    setDenialSource((p) => (p !== null && p.startsWith('/r/') ? 'os' : 'kernel'));
    expect(refusalSource('/etc/x')).toBe('kernel');
    expect(refusalSource(null)).toBe('kernel');
    expect(toEnvelope(eacces('/etc/x')).error.details).toMatchObject({ source: 'kernel', errno: 'EACCES' });
    expect(toEnvelope(eacces('/r/x')).error.details).toMatchObject({ source: 'os' });
  });
});
