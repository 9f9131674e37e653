/**
 * The walk every exporter shares (SPEC §6): which cards an export holds, in tree order,
 * with their depth. The order itself comes from src/shared/tree-order.ts; this module
 * only applies the `cardId` and `column` flags and, for the nested formats, turns the
 * flat walk back into a tree without recursion.
 */
import { NotFoundError, ValidationError } from "../../shared/errors.js";
import type { CardFields, SeedNode, Tree } from "../../shared/records.js";
import { walkTreeOrder, type OrderedCard } from "../../shared/tree-order.js";
import type { ExportOptions } from "../../shared/export-options.js";

/** A card of the export and its absolute depth (1 = first column). */
export type SelectedCard = OrderedCard<CardFields>;

/** What every exporter receives: the tree, its selected cards in tree order, the flags. */
export interface ExportInput {
  tree: Tree;
  selected: SelectedCard[];
  options: ExportOptions;
}

/**
 * The cards of one tree that an export holds, in tree order. `cardId` narrows to that card
 * and its descendants (the card included); `column` keeps the cards at that absolute depth,
 * within the `cardId` subtree when both are given. A column deeper than the tree selects
 * nothing. `leaves` keeps only the cards with no children (in the tree, not merely in the
 * selection), as Gingko Writer's "leaves" export does; with `column` too, the leaves of that
 * column. `cards` are the tree's live cards in any order.
 * @throws NotFoundError when `cardId` is not one of `cards`.
 * @throws ValidationError when `column` is not a whole number of at least 1 (callers that
 *   did not go through `exportQuerySchema`, such as the CLI).
 */
export function selectCards(
  cards: readonly CardFields[],
  options: Pick<ExportOptions, "cardId" | "column" | "leaves"> = {},
): SelectedCard[] {
  const { cardId, column, leaves } = options;
  if (column !== undefined && !(Number.isSafeInteger(column) && column >= 1)) {
    throw new ValidationError("column must be a whole number, 1 or more.", [
      { path: "column", message: "must be a whole number, 1 or more" },
    ]);
  }
  let walked: SelectedCard[];
  if (cardId === undefined) {
    walked = walkTreeOrder(cards);
  } else {
    // walkTreeOrder answers an unknown root with an empty walk; the SPEC wants a 404.
    if (!cards.some((card) => card._id === cardId)) throw new NotFoundError("Card");
    walked = walkTreeOrder(cards, { rootId: cardId, includeRoot: true });
  }
  // A walk holds every descendant of each card it holds, so a card is a leaf exactly when the
  // next card of the walk is not deeper.
  const kept = leaves ? walked.filter((entry, i) => !(walked[i + 1]?.depth > entry.depth)) : walked;
  return column === undefined ? kept : kept.filter((entry) => entry.depth === column);
}

/**
 * The selection as the json export's nested shape: each card with its selected descendants
 * as `children` (omitted when there are none). A card goes under its own parent when that is
 * selected, else to the top level: so a column selection, or a leaves one, comes out flat.
 * Iterative, so a 10,000-level chain cannot overflow the stack.
 */
export function nestSelected(selected: readonly SelectedCard[]): SeedNode[] {
  return nestByParent<SeedNode>(selected, (card) => ({ content: card.content }));
}

/**
 * Nests `selected` (tree order) as `make` builds each node: the shape of every nested
 * export. A card's parent, when selected, is on the path of open nodes, since tree order
 * puts a parent before its descendants.
 */
export function nestByParent<N extends { children?: N[] }>(selected: readonly SelectedCard[], make: (card: CardFields) => N): N[] {
  const roots: N[] = [];
  // The path from the current top-level node down to the last node placed.
  const open: { id: string; node: N }[] = [];
  for (const { card } of selected) {
    const node = make(card);
    while (open.length > 0 && open[open.length - 1].id !== card.parentId) open.pop();
    const parent = open[open.length - 1];
    if (parent) (parent.node.children ??= []).push(node);
    else roots.push(node);
    open.push({ id: card._id, node });
  }
  return roots;
}
