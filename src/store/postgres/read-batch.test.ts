import type pg from "pg";
import { describe, expect, it } from "vitest";
import { MOST_READS, ReadBatch } from "./read-batch.js";

/** A stand-in for the database's answer: every tree asked for exists, with its id as its record. */
function database() {
  const statements: pg.QueryConfig[] = [];
  const run = async <R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> => {
    statements.push(config);
    const values = config.values as unknown[];
    const ids = Array.isArray(values[0]) ? (values[0] as string[]) : [values[0] as string];
    const rows = ids.map((id) => ({ kind: 0, key: id, record: { id } }));
    return { rows } as unknown as pg.QueryResult<R>;
  };
  return { statements, run };
}

describe("ReadBatch", () => {
  it("sends the reads of one turn together, and a lone read alone", async () => {
    const db = database();
    const batch = new ReadBatch(db.run);
    expect(await Promise.all([batch.get("tree", "a"), batch.get("tree", "b")])).toEqual([{ id: "a" }, { id: "b" }]);
    expect(await batch.get("tree", "c")).toEqual({ id: "c" });
    expect(db.statements.map((s) => s.name)).toEqual(["cardtree-reads-together", "cardtree-tree-by-id"]);
  });

  it(`puts at most ${MOST_READS} reads in a statement, answering every one`, async () => {
    const db = database();
    const batch = new ReadBatch(db.run);
    const ids = Array.from({ length: 2 * MOST_READS + 1 }, (_, i) => `t${i}`);
    const found = await Promise.all(ids.map((id) => batch.get<{ id: string }>("tree", id)));
    expect(found.map((r) => r?.id)).toEqual(ids);
    expect(db.statements.map((s) => (Array.isArray(s.values![0]) ? (s.values![0] as string[]).length : 1))).toEqual([MOST_READS, MOST_READS, 1]);
  });
});
