import { describe, expect, it } from "vitest";
import type { SeedNode } from "../../shared/records.js";
import { jsonExporter, stringifySeedNodes } from "./json.js";
import type { ExportOptions } from "../../shared/export-options.js";
import { selectCards } from "./select.js";
import { CardBuilder } from "./test-factory.js";

function run(builder: CardBuilder, options: ExportOptions = {}): unknown {
  return JSON.parse(jsonExporter({ tree: builder.tree, selected: selectCards(builder.shuffled(), options), options }));
}

function sample() {
  const b = new CardBuilder();
  const a = b.card('A "quoted" \\ \u2028 line');
  const a1 = b.card("A1", a);
  b.card("A1a", a1);
  b.card("A2", a);
  b.card("B");
  return { b, a, a1 };
}

describe("json export", () => {
  it("nests the tree and omits empty children", () => {
    const { b } = sample();
    expect(run(b)).toEqual([
      {
        content: 'A "quoted" \\ \u2028 line',
        children: [{ content: "A1", children: [{ content: "A1a" }] }, { content: "A2" }],
      },
      { content: "B" },
    ]);
  });

  it("holds the cardId card with its descendants", () => {
    const { b, a1 } = sample();
    expect(run(b, { cardId: a1._id })).toEqual([{ content: "A1", children: [{ content: "A1a" }] }]);
  });

  it("is a flat array for a column, and empty below the tree", () => {
    const { b, a } = sample();
    expect(run(b, { column: 2 })).toEqual([{ content: "A1" }, { content: "A2" }]);
    expect(run(b, { cardId: a._id, column: 3 })).toEqual([{ content: "A1a" }]);
    expect(run(b, { column: 4 })).toEqual([]);
  });

  it("writes exactly what JSON.stringify writes", () => {
    const nodes: SeedNode[] = [
      { content: "a", children: [{ content: "b" }, { content: "c", children: [{ content: "d\n\t\u0000" }] }] },
      { content: "" },
      { content: "e", children: [] },
    ];
    const { children: _unused, ...withoutEmptyChildren } = nodes[2];
    expect(stringifySeedNodes(nodes)).toBe(JSON.stringify([nodes[0], nodes[1], withoutEmptyChildren]));
    expect(stringifySeedNodes([])).toBe("[]");
  });

  it("writes a 10,000-level chain that JSON.stringify cannot", () => {
    const b = new CardBuilder();
    b.chain(10_000);
    const text = jsonExporter({ tree: b.tree, selected: selectCards(b.cards), options: {} });
    let node = (JSON.parse(text) as SeedNode[])[0];
    let depth = 1;
    while (node.children) {
      node = node.children[0];
      depth++;
    }
    expect(depth).toBe(10_000);
    expect(node.content).toBe("level 10000");
  });
});
