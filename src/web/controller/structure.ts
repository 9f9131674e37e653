/**
 * Changes to the shape of a tree: adding, deleting, moving, splitting and merging cards. Each
 * is built as one Change (changes.ts) and committed: the columns redraw at once and the
 * writes are queued for the server.
 */
import type { Card } from "../../shared/records.js";
import { confirmDialog } from "../dialogs/confirm.js";
import { cardTitle } from "../markdown.js";
import { placeAt } from "../model/positions.js";
import { newRecordId } from "../../shared/ids.js";
import type { MoveWhere } from "../events.js";
import type { TreeReader } from "../model/tree-state.js";
import { ChangeBuilder, type ChangeKind } from "./changes.js";
import type { TreeHost } from "./host.js";

export type AddWhere = "below" | "above" | "child";

/** Where a new card next to (or under) `active` goes: its parent and its index there. */
export function slotFor(tree: TreeHost, active: Card | undefined, where: AddWhere): { parentId: string | null; index: number } {
  const { cards } = tree;
  if (!active) return { parentId: null, index: where === "above" ? 0 : cards.children(null).length };
  if (where === "child") return { parentId: active._id, index: cards.children(active._id).length };
  const parentId = active.parentId !== null && cards.get(active.parentId) ? active.parentId : null;
  return { parentId, index: cards.children(parentId).indexOf(active) + (where === "below" ? 1 : 0) };
}

function newCard(tree: TreeHost, change: ChangeBuilder, parentId: string | null, index: number, content: string): Card {
  const now = new Date().toISOString();
  const card: Card = {
    // The client's own id (SPEC §13): the outbox can name the card before the server has it.
    _id: newRecordId(),
    treeId: tree.cards.tree._id,
    parentId,
    content,
    position: place(tree, change, parentId, index, null),
    createdAt: now,
    updatedAt: now,
    __v: 0,
  };
  change.create(card);
  return card;
}

/** Adds an empty card next to (or under) the active one and opens it for writing. */
export function addCard(tree: TreeHost, where: AddWhere): void {
  if (!tree.writable()) return;
  if (tree.editing) tree.editing.save();
  const { parentId, index } = slotFor(tree, tree.cards.get(tree.activeId), where);
  const change = new ChangeBuilder("add");
  const card = newCard(tree, change, parentId, index, "");
  void tree.commit(change);
  tree.activate(card._id);
  tree.bus.trigger("card:add", card._id);
  tree.startEdit(card._id);
}

/**
 * Ctrl+J / Ctrl+K / Ctrl+L while editing: splits the card at the caret. The text before the
 * caret stays in this card and the rest goes to a new card below it or to a new first child;
 * splitting upwards puts the text before the caret in a new card above instead. Writing goes
 * on at the start of the text after the caret.
 */
export function splitCard(tree: TreeHost, where: AddWhere): void {
  const editing = tree.editing;
  if (!editing || !tree.writable()) return;
  const { before, after } = editing.textAroundCaret();
  const card = editing.card;
  const change = new ChangeBuilder("split");
  let continueIn: Card;
  if (where === "above") {
    change.update(card, { content: after });
    const { parentId, index } = slotFor(tree, card, "above");
    newCard(tree, change, parentId, index, before);
    continueIn = card;
  } else {
    change.update(card, { content: before });
    const { parentId, index } = where === "child" ? { parentId: card._id, index: 0 } : slotFor(tree, card, "below");
    continueIn = newCard(tree, change, parentId, index, after);
  }
  editing.closeSaved(card.content);
  void tree.commit(change);
  tree.activate(continueIn._id);
  tree.bus.trigger("card:split", card._id, continueIn._id);
  tree.startEdit(continueIn._id, undefined, "start");
}

/**
 * Ctrl+Shift+Down / Ctrl+Shift+Up: merges the active card with its next (or previous)
 * sibling: one card holds both texts, a blank line between, and both cards' children.
 */
export function mergeCard(tree: TreeHost, direction: "down" | "up"): void {
  if (!tree.writable()) return;
  if (tree.editing) tree.editing.save();
  const { cards } = tree;
  const active = cards.get(tree.activeId);
  if (!active) return;
  const siblings = cards.siblings(active._id);
  const other = siblings[siblings.indexOf(active) + (direction === "down" ? 1 : -1)];
  if (!other) return;
  const [first, second] = direction === "down" ? [active, other] : [other, active];
  const change = new ChangeBuilder("merge");
  const joined = [first.content.trimEnd(), second.content.trim()].filter((text) => text !== "").join("\n\n");
  change.update(first, { content: joined });
  const kept = cards.children(first._id);
  const last = kept[kept.length - 1]?.position ?? 0;
  cards.children(second._id).forEach((child, i) => change.update(child, { parentId: first._id, position: last + 1 + i }));
  // The moved children are no longer under `second`, so deleting it removes it alone.
  change.delete(second, [second]);
  void tree.commit(change);
  tree.activate(first._id);
  tree.bus.trigger("card:merge", first._id, second._id);
}

/** Deletes the active card and its subtree; asks first when the subtree is not empty. */
export async function deleteActiveCard(tree: TreeHost, options: { ask?: boolean; kind?: ChangeKind } = {}): Promise<void> {
  if (!tree.writable() || tree.editing) return;
  const { cards } = tree;
  const card = cards.get(tree.activeId);
  if (!card) return;
  const below = cards.descendants(card._id).length;
  if (below > 0 && options.ask !== false) {
    const sure = await confirmDialog({
      title: "Delete card",
      message: `Delete “${cardTitle(card.content)}” and the ${below === 1 ? "card" : `${below} cards`} under it?`,
      confirmLabel: below === 1 ? "Delete both" : `Delete ${below + 1} cards`,
      danger: true,
    });
    if (!sure || cards.get(card._id) !== card) return;
  }
  const siblings = cards.siblings(card._id);
  const index = siblings.indexOf(card);
  const next = siblings[index + 1] ?? siblings[index - 1] ?? cards.parent(card._id) ?? null;
  const removed = [card, ...cards.descendants(card._id)];
  const change = new ChangeBuilder(options.kind ?? "delete");
  change.delete(card, removed);
  void tree.commit(change);
  tree.activate(next?._id ?? null);
  tree.bus.trigger(
    "card:delete",
    card._id,
    removed.map((c) => c._id),
  );
}

