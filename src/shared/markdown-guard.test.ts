import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { checkMarkdown, MARKDOWN_LIMITS, unrenderedHtml } from "./markdown-guard.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

describe("checkMarkdown", () => {
  it("lets real documents through, with room to spare", () => {
    // Each section of our own long documents, as an import would cut them into cards.
    for (const file of ["README.md", "docs/performance.md", "docs/reliability.md", "src/formats/export/README.md"]) {
      const sections = readFileSync(path.join(ROOT, file), "utf8").split(/^(?=## )/m);
      for (const [i, section] of sections.entries()) {
        const verdict = checkMarkdown(section);
        expect(verdict, `${file} section ${i}`).toMatchObject({ ok: true });
        if (verdict.ok) expect(verdict.cost, `${file} section ${i}`).toBeLessThan(MARKDOWN_LIMITS.maxCost / 3);
      }
    }
  });

  it("counts list items, table rows and headings as runs of their own", () => {
    // 2,000 items or rows of emphasis are 2,000 short runs, not one long one.
    expect(checkMarkdown("- **bold** and _it_\n".repeat(2_000)).ok).toBe(true);
    expect(checkMarkdown("| a_b | c_d |\n|---|---|\n" + "| x_y | *z* |\n".repeat(2_000)).ok).toBe(true);
    expect(checkMarkdown("# _a_\n".repeat(2_000)).ok).toBe(true);
    // Delimiters inside fenced code are never lexed as emphasis.
    expect(checkMarkdown("```\n" + "snake_case_name *ptr\n".repeat(2_000) + "```").ok).toBe(true);
  });

  it("refuses the quadratic and nested emphasis shapes", () => {
    const shapes = {
      unmatched: "_a".repeat(20_000),
      nested: "*a **a ".repeat(2_000) + " b**".repeat(2_000),
      openers: "*a _".repeat(5_000),
      math: "$a ".repeat(15_000),
      // Numbers other than 1 do not interrupt a paragraph: still one run.
      numbered: "text\n" + "2. _a_a_a_a_a_a_a_a\n".repeat(2_000),
    };
    for (const [name, source] of Object.entries(shapes)) {
      expect(checkMarkdown(source), name).toMatchObject({ ok: false, reason: "cost" });
    }
  });

  it("refuses quotes and lists nested past the limit, however written", () => {
    const limit = MARKDOWN_LIMITS.maxNesting;
    expect(checkMarkdown(`${">".repeat(limit)} a`).ok).toBe(true);
    expect(checkMarkdown(`${">".repeat(limit + 1)} a`)).toMatchObject({ ok: false, reason: "nesting" });
    expect(checkMarkdown(`${"> ".repeat(20_000)}a`)).toMatchObject({ ok: false, reason: "nesting" });
    expect(checkMarkdown(`${"- ".repeat(20_000)}a`)).toMatchObject({ ok: false, reason: "nesting" });
    expect(checkMarkdown(`${"1. ".repeat(50)}a`)).toMatchObject({ ok: false, reason: "nesting" });
    const indented = Array.from({ length: 40 }, (_, i) => `${" ".repeat(2 * i)}- a`).join("\n");
    expect(checkMarkdown(indented)).toMatchObject({ ok: false, reason: "nesting" });
    // Rules are not lists, and indentation without a marker nests nothing.
    expect(checkMarkdown("- - -\n* * *\n" + " ".repeat(200) + "text").ok).toBe(true);
  });

  it("refuses a card longer than the length limit", () => {
    expect(checkMarkdown("a".repeat(MARKDOWN_LIMITS.maxLength)).ok).toBe(true);
    expect(checkMarkdown("a".repeat(MARKDOWN_LIMITS.maxLength + 1))).toMatchObject({
      ok: false,
      reason: "length",
      note: "Shown as plain text: it is longer than the 50,000 characters rendered as Markdown.",
    });
    expect(checkMarkdown("a".repeat(1_000_001), { ...MARKDOWN_LIMITS, maxLength: 1_000_000 })).toMatchObject({ note: expect.stringContaining("1,000,000 characters") });
    expect(checkMarkdown("a".repeat(1_000), { ...MARKDOWN_LIMITS, maxLength: 999 })).toMatchObject({ note: expect.stringContaining(" 999 characters") });
  });

  it("gives a note a reader understands", () => {
    const verdict = checkMarkdown("_a".repeat(20_000));
    expect(verdict.ok === false && verdict.note).toBe("Shown as plain text: its emphasis marks would take too long to render.");
  });
});

describe("unrenderedHtml", () => {
  it("escapes the card's text, so nothing in it becomes markup", () => {
    const html = unrenderedHtml(`<script>alert("x")</script> & 'q'`, "Shown as plain text: <why>.");
    expect(html).toBe(
      '<p class="unrendered-note"><em>Shown as plain text: &lt;why&gt;.</em></p>\n' +
        '<pre class="unrendered">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;</pre>\n',
    );
  });
});
