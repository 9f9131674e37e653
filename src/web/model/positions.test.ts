import { describe, expect, it } from "vitest";
import type { Card } from "../../shared/records.js";
import { placeAt } from "./positions.js";

const card = (position: number, id = `c${position}`): Card => ({
  _id: id,
  treeId: "t",
  parentId: null,
  content: "",
  position,
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
  __v: 0,
});

describe("placeAt", () => {
  it("puts a card between, before, after, or alone", () => {
    const siblings = [card(1), card(2)];
    expect(placeAt(siblings, 1)).toEqual({ position: 1.5, renumber: [] });
    expect(placeAt(siblings, 0)).toEqual({ position: 0, renumber: [] });
    expect(placeAt(siblings, 2)).toEqual({ position: 3, renumber: [] });
    expect(placeAt([], 0)).toEqual({ position: 0, renumber: [] });
  });

  it("renumbers the siblings when two share a position, leaving a gap at the index", () => {
    const a = card(5, "a");
    const b = card(5, "b");
    const c = card(6, "c");
    const placement = placeAt([a, b, c], 1);
    expect(placement.position).toBe(1);
    expect(placement.renumber.map((r) => [r.card._id, r.position])).toEqual([
      ["a", 0],
      ["b", 2],
      ["c", 3],
    ]);
  });

  it("keeps finding room after many inserts at the same spot", () => {
    let siblings = [card(0, "first"), card(1, "last")];
    for (let i = 0; i < 100; i++) {
      const placement = placeAt(siblings, 1);
      for (const { card: sibling, position } of placement.renumber) sibling.position = position;
      siblings = [...siblings.slice(0, 1), card(placement.position, `n${i}`), ...siblings.slice(1)].sort((x, y) => x.position - y.position);
      expect(new Set(siblings.map((s) => s.position)).size).toBe(siblings.length);
    }
    expect(siblings[0]._id).toBe("first");
    expect(siblings.at(-1)!._id).toBe("last");
  });
});
