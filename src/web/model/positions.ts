/**
 * Where a card goes among its new siblings. Positions are fractional (SPEC §2), so a card
 * slots between two others by taking the midpoint; only when two neighbours share a position
 * (or floating point runs out) are the siblings renumbered.
 */
import type { Card } from "../../shared/records.js";

export interface Placement {
  position: number;
  /** Siblings that must move first to make room, with their new positions. */
  renumber: { card: Card; position: number }[];
}

/**
 * The position for a card placed at `index` among `siblings` (which must not contain the
 * card itself).
 */
export function placeAt(siblings: readonly Card[], index: number): Placement {
  const before = siblings[index - 1];
  const after = siblings[index];
  if (!before && !after) return { position: 0, renumber: [] };
  if (!before) return { position: after.position - 1, renumber: [] };
  if (!after) return { position: before.position + 1, renumber: [] };
  const middle = (before.position + after.position) / 2;
  if (middle > before.position && middle < after.position) return { position: middle, renumber: [] };
  // No room: give every sibling a whole position and leave a gap at `index`.
  const renumber = siblings.map((card, i) => ({ card, position: i < index ? i : i + 1 }));
  return { position: index, renumber };
}
