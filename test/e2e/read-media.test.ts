/**
 * read_media end to end (issue #18), with real clients of both eras: an image comes back as an MCP image block whose
 * bytes equal the file, its type from the bytes (a PNG named .dat is an image; text named .png is not); audio as an
 * audio block; the structured facts (size, content_hash) match the file; the hash is remembered for OCC (a later
 * write needs no explicit hash); policy as read_file (secret names, outside the roots, FIFOs) with no byte of the file
 * in any refusal; the size cap is a VALIDATION envelope.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, ERAS, type TestClient } from '../helpers/server.js';
import { fifo, makeTree } from '../helpers/tree.js';

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** A 10 ms mono 8 kHz 8-bit WAV. */
function wav(): Buffer {
  const samples = Buffer.alloc(80, 128);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + samples.length, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(8000, 28);
  header.writeUInt16LE(1, 32);
  header.writeUInt16LE(8, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(samples.length, 40);
  return Buffer.concat([header, samples]);
}

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe.each(ERAS)('read_media (%s era)', (era) => {
  const outside = makeTree({ 'o.png': PNG });
  const tree = makeTree({
    'pic.png': PNG,
    'renamed.dat': PNG,
    'not-really.png': 'just text\n',
    'logo.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>\n',
    'beep.wav': wav(),
    'big.png': Buffer.concat([PNG, Buffer.alloc(4096)]),
    'server.key': PNG,
    pipe: fifo(),
  });
  let client: TestClient;
  beforeAll(async () => {
    client = await connect(era, { args: [tree.dir, '--max-media-bytes=2048'] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
    outside.cleanup();
  });

  it('returns an image block whose bytes equal the file, with the facts in structured form', async () => {
    const r = await client.call('read_media', { path: 'pic.png' });
    expect(r.isError).toBeFalsy();
    const image = r.content.find((c) => c.type === 'image') as { data: string; mimeType: string } | undefined;
    expect(image?.mimeType).toBe('image/png');
    expect(Buffer.from(image!.data, 'base64').equals(readFileSync(path.join(tree.dir, 'pic.png')))).toBe(true);
    expect(r.structuredContent).toEqual({
      path: path.join(tree.dir, 'pic.png'),
      kind: 'image',
      mime_type: 'image/png',
      size: PNG.length,
      content_hash: sha(PNG),
    });
  });

  it('detects the type from the bytes, not the name', async () => {
    expect((await client.callOk('read_media', { path: 'renamed.dat' })).mime_type).toBe('image/png');
    const e = (await client.callError('read_media', { path: 'not-really.png' })).error;
    expect(e.code).toBe('VALIDATION');
    expect(e.details).toMatchObject({ reason: 'not_media', size: 10, content_hash: sha(Buffer.from('just text\n')) });
    expect((await client.callError('read_media', { path: 'logo.svg' })).error.details.reason).toBe('not_media');
  });

  it('returns audio as an audio block', async () => {
    const r = await client.call('read_media', { path: 'beep.wav' });
    const audio = r.content.find((c) => c.type === 'audio') as { data: string; mimeType: string } | undefined;
    expect(audio?.mimeType).toBe('audio/wav');
    expect(Buffer.from(audio!.data, 'base64').equals(wav())).toBe(true);
    expect(r.structuredContent).toMatchObject({ kind: 'audio', mime_type: 'audio/wav' });
  });

  it('remembers the hash for OCC: a write after read_media needs no expected_hash', async () => {
    const r = await client.callOk('write_file', { path: 'pic.png', content_base64: PNG.toString('base64') });
    expect(r.previous_hash).toBe(sha(PNG));
  });

  it('refuses over the size cap, secrets, outside paths and special files, with none of the bytes', async () => {
    const big = (await client.callError('read_media', { path: 'big.png' })).error;
    expect(big.code).toBe('VALIDATION');
    expect(big.details).toMatchObject({ reason: 'too_large', size: PNG.length + 4096, limit: 2048 });
    const cases: Array<[string, string]> = [
      ['server.key', 'SECRET_DENIED'],
      [path.join(outside.dir, 'o.png'), 'NOT_ALLOWED'],
      ['pipe', 'FILE_POLICY_DENIED'],
      ['missing.png', 'NOT_FOUND'],
    ];
    for (const [p, code] of cases) {
      const r = await client.call('read_media', { path: p });
      expect(r.isError, p).toBe(true);
      expect(r.content).toHaveLength(1);
      expect(JSON.parse(r.content[0].text!).error.code, p).toBe(code);
      expect(r.content[0].text).not.toContain(PNG.toString('base64').slice(0, 24));
    }
  });
});
