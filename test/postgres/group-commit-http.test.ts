/**
 * Group commit seen through the API on PostgreSQL (issue 27; src/store/postgres/group-commit.ts):
 * card writes sent at once to different trees of one server are committed together (rows
 * of one transaction share its `xmin`), each answered once; replayed with their
 * Idempotency-Key they answer the same and write nothing more. A write that fails in the
 * store (a client-chosen id another process's tree took meanwhile) fails alone: the writes
 * sent with it land.
 */
import { adminQuery } from "../helpers/postgres.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { twoProcessesOnOneDatabase, type TestServer } from "../helpers/server.js";
import { newRecordId } from "../../src/shared/ids.js";

let databaseUrl: string;
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  ({ databaseUrl, a, b } = await twoProcessesOnOneDatabase());
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

async function sql(query: string, params: unknown[] = []): Promise<any[]> {
  return (await adminQuery(query, databaseUrl, params)).rows;
}

describe("group commit through the API", { timeout: 120_000 }, () => {
  it("commits concurrent keyed writes to several trees together, answers each once, and replays them without a second card", async () => {
    const alice = await buildUser(a.url, "batched");
    const trees: { _id: string }[] = [];
    for (let i = 0; i < 12; i++) trees.push(await buildTree(alice, { name: `Batched ${i}` }));
    let burst: { key: string; treeId: string; body: object; text: string; revision: string | null }[] = [];
    let together = false;
    // Each burst sends one write per tree at once; until some of them shared a commit (a
    // loaded machine may serve a burst one by one), at most five bursts.
    for (let attempt = 0; attempt < 5 && !together; attempt++) {
      burst = await Promise.all(
        trees.map(async (tree, i) => {
          const key = `burst-${attempt}-${i}`;
          const body = { treeId: tree._id, position: 1, content: `burst ${attempt} card ${i}` };
          const reply = await alice.post(`/api/trees/${tree._id}/cards`, body, { "Idempotency-Key": key });
          expect(reply.status).toBe(201);
          return { key, treeId: tree._id, body, text: reply.text, revision: reply.headers.get("x-tree-revision") };
        }),
      );
      const rows = await sql(
        `SELECT count(DISTINCT c.xmin::text)::integer AS n FROM changes AS c
         JOIN unnest($1::text[], $2::integer[]) AS w(tree_id, revision) ON c.tree_id = w.tree_id AND c.revision = w.revision`,
        [burst.map((w) => w.treeId), burst.map((w) => Number(w.revision))],
      );
      together = rows[0].n < burst.length;
    }
    expect(together).toBe(true);

    const replays = await Promise.all(burst.map((w) => alice.post(`/api/trees/${w.treeId}/cards`, w.body, { "Idempotency-Key": w.key })));
    for (const [i, replay] of replays.entries()) {
      expect(replay.status).toBe(201);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expect(replay.text).toBe(burst[i].text);
    }
    for (const w of burst) {
      const cards = (await alice.get(`/api/trees/${w.treeId}/cards`)).body as { content: string }[];
      expect(cards.filter((c) => c.content === (w.body as { content: string }).content)).toHaveLength(1);
    }
  });

  it("fails only the write whose client-chosen id another process took, while the writes sent with it land", async () => {
    const alice = await buildUser(a.url, "clash");
    const onB = new Api(b.url, alice.credentials);
    const trees: { _id: string }[] = [];
    for (let i = 0; i < 6; i++) trees.push(await buildTree(alice, { name: `Clash ${i}` }));
    const _id = newRecordId();
    const [viaA, viaB, ...others] = await Promise.all([
      alice.post(`/api/trees/${trees[0]._id}/cards`, { _id, treeId: trees[0]._id, position: 1, content: "chosen via A" }),
      onB.post(`/api/trees/${trees[1]._id}/cards`, { _id, treeId: trees[1]._id, position: 1, content: "chosen via B" }),
      ...trees.slice(2).map((tree, i) => alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: `beside ${i}` })),
    ]);
    expect([viaA.status, viaB.status].sort()).toEqual([201, 409]);
    const refused = viaA.status === 409 ? viaA : viaB;
    expect(refused.body.error).toBe("conflict");
    expect(others.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    const rows = await sql("SELECT tree_id FROM cards WHERE id = $1", [_id]);
    expect(rows).toEqual([{ tree_id: viaA.status === 201 ? trees[0]._id : trees[1]._id }]);
    const loser = viaA.status === 201 ? trees[1] : trees[0];
    expect(((await alice.get(`/api/trees/${loser._id}/cards`)).body as { content: string }[]).some((c) => c.content.startsWith("chosen"))).toBe(false);
  });
});
