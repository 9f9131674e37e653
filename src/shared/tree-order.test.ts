import { describe, expect, it } from "vitest";
import type { Card } from "./records.js";
import { walkTreeOrder } from "./tree-order.js";

const inTreeOrder = (cards: Card[]) => walkTreeOrder(cards).map((entry) => entry.card._id);

let counter = 0;
function buildCard(fields: Partial<Card> & { _id: string }): Card {
  counter++;
  return {
    treeId: "t".repeat(24),
    parentId: null,
    content: fields._id,
    position: 0,
    createdAt: `2026-01-01T00:00:00.${String(counter).padStart(3, "0")}Z`,
    updatedAt: "2026-01-01T00:00:00.000Z",
    __v: 0,
    ...fields,
  };
}

describe("tree order", () => {
  it("is depth-first pre-order with siblings by position", () => {
    const cards = [
      buildCard({ _id: "b", position: 2 }),
      buildCard({ _id: "a1", parentId: "a", position: 0 }),
      buildCard({ _id: "a", position: 1 }),
      buildCard({ _id: "a0", parentId: "a", position: -1 }),
      buildCard({ _id: "half", position: 1.5 }),
      buildCard({ _id: "a1x", parentId: "a1", position: 0 }),
    ];
    expect(inTreeOrder(cards)).toEqual(["a", "a0", "a1", "a1x", "half", "b"]);
  });

  it("breaks position ties by createdAt, then by _id", () => {
    const cards = [
      buildCard({ _id: "z", createdAt: "2026-01-01T00:00:00.000Z" }),
      buildCard({ _id: "late", createdAt: "2026-01-02T00:00:00.000Z" }),
      buildCard({ _id: "y", createdAt: "2026-01-01T00:00:00.000Z" }),
    ];
    expect(inTreeOrder(cards)).toEqual(["y", "z", "late"]);
  });

  it("reports depth, and walks a subtree with its root", () => {
    const cards = [buildCard({ _id: "r" }), buildCard({ _id: "c", parentId: "r" }), buildCard({ _id: "g", parentId: "c" })];
    expect(walkTreeOrder(cards).map((e) => e.depth)).toEqual([1, 2, 3]);
    const sub = walkTreeOrder(cards, { rootId: "c", includeRoot: true });
    expect(sub.map((e) => [e.card._id, e.depth])).toEqual([["c", 2], ["g", 3]]);
  });

  it("walks a 10,000-level chain without overflowing the stack", () => {
    const cards: Card[] = [];
    for (let i = 0; i < 10_000; i++) cards.push(buildCard({ _id: `n${i}`, parentId: i === 0 ? null : `n${i - 1}` }));
    const walked = walkTreeOrder(cards.reverse());
    expect(walked).toHaveLength(10_000);
    expect(walked[9_999].depth).toBe(10_000);
  });
});
