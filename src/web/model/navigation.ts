/**
 * Where the arrow keys lead from a card: left to the parent, right to the first child,
 * up and down to the neighbouring sibling. At the first or last sibling, up and down carry on
 * into the neighbouring group of the same column, so a column reads top to bottom like a
 * chapter.
 */
import type { TreeState } from "./tree-state.js";

export type Direction = "up" | "down" | "left" | "right";

export function neighbour(state: TreeState, id: string, direction: Direction): string | null {
  const card = state.get(id);
  if (!card) return null;
  switch (direction) {
    case "left":
      return state.parent(id)?._id ?? null;
    case "right":
      return state.children(id)[0]?._id ?? null;
    case "up":
    case "down": {
      const step = direction === "up" ? -1 : 1;
      const siblings = state.siblings(id);
      const sibling = siblings[siblings.indexOf(card) + step];
      if (sibling) return sibling._id;
      const column = state.column(id);
      return column[column.indexOf(card) + step]?._id ?? null;
    }
  }
}
