/**
 * The one way the open tree changes: every edit, add, delete, move, split, merge and paste is
 * a Change, built with `ChangeBuilder` and applied by `commit`, which updates the local state,
 * queues the server writes in order, redraws, and announces it as `tree:change` with each
 * touched card's fields before and after. That announcement is what an undo stack (a later
 * issue, with the server's change feed) will record; nothing else writes cards.
 */
import type { Card } from "../../shared/records.js";
import type { AppBus } from "../bus.js";
import type { SyncQueue } from "../model/sync.js";
import type { TreeState } from "../model/tree-state.js";
import type { ColumnsView } from "../views/columns.js";

export type ChangeKind = "add" | "edit" | "delete" | "move" | "split" | "merge" | "paste" | "import" | "task";

/** The fields a change can alter. */
export type CardFields = Pick<Card, "content" | "parentId" | "position">;

export interface ChangeRecord {
  kind: ChangeKind;
  created: Card[];
  updated: { id: string; before: CardFields; after: CardFields }[];
  deleted: Card[];
}

function fieldsOf(card: Card): CardFields {
  return { content: card.content, parentId: card.parentId, position: card.position };
}

export class ChangeBuilder {
  readonly created: Card[] = [];
  /** Cards the server made already (an import, a paste): shown and recorded, not sent. */
  readonly arrived: Card[] = [];
  readonly updated = new Map<Card, CardFields>();
  /** Roots of deleted subtrees, each with its removed cards (the root first). */
  readonly deleted: { root: Card; removed: Card[] }[] = [];

  constructor(readonly kind: ChangeKind) {}

  /** A new card (parents before their children). */
  create(card: Card): void {
    this.created.push(card);
  }

  /** A card the server created already (parents before their children). */
  createSaved(card: Card): void {
    this.arrived.push(card);
  }

  /** Changes fields of an existing card, remembering what they were the first time. */
  update(card: Card, fields: Partial<CardFields>): void {
    if (!this.created.includes(card) && !this.arrived.includes(card) && !this.updated.has(card)) this.updated.set(card, fieldsOf(card));
    Object.assign(card, fields);
    card.updatedAt = new Date().toISOString();
  }

  delete(root: Card, removed: Card[]): void {
    this.deleted.push({ root, removed });
  }
}

/** What a commit changes: the controller's own parts, which only it hands out. */
export interface ChangeTarget {
  bus: AppBus;
  state: TreeState;
  view: ColumnsView;
  /** Null on a read-only tree. */
  sync: SyncQueue | null;
  activeId: string | null;
  /** Drafts of removed cards are dropped with them. */
  forgetDrafts(removed: Card[]): void;
}

/**
 * Applies `change` to the tree: state, server queue, columns, `tree:change`. Returns the
 * promise of the server having every write (failures also reach the sync hooks).
 */
export function commit(tree: ChangeTarget, change: ChangeBuilder): Promise<void> {
  const { state, view, sync } = tree;
  const writes: Promise<void>[] = [];
  for (const card of change.arrived) state.add(card);
  const structural = change.created.length > 0 || change.arrived.length > 0 || change.deleted.length > 0 || [...change.updated].some(([card, before]) => card.parentId !== before.parentId || card.position !== before.position);
  // Where a card goes if its parent is deleted meanwhile: the parent's ancestors, nearest first.
  const pathOf = (card: Card) => (card.parentId === null ? [] : state.ancestors(card.parentId).map((c) => c._id));
  for (const card of change.created) {
    state.add(card);
    if (sync) writes.push(sync.create(card, pathOf(card)));
  }
  if (change.created.length > 0) state.changed();
  for (const [card] of change.updated) if (sync && state.get(card._id) === card) writes.push(sync.update(card, pathOf(card)));
  // Moved cards must be under their new parents before a subtree is taken out.
  if (change.updated.size > 0) state.changed();
  for (const { root, removed } of change.deleted) {
    state.removeSubtree(root._id);
    tree.forgetDrafts(removed);
    if (sync) writes.push(sync.delete(root, removed));
  }
  if (structural) {
    state.changed();
    view.render();
    view.highlight(tree.activeId, { scroll: false });
  } else {
    for (const [card] of change.updated) view.updateCard(card);
  }
  const record: ChangeRecord = {
    kind: change.kind,
    created: [...change.arrived, ...change.created].map((card) => ({ ...card })),
    updated: [...change.updated].map(([card, before]) => ({ id: card._id, before, after: fieldsOf(card) })),
    deleted: change.deleted.flatMap(({ removed }) => removed.map((card) => ({ ...card }))),
  };
  tree.bus.trigger("tree:change", record);
  const all = sync ? Promise.all(writes).then(() => undefined) : Promise.reject(new Error("This tree is read-only."));
  // Queue promises report their failures through the sync hooks; nothing else must throw.
  all.catch(() => undefined);
  return all;
}
