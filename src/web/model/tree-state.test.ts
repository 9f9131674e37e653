import { describe, expect, it } from "vitest";
import type { Card, Tree } from "../../shared/records.js";
import { neighbour } from "./navigation.js";
import { TreeState } from "./tree-state.js";

const tree: Tree = { _id: "t", __v: 0, revision: 0, name: "T", owner: "u", users: ["u"], createdAt: "", updatedAt: "" };
const at = "2026-01-01T00:00:00.000Z";
const card = (id: string, parentId: string | null, position: number): Card => ({
  _id: id,
  treeId: "t",
  parentId,
  content: id,
  position,
  createdAt: at,
  updatedAt: at,
  __v: 0,
});

/**
 *   A        B
 *   ├ A1     └ B1
 *   │ └ A1a
 *   └ A2
 */
function sample(): TreeState {
  return new TreeState(tree, [
    card("B", null, 2),
    card("A2", "A", 2),
    card("A", null, 1),
    card("A1", "A", 1),
    card("B1", "B", 1),
    card("A1a", "A1", 1),
  ]);
}

describe("TreeState", () => {
  it("orders the tree depth-first and groups each column by parent", () => {
    const state = sample();
    expect(state.treeOrder().map((e) => `${e.card._id}:${e.depth}`)).toEqual(["A:1", "A1:2", "A1a:3", "A2:2", "B:1", "B1:2"]);
    expect(state.columns().map((column) => column.groups.map((g) => g.cards.map((c) => c._id)))).toEqual([
      [["A", "B"]],
      [["A1", "A2"], ["B1"]],
      [["A1a"]],
    ]);
  });

  it("answers ancestors, descendants and depth", () => {
    const state = sample();
    expect(state.ancestors("A1a").map((c) => c._id)).toEqual(["A1", "A"]);
    expect(state.descendants("A").map((c) => c._id)).toEqual(["A1", "A1a", "A2"]);
    expect(state.depth("A1a")).toBe(3);
    expect(state.isDescendantOrSelf("A1a", "A")).toBe(true);
    expect(state.isDescendantOrSelf("B1", "A")).toBe(false);
  });

  it("removes a subtree and re-keys a card that got its server id", () => {
    const state = sample();
    expect(state.removeSubtree("A1").map((c) => c._id)).toEqual(["A1", "A1a"]);
    expect(state.children("A").map((c) => c._id)).toEqual(["A2"]);
    state.renameId("B", "B-saved");
    expect(state.parent("B1")?._id).toBe("B-saved");
  });

  it("removes a subtree but the cards below it it is told to keep, with what is under them, which then show in the first column", () => {
    const state = sample();
    expect(state.removeSubtree("A", (c) => c._id === "A1").map((c) => c._id)).toEqual(["A", "A2"]);
    expect(state.get("A1a")?.parentId).toBe("A1");
    expect(state.children(null).map((c) => c._id)).toEqual(["A1", "B"]);
  });

  it("counts each change of which cards there are and where, and not the questions asked of them", () => {
    const state = sample();
    state.treeOrder();
    state.columns();
    expect(state.generation).toBe(0);
    state.add(card("C", null, 3));
    state.removeSubtree("A1");
    state.renameId("B", "B-saved");
    expect(state.generation).toBe(3);
    state.get("A")!.position = 5;
    state.changed();
    expect(state.generation).toBe(4);
    state.descendants("A");
    expect(state.generation).toBe(4);
  });

  it("shows a card whose parent is gone in the first column", () => {
    const state = new TreeState(tree, [card("A", null, 1), card("orphan", "deleted", 1)]);
    expect(state.children(null).map((c) => c._id)).toEqual(["A", "orphan"]);
  });
});

describe("neighbour (the arrow keys)", () => {
  it("goes left to the parent, right to the first child, up and down among siblings", () => {
    const state = sample();
    expect(neighbour(state, "A1", "left")).toBe("A");
    expect(neighbour(state, "A", "right")).toBe("A1");
    expect(neighbour(state, "A1", "down")).toBe("A2");
    expect(neighbour(state, "A2", "up")).toBe("A1");
    expect(neighbour(state, "A", "left")).toBeNull();
    expect(neighbour(state, "A2", "right")).toBeNull();
  });

  it("carries on into the next group of the column at either end", () => {
    const state = sample();
    expect(neighbour(state, "A2", "down")).toBe("B1");
    expect(neighbour(state, "B1", "up")).toBe("A2");
    expect(neighbour(state, "B1", "down")).toBeNull();
  });
});
