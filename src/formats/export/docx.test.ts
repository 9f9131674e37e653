import { beforeAll, describe, expect, it } from "vitest";
import { docxExporter } from "./docx.js";
import { packageProblems, xmlParts, xmlProblems } from "./office-test-support.js";
import type { ExportOptions } from "../../shared/export-options.js";
import { selectCards } from "./select.js";
import { buildTree, CardBuilder } from "./test-factory.js";

async function exportParts(builder: CardBuilder, options: ExportOptions = {}) {
  const file = await docxExporter({ tree: builder.tree, selected: selectCards(builder.cards, options), options });
  return xmlParts(file);
}

const RICH_CARD = [
  "# Title *one*",
  "## Second",
  "###### Sixth",
  "Text with **bold**, _italic_, ~~struck~~ and `inline code`, a [link](https://example.com/a?b=1&c=2) and AT&amp;T.",
  "- apple\n- banana\n  - nested one\n    1. deep numbered\n- [x] done task",
  "3. three\n4. four",
  "> quoted *words*\n>\n> > nested quote",
  "```ts\nconst x = 1;\n\tindented();\n```",
  "| Name | Qty |\n|:-----|----:|\n| pear | **2** |",
  "![a cat](https://example.com/cat.png) and ![inline](data:image/png;base64,AAAA)",
  "[bad](javascript:alert(1)) and [relative](/x)",
  "line one  \nline two",
  "---",
  "<div>raw <b>html</b> &amp; more</div>",
  "Control\u0001char and lone \ud800 surrogate",
].join("\n\n");

describe("docx export", () => {
  let parts: Map<string, string>;
  let doc: string;
  beforeAll(async () => {
    const b = new CardBuilder(buildTree({ name: "Plans <&> \u00e9t\u00e9" }));
    const a = b.card(RICH_CARD);
    b.card("Child card", a);
    b.card("");
    parts = await exportParts(b);
    doc = parts.get("word/document.xml")!;
  });

  it("is a package of well-formed XML parts", () => {
    expect([...parts.keys()]).toEqual(expect.arrayContaining(["word/document.xml", "word/styles.xml", "word/numbering.xml", "[Content_Types].xml"]));
    expect(packageProblems(parts)).toEqual({});
  });

  it("puts the tree name as title and Cardtree as creator in the core properties", () => {
    const core = parts.get("docProps/core.xml")!;
    expect(core).toContain("<dc:title>Plans &lt;&amp;&gt; \u00e9t\u00e9</dc:title>");
    expect(core).toContain("<dc:creator>Cardtree</dc:creator>");
  });

  it("uses Word's heading styles", () => {
    expect(doc).toContain('<w:pStyle w:val="Heading1"/>');
    expect(doc).toContain('<w:pStyle w:val="Heading2"/>');
    expect(doc).toContain('<w:pStyle w:val="Heading6"/>');
    expect(parts.get("word/styles.xml")).toContain('w:styleId="Heading1"');
  });

  it("writes bold, italic, strike-through and inline code runs", () => {
    expect(doc).toMatch(/<w:r><w:rPr><w:b\/><w:bCs\/><\/w:rPr><w:t xml:space="preserve">bold<\/w:t>/);
    expect(doc).toMatch(/<w:i\/>(<w:iCs\/>)?<\/w:rPr><w:t xml:space="preserve">italic</);
    expect(doc).toMatch(/<w:strike\/><\/w:rPr><w:t xml:space="preserve">struck</);
    expect(doc).toMatch(/<w:rStyle w:val="InlineCode"\/><\/w:rPr><w:t xml:space="preserve">inline code</);
    expect(doc).toContain("AT&amp;T.");
  });

  it("gives code a monospace style, one paragraph per line", () => {
    const styles = parts.get("word/styles.xml")!;
    expect(styles).toMatch(/w:styleId="CodeBlock"[\s\S]*?w:ascii="Courier New"/);
    expect(styles).toMatch(/w:styleId="InlineCode"[\s\S]*?w:ascii="Courier New"/);
    expect(doc).toMatch(/<w:pStyle w:val="CodeBlock"\/>[\s\S]*?const x = 1;/);
    expect(doc).toContain(">    indented();<");
  });

  it("writes bullet and numbered lists with nesting levels", () => {
    const numbering = parts.get("word/numbering.xml")!;
    expect(numbering).toContain('<w:numFmt w:val="bullet"/>');
    expect(numbering).toContain('<w:numFmt w:val="decimal"/>');
    expect(numbering).toContain('<w:start w:val="3"/>');
    const levelOf = (text: string) => {
      const paragraph = doc.split("<w:p>").find((p) => p.includes(`>${text}<`));
      return paragraph?.match(/<w:numPr><w:ilvl w:val="(\d)"\/>/)?.[1];
    };
    expect(levelOf("apple")).toBe("0");
    expect(levelOf("nested one")).toBe("1");
    expect(levelOf("deep numbered")).toBe("2");
    expect(levelOf("three")).toBe("0");
    expect(doc).toMatch(/>\u2611 <\/w:t><\/w:r><w:r><w:t xml:space="preserve">done task</);
  });

  it("indents and styles block quotes", () => {
    expect(doc).toMatch(/<w:pStyle w:val="Quote"\/><w:ind w:left="720"\/>[\s\S]*?quoted /);
    expect(doc).toMatch(/<w:pStyle w:val="Quote"\/><w:ind w:left="1440"\/>[\s\S]*?nested quote/);
  });

  it("writes safe links as external hyperlinks and others as text", () => {
    const rels = parts.get("word/_rels/document.xml.rels")!;
    expect(doc).toMatch(/<w:hyperlink [^>]*r:id="[^"]+"[^>]*>[\s\S]*?>link</);
    expect(rels).toContain('Target="https://example.com/a?b=1&amp;c=2" TargetMode="External"');
    expect(rels).not.toContain("javascript:");
    expect(doc).toContain(">bad<");
    expect(doc).toContain(">relative<");
  });

  it("writes images as their alt text and URL", () => {
    expect(doc).toContain(">a cat<");
    expect(doc).toContain(">https://example.com/cat.png<");
    expect(doc).toContain("(embedded image)");
    expect(doc).not.toContain("data:image");
  });

  it("writes tables as Word tables with a header row", () => {
    expect(doc).toMatch(/<w:tbl>[\s\S]*<w:tblHeader\/>[\s\S]*>Name<[\s\S]*>pear<[\s\S]*<\/w:tbl>/);
    expect(doc).toMatch(/<w:jc w:val="right"\/>[\s\S]*?>Qty</);
  });

  it("keeps the text of raw HTML, the hard line break and the rule", () => {
    expect(doc).toContain("raw html &amp; more");
    expect(doc).toMatch(/line one<\/w:t><\/w:r><w:r><w:br\/>/);
    expect(doc).toContain("<w:pBdr><w:bottom");
  });

  it("drops characters XML cannot hold", () => {
    expect(doc).toContain("Controlchar and lone  surrogate");
  });

  it("follows tree order across cards", () => {
    expect(doc.indexOf("Title ")).toBeLessThan(doc.indexOf("Child card"));
  });
});

