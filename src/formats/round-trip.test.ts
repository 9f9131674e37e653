/**
 * SPEC §14's promise, as properties: a tree exported to json, opml or gkw and imported again
 * is the same cards (text, order and nesting), for random trees of random text (unicode,
 * empty cards, Markdown, deep chains); and Markdown, read into cards and exported as md, reads
 * back as the same cards. The integration test (test/rest/files-round-trip.test.ts) does the
 * same through the server with real documents.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ExportFormat } from "../shared/export-options.js";
import type { ImportNode } from "../shared/records.js";
import { exportTree } from "./export/index.js";
import { CardBuilder } from "./export/test-factory.js";
import { parseSeed } from "./seed.js";

/** Text XML 1.0 can hold (the opml export writes U+FFFD for the rest: docs/files.md). */
const XML_UNSAFE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const markdownBits = fc.constantFrom(
  "# Heading", "## Sub *heading*", "#NoSpace", "- item\n- item", "1. one\n2. two", "```js\ncode <gingko-card id=\"1\">\n```", "> quote\n> more",
  "| a | b |\n|---|---|\n| 1 | 2 |", "&amp; &nbsp; <br> <b>bold</b>", "line\nbreak", "  indented", "tail   ", "", "\n", "\r\n", "\t",
  "</gingko-card>", "&lt;gingko-card", '<outline text="x"/>', "]]>", "<!-- c -->", "😀 日本語 עברית", "e\u0301", "\u0000\u0007",
);
const cardText = fc.oneof(fc.string({ unit: "binary", maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 40 }), fc.array(markdownBits, { maxLength: 4 }).map((bits) => bits.join("\n\n")));

/**
 * A random tree (a tree has a card at least: an empty gkw or md file reads as one empty
 * card, SPEC §7's rule for an empty seed): each card is first-column, the child of a random card, or of the card before (deep chains). */
const randomTree = fc.array(fc.tuple(fc.integer({ min: -2, max: 1000 }), cardText), { minLength: 1, maxLength: 40 }).map((entries) => {
  const b = new CardBuilder();
  for (const [pick, content] of entries) {
    const last = b.cards[b.cards.length - 1];
    const parent = b.cards.length === 0 || pick === -2 ? null : pick === -1 ? last : b.cards[pick % b.cards.length];
    b.card(content, parent);
  }
  return b;
});

/** The builder's cards as an import reads them: text and nesting, ids dropped. */
function expectedNodes(b: CardBuilder, clean: (text: string) => string = (t) => t): ImportNode[] {
  return withoutIds(parseSeed(JSON.stringify(nestOf(b, clean))));
}

function nestOf(b: CardBuilder, clean: (text: string) => string) {
  type Node = { content: string; children?: Node[] };
  const byParent = new Map<string | null, typeof b.cards>();
  for (const card of b.cards) byParent.set(card.parentId, [...(byParent.get(card.parentId) ?? []), card]);
  const build = (parentId: string | null): Node[] =>
    (byParent.get(parentId) ?? []).map((card) => {
      const children = build(card._id);
      return children.length > 0 ? { content: clean(card.content), children } : { content: clean(card.content) };
    });
  return build(null);
}

function withoutIds(nodes: ImportNode[]): ImportNode[] {
  return nodes.map(({ content, children }) => (children ? { content, children: withoutIds(children) } : { content }));
}

async function exported(b: CardBuilder, format: ExportFormat): Promise<string> {
  return (await exportTree(format, b.tree, b.cards, {})).body as string;
}

describe("round trips of random trees", () => {
  for (const format of ["json", "gkw"] as const) {
    it(`tree → ${format} → tree gives the same cards`, async () => {
      await fc.assert(
        fc.asyncProperty(randomTree, async (b) => {
          expect(withoutIds(parseSeed(await exported(b, format)))).toEqual(expectedNodes(b));
        }),
        { numRuns: 300 },
      );
    });
  }

  it("tree → opml → tree gives the same cards (what XML cannot hold becomes U+FFFD)", async () => {
    await fc.assert(
      fc.asyncProperty(randomTree, async (b) => {
        expect(parseSeed(await exported(b, "opml"))).toEqual(expectedNodes(b, (text) => text.replace(XML_UNSAFE, "\ufffd")));
      }),
      { numRuns: 300 },
    );
  });

  it("gkw keeps every card's id", async () => {
    await fc.assert(
      fc.asyncProperty(randomTree, async (b) => {
        const ids: string[] = [];
        const walk = (nodes: ImportNode[]) => nodes.forEach((node) => (ids.push(node.id!), walk(node.children ?? [])));
        walk(parseSeed(await exported(b, "gkw")));
        expect(ids.sort()).toEqual(b.cards.map((card) => card._id).sort());
      }),
      { numRuns: 100 },
    );
  });

  it("a 5,000-level chain survives every nested format", async () => {
    const b = new CardBuilder();
    b.chain(5000);
    for (const format of ["json", "opml", "gkw"] as const) {
      let node = parseSeed(await exported(b, format))[0];
      let depth = 1;
      while (node.children) {
        node = node.children[0];
        depth++;
      }
      expect([format, depth, node.content]).toEqual([format, 5000, "level 5000"]);
    }
  });
});

describe("round trips of random Markdown", () => {
  const document = fc.array(markdownBits, { maxLength: 25 }).map((bits) => bits.join("\n\n"));

  it("Markdown → tree → md → tree gives the same cards", async () => {
    await fc.assert(
      fc.asyncProperty(document, async (text) => {
        const first = parseSeed(text);
        const b = new CardBuilder();
        const place = (nodes: ImportNode[], parent: ReturnType<CardBuilder["card"]> | null) =>
          nodes.forEach((node) => place(node.children ?? [], b.card(node.content, parent)));
        place(first, null);
        expect(parseSeed(await exported(b, "md"))).toEqual(first);
      }),
      { numRuns: 300 },
    );
  });
});
