/**
 * Where the arrow keys lead from a card: left to the parent, right to the first child,
 * up and down to the neighbouring sibling. At the first or last sibling, up and down carry on
 * into the neighbouring group of the same column, so a column reads top to bottom like a
 * chapter. While a search filters the columns, cards it hides are skipped.
 */
import type { Card } from "../../shared/records.js";
import type { TreeReader } from "./tree-state.js";

export type Direction = "up" | "down" | "left" | "right";

export function neighbour(state: TreeReader, id: string, direction: Direction, shown: (id: string) => boolean = () => true): string | null {
  const card = state.get(id);
  if (!card) return null;
  switch (direction) {
    case "left":
      return state.parent(id)?._id ?? null;
    case "right":
      return state.children(id).find((child) => shown(child._id))?._id ?? null;
    case "up":
    case "down": {
      const step = direction === "up" ? -1 : 1;
      const siblings = state.siblings(id);
      for (let i = siblings.indexOf(card) + step; i >= 0 && i < siblings.length; i += step) if (shown(siblings[i]._id)) return siblings[i]._id;
      const column = state.column(id);
      for (let i = column.indexOf(card) + step; i >= 0 && i < column.length; i += step) if (shown(column[i]._id)) return column[i]._id;
      return null;
    }
  }
}

/**
 * Where the selection goes when `card` (still in the tree) is about to go, deleted elsewhere:
 * its next sibling, else the previous one, else its parent, else another card at the top.
 */
export function selectionAfter(state: TreeReader, card: Card): string | null {
  const siblings = state.siblings(card._id);
  const index = siblings.indexOf(card);
  const next = siblings[index + 1] ?? siblings[index - 1] ?? state.parent(card._id) ?? state.children(null).find((c) => c !== card);
  return next?._id ?? null;
}
