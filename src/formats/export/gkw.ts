/**
 * The gkw export (SPEC §14): a Gingko Writer file, shaped exactly as Gingko Writer saves
 * one (src/formats/gkw-import.ts describes the shape), each card under its own id. Written
 * with an explicit stack, so a 10,000-level chain is fine. A `<` in a card's text that would
 * read as a tag is written `&lt;` (see `escapeTags`), which Markdown shows as `<` anyway.
 */
import type { ExportInput } from "./select.js";

export function gkwExporter({ selected }: ExportInput): string {
  const out: string[] = [];
  // The cards open around the current one, innermost last.
  const open: string[] = [];
  let roots = 0;
  for (const { card } of selected) {
    while (open.length > 0 && open[open.length - 1] !== card.parentId) closeCard(out, open);
    if (open.length === 0 && roots++ > 0) out.push("\n");
    out.push(`<gingko-card id="${card._id}">\n\n`, escapeTags(card.content), "\n\n");
    open.push(card._id);
  }
  while (open.length > 0) closeCard(out, open);
  return out.join("");
}

/** Closes the innermost open card; inside another card, each child is followed by a line break. */
function closeCard(out: string[], open: string[]): void {
  open.pop();
  out.push(open.length > 0 ? "</gingko-card>\n" : "</gingko-card>");
}

/**
 * `text` with each `<` that could start a gingko-card tag written `&lt;`, and each `&lt;`
 * (or `&amp;lt;`, ...) in that place given one more `amp;`, so that `unescapeTags` gives
 * back exactly `text`.
 */
export function escapeTags(text: string): string {
  return text.replace(/<|&(?=(?:amp;)*lt;)/g, (match, offset: number) => {
    TAG_START.lastIndex = offset;
    if (!TAG_START.test(text)) return match;
    return match === "<" ? "&lt;" : "&amp;";
  });
}

/** What `unescapeTags` reads as an escaped tag, or the tag itself: matched where it stands. */
const TAG_START = /(?:&(?:amp;)*lt;|<)\s*\/?\s*gingko-card/y;
