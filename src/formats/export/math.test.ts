import { describe, expect, it } from "vitest";
import { protectMath, typesetMath } from "./math.js";

const spansOf = (markdown: string) => {
  const found: string[] = [];
  const math = protectMath(markdown);
  math.restore(math.text, (span) => {
    found.push(span);
    return span;
  });
  return found;
};

describe("protectMath", () => {
  it("finds inline and display math", () => {
    expect(spansOf("a $x_1*y_2*$ b $$\\sum_i a_i$$ c")).toEqual(["$x_1*y_2*$", "$$\\sum_i a_i$$"]);
  });

  it("lets display math span lines but not a blank line", () => {
    expect(spansOf("$$\na_1\n+ b_2\n$$")).toEqual(["$$\na_1\n+ b_2\n$$"]);
    expect(spansOf("$$a\n\nb$$")).toEqual([]);
  });

  it("keeps prices, escaped dollars and spaced dollars as text", () => {
    expect(spansOf("costs $5 and $10 today")).toEqual([]);
    expect(spansOf("\\$x$ and $ y $")).toEqual([]);
  });

  it("leaves code spans alone", () => {
    expect(spansOf("`$a` and `b$`")).toEqual([]);
  });

  it("never takes $$ in a code span or a fenced code block for math (issue 18)", () => {
    expect(spansOf("`$$x$$` and ``a `$$y$$` b`` then $z$")).toEqual(["$z$"]);
    expect(spansOf("```\n$$x$$\n```\n\n$$w$$")).toEqual(["$$w$$"]);
    expect(spansOf("~~~tex\n$a$\n\n$b$\n~~~")).toEqual([]);
    // An unclosed fence runs to the end, as in CommonMark.
    expect(spansOf("```\n$$x$$")).toEqual([]);
  });

  it("typesets a span with Temml, or gives undefined", () => {
    expect(typesetMath("$x^2$")).toMatch(/^<math><msup><mi>x<\/mi><mn[^>]*>2<\/mn><\/msup><\/math>$/);
    expect(typesetMath("$$a$$")).toMatch(/^<math display="block"/);
    expect(typesetMath("$\\frac{a$")).toBeUndefined();
    expect(typesetMath(`$${"{".repeat(50_000)}$`)).toBeUndefined();
  });

  it("round-trips the source exactly", () => {
    const source = "x $a_b$ y $$c*d*$$ z";
    const math = protectMath(source);
    expect(math.text).not.toContain("$");
    expect(math.restore(math.text)).toBe(source);
  });
});

describe("protectMath in link destinations", () => {
  it("restores a placeholder that a renderer percent-encoded", () => {
    const math = protectMath("[a](http://x/$y_1$)");
    const encoded = math.text.replace(/[\uE000\uE001]/g, (c) => encodeURIComponent(c));
    expect(math.restore(encoded)).toBe("[a](http://x/$y_1$)");
  });
});
