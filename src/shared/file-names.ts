/**
 * File names made from a tree's name: the server's exports (formats/export) and the browser's
 * own downloads (the words kept on the device, views/trees.ts) name their files alike.
 */
import { LONE_SURROGATE } from "./text.js";

/** Longest name kept, in UTF-8 bytes: most file systems stop at 255 bytes per name. */
const MAX_NAME_BYTES = 200;
// Characters Windows, macOS or Linux refuse in names, and controls (C0, DEL, C1).
const UNSAFE_IN_NAMES = /[\\/:*?"<>|\u0000-\u001f\u007f-\u009f]/g;
// Bidi marks, embeddings, overrides and isolates, and line and paragraph separators: they
// make `invoice\u202Egpj.exe` show as `invoiceexe.jpg`. Dropped, as Content-Disposition does.
const BIDI_AND_SEPARATORS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\u2028\u2029]/g;

/**
 * A file name for the tree: its name made safe for file systems (and short enough),
 * then `.extension`. Throws nothing.
 */
export function exportFilename(treeName: string, extension: string): string {
  const cleaned = treeName
    .replace(LONE_SURROGATE, "\uFFFD")
    .replace(BIDI_AND_SEPARATORS, "")
    .replace(UNSAFE_IN_NAMES, "_")
    .replace(/\s+/g, " ")
    // Windows drops trailing dots and spaces; leading dots hide files on Unix.
    .replace(/^[\s.]+|[\s.]+$/g, "");
  let name = "";
  let bytes = 0;
  for (const char of cleaned) {
    bytes += utf8Length(char);
    if (bytes > MAX_NAME_BYTES) break;
    name += char;
  }
  return `${name.trimEnd() || "tree"}.${extension}`;
}

/** UTF-8 bytes of one code point (no Buffer: this runs in the browser too). */
function utf8Length(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  return code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
}
