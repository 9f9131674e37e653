/**
 * The client's copy of one tree and its cards, and the questions the views ask of it:
 * children in sibling order, depth, ancestors, descendants, columns. Card objects are kept by
 * reference and mutated in place, so the save queue and the script models see one truth.
 * Sibling order comes from the domain's one definition (compareSiblings).
 */
import type { Card, Tree } from "../../shared/records.js";
import { compareSiblings } from "../../shared/tree-order.js";
import { IndexedCards } from "./indexed-cards.js";

export interface ColumnGroup {
  parentId: string | null;
  cards: Card[];
}

export interface Column {
  depth: number;
  groups: ColumnGroup[];
}

/** The questions about a tree's cards, without the means to change them. */
export type TreeReader = Readonly<
  Pick<TreeState, "tree" | "size" | "get" | "children" | "parent" | "siblings" | "depth" | "ancestors" | "descendants" | "isDescendantOrSelf" | "treeOrder" | "columns" | "column">
>;

export class TreeState {
  private readonly byId: Map<string, Card>;
  private byParent: Map<string | null, Card[]> | null = null;
  private order: { card: Card; depth: number }[] | null = null;
  private byDepth: Card[][] | null = null;
  private byColumn: Column[] | null = null;
  /** Counts changed(): what is derived from the cards' places (the device's copy) is keyed by it. */
  private changes = 0;

  /** `cards` indexed as they arrived (model/indexed-cards.ts) are taken over, indexes and all. */
  constructor(
    public tree: Tree,
    cards: readonly Card[] | IndexedCards,
  ) {
    if (cards instanceof IndexedCards) {
      const { byId, ordered } = cards.handOver();
      this.byId = byId;
      if (ordered) {
        this.byParent = ordered.byParent;
        this.order = ordered.order;
        this.byDepth = ordered.byDepth;
        this.byColumn = ordered.columns;
      }
    } else {
      this.byId = new Map();
      for (const card of cards) this.byId.set(card._id, card);
    }
  }

  get size(): number {
    return this.byId.size;
  }

  get(id: string | null | undefined): Card | undefined {
    return id ? this.byId.get(id) : undefined;
  }

  get generation(): number {
    return this.changes;
  }

  /** Call after changing any card's parentId or position, or adding and removing cards. */
  changed(): void {
    this.changes++;
    this.byParent = null;
    this.order = null;
    this.byDepth = null;
    this.byColumn = null;
  }

  add(card: Card): void {
    this.byId.set(card._id, card);
    this.changed();
  }

  /**
   * Removes the card and its whole subtree; returns the removed cards, the card first (then
   * in tree order). A card below it for which `keep` says true stays, with what is under it:
   * its parent gone, it shows in the first column (`parentIndex`).
   */
  removeSubtree(id: string, keep?: (card: Card) => boolean): Card[] {
    const card = this.byId.get(id);
    if (!card) return [];
    const removed = [card];
    const stack = [...this.children(id)].reverse();
    while (stack.length > 0 && removed.length <= this.byId.size) {
      const next = stack.pop()!;
      if (keep?.(next)) continue;
      removed.push(next);
      const kids = this.children(next._id);
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
    }
    for (const c of removed) this.byId.delete(c._id);
    this.changed();
    return removed;
  }

  /** A card created locally got its server id: re-key it and point its children at it. */
  renameId(oldId: string, newId: string): void {
    const card = this.byId.get(oldId);
    if (!card) return;
    this.byId.delete(oldId);
    card._id = newId;
    this.byId.set(newId, card);
    for (const other of this.byId.values()) if (other.parentId === oldId) other.parentId = newId;
    this.changed();
  }

  children(parentId: string | null): Card[] {
    return this.parentIndex().get(parentId) ?? [];
  }

  parent(id: string): Card | undefined {
    return this.get(this.byId.get(id)?.parentId);
  }

  siblings(id: string): Card[] {
    const card = this.byId.get(id);
    return card ? this.children(card.parentId) : [];
  }

