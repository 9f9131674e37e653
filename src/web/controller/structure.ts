/**
 * Changes to the shape of a tree: adding, deleting and moving cards. Each change is applied
 * to the local state at once (the columns redraw immediately) and queued for the server.
 */
import type { Card } from "../../domain/records.js";
import { bus } from "../bus.js";
import { confirmDialog } from "../dialogs/confirm.js";
import { cardTitle } from "../markdown.js";
import { placeAt } from "../model/positions.js";
import { temporaryId } from "../model/sync.js";
import type { TreeController } from "./tree-controller.js";

export type AddWhere = "below" | "above" | "child";
export type MoveWhere = "before" | "after" | "child";

/** Adds an empty card next to (or under) the active one and opens it for writing. */
export function addCard(tree: TreeController, where: AddWhere): void {
  if (!tree.writable()) return;
  if (tree.editing) tree.editing.save();
  const { state } = tree;
  const active = state.get(tree.activeId);
  let parentId: string | null;
  let index: number;
  if (!active) {
    parentId = null;
    index = where === "above" ? 0 : state.children(null).length;
  } else if (where === "child") {
    parentId = active._id;
    index = state.children(active._id).length;
  } else {
    parentId = active.parentId !== null && state.get(active.parentId) ? active.parentId : null;
    index = state.children(parentId).indexOf(active) + (where === "below" ? 1 : 0);
  }
  const now = new Date().toISOString();
  const card: Card = {
    _id: temporaryId(),
    treeId: state.tree._id,
    parentId,
    content: "",
    position: place(tree, parentId, index, null),
    createdAt: now,
    updatedAt: now,
  };
  state.add(card);
  tree.view.render();
  tree.persist(tree.sync?.create(card));
  tree.activate(card._id);
  bus.trigger("card:add", card._id);
  tree.startEdit(card._id);
}

/** Deletes the active card and its subtree; asks first when the subtree is not empty. */
export async function deleteActiveCard(tree: TreeController): Promise<void> {
  if (!tree.writable() || tree.editing) return;
  const { state } = tree;
  const card = state.get(tree.activeId);
  if (!card) return;
  const below = state.descendants(card._id).length;
  if (below > 0) {
    const sure = await confirmDialog({
      title: "Delete card",
      message: `Delete “${cardTitle(card.content)}” and the ${below === 1 ? "card" : `${below} cards`} under it?`,
      confirmLabel: below === 1 ? "Delete both" : `Delete ${below + 1} cards`,
      danger: true,
    });
    if (!sure || state.get(card._id) !== card) return;
  }
  const siblings = state.siblings(card._id);
  const index = siblings.indexOf(card);
  const next = siblings[index + 1] ?? siblings[index - 1] ?? state.parent(card._id) ?? null;
  const removed = state.removeSubtree(card._id);
  tree.forgetDrafts(removed);
  tree.persist(tree.sync?.delete(card, removed));
  tree.view.render();
  tree.activate(next?._id ?? null);
  bus.trigger(
    "card:delete",
    card._id,
    removed.map((c) => c._id),
  );
}

/** Alt+arrows: moves the active card one step, Gingko style. */
export function moveActiveCard(tree: TreeController, direction: "up" | "down" | "left" | "right"): void {
  if (!tree.writable() || tree.editing) return;
  const { state } = tree;
  const card = state.get(tree.activeId);
  if (!card) return;
  const siblings = state.siblings(card._id);
  const index = siblings.indexOf(card);
  const parent = state.parent(card._id);
  switch (direction) {
    case "up": {
      if (index > 0) return moveCard(tree, card, parent?._id ?? null, index - 1);
      // First of its group: join the end of the group above, under the previous parent.
      const column = parent ? state.column(parent._id) : [];
      const previousParent = parent ? column[column.indexOf(parent) - 1] : undefined;
      if (previousParent) moveCard(tree, card, previousParent._id, state.children(previousParent._id).length);
      return;
    }
    case "down": {
      if (index < siblings.length - 1) return moveCard(tree, card, parent?._id ?? null, index + 1);
      const column = parent ? state.column(parent._id) : [];
      const nextParent = parent ? column[column.indexOf(parent) + 1] : undefined;
      if (nextParent) moveCard(tree, card, nextParent._id, 0);
      return;
    }
    case "left": {
      if (!parent) return;
      const parentSiblings = state.siblings(parent._id);
      return moveCard(tree, card, parent.parentId, parentSiblings.indexOf(parent) + 1);
    }
    case "right": {
      const previous = siblings[index - 1];
      if (previous) moveCard(tree, card, previous._id, state.children(previous._id).length);
    }
  }
}

/** Drag and drop: put `id` before, after or under `targetId`. */
export function dropCard(tree: TreeController, id: string, targetId: string, where: MoveWhere): void {
  if (!tree.writable()) return;
  const { state } = tree;
  const card = state.get(id);
  const target = state.get(targetId);
  if (!card || !target || state.isDescendantOrSelf(targetId, id)) return;
  if (tree.editing) tree.editing.save();
  if (where === "child") {
    moveCard(tree, card, target._id, state.children(target._id).filter((c) => c !== card).length);
  } else {
    const siblings = state.siblings(target._id).filter((c) => c !== card);
    const index = siblings.indexOf(target) + (where === "after" ? 1 : 0);
    moveCard(tree, card, target.parentId, index);
  }
  tree.activate(card._id);
}

/** Puts `card` at `index` among the children of `parentId` (the index counts without it). */
function moveCard(tree: TreeController, card: Card, parentId: string | null, index: number): void {
  card.position = place(tree, parentId, index, card);
  card.parentId = parentId;
  tree.state.changed();
  tree.persist(tree.sync?.update(card));
  tree.view.render();
  tree.view.highlight(tree.activeId);
  bus.trigger("card:move", card._id);
}

/** A position for slot `index` under `parentId`, renumbering the siblings if they need room. */
function place(tree: TreeController, parentId: string | null, index: number, moving: Card | null): number {
  const siblings = tree.state.children(parentId).filter((c) => c !== moving);
  const placement = placeAt(siblings, index);
  for (const { card, position } of placement.renumber) {
    card.position = position;
    tree.persist(tree.sync?.update(card));
  }
  if (placement.renumber.length > 0) tree.state.changed();
  return placement.position;
}
