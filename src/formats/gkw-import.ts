/**
 * Gingko Writer files (`.gkw`, SPEC §14): Markdown cards wrapped in nested
 * `<gingko-card id="...">` elements. As Gingko Writer writes them, a card is
 *
 *     <gingko-card id="ID">\n\nCONTENT\n\n[CHILD\n]...</gingko-card>
 *
 * and first-column cards follow one another, one line break apart. Reading follows Gingko
 * Writer's own reader: a tag may have white space inside it (`< gingko-card  id="x" >`), the
 * white space after a closing tag is passed over, and a card's text is what lies between
 * its opening tag and the next tag, less the blank line on each side when both are there.
 *
 * A card's text could hold something that reads as a tag; the gkw export writes such a `<`
 * as `&lt;` (and such an `&lt;` as `&amp;lt;`, and so on), and this reader undoes exactly
 * that, so every text comes back as it was. Card ids come back too, for the import to keep
 * when it can (src/domain/card-batches.ts).
 */
import { ValidationError } from "../shared/errors.js";
import type { ImportNode } from "../shared/records.js";

const TAG = /<\s*gingko-card\s+id="([^"]*)"\s*>|<\/\s*gingko-card\s*>\s*/g;

/**
 * Reads a Gingko Writer file into the cards to create, each with the id the file gave it.
 * @throws ValidationError for text outside every card, a closing tag with no card open, or
 *   a card never closed.
 */
export function gkwToCards(file: string): ImportNode[] {
  // A file saved with Windows line ends: the blank lines around each text are \r\n\r\n.
  const text = /^\uFEFF?\s*<[^>]*>\r\n/.test(file) ? file.replace(/\r\n/g, "\n") : file;
  const roots: ImportNode[] = [];
  const open: ImportNode[] = [];
  let at = 0;
  // The card just opened, whose text is what comes before the next tag.
  let unread: ImportNode | null = null;
  const refuse = (index: number, message: string): never => {
    const line = lineOf(text, index);
    throw new ValidationError(`This Gingko Writer file cannot be imported: ${message} (line ${line}).`, [
      { path: "seed", message: `line ${line}: ${message}` },
    ]);
  };
  TAG.lastIndex = 0;
  for (let tag = TAG.exec(text); tag !== null; tag = TAG.exec(text)) {
    const between = text.slice(at, tag.index);
    const current = open[open.length - 1];
    // Text right after an opening tag is that card's; anywhere else only white space may be.
    if (unread) unread.content = cardText(between);
    else if (between.trim() !== "") refuse(at + between.search(/\S/), "there is text outside any card");
    if (tag[1] !== undefined) {
      const node: ImportNode = { content: "", id: tag[1] };
      if (current) (current.children ??= []).push(node);
      else roots.push(node);
      open.push(node);
      unread = node;
    } else {
      if (!current) refuse(tag.index, "a </gingko-card> closes no card");
      open.pop();
      unread = null;
    }
    at = TAG.lastIndex;
  }
  if (open.length > 0) refuse(text.length, `${open.length === 1 ? "a card is" : `${open.length} cards are`} never closed`);
  const rest = text.slice(at);
  if (rest.trim() !== "") refuse(at + rest.search(/\S/), "there is text outside any card");
  return roots;
}

/** What lies between a card's opening tag and the next tag, as the card's text. */
function cardText(between: string): string {
  const framed = between.length >= 4 && between.startsWith("\n\n") && between.endsWith("\n\n");
  return unescapeTags(framed ? between.slice(2, -2) : between);
}

/** Undoes the gkw export's `escapeTags`: one level of `&amp;` off a `&lt;` that starts a tag. */
export function unescapeTags(text: string): string {
  return text.replace(/&((?:amp;)*)lt;(?=\s*\/?\s*gingko-card)/g, (_match, amps: string) => (amps === "" ? "<" : `&${amps.slice(4)}lt;`));
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i >= 0 && i < index; i = text.indexOf("\n", i + 1)) line++;
  return line;
}