describe("docx export flags and edges", () => {
  it("holds only the selected cards", async () => {
    const b = new CardBuilder();
    const a = b.card("Alpha");
    b.card("Alpha child", a);
    b.card("Beta");
    const doc = (await exportParts(b, { cardId: a._id, column: 2 })).get("word/document.xml")!;
    expect(doc).toContain("Alpha child");
    expect(doc).not.toContain(">Alpha<");
    expect(doc).not.toContain("Beta");
  });

  it("is a valid document when nothing is selected", async () => {
    const b = new CardBuilder();
    b.card("only");
    const parts = await exportParts(b, { column: 3 });
    expect(parts.get("word/document.xml")).toContain("<w:body><w:p/>");
    expect(packageProblems(parts)).toEqual({});
  });

  it("typesets math in latex trees as Word equations (issue 18)", async () => {
    const b = new CardBuilder(buildTree({ latex: true }));
    b.card("Area $a_1*b_2*$ here\n\n$$\\frac{x}{2}$$\n\nBroken $\\frac{a$ stays.");
    const parts = await exportParts(b);
    const doc = parts.get("word/document.xml")!;
    expect(xmlProblems(doc)).toEqual([]);
    expect(doc).toContain("<w:t xml:space=\"preserve\">Area </w:t></w:r><m:oMath><m:sSub><m:sSubPr/><m:e><m:r><m:t>a</m:t>");
    expect(doc).toMatch(/<w:jc w:val="center"\/>[\s\S]*?<m:oMath><m:f>/);
    expect(doc).toContain("$\\frac{a$");
    expect(doc).not.toContain("a_1");
  });
});

describe("xmlProblems", () => {
  it("finds what would make Word refuse a part", () => {
    expect(xmlProblems('<a x="1"><b/></a>')).toEqual([]);
    expect(xmlProblems("<a><b></a>")).not.toEqual([]);
    expect(xmlProblems('<a x="1" x="2"/>')).not.toEqual([]);
    expect(xmlProblems("<a>1 < 2 & 3</a>")).toHaveLength(2);
    expect(xmlProblems("<a>\u0001</a>")).not.toEqual([]);
  });
});
