/**
 * A tree's cards indexed as they arrive (issue 27). The server sends a tree's cards in tree
 * order (SPEC §2: depth-first, siblings by compareSiblings), so the indexes TreeState builds
 * from them (cards by id, children by parent, tree order with depths, cards by column, the
 * columns' groups) can be built card by card while the list is still on its way, each slice
 * in the task that parsed it, instead of all at once after the last slice, when the page is
 * waiting to draw.
 *
 * The cards' bases (model/versions.ts: what the server last confirmed of each) are recorded
 * here too, as they arrive: each is the server's copy of the card as loaded.
 *
 * Nothing here trusts the order: each card is checked to come where tree order puts it (its
 * parent on the path to the card before it, after its previous sibling by compareSiblings). A
 * list out of that order (another server, a copy kept in an older shape) keeps only the cards
 * by id, and TreeState computes the rest itself, as for any list.
 */
import type { Card } from "../../shared/records.js";
import { compareSiblings } from "../../shared/tree-order.js";
import type { Column } from "./tree-state.js";
import { CardVersions } from "./versions.js";

/** What TreeState takes over: the cards by id, and the rest when the cards came in tree order. */
export interface CardIndexes {
  byId: Map<string, Card>;
  ordered: {
    byParent: Map<string | null, Card[]>;
    order: { card: Card; depth: number }[];
    byDepth: Card[][];
    columns: Column[];
  } | null;
}

export class IndexedCards {
  /** In the order they arrived. */
  readonly cards: Card[] = [];
  /** Each card's base: the card as the server sent it (the tree's controller takes these over). */
  readonly versions = new CardVersions();
  private readonly byId = new Map<string, Card>();
  private readonly byParent = new Map<string | null, Card[]>();
  private readonly order: { card: Card; depth: number }[] = [];
  private readonly byDepth: Card[][] = [];
  private readonly columns: Column[] = [];
  /** The card that arrived last and its ancestors, the first column's card first. */
  private readonly path: Card[] = [];
  /** Beside each card of the path, its children so far (the lists of byParent, found without a lookup). */
  private readonly pathChildren: (Card[] | undefined)[] = [];
  private roots: Card[] | undefined;
  /** The tree revision the server read the list at (`X-Cards-Revision`), when it said. */
  revision: number | null = null;
  private inTreeOrder = true;
  private handedOver = false;

  /** The cards of a list that arrived whole (a fallback request, a test). */
  static of(cards: readonly Card[]): IndexedCards {
    const indexed = new IndexedCards();
    for (const card of cards) indexed.add(card);
    return indexed;
  }

  get length(): number {
    return this.cards.length;
  }

  add(card: Card): void {
    if (this.handedOver) throw new Error("These cards were handed to a tree state already.");
    this.cards.push(card);
    this.versions.confirm(card, card);
    const known = this.byId.size;
    this.byId.set(card._id, card);
    // An id twice: the first card of that id is replaced, as TreeState's own index does.
    if (this.byId.size === known) this.inTreeOrder = false;
    if (this.inTreeOrder) this.place(card);
  }

  /** The indexes, for TreeState, which owns them from now on (no card may be added after). */
  handOver(): CardIndexes {
    this.handedOver = true;
    if (!this.inTreeOrder) return { byId: this.byId, ordered: null };
    return { byId: this.byId, ordered: { byParent: this.byParent, order: this.order, byDepth: this.byDepth, columns: this.columns } };
  }

  /** Extends the indexes by `card`, or gives them up when it is not where tree order puts it. */
  private place(card: Card): void {
    const { path, pathChildren } = this;
    const parentId = card.parentId;
    if (parentId === null) {
      path.length = 0;
      pathChildren.length = 0;
    } else {
      while (path.length > 0 && path[path.length - 1]._id !== parentId) {
        path.pop();
        pathChildren.pop();
      }
      if (path.length === 0) {
        // Its parent is not an ancestor of the card before it: missing, or not in tree order.
        this.inTreeOrder = false;
        return;
      }
    }
    const siblings = parentId === null ? this.roots : pathChildren[pathChildren.length - 1];
    if (siblings && compareSiblings(siblings[siblings.length - 1], card) >= 0) {
      this.inTreeOrder = false;
      return;
    }
    const depth = path.length + 1;
    if (siblings) siblings.push(card);
    else {
      const list = [card];
      this.byParent.set(parentId, list);
      if (parentId === null) this.roots = list;
      else pathChildren[pathChildren.length - 1] = list;
      // A parent's first child comes right after it, so groups are made in their parents' tree order.
      while (this.columns.length < depth) this.columns.push({ depth: this.columns.length + 1, groups: [] });
      this.columns[depth - 1].groups.push({ parentId, cards: list });
    }
    this.order.push({ card, depth });
    (this.byDepth[depth - 1] ??= []).push(card);
    path.push(card);
    pathChildren.push(undefined);
  }
}
