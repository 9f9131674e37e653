import { describe, expect, it } from "vitest";
import { cardSlides, type SlideParagraph } from "./impress-layout.js";
import { lexCards } from "./markdown-inline.js";
import { linearMath, mathTree } from "./math-tree.js";

describe("linearMath: math as Unicode text for slides", () => {
  it.each([
    ["$x^2 + y_i$", "x² + yᵢ"],
    ["$$\\frac{a+b}{2}$$", "(a + b)/2"],
    ["$\\frac{-b \\pm \\sqrt{b^2-4ac}}{2a}$", "(−b ± √(b² − 4ac))/(2a)"],
    ["$\\sum_{i=1}^n i^2$", "∑ᵢ₌₁ⁿi²"],
    ["$a^{-1}$", "a⁻¹"],
    ["$e^{i\\pi} = -1$", "e^(iπ) = −1"],
    ["$\\hat{x}$", "x̂"],
    ["$\\alpha \\le \\beta$", "α ≤ β"],
  ])("%s → %s", (span, text) => {
    expect(linearMath(span)).toBe(text);
  });

  it("keeps math Temml cannot read as its source", () => {
    expect(linearMath("$\\frac{a$")).toBe("$\\frac{a$");
  });
});

describe("mathTree", () => {
  it("reads Temml's MathML back as a tree", () => {
    const tree = mathTree("$$x^2$$")!;
    expect(tree.display).toBe(true);
    expect(tree.root.tag).toBe("math");
    expect(JSON.stringify(tree.root)).toContain('{"tag":"msup","children":[{"tag":"mi","children":["x"]}');
  });
});

describe("math on slides (issue 18)", () => {
  it("writes a latex card's math in its linear form, in titles and body", () => {
    const [lexed] = lexCards(["# Energy $E = mc^2$\n\nSo $x_1 + x_2$ holds."], true);
    const slides = cardSlides(lexed);
    expect(slides.title).toBe("Energy E = mc²");
    const paragraph = slides.pages[0][0] as SlideParagraph;
    expect(paragraph.runs.map((run) => run.text).join("")).toBe("So x₁ + x₂ holds.");
  });
});
