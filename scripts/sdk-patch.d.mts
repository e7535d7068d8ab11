import type { Plugin } from 'esbuild';

/** See sdk-patch.mjs. */
export const SDK_CLASSIFICATION: string;
export const PATCHED_CLASSIFICATION: string;
export const SDK_SETTLE: string;
export const PATCHED_SETTLE: string;
export const FS_TOOLS_PLAIN_REQUEST: string;
export const FS_TOOLS_PLAIN_CHANNEL_REQUEST: string;
export const SDK_DELIVER: string;
export const PATCHED_DELIVER: string;
export const FS_TOOLS_LAZY_ABORT_CONTROLLER: string;
export const SDK_PATCHES: readonly { name: string; original: string; patched: string; appended?: string }[];
export function sdkPatchPlugin(): Plugin;
