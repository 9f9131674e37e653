import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../shared/errors.js";
import type { SeedNode } from "../shared/records.js";
import { parseJsonSeed } from "./json-seed.js";
import { countSeedCards } from "../shared/seeds.js";
import { parseSeed } from "./seed.js";

function card(content: string, ...children: SeedNode[]): SeedNode {
  return children.length > 0 ? { content, children } : { content };
}

/** The ValidationError that parsing `text` throws; fails the test when it does not throw. */
function rejection(text: string): ValidationError {
  try {
    parseJsonSeed(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error(`expected ${text} to be rejected`);
}

/** `{"content":"level 1","children":[{"content":"level 2",...}]}`, `depth` levels deep. */
function chainJson(depth: number, deepest = '{"content":"level ' + depth + '"}'): string {
  let json = deepest;
  for (let level = depth - 1; level >= 1; level--) json = `{"content":"level ${level}","children":[${json}]}`;
  return json;
}

describe("parseJsonSeed: valid seeds", () => {
  it("reads an array of cards with nested children", () => {
    const tree = [card("# A", card("A.1", card("A.1.a")), card("A.2")), card("# B")];
    expect(parseJsonSeed(JSON.stringify(tree))).toEqual(tree);
  });

  it("reads one card object as a one-card seed", () => {
    expect(parseJsonSeed('{"content": "Solo", "children": [{"content": "Child"}]}')).toEqual([
      card("Solo", card("Child")),
    ]);
  });

  it("drops an empty children array, as the json export writes it", () => {
    expect(parseJsonSeed('[{"content": "Leaf", "children": []}]')).toEqual([{ content: "Leaf" }]);
  });

  it("reads an empty array as no cards", () => {
    expect(parseJsonSeed("[]")).toEqual([]);
  });

  it("accepts white space and a byte order mark around the JSON", () => {
    expect(parseJsonSeed('\uFEFF\n  [{"content": "x"}]  \n')).toEqual([card("x")]);
  });
});

describe("parseJsonSeed: text that is not JSON is left to Markdown", () => {
  it.each([
    ["a Markdown heading", "# Title"],
    ["a link at the start", "[Gingko](https://gingkoapp.com) was here"],
    ["a broken object", '{"content": "x"'],
    ["an empty seed", ""],
    ["a JSON string", '"just text"'],
  ])("returns null for %s", (_, text) => {
    expect(parseJsonSeed(text)).toBeNull();
  });
});

describe("parseJsonSeed: wrong shapes", () => {
  it("rejects an array element that is not an object", () => {
    const error = rejection('[{"content": "ok"}, 42]');
    expect(error.code).toBe("invalid_request");
    expect(error.details).toEqual([{ path: "[1]", message: 'must be a card object like {"content": "..."}' }]);
  });

  it("rejects a missing content", () => {
    expect(rejection('[{"children": []}]').details).toEqual([
      { path: "[0].content", message: "is required: the card's text, a string" },
    ]);
  });

  it("pinpoints a wrong-typed content deep in the tree", () => {
    const seed = '[{"content": "a", "children": [{"content": "b"}, {"content": "c"}, {"content": null}]}]';
    expect(rejection(seed).details).toEqual([{ path: "[0].children[2].content", message: "must be a string" }]);
  });

  it("rejects children that are not an array, in a single-object seed", () => {
    expect(rejection('{"content": "a", "children": {"content": "b"}}').details).toEqual([
      { path: "children", message: "must be an array of cards" },
    ]);
  });

  it("rejects children: null", () => {
    expect(rejection('[{"content": "a", "children": null}]').details).toEqual([
      { path: "[0].children", message: "must be an array of cards" },
    ]);
  });

  it("rejects unknown keys, quoting names that are not identifiers", () => {
    const seed = '[{"content": "a", "_id": "abc", "parent id": null}]';
    expect(rejection(seed).details.map((d) => d.path)).toEqual(["[0]._id", '[0]["parent id"]']);
  });

  it("rejects a flat array of non-cards even though it is valid JSON", () => {
    expect(rejection("[1, 2]").details.map((d) => d.path)).toEqual(["[0]", "[1]"]);
  });

  it("reports every problem in document order", () => {
    const seed = JSON.stringify([{ content: 1, children: [{ content: "ok", extra: true }] }, { content: "b", children: "no" }]);
    expect(rejection(seed).details.map((d) => d.path)).toEqual([
      "[0].content",
      "[0].children[0].extra",
      "[1].children",
    ]);
  });

  it("reports at most 20 problems", () => {
    expect(rejection(JSON.stringify(Array.from({ length: 50 }, () => ({})))).details).toHaveLength(20);
  });

  it("explains the expected shape in its message", () => {
    expect(rejection("[1]").message).toMatch(/json export/);
  });
});

describe("parseJsonSeed: deep nesting", () => {
  it("reads a 10,000-level chain of cards", () => {
    let node = parseJsonSeed(`[${chainJson(10_000)}]`)![0];
    let depth = 1;
    while (node.children) {
      expect(node.children).toHaveLength(1);
      node = node.children[0];
      depth++;
    }
    expect(depth).toBe(10_000);
    expect(node.content).toBe("level 10000");
  });

  it("pinpoints a problem at the bottom of a 10,000-level chain", () => {
    const error = rejection(`[${chainJson(10_000, '{"content": false}')}]`);
    expect(error.details).toHaveLength(1);
    expect(error.details[0].path).toBe(`[0]${".children[0]".repeat(9_999)}.content`);
  });
});

const seedTree: fc.Arbitrary<SeedNode[]> = fc.letrec<{ node: SeedNode; nodes: SeedNode[] }>((tie) => ({
  node: fc
    .record({ content: fc.string({ unit: "grapheme", maxLength: 20 }), children: tie("nodes") })
    .map(({ content, children }) => card(content, ...children)),
  nodes: fc.oneof({ depthSize: "small" }, fc.constant<SeedNode[]>([]), fc.array(tie("node"), { maxLength: 4 })),
})).nodes;

describe("parseSeed", () => {
  it("round-trips any tree written as the json export writes it", () => {
    fc.assert(
      fc.property(seedTree, (tree) => {
        expect(parseSeed(JSON.stringify(tree, null, 2))).toEqual(tree);
      }),
      { numRuns: 300 },
    );
  });

  it("round-trips any single card written as one object", () => {
    fc.assert(
      fc.property(seedTree.filter((tree) => tree.length > 0), ([first]) => {
        expect(parseSeed(JSON.stringify(first))).toEqual([first]);
      }),
      { numRuns: 200 },
    );
  });

  it("reads anything that is not JSON as Markdown", () => {
    expect(parseSeed("# A\n\n[not json]")).toEqual([card("# A\n\n[not json]")]);
  });

  it("lets a JSON shape error through rather than falling back to Markdown", () => {
    expect(() => parseSeed('[{"title": "x"}]')).toThrow(ValidationError);
  });
});

describe("countSeedCards", () => {
  it("counts cards at every level", () => {
    expect(countSeedCards([card("a", card("b"), card("c", card("d"))), card("e")])).toBe(5);
    expect(countSeedCards([])).toBe(0);
  });

  it("counts a 10,000-level chain", () => {
    expect(countSeedCards(parseSeed(chainJson(10_000)))).toBe(10_000);
  });
});
