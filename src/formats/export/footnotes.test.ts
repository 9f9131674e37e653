import { describe, expect, it } from "vitest";
import { extractFootnotes, FootnoteNumbers, footnotesAsWritten, splitFootnotes, superscriptNumber } from "./footnotes.js";
import { htmlExporter } from "./html.js";
import { selectCards } from "./select.js";
import { CardBuilder } from "./test-factory.js";

describe("extractFootnotes", () => {
  it("takes definitions out, continuation lines included, and marks references", () => {
    const { body, definitions } = extractFootnotes("Text[^1] and[^b].\n\n[^1]: First\n    note.\n[^b]: Second.\nAfter.");
    expect(definitions).toEqual(new Map([["1", "First\nnote."], ["b", "Second."]]));
    expect(footnotesAsWritten(body)).toBe("Text[^1] and[^b].\n\nAfter.");
    expect(splitFootnotes(body.split("\n")[0])).toEqual([{ text: "Text" }, { text: "[^1]", label: "1" }, { text: " and" }, { text: "[^b]", label: "b" }, { text: "." }]);
  });

  it("leaves code alone: spans, fences and definitions inside fences", () => {
    const source = "`[^1]` and\n\n```\n[^1]: not a note\nx[^1]\n```\n\n[^1]: A note.";
    const { body, definitions } = extractFootnotes(source);
    expect(definitions).toEqual(new Map([["1", "A note."]]));
    expect(body).toBe("`[^1]` and\n\n```\n[^1]: not a note\nx[^1]\n```\n");
  });
});

describe("FootnoteNumbers", () => {
  it("numbers notes as their first reference is met; unknown labels get none", () => {
    const notes = new FootnoteNumbers(new Map([["a", "A"], ["b", "B"]]));
    expect([notes.number("b"), notes.number("a"), notes.number("b"), notes.number("x")]).toEqual([1, 2, 1, undefined]);
    expect(notes.order.map((note) => note.text)).toEqual(["B", "A"]);
    expect(superscriptNumber(12)).toBe("¹²");
  });
});

describe("footnotes in the html export (issue 18)", () => {
  it("links references to endnotes defined in any card, and back", () => {
    const b = new CardBuilder();
    b.card("One[^a] and two[^b] and one again[^a]; none[^zz].");
    b.card("[^a]: The *first* note.\n[^b]: The second.");
    const html = htmlExporter({ tree: b.tree, selected: selectCards(b.cards), options: {} });
    expect(html).toContain('One<sup class="footnote-ref"><a href="#fn-1" id="fnref-1">1</a></sup>');
    expect(html).toContain('one again<sup class="footnote-ref"><a href="#fn-1">1</a></sup>');
    expect(html).toContain("none[^zz].");
    expect(html).toContain('<li id="fn-1">The <em>first</em> note. <a href="#fnref-1" class="footnote-back"');
    expect(html.indexOf('id="fn-2"')).toBeGreaterThan(html.indexOf('id="fn-1"'));
  });
});
