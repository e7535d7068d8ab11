/**
 * Safe rendering of hostile names and titles in TEXT output. Structured results always carry the exact
 * value; only the text a model (or a terminal) reads goes through here.
 *
 * Rule (as `git` with core.quotePath and `ls --quoting-style=c` do): a name that contains a character that could
 * start a new line, move the cursor or drive a terminal — C0 controls (incl. \n, \r, \t, ESC), DEL, C1 controls (incl.
 * CSI 0x9b and NEL 0x85), U+2028/U+2029, bidirectional overrides/isolates, lone surrogates — or a `"` or `\`, is
 * printed between double quotes with C escapes: \a \b \t \n \v \f \r \" \\, \xHH for other code points below 0x100,
 * \u{HHHH} above. Any other name is printed as is. So one entry is always exactly one line, and a printed name that
 * starts with `"` is always a quoted one.
 */

/** Characters that force quoting (besides `"` and `\`). */
/* eslint-disable no-control-regex -- these patterns exist to find control characters */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"\\]/;
// Not process state (test/architecture.test.ts allow list): a constant; `needsQuoting` resets its lastIndex around `test`.
const UNSAFE_G =
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/* eslint-enable no-control-regex */

const SHORT: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\t': '\\t',
  '\n': '\\n',
  '\v': '\\v',
  '\f': '\\f',
  '\r': '\\r',
};

function escapeChar(ch: string): string {
  const short = SHORT[ch];
  if (short) return short;
  const code = ch.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
}

/**
 * A name (file path, branch, label, user) for one line of text output: as is when harmless, else double-quoted with
 * C escapes (see the module comment). Never contains a line break or a control character.
 */
export function quoteName(name: string): string {
  if (!UNSAFE.test(name) || !needsQuoting(name)) return name;
  return `"${name.replace(/["\\]/g, (c) => `\\${c}`).replace(UNSAFE_G, escapeChar)}"`;
}

/** True when `name` has a character that forces quoting (a valid surrogate pair does not). */
function needsQuoting(name: string): boolean {
  UNSAFE_G.lastIndex = 0;
  const bad = UNSAFE_G.test(name);
  UNSAFE_G.lastIndex = 0;
  return bad || name.includes('"') || name.includes('\\');
}

/**
 * Free text (an issue title, a matched line) for one line of output: control characters, line separators, bidi
 * controls and lone surrogates are C-escaped in place, without quotes (a `\` is left alone: the text is not a name
 * whose printed form must be unambiguous, only one that must stay one harmless line).
 */
export function escapeLine(text: string): string {
  return text.replace(UNSAFE_G, escapeChar);
}

/**
 * Multi-line free text (an issue body): like `escapeLine`, except that \n and \t stay (CRLF becomes \n), so the text
 * keeps its lines but no character can move the cursor, drive a terminal or hide text.
 */
export function escapeBlock(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(UNSAFE_G, (ch) => (ch === '\n' || ch === '\t' ? ch : escapeChar(ch)));
}
