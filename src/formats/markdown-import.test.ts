import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { SeedNode } from "../shared/records.js";
import { markdownToCards } from "./markdown-import.js";

/** An expected card: children omitted when there are none, as the importer does. */
function card(content: string, ...children: SeedNode[]): SeedNode {
  return children.length > 0 ? { content, children } : { content };
}

function lines(...source: string[]): string {
  return source.join("\n");
}

describe("markdownToCards: headings (rule 1)", () => {
  it("nests sections by heading level", () => {
    const seed = lines("# A", "## A.1", "### A.1.a", "## A.2", "# B");
    expect(markdownToCards(seed)).toEqual([
      card("# A", card("## A.1", card("### A.1.a")), card("## A.2")),
      card("# B"),
    ]);
  });

  it("reads #Title with no space after the hashes as a heading, as Gingko writes it", () => {
    const seed = lines("#One", "first text", "", "##Two", "second text", "", "#Three");
    expect(markdownToCards(seed)).toEqual([
      card("#One\nfirst text", card("##Two\nsecond text")),
      card("#Three"),
    ]);
  });

  it("reads consecutive #Title lines as one heading each", () => {
    expect(markdownToCards(lines("#A", "##B", "text"))).toEqual([card("#A", card("##B\ntext"))]);
  });

  it("reads a #Title line that continues a paragraph as a heading, as Gingko does (issue 18)", () => {
    expect(markdownToCards(lines("# Top", "text", "##Sub", "more"))).toEqual([card("# Top\ntext", card("##Sub\nmore"))]);
    expect(markdownToCards(lines("Some text", "#tag and more"))).toEqual([card("Some text"), card("#tag and more")]);
    // Text after the heading line is read afresh: here an indented code block.
    expect(markdownToCards(lines("a", "#B", "    code"))).toEqual([card("a"), card("#B\n    code")]);
  });

  it("leaves #Title lines inside list items and quotes as their text", () => {
    expect(markdownToCards(lines("- item", "#tag"))).toEqual([card("- item\n#tag")]);
    expect(markdownToCards(lines("> quote", "#tag"))).toEqual([card("> quote\n#tag")]);
  });

  it("does not take seven hashes or an escaped hash for a heading", () => {
    expect(markdownToCards("#######x")).toEqual([card("#######x")]);
    expect(markdownToCards("\\#x")).toEqual([card("\\#x")]);
  });

  it("reads setext headings by their underline", () => {
    const seed = lines("Title", "=====", "", "Intro", "", "Part", "----", "", "text");
    expect(markdownToCards(seed)).toEqual([card("Title\n=====\n\nIntro", card("Part\n----\n\ntext"))]);
  });

  it("lets #Title win over a setext underline below it, which is read on its own", () => {
    expect(markdownToCards(lines("#Title", "---", "after"))).toEqual([card("#Title", card("---"), card("after"))]);
  });

  it("never reads lines in fenced or indented code as headings", () => {
    const fenced = lines("```", "# not a heading", "#NotEither", "```");
    const tildes = lines("~~~md", "## no", "~~~");
    const indented = "    # no";
    expect(markdownToCards(fenced)).toEqual([card(fenced)]);
    expect(markdownToCards(tildes)).toEqual([card(tildes)]);
    expect(markdownToCards(indented)).toEqual([card(indented)]);
  });

  it("does not read headings inside block quotes or list items as sections", () => {
    const quote = lines("> # Quoted", "> text");
    const list = lines("- # Item", "- #Other");
    expect(markdownToCards(quote)).toEqual([card(quote)]);
    expect(markdownToCards(list)).toEqual([card(list)]);
  });
});

