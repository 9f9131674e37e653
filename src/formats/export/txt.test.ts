import { describe, expect, it } from "vitest";
import { mdExporter } from "./md.js";
import type { ExportOptions } from "../../shared/export-options.js";
import { selectCards } from "./select.js";
import { CardBuilder } from "./test-factory.js";
import { txtExporter } from "./txt.js";

function sample() {
  const b = new CardBuilder();
  const a = b.card("# A\n\nintro");
  b.card("A1", a);
  b.card("B");
  return b;
}

function run(builder: CardBuilder, options: ExportOptions = {}) {
  return txtExporter({ tree: builder.tree, selected: selectCards(builder.shuffled(), options), options });
}

describe("txt and md exports", () => {
  it("join the contents in tree order by one blank line, no trailing newline", () => {
    expect(run(sample())).toBe("# A\n\nintro\n\nA1\n\nB");
  });

  it("are the same text", () => {
    const b = sample();
    const input = { tree: b.tree, selected: selectCards(b.cards), options: {} };
    expect(mdExporter(input)).toBe(txtExporter(input));
  });

  it("use N newlines with newlines=N, none with 0", () => {
    expect(run(sample(), { newlines: 1 })).toBe("# A\n\nintro\nA1\nB");
    expect(run(sample(), { newlines: 0 })).toBe("# A\n\nintroA1B");
  });

  it("write start and end around each card", () => {
    expect(run(sample(), { start: "<<", end: ">>", newlines: 1 })).toBe("<<# A\n\nintro>>\n<<A1>>\n<<B>>");
  });

  it("narrow with cardId and column", () => {
    const b = new CardBuilder();
    const a = b.card("A");
    const a1 = b.card("A1", a);
    b.card("A1a", a1);
    b.card("A2", a);
    b.card("B1", b.card("B"));
    expect(run(b, { cardId: a._id })).toBe("A\n\nA1\n\nA1a\n\nA2");
    expect(run(b, { column: 2 })).toBe("A1\n\nA2\n\nB1");
    expect(run(b, { cardId: a._id, column: 2 })).toBe("A1\n\nA2");
    expect(run(b, { column: 9 })).toBe("");
  });

  it("keep empty cards as empty entries", () => {
    const b = new CardBuilder();
    b.card("A");
    b.card("");
    b.card("C");
    expect(run(b)).toBe("A\n\n\n\nC");
  });
});
