/**
 * Counting a seed (SPEC §7) without recursion: the import limits and the GraphQL import
 * totals both need it, before any card exists.
 */
import type { SeedNode } from "./records.js";

/** How many cards `nodes` would create. */
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
