/**
 * The impress export as a reader opens it (issue 18): LibreOffice turns the deck into a PDF
 * and the test reads where every word landed. One small deck, one conversion.
 */
import JSZip from "jszip";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { describeWithOffice, officeToPdf, type Pdf } from "./reader-tools.js";

// One card per entry, in the first column.
const CARDS = [
  `# Many points\n\n${Array.from({ length: 14 }, (_, i) => `Point ${i + 1}.`).join("\n\n")}`,
  "",
  "<br>",
  "# Table\n\n| Name | Value |\n|---|---:|\n| alpha | 1 |\n| beta | 2 |",
  "# Code\n\n```\nline one\nline two\nline three\n```\n\nAfter the code.",
  "# List\n\n- item\n\n  continued under the item\n- next",
];

describeWithOffice("impress export, opened in LibreOffice", () => {
  let server: InProcessServer;
  let pdf: Pdf;
  let slidesXml: string[];

  beforeAll(async () => {
    server = await startInProcessServer();
    const writer = await buildUser(server.url, "pptx-reader");
    const seed = JSON.stringify(CARDS.map((content) => ({ content })));
    const tree = await buildTree(writer, { name: "Deck", seed });
    const res = await fetch(`${server.url}/api/export/${tree._id}.impress`, { headers: { authorization: writer.authHeader! } });
    expect(res.status).toBe(200);
    const deck = Buffer.from(await res.arrayBuffer());
    const zip = await JSZip.loadAsync(deck);
    const names = Object.keys(zip.files).filter((name) => /^ppt\/slides\/slide\d+\.xml$/.test(name));
    names.sort((a, b) => Number(/\d+/.exec(a)![0]) - Number(/\d+/.exec(b)![0]));
    slidesXml = await Promise.all(names.map((name) => zip.file(name)!.async("string")));
    pdf = await officeToPdf(deck, "pptx");
  }, 180_000);
  afterAll(() => server?.stop());

  const wordsOf = (page: number) => pdf.words.filter((word) => word.page === page);
  const pageWith = (text: string) => pdf.words.find((word) => word.text === text)?.page;

  it("has no blank slide: the empty and markup-only cards make none", () => {
    // Title, "Many points" on two slides, Table, Code, List.
    expect(pdf.pages).toBe(6);
    for (let page = 1; page <= pdf.pages; page++) expect(wordsOf(page).length, `slide ${page}`).toBeGreaterThan(0);
  });

  it("never runs text off the bottom of a slide: every point is on a page, above its foot", () => {
    const text = pdf.pageTexts.join("\n");
    for (let i = 1; i <= 14; i++) expect(text).toContain(`Point ${i}.`);
    for (const word of pdf.words) expect(word.yMax, `${word.text} on slide ${word.page}`).toBeLessThan(pdf.size.height - 10);
  });

  it("makes a table a real table", () => {
    const slide = slidesXml[pageWith("alpha")! - 1];
    expect(slide).toContain("<a:tbl>");
    expect(pdf.pageTexts.join("\n")).not.toContain("|");
    // The right-aligned column stays right-aligned.
    const value = pdf.words.find((word) => word.text === "Value")!;
    const one = pdf.words.find((word) => word.text === "1" && word.page === value.page)!;
    expect(Math.abs(one.xMax - value.xMax)).toBeLessThan(3);
  });

  it("shades a code block and spaces its lines as single lines", () => {
    const lines = ["one", "two", "three"].map((word) => pdf.words.find((w) => w.text === word)!);
    const gaps = [lines[1].yMin - lines[0].yMin, lines[2].yMin - lines[1].yMin];
    // 14-point code: one line is about 17 points; double spacing was 23.
    for (const gap of gaps) expect(gap).toBeLessThan(19);
    const slide = slidesXml[lines[0].page - 1];
    expect(slide).toMatch(/<a:solidFill><a:srgbClr val="F2F2F2"\/><\/a:solidFill>/);
  });

  it("indents a list item's continuation paragraph with the item's text", () => {
    const item = pdf.words.find((word) => word.text === "item")!;
    const continued = pdf.words.find((word) => word.text === "continued")!;
    expect(Math.abs(continued.xMin - item.xMin)).toBeLessThan(3);
  });
});
