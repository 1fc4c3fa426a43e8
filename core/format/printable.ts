/** Text from an index, a loads file or a file name, safe to show: on a terminal, in a page, in a message. */

function escapeCharacter(character: string): string {
  const code = character.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
}

/**
 * Text safe to print on a terminal: control characters (C0, DEL, C1: escape sequences), format
 * characters (bidi overrides that reorder a line), private-use characters, line and paragraph
 * separators and lone surrogates are written as `\xNN` or `\u{NNNN}`, so a file name or a
 * bundle key cannot move the cursor, recolour or clear the screen, or hide text. `\n` stays a
 * line break when `keepNewlines` is set (messages made of several lines).
 */
export function printable(text: string, { keepNewlines = false } = {}): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Co}\p{Zl}\p{Zp}]|\p{Cs}/gu, (character) =>
    keepNewlines && character === '\n' ? character : escapeCharacter(character),
  );
}
