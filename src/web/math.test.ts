import { describe, expect, it } from "vitest";
import { extractMath } from "./math.js";

describe("extractMath", () => {
  const formulas = (source: string) => extractMath(source).formulas.map((f) => `${f.display ? "D" : "I"}:${f.tex}`);

  it("takes $$…$$ as displayed and $…$ as inline, and leaves prices and escaped dollars as prose", () => {
    expect(formulas("Euler $e^{i\\pi}+1=0$ and\n\n$$\\frac{a}{b}$$")).toEqual(["I:e^{i\\pi}+1=0", "D:\\frac{a}{b}"]);
    expect(formulas("It costs $5 and $10 today, or \\$3.")).toEqual([]);
    expect(formulas("$ x$ and $x $ are not math")).toEqual([]);
  });

  it("leaves code spans and fenced code alone", () => {
    expect(formulas("`$x$` and\n\n```\n$y$\n```\n\n$z$")).toEqual(["I:z"]);
  });

  it("replaces each formula with a token Markdown keeps as plain text", () => {
    const { text } = extractMath("a $x_1$ b");
    expect(text).toMatch(/^a CTMATH[a-z]*N0X b$/);
  });
});
