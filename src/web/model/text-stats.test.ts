import { describe, expect, it } from "vitest";
import type { Card } from "../../shared/records.js";
import { cardCharacters, cardWords, countCharacters, countWords, searchCards } from "./text-stats.js";
import { TreeState } from "./tree-state.js";

function card(id: string, parentId: string | null, content: string, position = 0): Card {
  return { _id: id, treeId: "t", parentId, content, position, createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z", __v: 0 };
}

describe("countWords", () => {
  it("counts words as a writer does, not Markdown marks", () => {
    expect(countWords("# The *quick* brown fox\n\n- don't stop\n- well-known")).toBe(7);
    expect(countWords("")).toBe(0);
    expect(countWords("Élan, naïve café — 42")).toBe(4);
  });
});

describe("searchCards", () => {
  const state = new TreeState({ _id: "t" } as any, [
    card("a", null, "Act One"),
    card("b", "a", "The Storm at sea", 0),
    card("c", "b", "Élan of the crew", 0),
    card("d", null, "Act Two", 1),
  ]);

  it("finds cards with every word, ignoring case and accents, and shows their ancestors", () => {
    const { matches, shown } = searchCards(state, "elan CREW");
    expect(matches.map((c) => c._id)).toEqual(["c"]);
    expect([...shown].sort()).toEqual(["a", "b", "c"]);
  });

  it("shows nothing for no match and for an empty query", () => {
    expect(searchCards(state, "whale").shown.size).toBe(0);
    expect(searchCards(state, "  ").matches).toEqual([]);
  });
});

describe("countCharacters", () => {
  it("counts every character, spaces included, a pair or a composed accent as one", () => {
    expect(countCharacters("")).toBe(0);
    expect(countCharacters("Two words")).toBe(9);
    expect(countCharacters("e\u0301lan 😀")).toBe(6);
  });
});

describe("cardWords and cardCharacters", () => {
  it("count a card's text as it is now, after each change of it", () => {
    const edited = card("e", null, "Two words");
    expect([cardWords(edited), cardCharacters(edited)]).toEqual([2, 9]);
    edited.content = "Now three words";
    expect([cardCharacters(edited), cardWords(edited)]).toEqual([15, 3]);
    edited.content = "";
    expect([cardWords(edited), cardCharacters(edited)]).toEqual([0, 0]);
  });
});
