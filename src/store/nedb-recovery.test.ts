/**
 * The store's loader reads a datafile exactly as NeDB's own loader does (the upgrade path:
 * data directories NeDB once wrote open the same): the same records (later lines win,
 * `$$deleted` removes, dates revived; index lines are not records). Checked against NeDB
 * loading the same file through its public API (`loadDatabaseAsync`, `getAllData`), on
 * random datafiles.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import Datastore from "@seald-io/nedb";
import { afterAll, describe, expect, it } from "vitest";
import { parseDatafile, recordLine } from "./nedb-recovery.js";

type Doc = Record<string, unknown>;

/** NeDB's line format as NeDB writes it: a Date as `{"$$date": ms}`. */
function nedbLine(doc: Doc): string {
  return JSON.stringify(doc, function (this: Doc, key: string, value: unknown) {
    const raw = this[key];
    return raw instanceof Date ? { $$date: raw.getTime() } : value;
  });
}

const lineArb: fc.Arbitrary<string> = fc.oneof(
  fc
    .record({
      _id: fc.constantFrom("a", "b", "c", "d"),
      content: fc.string(),
      position: fc.integer(),
      parentId: fc.constantFrom(null, "a"),
    })
    .map((doc) => nedbLine(doc)),
  fc.record({ _id: fc.constantFrom("a", "b"), at: fc.date({ noInvalidDate: true }) }).map((doc) => nedbLine(doc)),
  fc.record({ _id: fc.constantFrom("a", "b"), batch: fc.constant({ id: "x", size: 2 }) }).map((doc) => nedbLine(doc)),
  fc.constantFrom("a", "b", "c").map((id) => JSON.stringify({ $$deleted: true, _id: id })),
  fc.constantFrom("treeId", "email").map((fieldName) => JSON.stringify({ $$indexCreated: { fieldName, unique: false, sparse: false } })),
  fc.constantFrom("treeId", "email").map((field) => JSON.stringify({ $$indexRemoved: field })),
  fc.constantFrom('{"_id": "a", "content": "cut sh', "not json", "null", ""),
);

const dir = mkdtempSync(path.join(os.tmpdir(), "nedb-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

async function nedbReplay(text: string): Promise<{ docs: Doc[] }> {
  const filename = path.join(dir, `${files++}.db`);
  writeFileSync(filename, text);
  const db = new Datastore({ filename, corruptAlertThreshold: 1 });
  await db.loadDatabaseAsync();
  return { docs: db.getAllData() as Doc[] };
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
        expect(ours.lines).toBe(lines.filter((line) => line !== "").length);
      }),
      { numRuns: 100 },
    );
  }, 180_000);

  it("writes records as lines NeDB reads back", async () => {
    const doc = { _id: "a", content: "x\ny\t\u0000", position: 1.5, parentId: null, tags: ["a"], nested: { b: 1 } };
    const nedb = await nedbReplay(`${recordLine(doc)}\n`);
    expect(nedb.docs).toEqual([doc]);
  });

  it("revives dates as NeDB does", () => {
    const at = new Date("2026-11-22T01:00:00.000Z");
    const [doc] = parseDatafile(`${nedbLine({ _id: "a", at })}\n`).docs;
    expect(doc.at).toEqual(at);
  });
});
