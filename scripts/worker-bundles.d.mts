import type { Metafile } from 'esbuild';

/** See worker-bundles.mjs. */
export function buildWorkerCode(root: string): Promise<{ code: Record<string, string>; metafiles: Metafile[] }>;
