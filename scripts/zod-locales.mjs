/**
 * zod's locales, trimmed to the one fs-tools uses, while esbuild bundles dist/cli.js and the worker threads' code.
 *
 * zod re-exports all of its ~50 locales as a namespace (`z.locales`, `z.core.locales`), and because fs-tools reaches
 * zod through the `z` namespace object, esbuild cannot leave any of them out: 400 KB of the bundle (about a sixth of
 * dist/cli.js, once more in the reader threads' embedded code) that every start parses and evaluates and nothing runs.
 * fs-tools never sets a locale: zod's error messages come from English, which zod's own schemas module installs
 * (`core.config(en())`, imported from locales/en.js directly, untouched here). The plugin serves
 * `zod/v4/locales/index.js` as `export { default as en } from './en.js'`, so `z.locales` holds `en` only.
 *
 * Kept honest by: the build fails when the file is not found where expected or no longer re-exports `en` from
 * `./en.js` (a zod upgrade that moves it must revisit this file), and test/distribution/bundle-trim.test.ts checks
 * that dist/cli.js carries no other locale and that zod's messages are still the English ones.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** zod's locales index, by path (any zod copy under node_modules). */
const LOCALES_INDEX = /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/;

/** The line of the index that re-exports English, as zod ships it. */
export const ENGLISH_EXPORT = 'export { default as en } from "./en.js";';

/**
 * The esbuild plugin. Fails the build when a locales index that it replaces does not re-export English as above.
 * @returns {import('esbuild').Plugin}
 */
export function zodLocalesPlugin() {
  return {
    name: 'fs-tools-zod-locales',
    setup(build) {
      build.onLoad({ filter: LOCALES_INDEX }, (args) => {
        const text = readFileSync(args.path, 'utf8');
        if (!text.split('\n').includes(ENGLISH_EXPORT)) {
          return {
            errors: [
              {
                text: `scripts/zod-locales.mjs: ${args.path} no longer holds '${ENGLISH_EXPORT}': zod changed; revisit the trim`,
              },
            ],
          };
        }
        return { contents: `${ENGLISH_EXPORT}\n`, loader: 'js', resolveDir: path.dirname(args.path) };
      });
    },
  };
}
