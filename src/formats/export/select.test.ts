import { describe, expect, it } from "vitest";
import { NotFoundError, ValidationError } from "../../shared/errors.js";
import { nestSelected, selectCards } from "./select.js";
import { CardBuilder } from "./test-factory.js";

/** A, A1, A1a, A2, B, B1: three columns. */
function sampleTree() {
  const b = new CardBuilder();
  const a = b.card("A");
  const a1 = b.card("A1", a);
  b.card("A1a", a1);
  b.card("A2", a);
  const bb = b.card("B");
  b.card("B1", bb);
  return { builder: b, a, a1, bb };
}

const contents = (selected: { card: { content: string } }[]) => selected.map((e) => e.card.content);

describe("selectCards", () => {
  it("walks the whole tree in tree order, whatever order the cards come in", () => {
    const { builder } = sampleTree();
    const selected = selectCards(builder.shuffled());
    expect(contents(selected)).toEqual(["A", "A1", "A1a", "A2", "B", "B1"]);
    expect(selected.map((e) => e.depth)).toEqual([1, 2, 3, 2, 1, 2]);
  });

  it("narrows to a card and its descendants, the card included, at absolute depths", () => {
    const { builder, a1 } = sampleTree();
    const selected = selectCards(builder.shuffled(), { cardId: a1._id });
    expect(contents(selected)).toEqual(["A1", "A1a"]);
    expect(selected.map((e) => e.depth)).toEqual([2, 3]);
  });

  it("keeps one column", () => {
    const { builder } = sampleTree();
    expect(contents(selectCards(builder.cards, { column: 2 }))).toEqual(["A1", "A2", "B1"]);
  });

  it("keeps one column within the cardId subtree", () => {
    const { builder, a } = sampleTree();
    expect(contents(selectCards(builder.cards, { cardId: a._id, column: 2 }))).toEqual(["A1", "A2"]);
    expect(contents(selectCards(builder.cards, { cardId: a._id, column: 1 }))).toEqual(["A"]);
  });

  it("selects nothing for a column deeper than the tree", () => {
    const { builder, bb } = sampleTree();
    expect(selectCards(builder.cards, { column: 4 })).toEqual([]);
    expect(selectCards(builder.cards, { cardId: bb._id, column: 3 })).toEqual([]);
  });

  it("answers an unknown cardId with NotFoundError", () => {
    const { builder } = sampleTree();
    expect(() => selectCards(builder.cards, { cardId: "zzzzzzzzzzzzzzzzzzzzzzzz" })).toThrow(NotFoundError);
  });

  it.each([0, -1, 1.5, Number.NaN])("answers column %j with a ValidationError on `column`", (column) => {
    const { builder } = sampleTree();
    try {
      selectCards(builder.cards, { column });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.map((d) => d.path)).toEqual(["column"]);
    }
  });

  it("selects nothing from an empty tree", () => {
    expect(selectCards([])).toEqual([]);
  });

  it("walks a 10,000-level chain without overflowing the stack", () => {
    const builder = new CardBuilder();
    const chain = builder.chain(10_000);
    expect(selectCards(builder.shuffled())).toHaveLength(10_000);
    expect(contents(selectCards(builder.cards, { column: 10_000 }))).toEqual(["level 10000"]);
    expect(selectCards(builder.cards, { cardId: chain[9_998]._id }).map((e) => e.depth)).toEqual([9_999, 10_000]);
  });
});

describe("nestSelected", () => {
  it("nests the whole tree, omitting empty children", () => {
    const { builder } = sampleTree();
    expect(nestSelected(selectCards(builder.cards))).toEqual([
      {
        content: "A",
        children: [{ content: "A1", children: [{ content: "A1a" }] }, { content: "A2" }],
      },
      { content: "B", children: [{ content: "B1" }] },
    ]);
  });

  it("holds the cardId card with its descendants", () => {
    const { builder, a1 } = sampleTree();
    expect(nestSelected(selectCards(builder.cards, { cardId: a1._id }))).toEqual([
      { content: "A1", children: [{ content: "A1a" }] },
    ]);
  });

  it("comes out flat for a column", () => {
    const { builder } = sampleTree();
    expect(nestSelected(selectCards(builder.cards, { column: 2 }))).toEqual([
      { content: "A1" },
      { content: "A2" },
      { content: "B1" },
    ]);
  });

  it("nests a 10,000-level chain without recursion", () => {
    const builder = new CardBuilder();
    builder.chain(10_000);
    let node = nestSelected(selectCards(builder.cards))[0];
    let depth = 1;
    let widest = 0;
    while (node.children) {
      widest = Math.max(widest, node.children.length);
      node = node.children[0];
      depth++;
    }
    expect(widest).toBe(1);
    expect(depth).toBe(10_000);
    expect(node.content).toBe("level 10000");
  });
});
