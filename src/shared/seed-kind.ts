/**
 * How an import's text tells its format (SPEC §7, §14), where the server (src/formats/seed.ts)
 * and the browser (which checks a dropped `.opml` or `.gkw` file before sending it) both need
 * it: an XML document is OPML; text opening with a `<gingko-card id="...">` tag is a Gingko
 * Writer file; JSON and Markdown are told apart by parsing.
 */

/** Whether `text` is an OPML (or at least an XML) document rather than Markdown. */
export function looksLikeOpml(text: string): boolean {
  return /^\uFEFF?\s*<(\?xml|opml[\s>/]|!DOCTYPE\s+opml)/i.test(text);
}

/** Whether `text` is a Gingko Writer file: it starts with a card's opening tag. */
export function looksLikeGkw(text: string): boolean {
  return /^\uFEFF?\s*<\s*gingko-card\s+id="/.test(text);
}
