/**
 * The crash repair as a property: for any history of appends (single records and batches)
 * cut at any byte, the repaired text is exactly the appends that finished before the cut,
 * never more and never less (the last one kept when the cut falls right after it).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { repairDatafileText } from "./datafile-repair.js";

type Append = string;

const record = (id: string, extra: Record<string, unknown> = {}) => JSON.stringify({ _id: id, content: "x\ny \"q\" é", ...extra });

const appendArb: fc.Arbitrary<(n: number) => Append> = fc.oneof(
  fc.constant((n: number) => `${record(`single${n}`)}\n`),
  fc.constant((n: number) => `${JSON.stringify({ $$deleted: true, _id: `single${n - 1}` })}\n`),
  fc.integer({ min: 2, max: 5 }).map((size) => (n: number) =>
    Array.from({ length: size }, (_, i) => `${record(`b${n}-${i}`, { batch: { id: `batch${n}`, size } })}\n`).join(""),
  ),
);

describe("repairDatafileText", () => {
  it("keeps exactly the appends that finished before any cut", () => {
    fc.assert(
      fc.property(fc.array(appendArb, { minLength: 1, maxLength: 8 }), fc.double({ min: 0, max: 1, noNaN: true }), (makers, where) => {
        const appends = makers.map((make, n) => make(n));
        const text = appends.join("");
        const cut = Math.floor(where * text.length);
        let finished = "";
        for (const a of appends) {
          if (finished.length + a.length > cut) break;
          finished += a;
        }
        expect(repairDatafileText(text.slice(0, cut)).text).toBe(finished);
      }),
      { numRuns: 2000 },
    );
  });

  it("leaves a whole file alone, index lines after batches included", () => {
    const text = `${record("a", { batch: { id: "k", size: 2 } })}\n${record("b", { batch: { id: "k", size: 2 } })}\n{"$$indexCreated":{"fieldName":"treeId"}}\n`;
    expect(repairDatafileText(text)).toEqual({ text, tornLine: null, partialBatch: null });
  });

  it("reports what it dropped", () => {
    const text = `${record("a")}\n${record("b", { batch: { id: "k", size: 3 } })}\n{"_id":"c","con`;
    const repair = repairDatafileText(text);
    expect(repair.text).toBe(`${record("a")}\n`);
    expect(repair.tornLine).toBe('{"_id":"c","con');
    expect(repair.partialBatch).toEqual({ id: "k", lines: 1, size: 3 });
  });
});
