/**
 * The docx export as a reader opens it (issue 18): LibreOffice turns it into a PDF, and the
 * PDF's outline, pages and text are what a reader's navigation pane, bookmarks and page show.
 * One small document, one conversion: LibreOffice takes seconds per file.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { describeWithOffice, officeToOdtContent, officeToPdf, type Pdf } from "./reader-tools.js";

const DOCUMENT = [
  "# Getting started",
  "Read this first.",
  "## Installing",
  "Run the installer:\n\n```\nnpm ci\nnpm start\n```\n\nThen open the page.",
  "### On Debian",
  "Use apt.",
  "# Reference",
  "All the flags; see [installing](#installing) and [the site][site].[^flags]",
  "[^flags]: Flags are *case-sensitive*.",
  "## Links",
  "[site]: https://cardtree.example/docs",
  "## Math",
  "Energy is $E = mc^2$, and",
  "$$\\frac{a+b}{2}$$",
].join("\n\n");

describeWithOffice("docx export, opened in LibreOffice", () => {
  let server: InProcessServer;
  let pdf: Pdf;
  let odt: string;

  beforeAll(async () => {
    server = await startInProcessServer();
    const writer = await buildUser(server.url, "docx-reader");
    const tree = await buildTree(writer, { name: "Manual", seed: DOCUMENT });
    await writer.put(`/api/trees/${tree._id}`, { latex: true });
    // YAML front matter on the first card: document properties, never a heading.
    const [first] = (await writer.get(`/api/trees/${tree._id}/cards`)).body;
    const frontMatter = "---\ntitle: The Manual\nauthor: Ada Lovelace\nkeywords: [cards, trees]\n---\n";
    const edited = await writer.put(`/api/trees/${tree._id}/cards/${first._id}`, { content: frontMatter + first.content });
    expect(edited.status).toBe(200);
    const res = await fetch(`${server.url}/api/export/${tree._id}.docx`, { headers: { authorization: writer.authHeader! } });
    expect(res.status).toBe(200);
    const docx = Buffer.from(await res.arrayBuffer());
    [pdf, odt] = await Promise.all([officeToPdf(docx, "docx"), officeToOdtContent(docx)]);
  }, 180_000);
  afterAll(() => server?.stop());

  it("has its headings in the outline, nested by level (navigation pane, PDF bookmarks)", () => {
    expect(pdf.outline).toEqual([
      { title: "Getting started", level: 1 },
      { title: "Installing", level: 2 },
      { title: "On Debian", level: 3 },
      { title: "Reference", level: 1 },
      { title: "Links", level: 2 },
      { title: "Math", level: 2 },
    ]);
  });

  it("keeps YAML front matter as the document's properties, not as text", () => {
    expect(pdf.info).toMatchObject({ Title: "The Manual", Author: "Ada Lovelace", Keywords: "cards, trees" });
    expect(pdf.pageTexts.join("\n")).not.toMatch(/title:|author:|Ada Lovelace/);
  });

  it("makes footnotes Word footnotes, which LibreOffice reads as notes at the page's foot", () => {
    const text = pdf.pageTexts.join("\n");
    expect(text).not.toContain("[^flags]");
    expect(text).toContain("Flags are case-sensitive.");
    expect(odt).toMatch(/<text:note [^>]*text:note-class="footnote"[^>]*><text:note-citation>1<\/text:note-citation><text:note-body>[\s\S]*?Flags are/);
  });

  it("links in-page links to their heading and resolves a reference defined in another card", () => {
    const text = pdf.pageTexts.join("\n");
    expect(text).toMatch(/see installing and the site\.\s*1?/);
    expect(text).not.toContain("[the site]");
    expect(pdf.urls).toContain("https://cardtree.example/docs");
    // LibreOffice reads the in-page link as a jump to the heading's bookmark.
    const target = /<text:a [^>]*xlink:href="#([^"]+)"[^>]*>(?:<text:span[^>]*>)?installing</.exec(odt)?.[1];
    expect(target).toBeDefined();
    expect(odt).toContain(`<text:bookmark-start text:name="${target}"/>Installing`);
  });

  it("typesets math as Word equations, which LibreOffice reads as formulas", () => {
    const text = pdf.pageTexts.join("\n");
    expect(text).toContain("Energy is");
    expect(text).not.toMatch(/\$|\\frac|mc\^2/);
    // Two equations, each an embedded formula object.
    expect(odt.match(/<draw:object\b/g)).toHaveLength(2);
  });

  it("shows the text in order, a code block's lines as written and the paragraph after it apart", () => {
    const text = pdf.pageTexts.join("\n");
    const order = ["Getting started", "Read this first.", "Installing", "npm ci", "npm start", "Then open the page.", "On Debian", "Reference"];
    const at = order.map((part) => text.indexOf(part));
    expect(at.every((i) => i >= 0), JSON.stringify(at)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    // A blank line between the code block's last line and the next paragraph: space after the block.
    expect(text).toMatch(/npm start *\n\s*\n\s*Then open the page\./);
  });
});
