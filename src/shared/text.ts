/**
 * Text rules shared by whatever turns user text into names and headers.
 */

/** A UTF-16 surrogate without its pair: not a character, and refused by encoders. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A card named by its first words: its first non-blank line, without heading hashes and
 * emphasis marks, cut at `max` characters with an ellipsis; "empty card" for no text. The
 * history names cards so (issue 30), and the browser's lists do too.
 */
export function firstWords(content: string, max = 60): string {
  const line = content.split("\n").find((l) => l.trim() !== "") ?? "";
  const text = line.replace(/^#+\s*/, "").replace(/[*_`~]/g, "").trim();
  if (text === "") return "empty card";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
