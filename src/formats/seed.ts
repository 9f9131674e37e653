/**
 * The one entry point for import seeds (SPEC §7, §14): the format is told by the text
 * itself. JSON when it is JSON; OPML when it starts as an XML document (`<?xml`, `<opml`);
 * a Gingko Writer file when it starts with a `<gingko-card id="...">` tag; Markdown otherwise.
 */
import type { ImportNode } from "../shared/records.js";
import { looksLikeGkw, looksLikeOpml } from "../shared/seed-kind.js";
import { gkwToCards } from "./gkw-import.js";
import { parseJsonSeed } from "./json-seed.js";
import { markdownToCards } from "./markdown-import.js";
import { opmlToCards } from "./opml-import.js";

/**
 * Reads a seed into the tree of cards to create.
 * @throws ValidationError when the seed is JSON but not the json export's shape, or an OPML
 *   or Gingko Writer file that cannot be read.
 */
export function parseSeed(text: string): ImportNode[] {
  if (looksLikeOpml(text)) return opmlToCards(text);
  if (looksLikeGkw(text)) return gkwToCards(text);
  return parseJsonSeed(text) ?? markdownToCards(text);
}
