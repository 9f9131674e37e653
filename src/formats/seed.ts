/**
 * The one entry point for import seeds (SPEC §7): JSON when it is JSON, Markdown otherwise.
 */
import type { SeedNode } from "../shared/records.js";
import { parseJsonSeed } from "./json-seed.js";
import { markdownToCards } from "./markdown-import.js";

/**
 * Reads a seed into the tree of cards to create.
 * @throws ValidationError when the seed is JSON but not the json export's shape.
 */
export function parseSeed(text: string): SeedNode[] {
  return parseJsonSeed(text) ?? markdownToCards(text);
}
