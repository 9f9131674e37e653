import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ValidationError } from "../shared/errors.js";
import { escapeTags, gkwExporter } from "./export/gkw.js";
import { selectCards } from "./export/select.js";
import { CardBuilder } from "./export/test-factory.js";
import { gkwToCards, unescapeTags } from "./gkw-import.js";

function exportOf(builder: CardBuilder, options = {}): string {
  return gkwExporter({ tree: builder.tree, selected: selectCards(builder.shuffled(), options), options });
}

describe("gkw export", () => {
  it("writes each card as Gingko Writer saves it: text framed by blank lines, children each followed by a line break", () => {
    const b = new CardBuilder();
    const a = b.card("# A");
    b.card("A1", a);
    b.card("A2", a);
    b.card("B");
    const [ia, ia1, ia2, ib] = b.cards.map((card) => card._id);
    expect(exportOf(b)).toBe(
      `<gingko-card id="${ia}">\n\n# A\n\n` +
        `<gingko-card id="${ia1}">\n\nA1\n\n</gingko-card>\n` +
        `<gingko-card id="${ia2}">\n\nA2\n\n</gingko-card>\n` +
        `</gingko-card>\n` +
        `<gingko-card id="${ib}">\n\nB\n\n</gingko-card>`,
    );
  });

  it("writes a column, or the leaves, as first-column cards", () => {
    const b = new CardBuilder();
    const a = b.card("A");
    const a1 = b.card("A1", a);
    b.card("A1a", a1);
    b.card("A2", a);
    const leaves = gkwToCards(exportOf(b, { leaves: true }));
    expect(leaves.map((node) => [node.content, node.children])).toEqual([
      ["A1a", undefined],
      ["A2", undefined],
    ]);
  });
});

describe("gkw import", () => {
  it("reads the file Gingko Writer saves for a new document", () => {
    expect(gkwToCards('<gingko-card id="1">\n\nHi!\n\n</gingko-card>')).toEqual([{ content: "Hi!", id: "1" }]);
  });

  it("reads tags with white space inside them, and Windows line ends, as Gingko Writer does", () => {
    const text = '< gingko-card   id="abc" >\r\n\r\n# Content\r\n\r\n<gingko-card id="xyz">\r\n\r\nchild\r\n\r\n</ gingko-card>\r\n</gingko-card>\r\n';
    expect(gkwToCards(text)).toEqual([{ content: "# Content", id: "abc", children: [{ content: "child", id: "xyz" }] }]);
  });

  it("keeps a text not framed by blank lines as it is", () => {
    expect(gkwToCards('<gingko-card id="a">x</gingko-card>')).toEqual([{ content: "x", id: "a" }]);
  });

  it("refuses text outside cards, a stray closing tag and an unclosed card, with the line", () => {
    const refuse = (text: string) => {
      try {
        gkwToCards(text);
      } catch (error) {
        if (error instanceof ValidationError) return error.message;
      }
      throw new Error("expected a refusal");
    };
    expect(refuse('<gingko-card id="a">\n\na\n\n</gingko-card>\nstray')).toMatch(/text outside any card \(line 6\)/);
    expect(refuse('<gingko-card id="a">\n\na\n\n</gingko-card></gingko-card>')).toMatch(/closes no card/);
    expect(refuse('<gingko-card id="a">\n\na\n\n<gingko-card id="b">\n\nb\n\n</gingko-card>')).toMatch(/a card is never closed/);
  });

  it("escapes only what would read as a tag, and reads back exactly what was escaped", () => {
    const texts = ['<gingko-card id="x">', "</gingko-card>", "&lt;gingko-card", "&amp;lt;/gingko-card>", "a < b & c &lt; d", "< gingko-card"];
    for (const text of texts) expect(unescapeTags(escapeTags(text))).toBe(text);
    expect(escapeTags("a < b &lt; c")).toBe("a < b &lt; c");
    expect(escapeTags("</gingko-card>")).toBe("&lt;/gingko-card>");
  });
});

describe("gkw round trip", () => {
  it("gives back every card's text, shape and id, for any texts", () => {
    const text = fc.oneof(fc.string({ unit: "grapheme" }), fc.constantFrom("", "\n", "\n\n", "<gingko-card id=\"q\">", "</gingko-card>\n", "&lt;gingko-card", "  trailing  \n"));
    const shape = fc.array(fc.tuple(fc.nat(), text), { maxLength: 30 });
    fc.assert(
      fc.property(shape, (entries) => {
        const b = new CardBuilder();
        for (const [parentPick, content] of entries) b.card(content, b.cards.length === 0 ? null : parentPick % 3 === 0 ? null : b.cards[parentPick % b.cards.length]);
        const expected = nest(b);
        expect(gkwToCards(exportOf(b))).toEqual(expected);
      }),
    );
  });
});

/** The builder's cards as the import gives them: content, id, children in order. */
function nest(b: CardBuilder) {
  type Node = { content: string; id: string; children?: Node[] };
  const selected = selectCards(b.cards);
  const roots: Node[] = [];
  const open: { id: string; node: Node }[] = [];
  for (const { card } of selected) {
    const node: Node = { content: card.content, id: card._id };
    while (open.length > 0 && open[open.length - 1].id !== card.parentId) open.pop();
    if (open.length > 0) (open[open.length - 1].node.children ??= []).push(node);
    else roots.push(node);
    open.push({ id: card._id, node });
  }
  return roots;
}
