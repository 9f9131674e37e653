import { beforeAll, describe, expect, it } from "vitest";
import { ValidationError } from "../../shared/errors.js";
import { impressExporter, MAX_SLIDES } from "./impress.js";
import { packageProblems, xmlParts } from "./office-test-support.js";
import type { ExportOptions } from "../../shared/export-options.js";
import { selectCards } from "./select.js";
import { buildTree, CardBuilder } from "./test-factory.js";

async function exportParts(builder: CardBuilder, options: ExportOptions = {}) {
  const file = await impressExporter({ tree: builder.tree, selected: selectCards(builder.cards, options), options });
  return { file, parts: await xmlParts(file) };
}

/** Slide XML in slide order. */
function slidesOf(parts: Map<string, string>): string[] {
  return [...parts.keys()]
    .map((name) => /^ppt\/slides\/slide(\d+)\.xml$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]))
    .map((m) => parts.get(m[0])!);
}

/** The text of each text box of a slide, paragraphs joined by newlines. */
function textBoxes(slide: string): string[] {
  return [...slide.matchAll(/<p:txBody>([\s\S]*?)<\/p:txBody>/g)].map((box) =>
    [...box[1].matchAll(/<a:p>([\s\S]*?)<\/a:p>/g)]
      .map((p) => [...p[1].matchAll(/<a:t>([^<]*)<\/a:t>/g)].map((t) => t[1]).join(""))
      .join("\n"),
  );
}

describe("impress export", () => {
  let parts: Map<string, string>;
  let slides: string[];
  let file: Buffer;
  beforeAll(async () => {
    const b = new CardBuilder(buildTree({ name: "Quarterly <plan> & \u00e9t\u00e9" }));
    const a = b.card("Intro paragraph before.\n\n# First *card*\n\nSome **bold** and _italic_ with `code` and [a link](https://example.com).\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n> quoted");
    b.card("## Child heading\n\n```\nlet x = 1;\n\nlet y = 2;\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |", a);
    b.card("");
    b.card("No heading, just text.");
    ({ file, parts } = await exportParts(b));
    slides = slidesOf(parts);
  });

  it("is a package of well-formed XML parts, deflated", () => {
    expect(packageProblems(parts)).toEqual({});
    // Deflated: pptxgenjs alone stores the parts, bigger than their text.
    const xmlBytes = [...parts.values()].reduce((sum, xml) => sum + Buffer.byteLength(xml), 0);
    expect(file.length).toBeLessThan(xmlBytes / 2);
  });

  it("has a title slide, then one slide per card with something to show, in tree order", () => {
    expect(slides).toHaveLength(4);
    expect(parts.get("ppt/presentation.xml")!.match(/<p:sldId /g)).toHaveLength(4);
    expect(textBoxes(slides[0])).toEqual(["Quarterly &lt;plan&gt; &amp; \u00e9t\u00e9"]);
  });

  it("titles each slide with the card's first heading and keeps the rest as body", () => {
    const [title, body] = textBoxes(slides[1]);
    expect(title).toBe("First card");
    expect(body.split("\n")).toEqual([
      "Intro paragraph before.",
      "Some bold and italic with code and a link.",
      "one",
      "two",
      "nested",
      "first",
      "second",
      "quoted",
    ]);
    expect(textBoxes(slides[2])[0]).toBe("Child heading");
    // Code in a shaded box of its own, the table a real table.
    expect(textBoxes(slides[2])[1]).toBe("let x = 1;\n \nlet y = 2;");
    expect(slides[2]).toContain('<a:solidFill><a:srgbClr val="F2F2F2"/></a:solidFill>');
    const cells = [...slides[2].matchAll(/<a:tc>[\s\S]*?<\/a:tc>/g)].map((cell) => [...cell[0].matchAll(/<a:t>([^<]*)<\/a:t>/g)].map((t) => t[1]).join(""));
    expect(slides[2]).toContain("<a:tbl>");
    expect(cells).toEqual(["a", "b", "1", "2"]);
  });

  it("keeps bold, italic, code font and links as run properties", () => {
    expect(slides[1]).toMatch(/b="1"[^>]*>(?:(?!<\/a:r>)[\s\S])*<a:t>bold<\/a:t>/);
    expect(slides[1]).toMatch(/i="1"[^>]*>(?:(?!<\/a:r>)[\s\S])*<a:t>italic<\/a:t>/);
    expect(slides[1]).toMatch(/<a:latin typeface="Courier New"[\s\S]*?<a:t>code<\/a:t>/);
    expect(slides[1]).toContain("<a:hlinkClick");
    expect(parts.get("ppt/slides/_rels/slide2.xml.rels")).toContain('Target="https://example.com/"');
  });

  it("keeps bullets, numbers and nesting levels", () => {
    const paragraph = (text: string) => slides[1].split("<a:p>").find((p) => p.includes(`<a:t>${text}</a:t>`))!;
    expect(paragraph("one")).toContain("<a:buChar");
    expect(paragraph("nested")).toMatch(/<a:pPr lvl="1"/);
    expect(paragraph("first")).toContain('<a:buAutoNum type="arabicPeriod" startAt="1"/>');
    expect(paragraph("quoted")).toContain('i="1"');
  });

  it("writes one paragraph-properties element per paragraph, first", () => {
    for (const slide of slides) {
      for (const paragraph of slide.match(/<a:p>[\s\S]*?<\/a:p>/g) ?? []) {
        expect(paragraph.match(/<a:pPr\b/g)?.length ?? 0).toBeLessThanOrEqual(1);
        if (paragraph.includes("<a:pPr")) expect(paragraph.startsWith("<a:p><a:pPr")).toBe(true);
      }
    }
  });

  it("makes no slide for an empty card and an untitled one for a card without heading", () => {
    expect(textBoxes(slides[3])).toEqual(["No heading, just text."]);
  });

  it("never writes an empty run", () => {
    for (const slide of slides) expect(slide).not.toContain("<a:t></a:t>");
  });
});