/** Alt+arrows: moves the active card one step, Gingko style. */
export function moveActiveCard(tree: TreeHost, direction: "up" | "down" | "left" | "right"): void {
  if (!tree.writable() || tree.editing) return;
  const { cards } = tree;
  const card = cards.get(tree.activeId);
  if (!card) return;
  const siblings = cards.siblings(card._id);
  const index = siblings.indexOf(card);
  const parent = cards.parent(card._id);
  switch (direction) {
    case "up": {
      if (index > 0) return moveCard(tree, card, parent?._id ?? null, index - 1);
      // First of its group: join the end of the group above, under the previous parent.
      const column = parent ? cards.column(parent._id) : [];
      const previousParent = parent ? column[column.indexOf(parent) - 1] : undefined;
      if (previousParent) moveCard(tree, card, previousParent._id, cards.children(previousParent._id).length);
      return;
    }
    case "down": {
      if (index < siblings.length - 1) return moveCard(tree, card, parent?._id ?? null, index + 1);
      const column = parent ? cards.column(parent._id) : [];
      const nextParent = parent ? column[column.indexOf(parent) + 1] : undefined;
      if (nextParent) moveCard(tree, card, nextParent._id, 0);
      return;
    }
    case "left": {
      if (!parent) return;
      const parentSiblings = cards.siblings(parent._id);
      return moveCard(tree, card, parent.parentId, parentSiblings.indexOf(parent) + 1);
    }
    case "right": {
      const previous = siblings[index - 1];
      if (previous) moveCard(tree, card, previous._id, cards.children(previous._id).length);
    }
  }
}

/**
 * Moves the active card `by` places within its group (Gingko Writer's Alt+Shift+↑/↓ by five,
 * Alt+PgUp/PgDn to the group's ends with ±Infinity), stopping at the group's ends.
 */
export function moveActiveCardWithin(tree: TreeHost, by: number): void {
  if (!tree.writable() || tree.editing) return;
  const card = tree.cards.get(tree.activeId);
  if (!card) return;
  const siblings = tree.cards.siblings(card._id);
  const index = siblings.indexOf(card);
  const target = Math.max(0, Math.min(siblings.length - 1, index + by));
  if (target !== index) moveCard(tree, card, card.parentId, target);
}

/** Drag and drop: put `id` before, after or under `targetId`. */
export function dropCard(tree: TreeHost, id: string, targetId: string, where: MoveWhere): void {
  if (!tree.writable()) return;
  const { cards } = tree;
  const card = cards.get(id);
  const target = cards.get(targetId);
  if (!card || !target || cards.isDescendantOrSelf(targetId, id)) return;
  if (tree.editing) tree.editing.save();
  if (where === "child") {
    moveCard(tree, card, target._id, cards.children(target._id).filter((c) => c !== card).length);
  } else {
    const siblings = cards.siblings(target._id).filter((c) => c !== card);
    const index = siblings.indexOf(target) + (where === "after" ? 1 : 0);
    moveCard(tree, card, target.parentId, index);
  }
  tree.activate(card._id);
}

/**
 * Adds to `change` the moves that put `cards` (the top cards of a paste or an import, now at
 * the end of their parent's children) at `index` under `parentId`, in order.
 */
export function placeCards(tree: TreeReader, change: ChangeBuilder, cards: Card[], parentId: string | null, index: number): void {
  const siblings = tree.children(parentId).filter((c) => !cards.includes(c));
  const before = siblings[index - 1]?.position;
  const after = siblings[index]?.position;
  const k = cards.length;
  let positions: number[];
  if (after === undefined) positions = cards.map((_, i) => (before ?? -1) + 1 + i);
  else if (before === undefined) positions = cards.map((_, i) => after - (k - i));
  else {
    const step = (after - before) / (k + 1);
    positions = cards.map((_, i) => before + step * (i + 1));
    const room = positions.every((p, i) => p > (i === 0 ? before : positions[i - 1])) && positions[k - 1] < after;
    if (!room) {
      // No room between the neighbours: whole numbers for all, a gap of k at `index`.
      siblings.forEach((card, i) => change.update(card, { position: i < index ? i : i + k }));
      positions = cards.map((_, i) => index + i);
    }
  }
  cards.forEach((card, i) => change.update(card, { parentId, position: positions[i] }));
}

/** Puts `card` at `index` among the children of `parentId` (the index counts without it). */
function moveCard(tree: TreeHost, card: Card, parentId: string | null, index: number): void {
  const change = new ChangeBuilder("move");
  change.update(card, { position: place(tree, change, parentId, index, card), parentId });
  void tree.commit(change);
  tree.revealActive();
  tree.bus.trigger("card:move", card._id);
}

/** A position for slot `index` under `parentId`, renumbering the siblings if they need room. */
function place(tree: TreeHost, change: ChangeBuilder, parentId: string | null, index: number, moving: Card | null): number {
  const siblings = tree.cards.children(parentId).filter((c) => c !== moving);
  const placement = placeAt(siblings, index);
  for (const { card, position } of placement.renumber) change.update(card, { position });
  if (placement.renumber.length > 0) tree.reordered();
  return placement.position;
}
