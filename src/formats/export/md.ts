/**
 * The md export (SPEC §6): cards are already Markdown, so the document is their contents
 * joined exactly as the txt export joins them; only the file type differs.
 */
import type { ExportInput } from "./select.js";
import { txtExporter } from "./txt.js";

/** The selected cards' Markdown joined as the flags say; no trailing newline. */
export function mdExporter(input: ExportInput): string {
  return txtExporter(input);
}
