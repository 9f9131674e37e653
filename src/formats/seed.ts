/**
 * The one entry point for import seeds (SPEC §7): JSON when it is JSON, Markdown otherwise.
 */
import type { SeedNode } from "../domain/records.js";
import { parseJsonSeed } from "./json-seed.js";
import { markdownToCards } from "./markdown-import.js";

/**
 * Reads a seed into the tree of cards to create.
 * @throws ValidationError when the seed is JSON but not the json export's shape.
 */
export function parseSeed(text: string): SeedNode[] {
  return parseJsonSeed(text) ?? markdownToCards(text);
}

/** How many cards `nodes` would create, counted without recursion. */
export function countSeedCards(nodes: readonly SeedNode[]): number {
  let count = 0;
  const stack: (readonly SeedNode[])[] = [nodes];
  while (stack.length > 0) {
    const siblings = stack.pop()!;
    count += siblings.length;
    for (const node of siblings) if (node.children) stack.push(node.children);
  }
  return count;
}
