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
 * nothing. `cards` are the tree's live cards in any order.
 * @throws NotFoundError when `cardId` is not one of `cards`.
 * @throws ValidationError when `column` is not a whole number of at least 1 (callers that
 *   did not go through `exportQuerySchema`, such as the CLI).
 */
export function selectCards(
  cards: readonly CardFields[],
  options: Pick<ExportOptions, "cardId" | "column"> = {},
): SelectedCard[] {
  const { cardId, column } = options;
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
  return column === undefined ? walked : walked.filter((entry) => entry.depth === column);
}

/**
 * The selection as the json export's nested shape: each card with its selected descendants
 * as `children` (omitted when there are none). A column selection, all at one depth, comes
 * out flat. Iterative, so a 10,000-level chain cannot overflow the stack.
 */
export function nestSelected(selected: readonly SelectedCard[]): SeedNode[] {
  const roots: SeedNode[] = [];
  // The path from the current top-level node down to the last node placed.
  const open: { depth: number; node: SeedNode }[] = [];
  for (const { card, depth } of selected) {
    const node: SeedNode = { content: card.content };
    while (open.length > 0 && open[open.length - 1].depth >= depth) open.pop();
    const parent = open[open.length - 1];
    if (parent) (parent.node.children ??= []).push(node);
    else roots.push(node);
    open.push({ depth, node });
  }
  return roots;
}
