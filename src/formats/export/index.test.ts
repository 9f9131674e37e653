import { describe, expect, it } from "vitest";
import { NotFoundError, ValidationError } from "../../shared/errors.js";
import { exportFilename, exportFormats, exportTree, type ExportFormat } from "./index.js";
import { packageProblems, partNames, xmlParts } from "./office-test-support.js";
import { buildTree, CardBuilder } from "./test-factory.js";

function sample(name = "Plans") {
  const b = new CardBuilder(buildTree({ name }));
  const a = b.card("# A");
  b.card("A1", a);
  b.card("B");
  return b;
}

describe("exportTree", () => {
  it.each([
    ["txt", "text/plain; charset=utf-8", "Plans.txt"],
    ["md", "text/markdown; charset=utf-8", "Plans.md"],
    ["html", "text/html; charset=utf-8", "Plans.html"],
    ["json", "application/json; charset=utf-8", "Plans.json"],
    ["docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "Plans.docx"],
    ["impress", "application/vnd.openxmlformats-officedocument.presentationml.presentation", "Plans.pptx"],
  ] as const)("exports %s with its content type and file name", async (format, contentType, filename) => {
    const result = await exportTree(format, sample().tree, sample().cards, {});
    expect(result.contentType).toBe(contentType);
    expect(result.filename).toBe(filename);
  });

  it("applies the flags", async () => {
    const b = sample();
    const result = await exportTree("txt", b.tree, b.shuffled(), { cardId: b.cards[0]._id, column: 2 });
    expect(result.body).toBe("A1");
  });

  it("answers an unknown cardId with NotFoundError", async () => {
    const b = sample();
    await expect(exportTree("json", b.tree, b.cards, { cardId: "zzzzzzzzzzzzzzzzzzzzzzzz" })).rejects.toThrow(NotFoundError);
  });

  it("answers a bad column or format with ValidationError", async () => {
    const b = sample();
    await expect(exportTree("md", b.tree, b.cards, { column: 0 })).rejects.toThrow(ValidationError);
    await expect(exportTree("pdf" as ExportFormat, b.tree, b.cards, {})).rejects.toThrow(ValidationError);
    await expect(exportTree("toString" as ExportFormat, b.tree, b.cards, {})).rejects.toThrow(ValidationError);
  });
});

describe("exportFilename", () => {
  it("keeps non-ASCII names and makes unsafe characters safe", () => {
    expect(exportFilename("Été 2024 — 計画", "docx")).toBe("Été 2024 — 計画.docx");
    expect(exportFilename('a/b\\c:d*e?f"g<h>i|j\u0000k\nl', "txt")).toBe("a_b_c_d_e_f_g_h_i_j_k_l.txt");
    expect(exportFilename("  ..hidden. ", "md")).toBe("hidden.md");
    expect(exportFilename("...", "md")).toBe("tree.md");
  });

  it("drops bidi controls, so a name shows as what it is (GraphQL's filename too)", () => {
    expect(exportFilename("invoice\u202Egpj.exe \u2066x\u2069\u200F\u061C\u2028", "txt")).toBe("invoicegpj.exe x.txt");
  });

  it("stays within 200 UTF-8 bytes without cutting a character", () => {
    const name = exportFilename("計".repeat(200), "txt");
    expect(Buffer.byteLength(name.slice(0, -4))).toBeLessThanOrEqual(200);
    expect(name).toBe(`${"計".repeat(66)}.txt`);
    expect(exportFilename("\u{1F600}".repeat(60), "txt")).toBe(`${"\u{1F600}".repeat(50)}.txt`);
  });
});

describe("a 5,000-card tree", () => {
  it.each(exportFormats)("exports to %s completely and well formed", async (format) => {
    const b = new CardBuilder(buildTree({ name: "Big tree" }));
    // 50 chapters of 10 sections of 9 notes: 5,000 cards, three columns.
    for (let c = 0; c < 50; c++) {
      const chapter = b.card(`# Chapter ${c}\n\nIntro with **bold** and a [link](https://example.com/${c}).`);
      for (let s = 0; s < 10; s++) {
        const section = b.card(`## Section ${c}.${s}\n\n- point one\n- point _two_\n\n| k | v |\n|---|---|\n| a | ${s} |`, chapter);
        for (let n = 0; n < 8; n++) b.card(`Note ${c}.${s}.${n}: ${"words and more words ".repeat(8)}\n\n\`\`\`\ncode ${n}\n\`\`\``, section);
      }
    }
    expect(b.cards).toHaveLength(50 * (1 + 10 * 9));
    const cards = b.shuffled();
    const result = await exportTree(format, b.tree, cards, {});
    if (typeof result.body === "string") {
      expect(result.body).toContain("Note 49.9.7");
      if (format === "json") expect(JSON.parse(result.body)).toHaveLength(50);
      if (format === "html") expect(result.body.match(/<section class="card"/g)).toHaveLength(cards.length);
    } else if (format === "docx") {
      const parts = await xmlParts(result.body);
      expect(packageProblems(parts)).toEqual({});
      expect(parts.get("word/document.xml")).toContain("Note 49.9.7");
    } else {
      const slides = (await partNames(result.body)).filter((name) => /^ppt\/slides\/slide\d+\.xml$/.test(name));
      expect(slides.length).toBeGreaterThan(cards.length);
      const last = `ppt/slides/slide${slides.length}.xml`;
      const parts = await xmlParts(result.body, (name) => !name.startsWith("ppt/slides/") || name === last);
      expect(packageProblems(parts)).toEqual({});
      expect(parts.get("ppt/presentation.xml")!.match(/<p:sldId /g)).toHaveLength(slides.length);
      expect(parts.get(last)).toContain("Note 49.9.7");
    }
  }, 120_000);
});

describe("a 10,000-level chain of cards", () => {
  it.each(["txt", "md", "html", "json", "docx"] as const)("exports to %s without overflowing the stack", async (format) => {
    const b = new CardBuilder();
    b.chain(10_000);
    const result = await exportTree(format, b.tree, b.shuffled(), {});
    expect(result.body.length).toBeGreaterThan(0);
  }, 60_000);
});