describe("impress export links (issue 18)", () => {
  it("jumps to the slide of an in-page link's heading, and keeps relative links", async () => {
    const b = new CardBuilder();
    b.card("# Setup\n\nInstall it.");
    b.card("");
    b.card("# Use\n\nSee [setup](#setup) and [the notes](notes/today.md).");
    const { parts } = await exportParts(b);
    const slides = slidesOf(parts);
    expect(slides).toHaveLength(3);
    expect(slides[2]).toContain('action="ppaction://hlinksldjump"');
    const rels = parts.get("ppt/slides/_rels/slide3.xml.rels")!;
    expect(rels).toMatch(/Target="(?:\.\.\/slides\/)?slide2\.xml"/);
    expect(rels).toContain('Target="notes/today.md"');
  });
});

describe("impress export of long cards and flags", () => {
  it("continues a long card on following slides instead of overflowing", async () => {
    const b = new CardBuilder();
    const items = Array.from({ length: 40 }, (_, i) => `${i + 1}. item ${i + 1}`).join("\n");
    b.card(`# Long list\n\n${items}`);
    const slides = slidesOf((await exportParts(b)).parts);
    expect(slides.length).toBeGreaterThan(3);
    const titles = slides.slice(1).map((s) => textBoxes(s)[0]);
    expect(titles[0]).toBe("Long list");
    expect(titles.slice(1).every((t) => t === "Long list (continued)")).toBe(true);
    const items2 = slides.slice(1).flatMap((s) => textBoxes(s)[1].split("\n"));
    expect(items2).toEqual(Array.from({ length: 40 }, (_, i) => `item ${i + 1}`));
    // The continued list counts on from where the slide before stopped.
    expect(slides[2]).toMatch(/startAt="(1[0-9]|[2-9])"/);
  });

  it("splits one paragraph too long for a slide at spaces", async () => {
    const b = new CardBuilder();
    const words = Array.from({ length: 600 }, (_, i) => `word${i}`);
    b.card(words.join(" "));
    const slides = slidesOf((await exportParts(b)).parts);
    expect(slides.length).toBeGreaterThan(2);
    const text = slides.slice(1).map((s) => textBoxes(s)[0]).join(" ");
    expect(text.split(/\s+/).filter(Boolean)).toEqual(words);
  });

  it("holds only the selected cards", async () => {
    const b = new CardBuilder();
    const a = b.card("# A");
    b.card("# A1", a);
    b.card("# A2", a);
    b.card("# B");
    const slides = slidesOf((await exportParts(b, { cardId: a._id, column: 2 })).parts);
    expect(slides.map((s) => textBoxes(s)[0]).slice(1)).toEqual(["A1", "A2"]);
    const empty = slidesOf((await exportParts(b, { column: 7 })).parts);
    expect(empty).toHaveLength(1);
  });

  it("names the title slide even when the tree name is only characters XML cannot hold", async () => {
    const b = new CardBuilder(buildTree({ name: "\u0001\u0002" }));
    b.card("x");
    const slides = slidesOf((await exportParts(b)).parts);
    expect(textBoxes(slides[0])).toEqual(["Untitled"]);
  });

  it("refuses more slides than a presentation may have", async () => {
    const b = new CardBuilder();
    for (let i = 0; i < MAX_SLIDES; i++) b.card("x");
    await expect(impressExporter({ tree: b.tree, selected: selectCards(b.cards), options: {} })).rejects.toThrow(ValidationError);
  });
});