  /** 1 for a first-column card. Bounded as `ancestors` is. */
  depth(id: string): number {
    let depth = 0;
    for (let card = this.byId.get(id); card && depth <= this.byId.size; card = this.get(card.parentId)) depth++;
    return depth;
  }

  /**
   * Nearest first. A loop of parents (which the state must never hold, but a bug elsewhere
   * once made: a remote move over a local one) ends the walk instead of the tab. One can still
   * stand for a moment: a create answered under the card the server put it, with a move of the
   * writer's under it waiting, which the server will refuse (sync.ts, `placeAsAnswered`).
   */
  ancestors(id: string): Card[] {
    const out: Card[] = [];
    for (let card = this.parent(id); card && out.length < this.byId.size; card = this.get(card.parentId)) out.push(card);
    return out;
  }

  /** In tree order. Iterative, so a very deep chain cannot overflow the stack; bounded, so a loop cannot hang it. */
  descendants(id: string): Card[] {
    const out: Card[] = [];
    const stack = [...this.children(id)].reverse();
    while (stack.length > 0 && out.length < this.byId.size) {
      const card = stack.pop()!;
      out.push(card);
      const kids = this.children(card._id);
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
    }
    return out;
  }

  isDescendantOrSelf(id: string, ofId: string): boolean {
    let steps = 0;
    for (let card = this.byId.get(id); card && steps <= this.byId.size; card = this.get(card.parentId), steps++) if (card._id === ofId) return true;
    return false;
  }

  /** Depth-first pre-order with depths (SPEC §2 tree order). */
  treeOrder(): { card: Card; depth: number }[] {
    if (this.order) return this.order;
    const out: { card: Card; depth: number }[] = [];
    const stack = [...this.children(null)].reverse().map((card) => ({ card, depth: 1 }));
    while (stack.length > 0) {
      const entry = stack.pop()!;
      out.push(entry);
      const kids = this.children(entry.card._id);
      for (let i = kids.length - 1; i >= 0; i--) stack.push({ card: kids[i], depth: entry.depth + 1 });
    }
    this.order = out;
    return out;
  }

  /**
   * Gingko's columns: column N holds every card at depth N, grouped by parent, the groups in
   * the tree order of their parents.
   */
  columns(): Column[] {
    if (this.byColumn) return this.byColumn;
    const columns: Column[] = [];
    const rootCards = this.children(null);
    if (rootCards.length > 0) columns.push({ depth: 1, groups: [{ parentId: null, cards: rootCards }] });
    for (const { card, depth } of this.treeOrder()) {
      const kids = this.children(card._id);
      if (kids.length === 0) continue;
      while (columns.length < depth + 1) columns.push({ depth: columns.length + 1, groups: [] });
      columns[depth].groups.push({ parentId: card._id, cards: kids });
    }
    this.byColumn = columns;
    return columns;
  }

  /** Cards in the same column as `id`, in column order (across groups). */
  column(id: string): Card[] {
    if (!this.byDepth) {
      const byDepth: Card[][] = [];
      for (const { card, depth } of this.treeOrder()) (byDepth[depth - 1] ??= []).push(card);
      this.byDepth = byDepth;
    }
    return this.byDepth[this.depth(id) - 1] ?? [];
  }

  private parentIndex(): Map<string | null, Card[]> {
    if (this.byParent) return this.byParent;
    const index = new Map<string | null, Card[]>();
    for (const card of this.byId.values()) {
      // A card whose parent is gone (deleted by a collaborator meanwhile) shows in column 1
      // rather than vanishing with the writer's text in it.
      const parentId = card.parentId !== null && this.byId.has(card.parentId) ? card.parentId : null;
      const list = index.get(parentId);
      if (list) list.push(card);
      else index.set(parentId, [card]);
    }
    for (const list of index.values()) list.sort(compareSiblings);
    this.byParent = index;
    return index;
  }
}
