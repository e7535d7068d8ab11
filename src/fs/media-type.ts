/**
 * Media type detection from a file's first bytes (magic numbers), never from its name: a `.png` that holds text is
 * not an image, and a renamed image still is one. Used by read_media.
 *
 * Recognized (the formats models and MCP clients accept as image/audio content):
 * - images: PNG, JPEG, GIF (87a/89a), WebP (RIFF…WEBP)
 * - audio: WAV (RIFF…WAVE), MP3 (ID3 tag or an MPEG audio frame sync), OGG (OggS), FLAC (fLaC), M4A/AAC in MP4
 *   (`ftyp` with an M4A/M4B/mp42-family audio brand)
 * SVG is text, not an image here: read it with read_file (models take raster images; an SVG is XML a model reads).
 */

/** What detectMedia found. `mime` is the IANA media type a client hands its model. */
export interface MediaType {
  kind: 'image' | 'audio';
  mime: string;
}

/** How many leading bytes detectMedia needs at most. */
export const MEDIA_SNIFF_BYTES = 16;

const startsWith = (b: Uint8Array, sig: readonly number[], at = 0): boolean =>
  b.length >= at + sig.length && sig.every((v, i) => b[at + i] === v);
const ascii = (b: Uint8Array, text: string, at = 0): boolean =>
  startsWith(
    b,
    [...text].map((c) => c.charCodeAt(0)),
    at,
  );

/**
 * The media type of a file from its first bytes (pass at least MEDIA_SNIFF_BYTES when the file has them), or null
 * when it is none of the recognized formats.
 */
export function detectMedia(head: Uint8Array): MediaType | null {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return { kind: 'image', mime: 'image/png' };
  if (startsWith(head, [0xff, 0xd8, 0xff])) return { kind: 'image', mime: 'image/jpeg' };
  if (ascii(head, 'GIF87a') || ascii(head, 'GIF89a')) return { kind: 'image', mime: 'image/gif' };
  if (ascii(head, 'RIFF') && ascii(head, 'WEBP', 8)) return { kind: 'image', mime: 'image/webp' };
  if (ascii(head, 'RIFF') && ascii(head, 'WAVE', 8)) return { kind: 'audio', mime: 'audio/wav' };
  if (ascii(head, 'OggS')) return { kind: 'audio', mime: 'audio/ogg' };
  if (ascii(head, 'fLaC')) return { kind: 'audio', mime: 'audio/flac' };
  if (ascii(head, 'ID3')) return { kind: 'audio', mime: 'audio/mpeg' };
  // An MPEG-1/2 layer III frame header: 11 sync bits, a version other than "reserved", layer III.
  if (
    head.length >= 2 &&
    head[0] === 0xff &&
    (head[1] & 0xe0) === 0xe0 &&
    (head[1] & 0x18) !== 0x08 &&
    (head[1] & 0x06) === 0x02
  )
    return { kind: 'audio', mime: 'audio/mpeg' };
  if (ascii(head, 'ftyp', 4) && ['M4A ', 'M4B ', 'M4P '].some((brand) => ascii(head, brand, 8))) {
    return { kind: 'audio', mime: 'audio/mp4' };
  }
  return null;
}
