/**
 * Review of the read path's recalled work (src/fs/hash.ts `hashRecentBytes`: a small file's SHA-256 recalled after a
 * full byte comparison; src/server/stdio-transport.ts `escapedText`: the last text's JSON spelling reused when the
 * text is equal), attacked against the real server over stdio with real files. A file rewritten in place with the
 * same size and its times set back, cycling through more contents than the recall keeps (so entries are evicted and
 * recalled), and back to an earlier content (A, B, A): every read reports exactly the bytes it returned — its text,
 * its content_hash (SHA-256 of those bytes), and the content block's text equal to structuredContent's — and an edit
 * with any earlier read's hash of other content is OCC_MISMATCH and changes nothing. Two files that differ in one
 * byte, read alternately: each answer carries its own text (the JSON spelling of the other is never reused).
 */
import { createHash } from 'node:crypto';
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;
const T = 1_700_000_000;

describe('recalled hashes and JSON spellings across rewrites (real server)', () => {
  const tree = makeTree({ 'a.txt': '', 'x.txt': '', 'y.txt': '' }, 'fs-tools-hash-recall-');
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('modern', { args: [tree.dir] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  /** Reads `name` whole; checks that text, hash and the content block agree with `expected`; returns the hash. */
  async function readChecked(name: string, expected: string): Promise<string> {
    const r = await client.call('read_file', { path: name });
    expect(r.isError).toBeFalsy();
    const s = r.structuredContent!;
    expect(s.content).toBe(expected);
    expect(s.content_hash).toBe(sha(expected));
    expect(r.content[0].text).toBe(expected);
    return s.content_hash as string;
  }

  it('same size and times, more contents than the recall keeps, and back again: each read its own hash', async () => {
    const file = path.join(tree.dir, 'a.txt');
    const versions = Array.from({ length: 11 }, (_, k) => `line one\nversion ${String.fromCharCode(65 + k)}\nend\n`);
    const hashes: string[] = [];
    for (const round of [0, 1]) {
      for (const [k, text] of versions.entries()) {
        writeFileSync(file, text);
        utimesSync(file, T, T);
        const h = await readChecked('a.txt', text);
        expect(await readChecked('a.txt', text)).toBe(h); // the recalled hash: the same
        if (round === 0) hashes.push(h);
        else expect(h).toBe(hashes[k]);
        // An edit with the previous version's hash: refused, nothing changed.
        const previous = hashes[(k + versions.length - 1) % versions.length];
        if (previous !== undefined && previous !== h) {
          const stale = await client.callError('edit_file', {
            path: 'a.txt',
            expected_hash: previous,
            edits: [{ old_text: 'end', new_text: 'END' }],
          });
          expect(stale.error.code).toBe('OCC_MISMATCH');
          expect(readFileSync(file, 'utf8')).toBe(text);
        }
      }
    }
    // A, B, A: the edit with B's hash is refused against A; with A's hash it applies.
    const [a, b] = versions;
    writeFileSync(file, a);
    utimesSync(file, T, T);
    const ha = await readChecked('a.txt', a);
    writeFileSync(file, b);
    utimesSync(file, T, T);
    const hb = await readChecked('a.txt', b);
    writeFileSync(file, a);
    utimesSync(file, T, T);
    expect(await readChecked('a.txt', a)).toBe(ha);
    const stale = await client.callError('edit_file', {
      path: 'a.txt',
      expected_hash: hb,
      edits: [{ old_text: 'end', new_text: 'END' }],
    });
    expect(stale.error.code).toBe('OCC_MISMATCH');
    expect(readFileSync(file, 'utf8')).toBe(a);
    await client.callOk('edit_file', {
      path: 'a.txt',
      expected_hash: ha,
      edits: [{ old_text: 'end', new_text: 'END' }],
    });
    expect(readFileSync(file, 'utf8')).toBe(a.replace('end', 'END'));
  });

  it('two files one byte apart, read alternately: each answer carries its own text', async () => {
    const base = `${'quote " backslash \\ tab \t newline\n'.repeat(40)}é ☃ 😀\n`;
    writeFileSync(path.join(tree.dir, 'x.txt'), `${base}x`);
    writeFileSync(path.join(tree.dir, 'y.txt'), `${base}y`);
    for (let k = 0; k < 4; k++) {
      await readChecked('x.txt', `${base}x`);
      await readChecked('x.txt', `${base}x`);
      await readChecked('y.txt', `${base}y`);
    }
  });
});
