/**
 * Start-up errors (bad flag, bad root, bad policy file): a family apart from tool errors, like the SDK's SdkError
 * beside ProtocolError. `cli.ts` prints the one-line message to stderr and exits with status 2 (docs/cli.md). A
 * UsageError never becomes an envelope.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';

  /** `message` is folded onto one line (a JSON parser's or a path's newlines must not split the stderr line). */
  constructor(message: string) {
    super(message.replace(/\s*[\r\n]+\s*/g, ' ').trim());
  }

  /** Process exit status for this error (docs/cli.md: 2). */
  readonly exitCode = 2;
}
