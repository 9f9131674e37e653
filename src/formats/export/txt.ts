/**
 * The txt export (SPEC §6): the cards' contents in tree order, as written, joined by a
 * blank line. Gingko's flags: `newlines=N` makes the separator N newlines, and `start` and
 * `end` are written before and after each card.
 */
import type { ExportInput } from "./select.js";

const DEFAULT_NEWLINES = 2;

/** The selected cards' contents joined as the flags say; no trailing newline. */
export function txtExporter({ selected, options }: ExportInput): string {
  const separator = "\n".repeat(options.newlines ?? DEFAULT_NEWLINES);
  const start = options.start ?? "";
  const end = options.end ?? "";
  return selected.map(({ card }) => start + card.content + end).join(separator);
}
