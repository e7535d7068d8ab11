/**
 * What scripts/bundle.mjs leaves out of dist/main.js to start faster (docs/benchmarks.md "Start-up, read_file and
 * memory"). Pins zod's locales trimmed to English (scripts/zod-locales.mjs): the program, and the reader threads' code
 * embedded in it, carry no other locale's messages and still carry English's; the installed zod still re-exports
 * English the way the plugin expects (a zod upgrade that changes it fails here and at build time).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ENGLISH_EXPORT } from '../../scripts/zod-locales.mjs';
import { PROGRAM } from '../helpers/server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LOCALES = path.join(ROOT, 'node_modules/zod/v4/locales');

describe("zod's locales in dist/main.js", () => {
  it('the installed zod re-exports English as the plugin expects', () => {
    expect(readFileSync(path.join(LOCALES, 'index.js'), 'utf8').split('\n')).toContain(ENGLISH_EXPORT);
  });

  it('carries English only', () => {
    const bundle = readFileSync(PROGRAM, 'utf8');
    // A message of German's and of Spanish's (each spelled only in its own locale file), and English's.
    expect(readFileSync(path.join(LOCALES, 'de.js'), 'utf8')).toContain('Ungültige Eingabe');
    expect(readFileSync(path.join(LOCALES, 'es.js'), 'utf8')).toContain('Entrada inválida');
    expect(bundle).not.toContain('Ungültige Eingabe');
    expect(bundle).not.toContain('Entrada inválida');
    expect(bundle).not.toMatch(/\\u00fcltige Eingabe/i); // nor escaped, in the embedded worker code
    // English's messages: in the main bundle and in each embedded reader thread's zod (JSON-escaped there).
    expect(bundle.split('Invalid input: expected ').length - 1).toBeGreaterThanOrEqual(2);
  });
});