describe("markdownToCards: text before the first heading (rule 2)", () => {
  it("makes a first-column card without a heading line", () => {
    expect(markdownToCards(lines("Intro", "", "# A"))).toEqual([card("Intro"), card("# A")]);
  });

  it("splits it into child cards when it has several blocks", () => {
    expect(markdownToCards(lines("One", "", "Two", "", "# A"))).toEqual([card("", card("One"), card("Two")), card("# A")]);
  });

  it("nests a deeper first heading inside it, keeping its text", () => {
    expect(markdownToCards(lines("Intro", "", "More", "", "## B"))).toEqual([card("Intro\n\nMore", card("## B"))]);
  });

  it("makes text with no heading at all one card", () => {
    expect(markdownToCards("Just a thought.")).toEqual([card("Just a thought.")]);
  });
});

describe("markdownToCards: skipped levels (rule 3)", () => {
  it("inserts an empty card for each missing level", () => {
    expect(markdownToCards(lines("# A", "#### D"))).toEqual([card("# A", card("", card("", card("#### D"))))]);
  });

  it("inserts empty cards above a first heading deeper than one", () => {
    expect(markdownToCards("### C")).toEqual([card("", card("", card("### C")))]);
  });

  it("puts a later heading of the skipped level beside the empty card", () => {
    expect(markdownToCards(lines("# A", "### C", "### D", "## B"))).toEqual([
      card("# A", card("", card("### C"), card("### D")), card("## B")),
    ]);
  });

  it("handles all six levels", () => {
    const seed = lines("# 1", "## 2", "### 3", "#### 4", "##### 5", "###### 6");
    expect(markdownToCards(seed)).toEqual([
      card("# 1", card("## 2", card("### 3", card("#### 4", card("##### 5", card("###### 6")))))),
    ]);
  });
});

describe("markdownToCards: content as written (rule 4)", () => {
  it("keeps a heading and its one block in one card, blank lines as in the source", () => {
    expect(markdownToCards(lines("# A", "", "", "Body *as* __written__", "  second line"))).toEqual([
      card("# A\n\n\nBody *as* __written__\n  second line"),
    ]);
  });

  it("trims trailing white space", () => {
    expect(markdownToCards("# A\nBody  \t\n\n\n   ")).toEqual([card("# A\nBody")]);
  });

  it("gives each of several blocks of a leaf section its own card, in order", () => {
    expect(markdownToCards(lines("# A", "", "one", "", "two", "", "three"))).toEqual([
      card("# A", card("one"), card("two"), card("three")),
    ]);
  });

  it("keeps all blocks of a section that has sub-sections in its own card", () => {
    expect(markdownToCards(lines("# A", "", "one", "", "", "two", "## B", "", "x", "", "y"))).toEqual([
      card("# A\n\none\n\n\ntwo", card("## B", card("x"), card("y"))),
    ]);
  });

  it("keeps an indented code block's indent when it starts a card", () => {
    expect(markdownToCards(lines("# A", "", "    code", "", "text"))).toEqual([card("# A", card("    code"), card("text"))]);
  });

  it("treats a rule and an HTML block as blocks like any other", () => {
    const html = lines("<div>", "# inside", "</div>");
    expect(markdownToCards(lines("# A", "", "before", "", "---", "", html))).toEqual([
      card("# A", card("before"), card("---"), card(html)),
    ]);
  });
});

describe("markdownToCards: blocks that are never split (rule 5)", () => {
  it("keeps a block indented under a list after a blank line in the list's card, as Gingko does (issue 18)", () => {
    expect(markdownToCards(lines("# H", "- item", "", " more of the item"))).toEqual([card("# H\n- item\n\n more of the item")]);
    expect(markdownToCards(lines("# H", "1. item", "", "  more", "", "  and more", "", "After."))).toEqual([
      card("# H", card("1. item\n\n  more\n\n  and more"), card("After.")),
    ]);
    // An unindented paragraph ends the list, and an indented heading still starts a section.
    expect(markdownToCards(lines("- item", "", "Next", "", "  ## Sub"))).toEqual([card("- item\n\nNext", card("  ## Sub"))]);
  });

  it("keeps lists, code blocks, tables and block quotes whole", () => {
    const list = lines("- one", "", "  more of one", "- two", "  1. nested");
    const code = lines("```js", "const a = 1;", "", "const b = 2;", "```");
    const table = lines("| a | b |", "|---|---|", "| 1 | 2 |");
    const quote = lines("> said", ">", "> and more");
    expect(markdownToCards(lines("# A", "", list, "", code, "", table, "", quote))).toEqual([
      card("# A", card(list), card(code), card(table), card(quote)),
    ]);
  });
});

