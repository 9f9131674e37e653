/**
 * Counting a seed (SPEC §7) without recursion: the import limits and the GraphQL import
 * totals both need it, before any card exists.
 */
import type { ImportNode } from "./records.js";

/** How many cards `nodes` would create. */
export function countSeedCards(nodes: readonly ImportNode[]): number {
  let count = 0;
  const stack: (readonly ImportNode[])[] = [nodes];
  while (stack.length > 0) {
    const siblings = stack.pop()!;
    count += siblings.length;
    for (const node of siblings) if (node.children) stack.push(node.children);
  }
  return count;
}

/** The nodes of `nodes`, every level, in tree order (the order of the cards they make). */
export function seedInTreeOrder(nodes: readonly ImportNode[]): ImportNode[] {
  const out: ImportNode[] = [];
  const stack: ImportNode[] = [...nodes].reverse();
  while (stack.length > 0) {
    const node = stack.pop()!;
    out.push(node);
    for (let i = (node.children?.length ?? 0) - 1; i >= 0; i--) stack.push(node.children![i]);
  }
  return out;
}
