import { describe, expect, it } from "vitest";
import { cardSlices } from "./card-slices.js";

/** Cards as presentCard writes them (`_id` first), with text that looks like the cut between cards. */
function card(i: number, content: string) {
  return { _id: `c${i}`, treeId: "t", parentId: i > 0 ? "c0" : null, content, position: i, createdAt: "2026-11-26T00:00:00.000Z", updatedAt: "2026-11-26T00:00:00.000Z", __v: 0 };
}

describe("cardSlices", () => {
  it("cuts the list between cards only, whatever the cards' text holds", () => {
    const tricky = ['},{"_id":"x', '"},{"_id":"', "},{", '\\"},{\\"_id\\":\\"', "{[]}", "ünïcödé ’ 𝄞", "line\nbreak", ""];
    const cards = Array.from({ length: 23 }, (_, i) => card(i, tricky[i % tricky.length]));
    const text = JSON.stringify(cards);
    const cut = cardSlices(text, 5);
    expect(cut).not.toBeNull();
    expect(cut!.total).toBe(23);
    expect(cut!.slices).toHaveLength(5);
    const parsed = cut!.slices.map((slice) => JSON.parse(slice) as unknown[]);
    expect(parsed.map((slice) => slice.length)).toEqual([5, 5, 5, 5, 3]);
    expect(parsed.flat()).toEqual(cards);
  });

  it("answers an empty list with no slices, and one card with one slice", () => {
    expect(cardSlices("[]", 5)).toEqual({ slices: [], total: 0 });
    const one = cardSlices(JSON.stringify([card(0, "only")]), 5);
    expect(one!.slices.map((slice) => JSON.parse(slice))).toEqual([[card(0, "only")]]);
  });

  it("leaves text of another shape to be parsed whole", () => {
    expect(cardSlices('{"error":"no"}', 5)).toBeNull();
    expect(cardSlices(JSON.stringify([{ treeId: "t", _id: "a" }]), 5)).toBeNull();
  });
});
