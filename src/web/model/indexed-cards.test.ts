import { describe, expect, it } from "vitest";
import type { Card, Tree } from "../../shared/records.js";
import { walkTreeOrder } from "../../shared/tree-order.js";
import { IndexedCards } from "./indexed-cards.js";
import { TreeState } from "./tree-state.js";

const tree: Tree = { _id: "t", __v: 0, revision: 0, name: "T", owner: "u", users: ["u"], createdAt: "", updatedAt: "" };

const card = (id: string, parentId: string | null, position: number, createdAt = "2026-01-01T00:00:00.000Z"): Card => ({
  _id: id,
  treeId: "t",
  parentId,
  content: id,
  position,
  createdAt,
  updatedAt: createdAt,
  __v: 0,
});

/** A tree of `n` cards with random parents and positions (ties included), from a fixed seed. */
function randomCards(n: number, seed: number): Card[] {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
  const cards: Card[] = [];
  for (let i = 0; i < n; i++) {
    const parent = i === 0 || next() < 0.1 ? null : cards[Math.floor(next() * i)]._id;
    cards.push(card(`c${i}`, parent, Math.floor(next() * 4), `2026-01-0${1 + Math.floor(next() * 3)}T00:00:00.000Z`));
  }
  return cards;
}

/** What a reader of the state sees: every question the views ask, as ids. */
function answers(state: TreeState) {
  const ids = (cards: readonly Card[]) => cards.map((c) => c._id);
  const all = state.treeOrder().map((entry) => entry.card._id);
  return {
    size: state.size,
    order: state.treeOrder().map((entry) => `${entry.card._id}:${entry.depth}`),
    columns: state.columns().map((column) => ({ depth: column.depth, groups: column.groups.map((g) => [g.parentId, ...ids(g.cards)]) })),
    children: [null, ...all].map((id) => ids(state.children(id))),
    column: all.map((id) => ids(state.column(id))),
  };
}

/** The state from cards indexed in this order, against the state computing from the same cards. */
function compare(list: Card[]) {
  const indexed = new TreeState(tree, IndexedCards.of(list));
  const computed = new TreeState(tree, list);
  return { indexed: answers(indexed), computed: answers(computed) };
}

describe("IndexedCards (a tree's indexes built as its cards arrive)", () => {
  it("gives the tree state what it would compute, for cards that arrive in tree order", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const cards = randomCards(300, seed);
      const inOrder = walkTreeOrder(cards).map((entry) => entry.card);
      expect(inOrder.length).toBe(300);
      const { indexed, computed } = compare(inOrder);
      expect(indexed).toEqual(computed);
      // Kept, not given up for the state to compute again.
      expect(IndexedCards.of(inOrder).handOver().ordered).not.toBeNull();
    }
  });

  it("gives the same answers for cards out of tree order: siblings swapped, a child before its parent, a parent missing, an id twice", () => {
    const inOrder = walkTreeOrder(randomCards(200, 7)).map((entry) => entry.card);
    const swapped = [...inOrder];
    // Two siblings of the first column, the second one's subtree moved before the first's.
    const roots = inOrder.filter((c) => c.parentId === null);
    const a = inOrder.indexOf(roots[0]);
    const b = inOrder.indexOf(roots[1]);
    const c = roots[2] ? inOrder.indexOf(roots[2]) : inOrder.length;
    swapped.splice(a, c - a, ...inOrder.slice(b, c), ...inOrder.slice(a, b));
    const childFirst = [inOrder[1], inOrder[0], ...inOrder.slice(2)];
    const orphan = [...inOrder, card("orphan", "gone", 0)];
    // The first card again, moved to the end of the first column: in tree order but for its id.
    const twice = [...inOrder, { ...roots[0], position: 99, content: "again" }];
    for (const list of [swapped, childFirst, orphan, twice]) {
      const { indexed, computed } = compare(list);
      expect(indexed).toEqual(computed);
    }
  });

  it("gives up its indexes once a change to the tree makes them stale", () => {
    const state = new TreeState(tree, IndexedCards.of([card("A", null, 1), card("A1", "A", 1), card("B", null, 2)]));
    state.get("A1")!.parentId = "B";
    state.changed();
    expect(state.columns().map((column) => column.groups.map((g) => [g.parentId, ...g.cards.map((c) => c._id)]))).toEqual([[[null, "A", "B"]], [["B", "A1"]]]);
    expect(state.treeOrder().map((e) => `${e.card._id}:${e.depth}`)).toEqual(["A:1", "B:1", "A1:2"]);
  });

  it("records each card's base as it arrives: a save made after the writer's edit is based on the server's copy", () => {
    const indexed = IndexedCards.of([card("A", null, 1), { ...card("A1", "A", 1), __v: 3 }]);
    const a1 = indexed.cards[1];
    a1.content = "edited";
    a1.position = 2;
    expect(indexed.versions.base(a1)).toEqual({ __v: 3, content: "A1", parentId: "A", position: 1 });
    expect(indexed.versions.differs(a1)).toBe(true);
  });

  it("takes no card after a tree state took it over", () => {
    const indexed = IndexedCards.of([card("A", null, 1)]);
    new TreeState(tree, indexed);
    expect(() => indexed.add(card("B", null, 2))).toThrow();
  });
});
