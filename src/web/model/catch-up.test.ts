/**
 * A catch-up's removals (catch-up.ts), which the page's LiveTree.reload and the nothing-lost
 * simulation share: what the server no longer has goes, but not the writer's cards waiting.
 */
import { describe, expect, it } from "vitest";
import type { Card, Tree } from "../../shared/records.js";
import { removeGone } from "./catch-up.js";
import { TreeState } from "./tree-state.js";

const TREE = { _id: "t", name: "T", revision: 1 } as Tree;

function card(id: string, parentId: string | null): Card {
  return { _id: id, treeId: "t", parentId, content: id.toUpperCase(), position: 0, createdAt: "", updatedAt: "", __v: 1 };
}

describe("removeGone", () => {
  it("takes away what the server lacks, with a change of the writer's waiting or not, but a card made here not yet answered, and, below a card that goes, one the server has", () => {
    // P > A > (B, D > E, F, G); C at the top, made here; G made here too. The server has P and
    // F (moved out of A there); B has an edit of the writer's waiting.
    const cards = ["p", "a", "b", "d", "e", "f", "g", "c"].map((id) => card(id, { p: null, a: "p", b: "a", d: "a", e: "d", f: "a", g: "a", c: null }[id]!));
    const state = new TreeState(TREE, cards);
    const get = (id: string) => state.get(id)!;
    const sync = { pendingCreates: () => new Set([get("c"), get("g")]) };
    const asked: string[] = [];
    const removed = removeGone(state, new Set(["p", "f"]), sync, (id, keep) => {
      asked.push(id);
      return state.removeSubtree(id, keep).length > 0;
    });
    // B goes with A: its edit's 404 brings its words back. G, below A, stays.
    expect(removed).toEqual(["a"]);
    expect(asked).toEqual(["a"]);
    expect([...state.treeOrder()].map(({ card }) => card._id).sort()).toEqual(["c", "f", "g", "p"]);
  });

  it("names only the cards the remover took: the page's keeps a card being edited", () => {
    const state = new TreeState(TREE, [card("p", null), card("a", "p")]);
    const removed = removeGone(state, new Set(["p"]), { pendingCreates: () => new Set() }, () => false);
    expect(removed).toEqual([]);
    expect(state.get("a")).toBeDefined();
  });
});
