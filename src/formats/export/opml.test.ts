import { describe, expect, it } from "vitest";
import { opmlExporter } from "./opml.js";
import { selectCards } from "./select.js";
import { buildTree, CardBuilder } from "./test-factory.js";
import { opmlToCards } from "../opml-import.js";
import type { ExportOptions } from "../../shared/export-options.js";

function exportOf(builder: CardBuilder, options: ExportOptions = {}): string {
  return opmlExporter({ tree: builder.tree, selected: selectCards(builder.shuffled(), options), options });
}

describe("opml export", () => {
  it("writes an OPML 2.0 outline: the tree's name as title, first line as text, the rest as _note", () => {
    const b = new CardBuilder(buildTree({ name: 'Notes & "ideas" <1>', updatedAt: "2026-11-25T10:00:00.000Z" }));
    const a = b.card("# Part one\n\nIt began.");
    b.card("Scene", a);
    b.card("Two\n");
    const file = exportOf(b);
    expect(file).toContain('<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0" xmlns:cardtree="urn:cardtree:opml">');
    expect(file).toContain("<title>Notes &amp; &quot;ideas&quot; &lt;1&gt;</title>");
    expect(file).toContain("<dateModified>Wed, 25 Nov 2026 10:00:00 GMT</dateModified>");
    expect(file).toContain('<outline text="# Part one" _note="&#10;It began.">\n      <outline text="Scene"/>\n    </outline>');
    expect(file).toContain('<outline text="Two" _note=""/>');
  });

  it("reads back as the same cards, with cardId, column and leaves too", () => {
    const b = new CardBuilder();
    const a = b.card("A\ttab\r\nCRLF & <b>");
    const a1 = b.card("A1", a);
    b.card("A1a", a1);
    b.card("A2 😀", a);
    expect(opmlToCards(exportOf(b))).toEqual([
      { content: "A\ttab\r\nCRLF & <b>", children: [{ content: "A1", children: [{ content: "A1a" }] }, { content: "A2 😀" }] },
    ]);
    expect(opmlToCards(exportOf(b, { cardId: a1._id }))).toEqual([{ content: "A1", children: [{ content: "A1a" }] }]);
    expect(opmlToCards(exportOf(b, { column: 2 }))).toEqual([{ content: "A1" }, { content: "A2 😀" }]);
    expect(opmlToCards(exportOf(b, { leaves: true }))).toEqual([{ content: "A1a" }, { content: "A2 😀" }]);
  });

  it("writes what XML 1.0 cannot hold as U+FFFD, and nothing else changes", () => {
    const b = new CardBuilder();
    b.card("bell\u0007 lone\ud800 pair\ud83d\ude00");
    expect(opmlToCards(exportOf(b))).toEqual([{ content: "bell\ufffd lone\ufffd pair\ud83d\ude00" }]);
  });

  it("is an outline with an empty body for an empty selection", () => {
    const b = new CardBuilder();
    b.card("only");
    expect(opmlToCards(exportOf(b, { column: 5 }))).toEqual([]);
  });
});
