/**
 * The store's loader replays a datafile exactly as NeDB's own loader does: the same
 * records (later lines win, `$$deleted` removes, dates revived), the same index
 * definitions, and the same count of lines that do not parse. Checked against NeDB's
 * `treatRawData` on random datafiles.
 */
import fc from "fast-check";
import Datastore from "@seald-io/nedb";
import { describe, expect, it } from "vitest";
import { nedbModel, parseDatafile } from "./nedb-recovery.js";

type Doc = Record<string, unknown>;

const lineArb: fc.Arbitrary<string> = fc.oneof(
  fc
    .record({
      _id: fc.constantFrom("a", "b", "c", "d"),
      content: fc.string(),
      position: fc.integer(),
      parentId: fc.constantFrom(null, "a"),
    })
    .map((doc) => nedbModel.serialize(doc)),
  fc.record({ _id: fc.constantFrom("a", "b"), at: fc.date({ noInvalidDate: true }) }).map((doc) => nedbModel.serialize(doc)),
  fc.record({ _id: fc.constantFrom("a", "b"), batch: fc.constant({ id: "x", size: 2 }) }).map((doc) => nedbModel.serialize(doc)),
  fc.constantFrom("a", "b", "c").map((id) => JSON.stringify({ $$deleted: true, _id: id })),
  fc.constantFrom("treeId", "email").map((fieldName) => JSON.stringify({ $$indexCreated: { fieldName, unique: fieldName === "email", sparse: false } })),
  fc.constantFrom("treeId", "email").map((field) => JSON.stringify({ $$indexRemoved: field })),
  fc.constantFrom('{"_id": "a", "content": "cut sh', "not json", "null", ""),
);

async function nedbReplay(text: string): Promise<{ docs: Doc[]; indexes: unknown[]; corrupt: number }> {
  const persistence = new Datastore({ inMemoryOnly: true, corruptAlertThreshold: 1 }).persistence as unknown as {
    treatRawData(text: string): Promise<{ data: Doc[]; indexes: Record<string, unknown> }>;
  };
  const { data, indexes } = await persistence.treatRawData(text);
  const nonEmpty = text.split("\n").filter((line) => line !== "");
  const corrupt = nonEmpty.filter((line) => {
    try {
      const doc = nedbModel.deserialize(line);
      return doc === null || typeof doc !== "object";
    } catch {
      return true;
    }
  }).length;
  return { docs: data, indexes: Object.values(indexes), corrupt };
}

const byId = (docs: Doc[]) => Object.fromEntries(docs.map((doc) => [doc._id, doc]));

describe("parseDatafile", () => {
  it("replays a datafile as NeDB's loader does", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(lineArb, { maxLength: 25 }), async (lines) => {
        const text = lines.map((line) => `${line}\n`).join("");
        const ours = parseDatafile(text);
        const nedb = await nedbReplay(text);
        // Batch marks are framing on disk; the loader drops them from the records.
        const withoutBatch = nedb.docs.map(({ batch: _framing, ...doc }) => doc);
        expect(byId(ours.docs)).toEqual(byId(withoutBatch));
        expect(ours.indexes).toEqual(nedb.indexes);
        expect(ours.corrupt).toBe(nedb.corrupt);
        expect(ours.lines).toBe(lines.filter((line) => line !== "").length);
      }),
      { numRuns: 300 },
    );
  });

  it("revives dates as NeDB does", () => {
    const at = new Date("2026-11-22T01:00:00.000Z");
    const [doc] = parseDatafile(`${nedbModel.serialize({ _id: "a", at })}\n`).docs;
    expect(doc.at).toEqual(at);
  });
});
