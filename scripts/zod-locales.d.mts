/** Types of scripts/zod-locales.mjs (for the tests that import it). */
import type { Plugin } from 'esbuild';

export const ENGLISH_EXPORT: string;
export function zodLocalesPlugin(): Plugin;
