import { describe, expect, it } from "vitest";
import { protectMath } from "./math.js";

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
