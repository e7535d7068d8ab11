import type { Plugin } from 'esbuild';

/** See sdk-patch.mjs. */
export const SDK_CLASSIFICATION: string;
export const PATCHED_CLASSIFICATION: string;
export function sdkPatchPlugin(): Plugin;
