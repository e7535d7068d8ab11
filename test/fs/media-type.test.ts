/**
 * detectMedia (src/fs/media-type.ts): each recognized format from its magic bytes, and the near misses that must not
 * pass for media (text named like an image, SVG, a RIFF that is neither WAVE nor WEBP, an MPEG sync with the
 * reserved version, truncated headers).
 */
import { describe, expect, it } from 'vitest';
import { detectMedia } from '../../src/fs/media-type.js';

const bytes = (...parts: Array<string | number[]>): Uint8Array =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

describe('detectMedia', () => {
  it.each([
    ['PNG', bytes([0x89], 'PNG\r\n\x1a\n', [0, 0, 0, 13]), 'image', 'image/png'],
    ['JPEG', bytes([0xff, 0xd8, 0xff, 0xe0]), 'image', 'image/jpeg'],
    ['GIF89a', bytes('GIF89a', [1, 0]), 'image', 'image/gif'],
    ['GIF87a', bytes('GIF87a'), 'image', 'image/gif'],
    ['WebP', bytes('RIFF', [0, 0, 0, 0], 'WEBPVP8 '), 'image', 'image/webp'],
    ['WAV', bytes('RIFF', [0, 0, 0, 0], 'WAVEfmt '), 'audio', 'audio/wav'],
    ['OGG', bytes('OggS', [0]), 'audio', 'audio/ogg'],
    ['FLAC', bytes('fLaC'), 'audio', 'audio/flac'],
    ['MP3 with ID3', bytes('ID3', [4, 0]), 'audio', 'audio/mpeg'],
    ['MP3 frame (MPEG-1 layer III)', bytes([0xff, 0xfb, 0x90, 0x00]), 'audio', 'audio/mpeg'],
    ['M4A', bytes([0, 0, 0, 0x20], 'ftypM4A ', [0, 0, 0, 0]), 'audio', 'audio/mp4'],
  ])('%s', (_name, head, kind, mime) => {
    expect(detectMedia(head)).toEqual({ kind, mime });
  });

  it.each([
    ['text', bytes('hello, world\n')],
    ['SVG (text, read with read_file)', bytes('<svg xmlns="http://www.w3.org/2000/svg"/>')],
    ['RIFF that is AVI', bytes('RIFF', [0, 0, 0, 0], 'AVI LIST')],
    ['MPEG sync with the reserved version', bytes([0xff, 0xeb, 0x90, 0x00])],
    ['MPEG sync, layer I (not III)', bytes([0xff, 0xff, 0x90, 0x00])],
    ['MP4 video brand', bytes([0, 0, 0, 0x20], 'ftypisom', [0, 0, 0, 0])],
    ['a truncated PNG signature', bytes([0x89], 'PNG')],
    ['empty', bytes()],
  ])('%s is not media', (_name, head) => {
    expect(detectMedia(head)).toBeNull();
  });
});
