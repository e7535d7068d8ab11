/**
 * edit_file's steps on the single-file pipeline (src/mutation/mutate-file.ts): the new content — exact-text edits,
 * all or none, on the current text (step 10: VALIDATION binary, PATCH_FAILED, REWRITE_BLOCKED) — and the bounded
 * unified diff of what the write changes. The engine is src/patch/apply-edits.ts.
 */
import { isUtf8 } from 'node:buffer';
import { PatchFailedError, ToolError } from '../errors/tool-error.js';
import type { CurrentFile } from '../fs/read-current.js';
import { applyEditsSliced, type EditReport, type TextEdit } from '../patch/apply-edits.js';
import { toEolText } from '../patch/eol-text.js';
import { assertNotRewriteSliced } from '../patch/rewrite-guard.js';
import { boundedUnifiedDiffSliced } from '../patch/window-diff.js';
import type { Computed } from './mutate-file.js';

/** Default max_replacements (docs/security.md "Bounded work"). */
export const DEFAULT_EDIT_REPLACEMENTS = 10_000;
/** Most characters of unified diff returned in a result. */
const MAX_DIFF_CHARS = 64 * 1024;

/** The arguments of edit_file the step reads. */
export interface EditArgs {
  edits: readonly TextEdit[];
  allow_rewrite: boolean;
  max_replacements?: number;
}

/** The text before and after, and what each edit did. */
export interface EditDetail {
  before: string;
  after: string;
  edits: EditReport[];
}

/**
 * The compute step of edit_file: the edits applied to the current text.
 * @param absolute the file's path, for messages
 * @throws ToolError VALIDATION binary / too_many_matches, PatchFailedError (with details.current_hash),
 *   REWRITE_BLOCKED
 */
export async function editedContent(
  args: EditArgs,
  absolute: string,
  current: CurrentFile,
): Promise<Computed<EditDetail>> {
  const bytes = current.bytes!;
  if (!isUtf8(bytes)) {
    throw new ToolError('VALIDATION', `${absolute} is not valid UTF-8 text; edit_file edits text only.`, {
      path: absolute,
      details: { reason: 'binary', current_hash: current.hash },
      suggestion: 'Use write_file with content_base64 to replace a binary file.',
    });
  }
  const before = bytes.toString('utf8');
  let result;
  try {
    result = await applyEditsSliced(before, args.edits, absolute, args.max_replacements ?? DEFAULT_EDIT_REPLACEMENTS);
  } catch (error) {
    if (error instanceof PatchFailedError) error.details.current_hash = current.hash;
    throw error;
  }
  await assertNotRewriteSliced(toEolText(before).view, toEolText(result.text).view, args.allow_rewrite, absolute);
  return { bytes: utf8Bytes(result.text), detail: { before, after: result.text, edits: result.edits } };
}

/**
 * The UTF-8 bytes of `text`. A text whose UTF-8 length equals its length in UTF-16 code units is ASCII (every other
 * character takes two bytes or more), and ASCII encodes as latin1, a plain copy: for a 1 MiB file about a sixth of
 * the UTF-8 encoder's time.
 */
function utf8Bytes(text: string): Buffer {
  return Buffer.from(text, Buffer.byteLength(text, 'utf8') === text.length ? 'latin1' : 'utf8');
}

/**
 * The unified diff from `before` to `after` for the result, in bounded time and cut while it is produced
 * (src/patch/window-diff.ts), at most MAX_DIFF_CHARS.
 */
export async function editDiff(
  relative: string,
  before: string,
  after: string,
): Promise<{ diff: string; truncated: boolean }> {
  const bounded = await boundedUnifiedDiffSliced(`a/${relative}`, `b/${relative}`, before, after, 3, MAX_DIFF_CHARS);
  let diff = bounded.text.replace(/^=+\n/, '').replace(/^Index:.*\n/, '');
  const truncated = bounded.truncated || diff.length > MAX_DIFF_CHARS;
  if (truncated) diff = diff.slice(0, MAX_DIFF_CHARS);
  return { diff, truncated };
}