describe("markdownToCards: empty and normalised seeds (rule 6)", () => {
  it("makes one empty card from an empty seed", () => {
    expect(markdownToCards("")).toEqual([card("")]);
  });

  it("makes one empty card from a seed of white space only", () => {
    expect(markdownToCards(" \n\t\n\n")).toEqual([card("")]);
  });

  it("turns CRLF and lone CR line endings into LF", () => {
    expect(markdownToCards("# A\r\n\r\nline 1\r\nline 2\r\n## B\rtext\r")).toEqual([
      card("# A\n\nline 1\nline 2", card("## B\ntext")),
    ]);
  });

  it("drops a leading byte order mark, so a first heading is still read", () => {
    expect(markdownToCards("\uFEFF# A\n\nBody")).toEqual([card("# A\n\nBody")]);
  });
});

describe("markdownToCards: large and deep input", () => {
  it("imports 10,000 nested block quotes as one card", () => {
    const quote = `${">".repeat(10_000)} deep`;
    expect(markdownToCards(quote)).toEqual([card(quote)]);
  });

  it("imports a list nested 1,000 levels deep as one card", () => {
    const list = Array.from({ length: 1_000 }, (_, level) => `${"  ".repeat(level)}- item ${level}`).join("\n");
    expect(markdownToCards(list)).toEqual([card(list)]);
  });

  it("imports a long run of #Title lines, one card each", () => {
    const seed = Array.from({ length: 20_000 }, (_, i) => `#Card ${i}`).join("\n");
    const cards = markdownToCards(seed);
    expect(cards).toHaveLength(20_000);
    expect(cards[19_999]).toEqual(card("#Card 19999"));
  });
});

/** Markdown lines of the kinds the rules care about, to build random seeds from. */
const markdownLine = fc.constantFrom(
  "",
  "",
  "# Heading",
  "### Deep heading",
  "#Gingko title",
  "##Sub",
  "Plain text with #tag",
  "  indented text",
  "    indented code",
  "- list item",
  "  - nested item",
  "1. ordered",
  "> quoted # text",
  "```",
  "~~~",
  "| a | b |",
  "|---|---|",
  "---",
  "===",
  "<div>",
  "[ref]: http://example.com",
  "trailing spaces   ",
  "\ttabbed",
);
const markdownSeed = fc.array(markdownLine, { maxLength: 40 }).map((parts) => parts.join("\n"));

function contentsInTreeOrder(nodes: SeedNode[]): string[] {
  const out: string[] = [];
  const stack = [...nodes].reverse();
  while (stack.length > 0) {
    const node = stack.pop()!;
    out.push(node.content);
    if (node.children) stack.push(...[...node.children].reverse());
  }
  return out;
}

describe("markdownToCards: properties", () => {
  it("keeps every card's content exactly as written in the seed", () => {
    fc.assert(
      fc.property(markdownSeed, (seed) => {
        for (const content of contentsInTreeOrder(markdownToCards(seed))) {
          expect(seed).toContain(content);
          expect(content).toBe(content.trimEnd());
        }
      }),
      { numRuns: 500 },
    );
  });

  it("loses nothing but white space: the cards in tree order spell out the seed", () => {
    const withoutSpace = (text: string) => text.replace(/\s+/g, "");
    fc.assert(
      fc.property(markdownSeed, (seed) => {
        expect(withoutSpace(contentsInTreeOrder(markdownToCards(seed)).join(""))).toBe(withoutSpace(seed));
      }),
      { numRuns: 500 },
    );
  });
});
