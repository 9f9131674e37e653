import { describe, expect, it } from "vitest";
import { CardCutter } from "./card-slices.js";

/** A whole text cut in one go: its arrays and how many cards, or null when the cut does not apply. */
function cardSlices(text: string, size: number): { slices: string[]; total: number } | null {
  const cutter = new CardCutter(size);
  const first = cutter.push(text);
  const rest = first && cutter.end();
  if (!first || !rest) return cutter.whole?.trim() === "[]" ? { slices: [], total: 0 } : null;
  return { slices: [...first, ...rest], total: cutter.count };
}

/** Cards as presentCard writes them (`_id` first), with text that looks like the cut between cards. */
function card(i: number, content: string) {
  return { _id: `c${i}`, treeId: "t", parentId: i > 0 ? "c0" : null, content, position: i, createdAt: "2026-11-26T00:00:00.000Z", updatedAt: "2026-11-26T00:00:00.000Z", __v: 0 };
}

describe("CardCutter", () => {
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

  it("cuts the same arrays when the text arrives in chunks, a boundary split across two", () => {
    const tricky = ['},{"_id":"x', '"},{"_id":"', "},{", '\\"},{\\"_id\\":\\"', "ünïcödé ’ 𝄞", ""];
    const cards = Array.from({ length: 17 }, (_, i) => card(i, tricky[i % tricky.length]));
    const text = JSON.stringify(cards);
    for (const chunk of [1, 2, 3, 7, 9, 10, 11, 64, 500]) {
      const cutter = new CardCutter(4);
      const pieces: string[] = [];
      let early = 0;
      for (let at = 0; at < text.length; at += chunk) {
        const cut = cutter.push(text.slice(at, at + chunk));
        expect(cut).not.toBeNull();
        pieces.push(...cut!);
        if (at + chunk < text.length) early = pieces.length;
      }
      pieces.push(...cutter.end()!);
      // Arrays are answered before the text is all there, not only at its end.
      expect(early).toBeGreaterThanOrEqual(3);
      const parsed = pieces.map((piece) => JSON.parse(piece) as unknown[]);
      expect(parsed.map((piece) => piece.length)).toEqual([4, 4, 4, 4, 1]);
      expect(parsed.flat()).toEqual(cards);
      expect(cutter.count).toBe(17);
    }
  });

  it("answers the rest whole at the end, even exactly one array", () => {
    const cards = Array.from({ length: 8 }, (_, i) => card(i, `card ${i}`));
    const cutter = new CardCutter(4);
    const first = cutter.push(JSON.stringify(cards))!;
    const rest = cutter.end()!;
    expect(first.map((piece) => JSON.parse(piece))).toEqual([cards.slice(0, 4)]);
    expect(rest.map((piece) => JSON.parse(piece))).toEqual([cards.slice(4)]);
  });

  it("keeps text of another shape whole, and refuses a list that does not end", () => {
    const other = new CardCutter(4);
    expect(other.push('{"err')).toBeNull();
    expect(other.push('or":"no"}')).toBeNull();
    expect(other.end()).toBeNull();
    expect(other.whole).toBe('{"error":"no"}');
    const empty = new CardCutter(4);
    expect(empty.push("[")).toEqual([]);
    expect(empty.push("]")).toBeNull();
    expect(empty.whole).toBe("[]");
    const cut = new CardCutter(4);
    const text = JSON.stringify([card(0, "a"), card(1, "b")]);
    expect(cut.push(text.slice(0, -1))).toEqual([]);
    expect(cut.end()).toBeNull();
    expect(cut.whole).toBeNull();
  });
});
